"""`ps -A` and `ps --filter` (issue 35; decision 0390) through the installed command and the
real kubectl, against runs in two namespaces: -A lists the user's runs in every namespace
with a NAMESPACE column; `name=`, `status=` and `label=` filter as docker's (same key ORed,
but labels ANDed as moby's; different keys ANDed; a status filter needs no -a); a bad
filter is one line and exit 125."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Squarepeg, names
from tests.helpers import wait_until

SLEEP = ("--stop-timeout", "1", "alpine", "sleep", "120")


@pytest.fixture
def other_namespace(kubesim: Any, namespace: str) -> Iterator[str]:
    other = f"t-ps-other-{uuid.uuid4().hex[:6]}"
    assert kubesim.kubectl("create", "namespace", other).returncode == 0
    yield other
    for each in (namespace, other):
        kubesim.kubectl("delete", "pods,jobs", "--all", "-n", each, "--wait=false",
                        "--cascade=background")
    wait_until(lambda: names(kubesim, namespace) == [] and names(kubesim, other) == [], 60,
               "the runs to be gone")
    kubesim.kubectl("delete", "namespace", other, "--wait=false")


def _names(squarepeg: Squarepeg, *args: str) -> list[str]:
    done = squarepeg("ps", "-q", *args)
    assert done.code == 0, done.stderr
    return sorted(n for n in done.stdout.decode().split() if n.startswith("psf-"))


def test_ps_all_namespaces_and_each_filter(
        squarepeg: Squarepeg, namespace: str, other_namespace: str) -> None:
    def run_d(*args: str) -> None:
        done = squarepeg("run", "-d", *args)
        assert done.code == 0, done.stderr

    run_d("--name", "psf-web-1", "-l", "app=web", "-l", "tier=front", *SLEEP)
    run_d("--name", "psf-db-1", "-l", "app=db", *SLEEP)
    run_d("--name", "psf-done", "-l", "app=web", "alpine", "true")
    run_d("-n", other_namespace, "--name", "psf-web-2", "-l", "app=web", *SLEEP)
    wait_until(lambda: _names(squarepeg, "-f", "status=exited") == ["psf-done"], 60,
               "psf-done to have exited")

    assert _names(squarepeg) == ["psf-db-1", "psf-web-1"]  # this namespace, running
    assert _names(squarepeg, "-A") == ["psf-db-1", "psf-web-1", "psf-web-2"]
    table = squarepeg("ps", "--all-namespaces").stdout.decode().splitlines()
    assert table[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert any(line.split()[:2] == [other_namespace, "psf-web-2"] for line in table)
    done = squarepeg("ps", "-A", "--format", "json")
    rows = {row["Names"]: row for row in map(json.loads, done.stdout.decode().splitlines())}
    assert rows["psf-web-2"]["Namespace"] == other_namespace
    assert rows["psf-web-1"]["Namespace"] == namespace

    # name=: a regular expression searched in the name; several ORed.
    assert _names(squarepeg, "-f", "name=web") == ["psf-web-1"]
    assert _names(squarepeg, "--filter", "name=web", "--filter", "name=db") == [
        "psf-db-1", "psf-web-1"]
    assert _names(squarepeg, "-a", "-f", "name=^psf-d") == ["psf-db-1", "psf-done"]
    # status=: docker's words; a status filter lists finished runs without -a; several ORed.
    assert _names(squarepeg, "-f", "status=exited") == ["psf-done"]
    assert _names(squarepeg, "-f", "status=running", "-f", "status=exited") == [
        "psf-db-1", "psf-done", "psf-web-1"]
    assert _names(squarepeg, "-f", "status=paused") == []
    # label=: KEY or KEY=VALUE; several ANDed (moby's MatchKVList).
    assert _names(squarepeg, "-a", "-f", "label=app=web") == ["psf-done", "psf-web-1"]
    assert _names(squarepeg, "-a", "-f", "label=app=web", "-f", "label=tier") == ["psf-web-1"]
    assert _names(squarepeg, "-a", "-f", "label=tier", "-f", "label=app=db") == []
    # Different keys ANDed, and with -A.
    assert _names(squarepeg, "-A", "-f", "label=app=web", "-f", "status=running") == [
        "psf-web-1", "psf-web-2"]
    assert _names(squarepeg, "-f", "name=db", "-f", "label=app=web") == []

    bad = squarepeg("ps", "-f", "id=abc")
    assert bad.code == 125
    assert bad.stderr.splitlines() == [
        "squarepeg: error: invalid value 'id=abc' for --filter: not KEY=VALUE with a key "
        "squarepeg filters on; use name=TEXT, status=STATE or label=KEY[=VALUE]"]
