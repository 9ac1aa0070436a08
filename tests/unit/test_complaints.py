"""complaints.clean: kubectl's stderr without klog lines or advice about kubectl's flags."""

from __future__ import annotations

from kubectl_squarepeg import kubectl
from kubectl_squarepeg.complaints import clean

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
