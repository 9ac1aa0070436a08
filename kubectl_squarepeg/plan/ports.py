"""`-p`/`--publish`: docker's grammar, read into the ports a run forwards from your machine.

Owns the parsing of `[HOST_IP:][HOST_PORT:]CONTAINER_PORT[/PROTO]` (and docker's ranges,
`8000-8002:80-82`), what each part may be, and the checks between several `-p`s; pure, no
socket is touched (run/ports.py checks the local ports and runs `kubectl port-forward`).

What differs from docker, each with its reason (docs/decisions/0230):
- no HOST_IP means 127.0.0.1, not docker's every interface: a pod published on a laptop's
  every interface would be reachable from the whole network it is on, where docker's
  container is on the same machine; `0.0.0.0:8080:80` asks for docker's;
- `/udp` and `/sctp` are refused: `kubectl port-forward` carries TCP only;
- a host range for one container port (`8000-8010:80`, docker picks a free one) is refused:
  give one host port, or leave it out and a free one is taken;
- a HOST_IP must be an address (kubectl's `--address` also takes `localhost`; docker does not).
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_squarepeg.plan.values import ValueProblem

DEFAULT_ADDRESS = "127.0.0.1"
# One -p range forwards this many ports at most: each is a listener of kubectl's.
MAX_RANGE = 100
FORM = "[HOST_IP:][HOST_PORT:]CONTAINER_PORT[/tcp], like 8080:80 or 127.0.0.1:8080:80"


@dataclass(frozen=True)
class PublishedPort:
    """One port forwarded from your machine to the container.

    `host_port` 0 means a free port, taken when the run starts (an empty HOST_PORT)."""

    address: str
    host_port: int
    container_port: int

    def shown(self) -> str:
        """`127.0.0.1:8080 -> 80/tcp`, as the run announces it (docker port's form)."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{host}:{self.host_port} -> {self.container_port}/tcp"


def _port(text: str, what: str, *, zero_ok: bool = False) -> int:
    cleaned = text.strip()
    if not cleaned.isascii() or not cleaned.isdigit() or len(cleaned) > 5:
        raise ValueProblem(f"{what} {text!r} is not a port number (1-65535); the form is {FORM}")
    number = int(cleaned)
    if number == 0 and zero_ok:
        return 0
    if not 1 <= number <= 65535:
        raise ValueProblem(f"{what} {number} is outside 1-65535")
    return number


def _ports(text: str, what: str, *, zero_ok: bool = False) -> list[int]:
    """One port, or a range `A-B` (both ends included)."""
    first, dash, last = text.partition("-")
    if not dash:
        return [_port(text, what, zero_ok=zero_ok)]
    low, high = _port(first, what), _port(last, what)
    if high < low:
        raise ValueProblem(f"{what} range {text!r} ends before it begins")
    if high - low + 1 > MAX_RANGE:
        raise ValueProblem(f"{what} range {text!r} has over {MAX_RANGE} ports; publish fewer")
    return list(range(low, high + 1))


def _address(text: str) -> str:
    import ipaddress  # only a -p with HOST_IP pays for it

    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ValueProblem(
            f"HOST_IP {text!r} is not an IP address; give one like 127.0.0.1 or 0.0.0.0 "
            "(an IPv6 address in brackets: [::1]:8080:80)"
        ) from None


def _split_address(text: str) -> tuple[str | None, str]:
    """(HOST_IP or None, the rest): `[::1]:8080:80`, `127.0.0.1:8080:80`, `8080:80`."""
    if text.startswith("["):
        address, bracket, rest = text[1:].partition("]")
        if not bracket or not rest.startswith(":"):
            raise ValueProblem(
                f"an IPv6 HOST_IP is written [ADDRESS]:HOST_PORT:CONTAINER_PORT ({FORM})"
            )
        return _address(address), rest[1:]
    parts = text.split(":")
    if len(parts) > 3:
        raise ValueProblem(
            f"too many `:`; an IPv6 HOST_IP goes in brackets ([::1]:8080:80); {FORM}"
        )
    if len(parts) == 3:
        return _address(parts[0]), f"{parts[1]}:{parts[2]}"
    return None, text


def parse_publish(text: str) -> tuple[PublishedPort, ...]:
    """One `-p` value: the ports it publishes (more than one for a range)."""
    body, slash, proto = text.strip().partition("/")
    if slash:
        if proto.lower() in ("udp", "sctp"):
            raise ValueProblem(
                f"{proto} cannot be published: kubectl port-forward carries TCP only; "
                "leave out /" + proto
            )
        if proto.lower() != "tcp":
            raise ValueProblem(f"unknown protocol {proto!r}; only tcp can be published")
    if not body:
        raise ValueProblem(f"no CONTAINER_PORT; the form is {FORM}")
    address, rest = _split_address(body)
    host_text, colon, container_text = rest.rpartition(":")
    container = _ports(container_text, "CONTAINER_PORT")
    if not colon or not host_text.strip():
        hosts = [0] * len(container)  # no HOST_PORT: free ports, taken at the start
    else:
        hosts = _ports(host_text, "HOST_PORT", zero_ok=True)
        if hosts == [0]:
            hosts = [0] * len(container)
        elif len(hosts) != len(container):
            raise ValueProblem(
                f"HOST_PORT {host_text} and CONTAINER_PORT {container_text} are not the same "
                "number of ports (docker would pick one free host port of a range: give one "
                "HOST_PORT, or leave it out and a free one is taken)"
            )
    where = address if address is not None else DEFAULT_ADDRESS
    return tuple(PublishedPort(where, h, c) for h, c in zip(hosts, container, strict=True))


def check_published(ports: tuple[PublishedPort, ...]) -> str | None:
    """What is wrong between several -p (a host port given twice), or None."""
    seen: set[int] = set()
    for port in ports:
        if port.host_port == 0:
            continue
        if port.host_port in seen:
            return f"host port {port.host_port} is published twice"
        seen.add(port.host_port)
    return None


def container_ports(ports: tuple[PublishedPort, ...]) -> list[int]:
    """The container's ports, each once, in the order given: its `ports` in the manifest."""
    return list(dict.fromkeys(port.container_port for port in ports))


def by_address(ports: tuple[PublishedPort, ...]) -> dict[str, list[PublishedPort]]:
    """The ports grouped by their local address: one `kubectl port-forward --address` each."""
    groups: dict[str, list[PublishedPort]] = {}
    for port in ports:
        groups.setdefault(port.address, []).append(port)
    return groups


def recorded(ports: tuple[PublishedPort, ...]) -> str:
    """The ports as `run -d -p` records them on the Pod or Job: -p values, comma-separated
    (an empty HOST_PORT stays 0: `port` takes a free one when it starts)."""
    return ",".join(
        f"{'[' + p.address + ']' if ':' in p.address else p.address}:{p.host_port}:"
        f"{p.container_port}"
        for p in ports
    )


def parse_recorded(text: str) -> tuple[PublishedPort, ...]:
    """`recorded`'s text back; what cannot be read is left out (an annotation someone edited)."""
    found: list[PublishedPort] = []
    for part in text.split(","):
        try:
            found.extend(parse_publish(part))
        except ValueProblem:
            continue
    return tuple(found)
