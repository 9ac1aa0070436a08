"""-p's grammar (plan/ports.py), its place in the manifest, and the local port check
(run/ports.py `reserve`), with no cluster."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.plan.ports import PublishedPort, check_published, parse_publish
from kubectl_squarepeg.plan.values import ValueProblem
from kubectl_squarepeg.run.ports import reserve
from tests.helpers import wait_until

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


class _FakeForward:
    """A stand-in for one `kubectl port-forward` child: it says `Forwarding from` (or not),
    then ends when told, with the stderr given."""

    def __init__(self, on_stdout: object, listens: bool, stderr: bytes) -> None:
        import threading

        self.argv = ("port-forward",)
        self.exit_code: int | None = None
        self.stderr = stderr
        self.ended = threading.Event()
        self.terminated = False
        if listens:
            on_stdout(b"Forwarding from 127.0.0.1:8080 -> 80\n")  # type: ignore[operator]

    def wait(self, timeout: float | None = None) -> int | None:
        return self.exit_code if self.ended.wait(timeout) else None

    def terminate(self) -> None:
        self.terminated = True
        self.exit_code = -15
        self.ended.set()

    def end(self, code: int = 1) -> None:
        self.exit_code = code
        self.ended.set()


def _forwarding(monkeypatch: pytest.MonkeyPatch, script: list[tuple[bool, bytes]]) -> tuple[
        object, list[_FakeForward], list[str]]:
    from kubectl_squarepeg.cluster import kubectl, verbs
    from kubectl_squarepeg.cluster.commands import Commands
    from kubectl_squarepeg.run import ports

    started: list[_FakeForward] = []

    def fake(target: object, pod: str, address: str, pairs: object, *,
             on_stdout: object) -> _FakeForward:
        listens, stderr = script[min(len(started), len(script) - 1)]
        child = _FakeForward(on_stdout, listens, stderr)
        started.append(child)
        return child

    class Said:
        def __init__(self) -> None:
            self.lines: list[str] = []
            self.quiet = False

        def notice(self, text: str) -> None:
            self.lines.append(text)

        status = notice

        def warn(self, text: str) -> None:
            self.lines.append("warning: " + text)

    monkeypatch.setattr(verbs, "port_forward", fake)
    said = Said()
    forwarding = ports.Forwarding(kubectl.Target(), "web", parse_publish("8080:80"),
                                  said, Commands(kubectl.Target()))  # type: ignore[arg-type]
    return forwarding, started, said.lines


def _until(condition: Callable[[], object]) -> None:
    wait_until(condition, 10, "the forwarding's next step", interval=0.01)


def test_a_forward_that_never_listened_fails_the_run_with_kubectls_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    refusal = (b"error: error upgrading connection: the server could not find the requested "
               b"resource\n")
    forwarding, started, _ = _forwarding(monkeypatch, [(False, refusal)])
    forwarding.start()  # type: ignore[attr-defined]
    _until(lambda: started)
    started[0].end()
    _until(lambda: forwarding.failure is not None)  # type: ignore[attr-defined]
    line = forwarding.failure.one_line()  # type: ignore[attr-defined]
    assert "cannot publish 127.0.0.1:8080 -> 80/tcp" in line
    assert "error upgrading connection" in line and "run without -p" in line
    assert len(started) == 1  # not started again
    forwarding.stop()  # type: ignore[attr-defined]


def test_a_dropped_forward_is_started_again_and_stopped_at_the_end(
        monkeypatch: pytest.MonkeyPatch) -> None:
    refused_inside = (b"E1204 portforward.go:424] an error occurred forwarding 8080 -> 80: error "
                      b"forwarding port 80 to pod x: dial tcp4 127.0.0.1:80: connect: connection "
                      b"refused\nerror: lost connection to pod\n")
    forwarding, started, said = _forwarding(
        monkeypatch, [(True, b"error: lost connection to pod\n"), (True, refused_inside),
                      (True, b"")])
    forwarding.start()  # type: ignore[attr-defined]
    _until(lambda: len(started) == 1)
    assert said == ["127.0.0.1:8080 -> 80/tcp"]  # announced once it listens
    started[0].end()  # a drop: a warning, then a new kubectl
    _until(lambda: len(started) == 2)
    started[1].end()  # a connection refused inside the pod: a status line, no warning
    _until(lambda: len(started) == 3)
    forwarding.stop()  # type: ignore[attr-defined]
    assert started[2].terminated and forwarding.failure is None  # type: ignore[attr-defined]
    assert said[1] == ("warning: port-forward to pod/web dropped (lost connection to pod); "
                       "starting it again")
    assert "found nothing listening in the container" in said[3]
    assert not any(line.startswith("warning:") for line in said[2:])
