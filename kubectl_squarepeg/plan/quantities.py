"""Numbers: CPUs, sizes, GPU counts, durations and whole numbers, docker's forms to Kubernetes'.

Owns what a number of each kind may look like, what it becomes in a manifest (`0.5` CPUs ->
`500m`, `512m` -> `512Mi`) and the limits the API server stores (int32 and int64 fields):
a value it would cap or refuse is refused here, with the limit (docs/decisions/0014).
"""

from __future__ import annotations

import re
from decimal import Decimal

from kubectl_squarepeg.plan.values import ValueProblem

MAX_INT32 = 2**31 - 1  # runAsUser, runAsGroup, ttlSecondsAfterFinished
MAX_INT64 = 2**63 - 1  # terminationGracePeriodSeconds, an extended resource's count


# No number a Kubernetes field takes is longer (int64 has 19 digits), and Python refuses
# to turn an int of more than 4,300 digits into text: longer ones are refused up front.
MAX_NUMBER_CHARS = 24


def bounded(text: str) -> str:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueProblem(f"a number of {len(text)} characters is out of range; give a small one")
    return text


_DECIMAL = r"\d+(\.\d+)?|\.\d+"
_MILLICORES = r"(\d+)m"
_CPUS_HINT = "give a number of CPUs like 0.5, 2 or 1.25 (or millicores like 500m)"


def parse_cpus(text: str) -> str | None:
    """docker's decimal CPU count as a Kubernetes quantity: `0.5` -> `500m`, `2` -> `2`.

    `0` is no limit (None), as in docker, which also clears a value a config file set."""
    text = bounded(text.strip())
    if _is_zero(text):
        return None
    if match := re.fullmatch(_MILLICORES, text):
        millis = Decimal(match[1])
    elif re.fullmatch(_DECIMAL, text):
        millis = Decimal(text) * 1000
    else:
        raise ValueProblem(_CPUS_HINT)
    if millis != millis.to_integral_value():
        raise ValueProblem(
            "Kubernetes counts CPUs in thousandths; use at most 3 decimals, like 0.125"
        )
    if millis <= 0:
        raise ValueProblem("ask for more than 0 CPUs, like 0.5")
    if millis > MAX_INT64:
        # The scheduler and the kubelet read a CPU quantity as int64 millicores.
        raise ValueProblem(
            f"Kubernetes counts CPUs in millicores up to {MAX_INT64} (2^63-1); give a number of "
            "CPUs like 2"
        )
    whole, rest = divmod(int(millis), 1000)
    return str(whole) if rest == 0 else f"{int(millis)}m"


_SIZE = r"(?i)(\d+(?:\.\d+)?) ?([kmgtp])?(i?)b?"
_BINARY_UNITS = ("", "Ki", "Mi", "Gi", "Ti", "Pi")
_SIZE_HINT = "give a size like 512m, 1g, 1.5g or a number of bytes (units b, k, m, g, t, p)"


def parse_size(text: str) -> str:
    """docker's size (`512m`, `1g`, `1.5g`, `512mb`, plain bytes) as a Kubernetes quantity.

    docker's units are binary: `512m` is 512 MiB, so it becomes `512Mi`. A whole number
    keeps its unit; a fraction is expressed in the largest unit that makes it whole.
    """
    match = re.fullmatch(_SIZE, bounded(text.strip()))
    if not match:
        raise ValueProblem(_SIZE_HINT)
    number, unit = Decimal(match[1]), (match[2] or "").lower()
    power = " kmgtp".index(unit) if unit else 0
    if number <= 0:
        raise ValueProblem("give a size above 0, like 512m")
    if number * 1024**power > MAX_INT64:
        # The API server silently caps a binary quantity (512Mi) at 2^63-1.
        raise ValueProblem(
            f"Kubernetes stores a size of at most {MAX_INT64} bytes (2^63-1, just under 8192p); "
            "give a size like 512m"
        )
    if number == number.to_integral_value():
        return f"{int(number)}{_BINARY_UNITS[power]}"
    size_bytes = int(number * 1024**power)  # docker truncates fractions of a byte too
    if size_bytes == 0:
        raise ValueProblem(f"{text.strip()} is less than one byte; give a size like 512m")
    for exponent in range(power, 0, -1):
        whole, rest = divmod(size_bytes, 1024**exponent)
        if rest == 0:
            return f"{whole}{_BINARY_UNITS[exponent]}"
    return str(size_bytes)


