"""Parsers and validators of single flag and config values: docker's forms to Kubernetes'.

Owns what a value of each kind may look like and what it becomes in a manifest (`0.5` CPUs
-> `500m`, `512m` -> `512Mi`, `1000:1000` -> runAsUser/runAsGroup, ...). Every function is
pure and raises `ValueProblem` whose text is the hint: the accepted form, with an example.
The caller knows where the value came from (a flag, or a file and line) and builds the
error message around it, so the same parser serves the command line and config files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from kubectl_squarepeg.plan.labels import MANAGED_BY_LABEL, SQUAREPEG_LABEL_PREFIX

MAX_LABEL = 63
MAX_SUBDOMAIN = 253
MAX_INT32 = 2**31 - 1  # runAsUser, runAsGroup, ttlSecondsAfterFinished
MAX_INT64 = 2**63 - 1  # terminationGracePeriodSeconds, an extended resource's count


# Patterns are strings: `re` compiles each on first use (and caches it), so a run pays
# only for the ones it needs.


class ValueProblem(ValueError):
    """A value that does not parse; its text says which form is accepted."""


# --- Kubernetes names ---------------------------------------------------------------------

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"


def validate_name(text: str) -> str:
    """A lowercase RFC 1123 label (pod, namespace and host names): at most 63 characters."""
    if len(text) > MAX_LABEL:
        raise ValueProblem(f"use at most {MAX_LABEL} characters (this one has {len(text)})")
    if not re.fullmatch(_DNS_LABEL, text):
        raise ValueProblem(
            "use lowercase letters, digits and '-', starting and ending with a letter or "
            "digit, like my-run-1"
        )
    return text


def validate_hostname(text: str) -> str:
    """`-h/--hostname`: a pod's host name is one RFC 1123 label, where docker also takes a
    dotted name; the dotted case gets its own hint."""
    if "." in text:
        raise ValueProblem(
            "a pod's host name is one label, without dots; give the first part, and set "
            "`subdomain` under `kubernetes.spec` in a config file for the domain"
        )
    return validate_name(text)


def validate_subdomain(text: str) -> str:
    """A lowercase RFC 1123 subdomain (secret, service account, class names)."""
    if len(text) > MAX_SUBDOMAIN or not re.fullmatch(_DNS_SUBDOMAIN, text):
        raise ValueProblem(
            "use lowercase letters, digits, '-' and '.', starting and ending with a letter "
            "or digit, like my-secret"
        )
    return text


def validate_label_key(key: str) -> str:
    """A label or annotation key: NAME or PREFIX/NAME, PREFIX a DNS subdomain."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > MAX_SUBDOMAIN or not re.fullmatch(_DNS_SUBDOMAIN, prefix)):
        raise ValueProblem(
            f"the prefix {prefix!r} must be a lowercase DNS subdomain, like example.com/NAME"
        )
    if len(name) > MAX_LABEL or not re.fullmatch(_LABEL_NAME, name):
        raise ValueProblem(
            "a key is NAME or PREFIX/NAME; NAME has at most 63 letters, digits, '-', '_' "
            "and '.', starting and ending with a letter or digit, like team or example.com/team"
        )
    return key


def validate_annotation_key(key: str) -> str:
    """Annotation keys follow the label key rules; their values are free text."""
    return validate_label_key(key)


def validate_label_value(value: str) -> str:
    """A label value: empty, or at most 63 letters, digits, '-', '_', '.', alphanumeric ends."""
    if value and (len(value) > MAX_LABEL or not re.fullmatch(_LABEL_NAME, value)):
        raise ValueProblem(
            "a label value has at most 63 letters, digits, '-', '_' and '.', starting and "
            "ending with a letter or digit (or is empty)"
        )
    return value


def is_reserved_label(key: str) -> bool:
    """Labels squarepeg sets itself; the orphan sweep depends on them."""
    return key == MANAGED_BY_LABEL or key.startswith(SQUAREPEG_LABEL_PREFIX)


