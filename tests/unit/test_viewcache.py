"""The kubeconfig view cache: its key, when it must not be trusted, and its file."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kubectl_squarepeg.cluster import kubectl, viewcache
from kubectl_squarepeg.cluster.connect import ContextView, KubeconfigProbe

HOUR_AGO = time.time() - 3600


def old_file(path: Path, text: str = "kind: Config\n", when: float = HOUR_AGO) -> Path:
    path.write_text(text)
    os.utime(path, (when, when))
    return path


def test_which_files_kubectl_reads(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "KUBECONFIG": os.pathsep.join(["a", "", "/b"])}
    assert viewcache.kubeconfig_files("/k", env) == ["/k"]
    assert viewcache.kubeconfig_files(None, env) == [os.path.abspath("a"), "/b"]
    assert viewcache.kubeconfig_files(None, {"HOME": str(tmp_path)}) == [
        str(tmp_path / ".kube" / "config")
    ]


def test_the_key_follows_every_input(tmp_path: Path) -> None:
    config = old_file(tmp_path / "kc")
    env = {"KUBECONFIG": str(config), "HOME": str(tmp_path)}
    key = viewcache.key_for(None, None, env, now=time.time())
    assert key is not None
    assert viewcache.key_for(None, None, env, now=time.time()) == key
    assert viewcache.key_for("ctx", None, env, now=time.time()) != key
    assert viewcache.key_for(None, str(config), env, now=time.time()) != key
    old_file(config, "kind: Config\nx: 1\n", HOUR_AGO + 1)  # changed
    assert viewcache.key_for(None, None, env, now=time.time()) not in (None, key)


def test_a_missing_file_is_part_of_the_key(tmp_path: Path) -> None:
    env = {"KUBECONFIG": str(tmp_path / "later"), "HOME": str(tmp_path)}
    before = viewcache.key_for(None, None, env, now=time.time())
    old_file(tmp_path / "later")
    assert before is not None
    assert viewcache.key_for(None, None, env, now=time.time()) != before


def test_a_kubeconfig_changed_moments_ago_is_never_cached(tmp_path: Path) -> None:
    config = old_file(tmp_path / "kc", when=time.time() - 1)
    env = {"KUBECONFIG": str(config)}
    assert viewcache.key_for(None, None, env, now=time.time()) is None


def test_store_and_lookup(tmp_path: Path) -> None:
    cache = viewcache.cache_file({"XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert cache == str(tmp_path / "xdg" / "squarepeg" / "kubeconfig-views.json")
    assert viewcache.lookup("k", cache) is None
    viewcache.store("k", "ctx", "team", cache)
    viewcache.store("k2", "other", None, cache)
    assert viewcache.lookup("k", cache) == ("ctx", "team")
    assert viewcache.lookup("k2", cache) == ("other", None)
    assert oct(os.stat(cache).st_mode & 0o777) == "0o600"
    for index in range(viewcache.MAX_ENTRIES):
        viewcache.store(f"n{index}", "c", None, cache)
    assert viewcache.lookup("k", cache) is None  # the oldest went
    assert viewcache.lookup(f"n{viewcache.MAX_ENTRIES - 1}", cache) == ("c", None)


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"k": [1]}', '{"k": "x"}'])
def test_a_damaged_cache_is_ignored(tmp_path: Path, content: str) -> None:
    cache = tmp_path / "views.json"
    cache.write_text(content)
    assert viewcache.lookup("k", cache) is None
    viewcache.store("k", "ctx", None, cache)
    assert viewcache.lookup("k", cache) == ("ctx", None)


def test_an_unwritable_cache_is_ignored(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = blocker / "squarepeg" / "views.json"  # its parent cannot be a directory
    viewcache.store("k", "ctx", None, cache)
    assert viewcache.lookup("k", cache) is None


def test_a_remembered_view_starts_no_kubectl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = old_file(tmp_path / "kc")
    env = {"KUBECONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    key = viewcache.key_for("ctx", None, env, now=time.time())
    assert key is not None
    viewcache.store(key, "ctx", "team-a", viewcache.cache_file(env))

    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError("a kubectl was started")

    monkeypatch.setattr(kubectl, "start", no_process)
    probe = KubeconfigProbe("ctx", None, env)
    assert probe.view() == (ContextView("ctx", "team-a"), "")
    probe.discard()
