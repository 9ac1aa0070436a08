"""A create refused before anything was sent is retried (the create phase); others are not."""

from __future__ import annotations

from kubectl_squarepeg.cluster import kubectl, refusals


def _failed(stderr: str) -> kubectl.Result:
    return kubectl.Result(("kubectl", "create"), 1, b"", stderr.encode())


def test_only_a_refused_connection_counts_as_nothing_sent() -> None:
    assert refusals.refused_before_sending(_failed(
        'error validating "STDIN": error validating data: failed to download openapi: Get '
        '"https://127.0.0.1:40601/openapi/v2?timeout=32s": dial tcp 127.0.0.1:40601: '
        "connect: connection refused"))
    assert refusals.refused_before_sending(_failed(
        'Post "https://10.0.0.1/api/v1/namespaces/x/pods": dial tcp 10.0.0.1:443: '
        "connect: connection refused"))
    assert refusals.refused_before_sending(_failed(
        "The connection to the server 10.0.0.1:443 was refused - did you specify the right "
        "host or port?"))
    for sent in ('pods "x" already exists', "unexpected EOF", "i/o timeout",
                 'pods is forbidden: User "a" cannot create resource "pods"'):
        assert not refusals.refused_before_sending(_failed(sent)), sent