RESERVED_LABEL_HINT = (
    f"{MANAGED_BY_LABEL} and {SQUAREPEG_LABEL_PREFIX}* are set by squarepeg itself (use "
    "--keep or `cleanup: false` for squarepeg.io/keep); pick another label key"
)


def quoted(text: str, limit: int = 60) -> str:
    """A value as an error line quotes it: repr, and a long one cut short (saying how long
    it was), so that one bad value of 5,000 characters is still one readable line."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[: limit - 20]!r}... ({len(text)} characters)"


# --- key=value forms ----------------------------------------------------------------------


def parse_key_value(text: str) -> tuple[str, str]:
    """`KEY=VALUE`; the value may be empty and may contain '='."""
    key, equals, value = text.partition("=")
    if not equals:
        raise ValueProblem("use KEY=VALUE")
    if not key:
        raise ValueProblem("the key before '=' is empty; use KEY=VALUE")
    return key, value


def parse_docker_pair(text: str) -> tuple[str, str]:
    """docker's `-l`/`--annotation` `KEY[=VALUE]`: a bare KEY has the empty value, as in
    docker (`docker run -l my-label` is its documented example)."""
    if "=" in text:
        return parse_key_value(text)
    if not text:
        raise ValueProblem("give KEY or KEY=VALUE")
    return text, ""


def _env_name(name: str) -> str:
    if not name or any(ch.isspace() for ch in name):
        raise ValueProblem(f"{name!r} is not a variable name; use KEY=VALUE or KEY")
    return name


def parse_env_item(text: str, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """`KEY=VALUE`, or a bare `KEY` that takes the local value (None when unset, as docker)."""
    key, equals, value = text.partition("=")
    _env_name(key)
    if equals:
        return key, value
    return (key, environ[key]) if key in environ else None


def parse_env_file_text(text: str) -> list[tuple[str, str] | str]:
    """docker's env-file format: `KEY=VALUE` or bare `KEY` lines, `#` comments, blank lines.

    Values are taken verbatim (quotes included), as docker does. A bare KEY comes back as a
    plain string for the caller to look up locally.
    """
    items: list[tuple[str, str] | str] = []
    for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        line = raw.lstrip()
        if not line or line.startswith("#"):
            continue
        key, equals, value = line.partition("=")
        try:
            _env_name(key)
        except ValueProblem:
            raise ValueProblem(
                f"line {number} has no valid variable name before '='; write KEY=VALUE or "
                "KEY, one per line (# starts a comment)"
            ) from None
        items.append((key, value) if equals else key)
    return items


# --- quantities ---------------------------------------------------------------------------

# No number a Kubernetes field takes is longer (int64 has 19 digits), and Python refuses
# to turn an int of more than 4,300 digits into text: longer ones are refused up front.
MAX_NUMBER_CHARS = 24


def _bounded(text: str) -> str:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueProblem(f"a number of {len(text)} characters is out of range; give a small one")
    return text


_DECIMAL = r"\d+(\.\d+)?|\.\d+"
_MILLICORES = r"(\d+)m"
_CPUS_HINT = "give a number of CPUs like 0.5, 2 or 1.25 (or millicores like 500m)"


def parse_cpus(text: str) -> str | None:
    """docker's decimal CPU count as a Kubernetes quantity: `0.5` -> `500m`, `2` -> `2`.

    `0` is no limit (None), as in docker, which also clears a value a config file set."""
    text = _bounded(text.strip())
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
    match = re.fullmatch(_SIZE, _bounded(text.strip()))
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
    value = _bounded(text.strip().removeprefix("count="))
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


# --- small enumerations -------------------------------------------------------------------

_PULL_POLICIES = {
    "always": "Always",
    "missing": "IfNotPresent",
    "never": "Never",
    "ifnotpresent": "IfNotPresent",
}


def parse_pull(text: str) -> str:
    """docker's `--pull` as an imagePullPolicy (Kubernetes' own names are accepted too)."""
    policy = _PULL_POLICIES.get(text.strip().lower())
    if policy is None:
        raise ValueProblem("use always, missing or never")
    return policy


def parse_mode(text: str) -> str:
    """`pod` or `job`."""
    mode = text.strip().lower()
    if mode not in ("pod", "job"):
        raise ValueProblem("use pod or job")
    return mode


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def parse_bool(text: str) -> bool:
    """A config switch given as text (after `${VAR}` interpolation)."""
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueProblem("use true or false")


_PLATFORM = r"([a-z0-9]+)(?:/([a-z0-9_]+)(/[a-z0-9]+)?)?"
# The names docker normalises to Go's GOARCH, which the nodes' kubernetes.io/arch label uses.
_ARCH_ALIASES = {"x86_64": "amd64", "x86-64": "amd64", "aarch64": "arm64", "armhf": "arm",
                 "armel": "arm", "i386": "386", "i686": "386"}  # fmt: skip


# Go's GOARCH names: an architecture alone (`arm64`) is one of these, not an OS.
_GO_ARCHES = frozenset({
    "386", "amd64", "amd64p32", "arm", "armbe", "arm64", "arm64be", "loong64", "mips", "mipsle",
    "mips64", "mips64le", "mips64p32", "mips64p32le", "ppc", "ppc64", "ppc64le", "riscv",
    "riscv64", "s390", "s390x", "sparc", "sparc64", "wasm",
})  # fmt: skip


def parse_platform(text: str) -> tuple[str, str | None]:
    """docker's `OS[/ARCH[/VARIANT]]` as the nodes' kubernetes.io/os and kubernetes.io/arch
    labels. Nodes carry no label for a variant (`linux/arm64/v8` is `linux/arm64`), and
    docker's architecture aliases (`x86_64`, `aarch64`) become GOARCH names as docker's do.
    One word that names an architecture (`arm64`) is `linux/arm64`, as docker on Linux
    reads it; any other one word is an OS, whatever the node's architecture."""
    lowered = text.strip().lower()
    if lowered in _ARCH_ALIASES or lowered in _GO_ARCHES:
        return "linux", _ARCH_ALIASES.get(lowered, lowered)
    for alias, arch in _ARCH_ALIASES.items():
        lowered = lowered.replace(f"/{alias}", f"/{arch}")
    match = re.fullmatch(_PLATFORM, lowered)
    if not match:
        raise ValueProblem("use OS[/ARCH[/VARIANT]], like linux/amd64 or linux/arm64/v8")
    return match[1], match[2]


