"""--dns-search and --add-host take exactly the names the API server takes.

For each name, squarepeg's verdict (`run --dry-run-server` exits 0, or 125 with its own
one-line "invalid value" error before anything is sent) is compared with the API server's
own, asked directly: `kubectl create --dry-run=server` of a pod that holds the name in
`spec.dnsConfig.searches` or `spec.hostAliases[].hostnames`, bypassing squarepeg's check.
kubesim does not validate those fields, so the comparison needs the real API server.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Squarepeg
from tests.helpers import pod_manifest

# The API server limits a DNS-1123 subdomain to 253 characters, not its labels to 63.
NAME_253 = ".".join(["a" * 63] * 3) + "." + "a" * 61
NAME_254 = NAME_253 + "a"

NAMES = [
    "example.com",
    "example.com.",
    "example.com..",
    "example.com:8080",
    "[::1]",
    "a_b.local",
    "_sip._tcp.example.com",
    "Example.com",
    ".",
    NAME_253,
    NAME_253 + ".",
    NAME_254,
]
ADDRESS = "10.0.0.1"


def api_server_takes(kubesim: Any, namespace: str, spec: dict[str, Any]) -> bool:
    """Whether the API server creates (in a dry run) a pod with this spec besides its
    container; refused for another reason than the spec fails the test."""
    pod = pod_manifest("probe", restart_policy=None, **spec)
    done = kubesim.kubectl("create", "--dry-run=server", "-n", namespace, "-f", "-",
                           input=json.dumps(pod).encode())
    if done.returncode != 0:
        assert b"is invalid" in done.stderr and b"spec." in done.stderr, done.stderr
    return done.returncode == 0


def squarepeg_takes(squarepeg: Squarepeg, flag: str, value: str) -> bool:
    """Whether `run --dry-run-server FLAG VALUE` passes; a refusal must be squarepeg's own
    one-line error about the flag, not the API server's answer passed on."""
    done = squarepeg("run", "--dry-run-server", flag, value, "alpine", "true")
    if done.code != 0:
        assert done.code == 125, (value, done.code, done.lines)
        assert len(done.lines) == 1, (value, done.lines)
        assert done.has_line("squarepeg: error: invalid value", f"for {flag}"), done.lines
    return done.code == 0


def verdicts(takes: dict[str, tuple[bool, bool]]) -> str:
    return "\n".join(f"{name[:40]!r}: squarepeg {'takes' if ours else 'refuses'}, the API "
                     f"server {'takes' if theirs else 'refuses'}"
                     for name, (ours, theirs) in takes.items())


@pytest.mark.localkube_only("kubesim does not validate dnsConfig.searches")
def test_dns_search_takes_what_the_api_server_takes(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    takes = {name: (squarepeg_takes(squarepeg, "--dns-search", name),
                    api_server_takes(kubesim, namespace, {"dnsConfig": {"searches": [name]}}))
             for name in NAMES}
    assert all(ours == theirs for ours, theirs in takes.values()), verdicts(takes)
    assert takes["example.com."] == (True, True)  # the bug: refused before
    assert takes["example.com:8080"] == (False, False)  # the bug: taken before


@pytest.mark.localkube_only("kubesim does not validate hostAliases")
def test_add_host_takes_what_the_api_server_takes(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    takes = {name: (squarepeg_takes(squarepeg, "--add-host", f"{name}:{ADDRESS}"),
                    api_server_takes(kubesim, namespace, {"hostAliases": [
                        {"ip": ADDRESS, "hostnames": [name]}]}))
             for name in NAMES}
    assert all(ours == theirs for ours, theirs in takes.values()), verdicts(takes)
    assert takes[NAME_253] == (True, True)
