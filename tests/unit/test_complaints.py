"""complaints.clean: kubectl's stderr without klog lines or advice about kubectl's flags;
complaints.unreachable: whether the API server answered at all."""

from __future__ import annotations

import pytest

from kubectl_squarepeg.cluster import complaints, kubectl
from kubectl_squarepeg.cluster.complaints import (
    clean,
    credential_plugin_failed,
    denied,
    unreachable,
)

KLOG = (
    "E1203 15:30:01.123456   4242 memcache.go:265] couldn't get current server API group "
    "list: Get \"https://127.0.0.1:1/api\": dial tcp 127.0.0.1:1: connect: connection refused"
)


def test_klog_lines_go_when_kubectl_also_said_it_plainly() -> None:
    refused = "The connection to the server 127.0.0.1:1 was refused"
    assert clean([KLOG, KLOG, refused]) == refused


def test_a_klog_line_alone_is_kept_without_its_prefix() -> None:
    assert clean([KLOG]).startswith("couldn't get current server API group list")


def test_advice_about_validate_false_is_dropped() -> None:
    result = kubectl.Result(
        (), 1, b"",
        b'error: error validating "STDIN": error validating data: failed to download openapi: '
        b"connection refused; if you choose to ignore these errors, turn validation off with "
        b"--validate=false\n",
    )
    assert result.error_text == (
        'error validating "STDIN": error validating data: failed to download openapi: '
        "connection refused"
    )
    assert "--validate" not in result.error_text


@pytest.mark.parametrize(("said", "no_answer"), [
    ("The connection to the server 127.0.0.1:1 was refused - did you specify the right host "
     "or port?", True),
    ('Get "https://10.0.0.1:6443/api": dial tcp 10.0.0.1:6443: i/o timeout', True),
    ("Error from server (ServiceUnavailable): the server is currently unable to handle the "
     "request", True),
    ('pods is forbidden: User "bob" cannot list resource "pods"', False),
    ('admission webhook "policy.example.com" denied the request: images must be pinned',
     False),
])
def test_a_complaint_says_whether_the_api_server_answered(said: str, no_answer: bool) -> None:
    assert unreachable(said) is no_answer


@pytest.mark.parametrize(("said", "found"), [
    ('pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the '
     'namespace "team"', ("list", "pods")),
    ('jobs.batch is forbidden: User "system:serviceaccount:t:runner" cannot create resource '
     '"jobs" in API group "batch" in the namespace "t"', ("create", "jobs.batch")),
    ('User "bob" cannot create resource "pods/attach" in API group ""', ("create", "pods/attach")),
    ("The connection to the server 127.0.0.1:1 was refused", None),
])
def test_a_denial_is_read_as_verb_and_resource(said: str, found: tuple[str, str] | None) -> None:
    assert denied(said) == found


def test_a_plugins_complaint_said_twice_is_quoted_once_and_known_as_the_plugins() -> None:
    said = ["sso: down", "sso: down", "Unable to connect to the server: getting credentials: "
            "exec: executable /p failed with exit code 7"]
    text = clean(said)
    assert text.count("sso: down") == 1
    assert credential_plugin_failed(text)
    assert not credential_plugin_failed("The connection to the server 127.0.0.1:1 was refused")


def test_server_warnings_are_each_said_once_without_kubectls_prefix() -> None:
    stderr = (b'Warning: would violate PodSecurity "restricted:latest": runAsNonRoot != true\n'
              b"I1203 15:30:01.123456   4242 round_trippers.go:1] GET ...\n"
              b'Warning: would violate PodSecurity "restricted:latest": runAsNonRoot != true\n'
              b"Warning: spec.foo is deprecated\n")
    assert complaints.server_warnings(stderr) == [
        'would violate PodSecurity "restricted:latest": runAsNonRoot != true',
        "spec.foo is deprecated",
    ]
    assert complaints.server_warnings(b"") == []
