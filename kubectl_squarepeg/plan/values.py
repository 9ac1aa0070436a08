"""The common ground of value parsing, and the plain text forms that are no Kubernetes kind.

Owns `ValueProblem`, the error every parser in `plan/` raises (its text is the hint: the
accepted form, with an example), and `quoted`, how an error line shows a value. The caller
knows where a value came from (a flag, or a file and line) and builds the message around it,
so one parser serves the command line and config files alike.

Also owns the forms that are text rather than a Kubernetes name or number: `KEY=VALUE` and
docker's `KEY[=VALUE]` (`-e`, `-l`, `--annotation`), docker's env-file and label-file
formats, switches (`true`/`false`), the run mode, and the program and directory of the
command. The other kinds have their own modules: `names.py` (Kubernetes names and labels),
`quantities.py` (CPUs, sizes, counts, durations), `network.py` (addresses, DNS, host
aliases), `images.py` (image references, pull policy, platform), `security.py` (users,
groups, capabilities, sysctls), `mounts.py` (`-v`, `--mount`, `--tmpfs`), `ports.py` (`-p`).
Patterns in all of them are strings: `re` compiles each on first use (and caches it), so a
run pays only for the ones it needs.
"""

from __future__ import annotations

from collections.abc import Mapping


class ValueProblem(ValueError):
    """A value that does not parse; its text says which form is accepted."""


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


# --- switches, the mode, the command --------------------------------------------------------


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