def parse_memory(text: str) -> str | None:
    """`-m/--memory`: docker's size form (see `parse_size`); `0` is no limit (None), as in
    docker, which also clears a limit a config file set."""
    if _is_zero(text):
        return None
    return parse_size(text)


def _is_zero(text: str) -> bool:
    return re.fullmatch(r"0+(\.0*)?[a-zA-Z]*", text.strip()) is not None


def parse_gpus(text: str) -> int:
    """A GPU count (`2`, or docker's `count=2`); 0 asks for none."""
    value = bounded(text.strip().removeprefix("count="))
    if value == "all":
        raise ValueProblem(
            "Kubernetes schedules GPUs by count and cannot ask for all of a node's GPUs; "
            "give a number like 1 (`kubectl describe node` shows how many a node has)"
        )
    if not (value.isascii() and value.isdigit()):
        raise ValueProblem("give a GPU count like 1 or 2")
    if int(value) > MAX_INT64:
        raise ValueProblem(f"Kubernetes counts at most {MAX_INT64}; give a GPU count like 1")
    return int(value)


_DURATION_PART = r"(\d+(?:\.\d+)?)(ms|h|m|s)"
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_DURATION_HINT = "give seconds like 300, or a duration like 90s, 5m or 1h30m"
MAX_DURATION = 365 * 86400.0  # beyond it a wait overflows the platform's timeout (or is inf)


def parse_duration_seconds(text: str) -> float:
    """Seconds (`300`) or a Go-style duration (`90s`, `5m`, `1h30m`); more than zero."""
    text = bounded(text.strip())
    if text.startswith("-"):
        raise ValueProblem(f"a duration cannot be negative; {_DURATION_HINT}")
    if re.fullmatch(_DECIMAL, text):
        seconds = float(text)
    else:
        parts = re.findall(_DURATION_PART, text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise ValueProblem(_DURATION_HINT)
        seconds = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
    if seconds <= 0:
        raise ValueProblem(f"a duration must be more than 0; {_DURATION_HINT}")
    if seconds > MAX_DURATION:
        raise ValueProblem(f"a duration is at most 365 days; {_DURATION_HINT}")
    return seconds


def parse_nonnegative_int(text: str, limit: int = MAX_INT64) -> int:
    """A whole number from 0 to `limit` (what the Kubernetes field can store)."""
    text = bounded(text.strip())
    if re.fullmatch(r"-\d+", text):
        raise ValueProblem("it cannot be negative; give a whole number like 30 (0 is allowed)")
    if not (text.isascii() and text.isdigit()):
        raise ValueProblem("give a whole number like 30 (0 is allowed)")
    if int(text) > limit:
        raise ValueProblem(f"Kubernetes stores at most {limit} here; give a smaller number")
    return int(text)


def parse_int32(text: str) -> int:
    """A whole number, 0 to 2^31-1 (an int32 field such as ttlSecondsAfterFinished)."""
    return parse_nonnegative_int(text, MAX_INT32)


def size_bytes(quantity: str) -> int:
    """The bytes of a quantity `parse_size` returned (`512Mi`, `1536Ki`, `1000`)."""
    for power in range(len(_BINARY_UNITS) - 1, 0, -1):
        if quantity.endswith(_BINARY_UNITS[power]):
            number = int(quantity.removesuffix(_BINARY_UNITS[power]))
            return number << (10 * power)
    return int(quantity)