# --- users, durations, counts ---------------------------------------------------------------

_USER = r"(\d+)(?::(\d+))?"


def parse_user(text: str) -> tuple[int, int | None]:
    """Numeric `UID[:GID]`; Kubernetes cannot look a user name up in the image."""
    match = re.fullmatch(_USER, _bounded(text.strip()), re.ASCII)
    if not match:
        raise ValueProblem(
            "Kubernetes needs numeric IDs: use UID or UID:GID like 1000 or 1000:1000 "
            "(`docker run --rm --entrypoint id IMAGE NAME` prints the IDs of a user name)"
        )
    ids = int(match[1]), None if match[2] is None else int(match[2])
    if any(i is not None and i > MAX_INT32 for i in ids):
        raise ValueProblem(
            f"Kubernetes stores user and group IDs up to {MAX_INT32} (2^31-1); give a smaller ID"
        )
    return ids


_DURATION_PART = r"(\d+(?:\.\d+)?)(ms|h|m|s)"
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_DURATION_HINT = "give seconds like 300, or a duration like 90s, 5m or 1h30m"
MAX_DURATION = 365 * 86400.0  # beyond it a wait overflows the platform's timeout (or is inf)


def parse_duration_seconds(text: str) -> float:
    """Seconds (`300`) or a Go-style duration (`90s`, `5m`, `1h30m`); more than zero."""
    text = _bounded(text.strip())
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
    text = _bounded(text.strip())
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


# --- paths, commands, capabilities, DNS ----------------------------------------------------


def parse_workdir(text: str) -> str:
    """An absolute directory inside the container, as docker requires."""
    if not text.startswith("/"):
        raise ValueProblem("the working directory must be an absolute path, like /app")
    return text


