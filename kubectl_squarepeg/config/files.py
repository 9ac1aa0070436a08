"""The configuration files: where they are looked for, reading them, and the load of every
layer.

Owns the layers' places (built-in defaults, /etc, $XDG_CONFIG_HOME, the nearest
.squarepeg.yaml, used only once trusted (trust.py), $SQUAREPEG_CONFIG, --config), reading
each with its bound, and `load`: read, interpolate, validate, merge. Where the files are
looked for is injectable (`environ`, `cwd`, `home`, `system`), so tests need no real /etc or
home directory.

Not here: flags (plan/options.py lays them over this), and claims (plan/claims.py decides
which passthrough entries a flag overrides).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from kubectl_squarepeg.config.merge import Config, merge
from kubectl_squarepeg.config.reader import MAX_FILE_BYTES
from kubectl_squarepeg.config.records import FoundFile
from kubectl_squarepeg.config.trust import Store, Verdict, refusal, user_config_dir
from kubectl_squarepeg.config.validate import parse_file
from kubectl_squarepeg.errors import ConfigError
from kubectl_squarepeg.plan.values import ValueProblem

SYSTEM_CONFIG = Path("/etc/squarepeg/config.yaml")
PROJECT_FILE = ".squarepeg.yaml"
CONFIG_ENV = "SQUAREPEG_CONFIG"


PROJECT = "project"  # Source.why of the one layer that needs trust (trust.py)


@dataclass(frozen=True)
class Source:
    """A config file to read, and whether its absence is an error."""

    path: str
    required: bool
    why: str  # how it was named, for the error when it is missing



def sources(
    *,
    explicit: Sequence[str] = (),
    environ: Mapping[str, str],
    cwd: Path,
    home: Path,
    system: Path = SYSTEM_CONFIG,
) -> list[Source]:
    """The layers' files, lowest precedence first (configuration.md, Layers)."""
    found = [Source(str(system), False, "system")]
    user_dir = user_config_dir(environ, home)
    found.append(Source(str(user_dir / "config.yaml"), False, "user"))
    project = find_project_file(cwd)
    if project is not None:
        found.append(Source(str(project), False, PROJECT))
    for entry in environ.get(CONFIG_ENV, "").split(os.pathsep):
        if entry:
            found.append(Source(entry, True, f"${CONFIG_ENV}"))
    found += [Source(path, True, "--config") for path in explicit]
    # A file named twice is read once, at its highest place (its patches apply once).
    keyed = [(os.path.realpath(s.path), s) for s in found]
    return [s for i, (real, s) in enumerate(keyed) if all(real != r for r, _ in keyed[i + 1 :])]


def find_project_file(cwd: Path) -> Path | None:
    """The nearest `.squarepeg.yaml` in `cwd` or a directory above it."""
    for directory in (cwd, *cwd.parents):
        candidate = directory / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def read_source(source: Source) -> bytes | None:
    """The file's bytes; None for an optional file that does not exist."""
    try:
        with open(source.path, "rb") as handle:
            # One byte past the limit tells a file at the limit from a larger one, without
            # reading all of a huge file (or of an endless one, like /dev/zero).
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        if not source.required:
            return None
        hint = (
            f"fix or unset {CONFIG_ENV}"
            if source.why.startswith("$")
            else "check the path, or leave out that --config"
        )
        raise ConfigError(
            f"config file {source.path} does not exist (from {source.why})", hint
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read config file {source.path}: {exc.strerror}",
            "make it a readable file, or remove it",
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(
            f"config file {source.path} is larger than {MAX_FILE_BYTES >> 20} MiB "
            f"(from {source.why})",
            "a config file holds a few settings; point at the right file",
        )
    return data


def read_key_value_file_text(path: str) -> str:
    """An env or label file's text (the `read_text` of options.build_run_options): UTF-8,
    at most MAX_FILE_BYTES, read no further than that (`--env-file /dev/zero` ends at once).
    Raises OSError, UnicodeDecodeError, or ValueProblem for a file past the limit."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueProblem(
            f"it is larger than {MAX_FILE_BYTES >> 20} MiB; an env or label file holds "
            "KEY=VALUE lines, point at the right file"
        )
    return data.decode("utf-8")


def _home_directory() -> Path:
    """The user's home: $HOME, or the password database's when $HOME cannot be used (it is
    `~`, say: pathlib then raises instead of answering)."""
    try:
        return Path.home()
    except RuntimeError:
        import pwd

        try:
            return Path(pwd.getpwuid(os.getuid()).pw_dir)
        except KeyError:
            return Path("/nonexistent")


def load(
    *,
    explicit: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    system: Path = SYSTEM_CONFIG,
    skip_untrusted: bool = False,
) -> Config:
    """Every layer, read, interpolated, validated and merged.

    A project file that is not trusted (trust.py), or changed since, is a ConfigError naming
    it and `config trust`; with `skip_untrusted` (for `config view`) it is left out instead
    and listed in `Config.found` with its verdict.
    """
    environ = os.environ if environ is None else environ
    home = home or _home_directory()
    layers = []
    found: list[FoundFile] = []
    for source in sources(
        explicit=explicit,
        environ=environ,
        cwd=cwd or Path.cwd(),
        home=home,
        system=system,
    ):
        data = read_source(source)
        if data is None:
            continue
        verdict = None
        if source.why == PROJECT:
            verdict = Store.load(user_config_dir(environ, home)).verdict(source.path, data)
            if verdict is not Verdict.TRUSTED and not skip_untrusted:
                raise refusal(source.path, verdict)
        found.append(FoundFile(source.path, source.why, verdict))
        if found[-1].used:
            layers.append(parse_file(data, source.path, environ))
    return replace(merge(layers), found=tuple(found))


def from_texts(texts: Iterable[tuple[str, str]], environ: Mapping[str, str]) -> Config:
    """A Config from (name, YAML text) pairs, lowest first, as if they were files."""
    pairs = list(texts)
    merged = merge([parse_file(text, name, environ) for name, text in pairs])
    return replace(merged, found=tuple(FoundFile(name, "text") for name, _ in pairs))
