"""Kubernetes resource quantities ("500m", "1.5", "512Mi", "1G", "1e3") as numbers.

Owns the one parser the scheduler, the kubelet and quota admission share, so that
"how much is 512Mi" has a single answer in the simulator.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
# The apiserver's grammar: a signed decimal number, then a binary suffix, a decimal SI
# suffix, or a decimal exponent (e/E followed by a signed integer).
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(q: str) -> Decimal:
    """The exact value of quantity `q` in base units (cores, bytes, counts)."""
    match = _QUANTITY.match(q.strip())
    if match is None:
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {q!r}"
        )
    try:
        number = Decimal(match["number"])
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise QuantityError(f"not a number: {q!r}") from exc
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * Decimal(10) ** int(suffix[1:])


def parse_cpu(q: str) -> float:
    """CPU quantity in cores: "500m" -> 0.5, "2" -> 2.0."""
    return float(parse_quantity(q))


def parse_memory(q: str) -> int:
    """Memory quantity in bytes, rounded up as the apiserver does: "512Mi" -> 536870912."""
    value = parse_quantity(q)
    whole = int(value)
    return whole + 1 if value > whole else whole