def parse_entrypoint(text: str) -> str:
    """`--entrypoint`: a program, or "" to reset the image's ENTRYPOINT, as docker does."""
    if text and not text.strip():
        raise ValueProblem('give a program like /bin/sh, or "" to reset the entrypoint')
    return text


def parse_nonempty(text: str) -> str:
    """Any text but the empty string (entrypoint, context and file names)."""
    if not text.strip():
        raise ValueProblem("give a non-empty value")
    return text


_CAPABILITY = r"[A-Z][A-Z0-9_]*"


def parse_capability(text: str) -> str:
    """A Linux capability as Kubernetes names it: `net_admin` / `CAP_NET_ADMIN` -> `NET_ADMIN`."""
    name = text.strip().upper().removeprefix("CAP_")
    if not re.fullmatch(_CAPABILITY, name):
        raise ValueProblem("give a capability name like NET_ADMIN or SYS_TIME (or ALL)")
    return name


def _ip_address(text: str) -> str:
    import ipaddress  # only for the few flags that take an address

    try:
        return str(ipaddress.ip_address(text.strip().removeprefix("[").removesuffix("]")))
    except ValueError:
        raise ValueProblem(f"{text!r} is not an IP address; give one like 10.0.0.2") from None


def parse_dns_ip(text: str) -> str:
    """A nameserver for `--dns`: an IPv4 or IPv6 address."""
    return _ip_address(text)


_DOMAIN = r"[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*\.?"


def parse_dns_search(text: str) -> str:
    """A search domain for `--dns-search`, like example.com."""
    if len(text) > MAX_SUBDOMAIN or not re.fullmatch(_DOMAIN, text):
        raise ValueProblem("give a domain name like example.com")
    return text


_DNS_OPTION_NAME = r"[A-Za-z0-9][-A-Za-z0-9_.]*"


def parse_dns_option(text: str) -> tuple[str, str | None]:
    """A resolv.conf option for `--dns-option`: `NAME` or `NAME:VALUE` (ndots:2, rotate)."""
    name, colon, value = text.strip().partition(":")
    if not re.fullmatch(_DNS_OPTION_NAME, name) or (colon and not value.strip()):
        raise ValueProblem("give a resolv.conf option like ndots:2, timeout:1 or rotate")
    return name, value.strip() if colon else None


def parse_group_id(text: str) -> int:
    """A supplementary group for `--group-add`: a numeric GID. The field is an int64, but
    the API server accepts a group ID up to 2^31-1 only, as for runAsGroup."""
    stripped = text.strip()
    if stripped and not re.fullmatch(r"-?\d+", stripped):
        raise ValueProblem(
            "Kubernetes takes numeric group IDs only and cannot look a group name up in the "
            "image; give the GID, like 1000 (`getent group NAME` in the image shows it)"
        )
    gid = parse_nonnegative_int(stripped)
    if gid > MAX_INT32:
        raise ValueProblem(
            f"Kubernetes stores user and group IDs up to {MAX_INT32} (2^31-1); give a smaller ID"
        )
    return gid


# Kubernetes' sysctl name: segments of [a-z0-9_-] (alphanumeric at both ends) joined by
# '.' or '/'; at most 253 characters.
_SYSCTL_SEGMENT = r"[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL_NAME = rf"({_SYSCTL_SEGMENT}[./])*{_SYSCTL_SEGMENT}"


def parse_sysctl(text: str) -> tuple[str, str]:
    """`--sysctl KEY=VALUE`: a namespaced kernel parameter, like net.ipv4.ip_forward=1."""
    name, value = parse_key_value(text)
    if len(name) > MAX_SUBDOMAIN or not re.fullmatch(_SYSCTL_NAME, name):
        raise ValueProblem(
            "a sysctl name is lowercase letters, digits, '_' and '-' in parts joined by '.' "
            "or '/' (at most 253 characters), like net.ipv4.ip_unprivileged_port_start=0"
        )
    return name, value


