"""-p's grammar (plan/ports.py), its place in the manifest, and the local port check
(run/ports.py `reserve`), with no cluster."""

from __future__ import annotations

import socket

import pytest

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.plan.ports import PublishedPort, check_published, parse_publish
from kubectl_squarepeg.plan.values import ValueProblem
from kubectl_squarepeg.run.ports import reserve

LOCAL = "127.0.0.1"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("80", [(LOCAL, 0, 80)]),
        ("8080:80", [(LOCAL, 8080, 80)]),
        ("8080:80/tcp", [(LOCAL, 8080, 80)]),
        ("8080:80/TCP", [(LOCAL, 8080, 80)]),
        (":80", [(LOCAL, 0, 80)]),
        ("0:80", [(LOCAL, 0, 80)]),
        ("0.0.0.0:8080:80", [("0.0.0.0", 8080, 80)]),
        ("127.0.0.1::80", [(LOCAL, 0, 80)]),
        ("[::1]:8080:80", [("::1", 8080, 80)]),
        ("8000-8001:80-81", [(LOCAL, 8000, 80), (LOCAL, 8001, 81)]),
        ("80-81", [(LOCAL, 0, 80), (LOCAL, 0, 81)]),
        ("65535:1", [(LOCAL, 65535, 1)]),
    ],
)
def test_docker_forms(text: str, expected: list[tuple[str, int, int]]) -> None:
    assert parse_publish(text) == tuple(PublishedPort(*e) for e in expected)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "no CONTAINER_PORT"),
        ("8080:", "not a port number"),
        ("0", "outside 1-65535"),
        ("8080:65536", "outside 1-65535"),
        ("70000:80", "outside 1-65535"),
        ("http", "not a port number"),
        ("80/udp", "TCP only"),
        ("80/sctp", "TCP only"),
        ("80/quic", "unknown protocol"),
        ("8000-8010:80", "not the same number"),
        ("8000-8001:80-82", "not the same number"),
        ("90-80", "ends before it begins"),
        ("1-200", "over 100 ports"),
        ("localhost:8080:80", "not an IP address"),
        ("1.2.3:8080:80", "not an IP address"),
        ("::1:8080:80", "in brackets"),
        ("[::1:8080:80", "[ADDRESS]"),
        ("\u0668\u0660:80", "not a port number"),  # Arabic-Indic digits
    ],
)
def test_bad_forms_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueProblem, match=says):
        parse_publish(text)


def test_a_host_port_given_twice_is_refused() -> None:
    ports = parse_publish("8080:80") + parse_publish("0.0.0.0:8080:81")
    assert check_published(ports) == "host port 8080 is published twice"
    assert check_published(parse_publish(":80") + parse_publish(":81")) is None


def test_reserve_takes_free_ports_and_keeps_given_ones() -> None:
    with socket.socket() as probe:
        probe.bind((LOCAL, 0))
        given = probe.getsockname()[1]
    chosen = reserve(parse_publish(f"{given}:80") + parse_publish(":80") + parse_publish(":81"))
    assert chosen[0] == PublishedPort(LOCAL, given, 80)
    free = {chosen[1].host_port, chosen[2].host_port}
    assert len(free) == 2 and 0 not in free and given not in free


def test_reserve_refuses_a_taken_port() -> None:
    with socket.socket() as taken:
        taken.bind((LOCAL, 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=f"local port 127.0.0.1:{port} is already in use"):
            reserve(parse_publish(f"{port}:80"))
        with pytest.raises(UsageError, match="already in use"):
            reserve(parse_publish(f"0.0.0.0:{port}:80"))  # every interface includes it


def test_reserve_refuses_an_address_not_of_this_machine() -> None:
    with pytest.raises(UsageError, match="not an address of this machine"):
        reserve(parse_publish("192.0.2.1:8080:80"))  # TEST-NET-1


def test_the_manifest_lists_each_container_port_once_and_claims_them() -> None:
    from tests.unit.test_manifest import main_container, plan

    built = plan(publish=("8080:80", "127.0.0.1::80/tcp", "9000-9001:90-91"))
    assert main_container(built)["ports"] == [
        {"containerPort": port, "protocol": "TCP"} for port in (80, 90, 91)
    ]
    dropped = plan("kubernetes:\n  patches:\n  - op: remove\n    path: /spec/containers/0/ports\n",
                   publish=("80",))
    assert main_container(dropped)["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert "which --publish set on the command line" in dropped.warnings[0]
    assert "ports" not in main_container(plan())
