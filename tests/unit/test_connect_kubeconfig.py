"""connect.missing_kubeconfig: a kubeconfig the user named must exist, as kubectl reads it."""

from __future__ import annotations

import os
from pathlib import Path

from kubectl_squarepeg.cluster.connect import ClusterFlags, missing_kubeconfig


def test_a_missing_kubeconfig_flag_is_an_error(tmp_path: Path) -> None:
    error = missing_kubeconfig(ClusterFlags(kubeconfig=str(tmp_path / "nope")), {})
    assert error is not None
    assert error.one_line().startswith(f"the kubeconfig file {tmp_path / 'nope'} does not exist")
    (tmp_path / "kc").write_text("")
    assert missing_kubeconfig(ClusterFlags(kubeconfig=str(tmp_path / "kc")), {}) is None


def test_kubeconfig_env_needs_one_existing_file(tmp_path: Path) -> None:
    (tmp_path / "kc").write_text("")
    none = os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])
    error = missing_kubeconfig(ClusterFlags(), {"KUBECONFIG": none})
    assert error is not None and error.message == f"KUBECONFIG names no file that exists ({none})"
    one = os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "kc")])
    assert missing_kubeconfig(ClusterFlags(), {"KUBECONFIG": one}) is None
    assert missing_kubeconfig(ClusterFlags(), {"KUBECONFIG": ""}) is None
    assert missing_kubeconfig(ClusterFlags(), {}) is None


def test_a_missing_kubeconfig_from_a_config_key_names_its_file_and_line(tmp_path: Path) -> None:
    choice = ClusterFlags(kubeconfig=str(tmp_path / "nope"))
    error = missing_kubeconfig(choice, {}, config_origin="c.yaml:3")
    assert error is not None
    assert error.message.endswith("does not exist (config kubeconfig, c.yaml:3)")
    assert error.hint.startswith("fix the path there")


def test_as_group_needs_as_and_names_are_not_empty() -> None:
    import pytest

    from kubectl_squarepeg.cluster.connect import check_impersonation
    from kubectl_squarepeg.errors import UsageError

    check_impersonation("alice", ("devs",))
    check_impersonation(None, ())
    for user, groups, said in ((None, ("devs",), "--as-group devs without --as"),
                               ("", (), "--as is empty"), ("alice", (" ",), "--as-group is empty")):
        with pytest.raises(UsageError) as raised:
            check_impersonation(user, groups)
        assert raised.value.message == said
        assert raised.value.exit_code == 125