def parse_label_file_text(text: str) -> list[tuple[int, str, str]]:
    """docker's label-file format: `KEY=VALUE` lines (a bare `KEY` is an empty value, as in
    docker), blank lines and `#` comments skipped. (line number, key, value) each."""
    labels: list[tuple[int, str, str]] = []
    for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        labels.append((number, key, value))
    return labels


def size_bytes(quantity: str) -> int:
    """The bytes of a quantity `parse_size` returned (`512Mi`, `1536Ki`, `1000`)."""
    for power in range(len(_BINARY_UNITS) - 1, 0, -1):
        if quantity.endswith(_BINARY_UNITS[power]):
            number = int(quantity.removesuffix(_BINARY_UNITS[power]))
            return number << (10 * power)
    return int(quantity)


def parse_add_host(text: str) -> tuple[str, str]:
    """docker's `HOST:IP` (or `HOST=IP`) for `spec.hostAliases`."""
    separator = min((i for i in (text.find(":"), text.find("=")) if i >= 0), default=-1)
    if separator <= 0:
        raise ValueProblem("use HOST:IP, like db.local:10.0.0.5")
    host, address = text[:separator], text[separator + 1 :]
    if address == "host-gateway":
        raise ValueProblem(
            "host-gateway means the docker host, which a pod does not have; give an IP "
            "address, like db.local:10.0.0.5"
        )
    if len(host) > MAX_SUBDOMAIN or not re.fullmatch(_DOMAIN, host):
        raise ValueProblem(f"{host!r} is not a host name; use HOST:IP, like db.local:10.0.0.5")
    return host, _ip_address(address)


_TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def parse_toleration(text: str) -> dict[str, str]:
    """`KEY[=VALUE]:EFFECT`, the form of `kubectl taint`, as a toleration."""
    rest, colon, effect = text.rpartition(":")
    hint = "use KEY[=VALUE]:EFFECT, like gpu=true:NoSchedule or dedicated:NoExecute"
    if not colon or effect not in _TOLERATION_EFFECTS:
        raise ValueProblem(f"{hint}; EFFECT is one of {', '.join(_TOLERATION_EFFECTS)}")
    key, equals, value = rest.partition("=")
    try:
        validate_label_key(key)
        validate_label_value(value)
    except ValueProblem as problem:
        raise ValueProblem(f"{hint} ({problem})") from None
    if equals:
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}


@dataclass(frozen=True)
class Tmpfs:
    """One `--tmpfs PATH[:OPTIONS]`: an in-memory emptyDir mounted at `path` (normalised).

    `ignored` holds the options given that Kubernetes cannot express (`noexec`, `mode=1777`,
    ...): the caller warns about them once."""

    path: str
    size_limit: str | None = None
    read_only: bool = False
    ignored: tuple[str, ...] = ()


# docker's tmpfs options (its mount flags) that an emptyDir cannot express: warned, ignored.
_TMPFS_IGNORED = frozenset(
    [
        "exec",
        "noexec",
        "suid",
        "nosuid",
        "dev",
        "nodev",
        "sync",
        "async",
        "dirsync",
        "atime",
        "noatime",
        "diratime",
        "nodiratime",
        "relatime",
        "norelatime",
        "strictatime",
        "nostrictatime",
        "mand",
        "nomand",
        "tmpcopyup",
    ]
)
_TMPFS_IGNORED_VALUED = ("mode", "nr_inodes", "uid", "gid")


def normal_path(path: str) -> str:
    """A mount path as the kernel sees it: `//run/` and `/dev/./shm` are `/run`, `/dev/shm`."""
    import posixpath

    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("/") else normal


def parse_tmpfs(text: str) -> Tmpfs:
    """docker's `PATH[:OPTIONS]`: `size=SIZE` -> sizeLimit, `ro`/`rw` -> the mount's
    readOnly; the mount flags and `mode=` an emptyDir cannot express are kept in `ignored`."""
    path, _, options = text.partition(":")
    if not path.startswith("/"):
        raise ValueProblem("the tmpfs mount point must be an absolute path, like /tmp or /run")
    size: str | None = None
    read_only = False
    ignored: list[str] = []
    for option in filter(None, options.split(",")):
        name, equals, value = option.partition("=")
        if name == "size" and value:
            size = parse_size(value)
        elif option in ("rw", "ro"):
            read_only = option == "ro"
        elif option in _TMPFS_IGNORED or (equals and name in _TMPFS_IGNORED_VALUED and value):
            ignored.append(option)
        else:
            raise ValueProblem(
                f"{option!r} is not a tmpfs option; docker's are rw, ro, size=SIZE, mode=MODE "
                "and the mount flags (noexec, nosuid, nodev, ...), like /run:rw,size=64m"
            )
    return Tmpfs(normal_path(path), size, read_only, tuple(ignored))


# --- image references ---------------------------------------------------------------------

# docker's reference grammar (distribution/reference): [HOST[:PORT]/]PATH[:TAG][@DIGEST].
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:.]+\])"
_DOMAIN = rf"{_HOST}(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REMOTE = (
    rf"(?P<path>{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?"
)
MAX_IMAGE_NAME = 255
_IMAGE_FORM = (
    "docker's form is [REGISTRY[:PORT]/]REPOSITORY[:TAG][@DIGEST], the repository in "
    "lowercase, like alpine:3.19, ghcr.io/org/app@sha256:<64 hex> or localhost:5000/team/app"
)


def _split_domain(text: str) -> tuple[str | None, str]:
    """docker's rule: the first part is a registry when it has a '.' or ':', or is
    localhost, or holds an uppercase letter (which a repository may not)."""
    first, slash, rest = text.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        return first, rest
    return None, text


def parse_image_reference(text: str) -> str:
    """IMAGE as docker reads it; anything docker calls an "invalid reference format" is
    refused with what that means. Returned unchanged: the kubelet's runtime resolves it."""
    if text != text.strip() or not text:
        raise ValueProblem(f"an image reference has no spaces; {_IMAGE_FORM}")
    domain, remainder = _split_domain(text)
    name = re.split(r"[:@]", remainder, maxsplit=1)[0]
    if name != name.lower():
        raise ValueProblem(
            f"docker calls this an invalid reference format: the repository name ({name}) "
            f"must be lowercase; use {name.lower()}"
        )
    match = re.fullmatch(_REMOTE, remainder)
    if match is None or (domain is not None and not re.fullmatch(_DOMAIN, domain)):
        why = "invalid reference format"
        if "@" in text and not re.search(rf"@{_DIGEST}$", text):
            why += ": a digest is ALGORITHM:HEX, like sha256: and 64 hex digits"
        raise ValueProblem(f"docker calls this an {why}; {_IMAGE_FORM}")
    full_name = (f"{domain}/" if domain else "") + match["path"]
    if len(full_name) > MAX_IMAGE_NAME:
        raise ValueProblem(
            f"docker calls this an invalid reference format: the repository name is longer "
            f"than {MAX_IMAGE_NAME} characters"
        )
    if match["digest"]:
        _check_digest(match["digest"])
    return text


# The digests docker can verify (go-digest's algorithms), by their count of hex digits.
_DIGEST_HEX_DIGITS = {"sha256": 64, "sha384": 96, "sha512": 128}


def _check_digest(digest: str) -> None:
    """What the grammar lets through but docker's digest check refuses: an algorithm it
    cannot verify ("unsupported digest algorithm"), or the wrong count or case of hex
    digits ("invalid checksum digest format")."""
    algorithm, _, encoded = digest.partition(":")
    digits = _DIGEST_HEX_DIGITS.get(algorithm)
    if digits is None:
        raise ValueProblem(
            f"docker refuses the digest algorithm {algorithm} (unsupported digest algorithm); "
            "a digest is sha256:, sha384: or sha512: and its hex digits, like sha256:<64 hex>"
        )
    if len(encoded) != digits or encoded != encoded.lower():
        this_one = f"{len(encoded)}" if len(encoded) != digits else "uppercase ones"
        raise ValueProblem(
            f"docker calls this an invalid checksum digest format: a {algorithm} digest has "
            f"exactly {digits} lowercase hex digits (this one has {this_one})"
        )
