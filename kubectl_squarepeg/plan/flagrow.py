"""One row of the flag table: everything a flag of `run` needs, declared once.

A `Flag` carries its names, docker's status and squarepeg's answer (the texts of
docs/docker-flags.md), the click option's metavar, help and shape, the parser of its value,
its config key, and how a value that no RunOptions field holds is merged. The table itself is
plan/dockerflags.py; cli/app.py makes `run`'s options from it, config/keys.py the config keys,
plan/options.py the flag -> key lookup, and plan/flagdocs.py the two flag pages.

Parsers are named, not imported (`Parser("quantities", "parse_cpus")`): `run --help` loads the
table, and must not import the parsers' modules (tests/e2e/test_cli_dry_run.py). A unit test
resolves every one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["supported", "different", "refused", "squarepeg"]
Kind = Literal["scalar", "bool", "map", "list"]
# How build_run_options merges a value that no RunOptions field holds (plan/options.py).
Merge = Literal["scalar", "switch", "listing"]


@dataclass(frozen=True)
class Parser:
    """A parser of plan/ by module and name, imported on its first call."""

    module: str  # under kubectl_squarepeg.plan
    name: str

    def __call__(self, text: str) -> Any:
        import importlib

        module = importlib.import_module(f"kubectl_squarepeg.plan.{self.module}")
        return getattr(module, self.name)(text)


@dataclass(frozen=True)
class ConfigKey:
    """A flag's config key: its kind, the accepted form (for errors), its built-in default
    and whether it is a file path (relative to its config file). `name` defaults to the
    flag's parameter (decision 0006: plural for a repeatable flag whose field is plural)."""

    kind: Kind
    form: str
    name: str = ""
    default: Any = None
    path: bool = False


@dataclass(frozen=True)
class Flag:
    """One flag of `run`: docker's (any status) or squarepeg's own.

    `meaning` says what it sets (or, refused, why it cannot be used); `note` is the
    difference from docker (or what to use instead). `metavar` is None for a flag that takes
    no value; completion reads it (`a|b` offers those values, FILE offers file names).
    `exposed` False: the value is checked or ignored, never handed to the command body.
    `hidden_alias`: the last name is parsed but left out of `--help`, as docker hides it.
    `merge`: a value without a RunOptions field, merged by build_run_options into
    `RunOptions.table_values` (podspec reads it there)."""

    names: tuple[str, ...]
    status: Status
    meaning: str
    note: str = ""
    metavar: str | None = None
    help: str = ""
    many: bool = False
    parse: Parser | None = None
    key: ConfigKey | None = None
    dest: str = ""
    exposed: bool = True
    hidden_alias: bool = False
    merge: Merge | None = None

    @property
    def takes_value(self) -> bool:
        return self.metavar is not None

    @property
    def param(self) -> str:
        """The click parameter: `dest`, or the first long name in snake_case."""
        long = next(name for name in self.names if name.startswith("--"))
        return self.dest or long[2:].replace("-", "_")

    @property
    def key_name(self) -> str | None:
        return None if self.key is None else self.key.name or self.param

    @property
    def is_option(self) -> bool:
        """Every flag is an option of `run` but --help, which is click's own."""
        return self.names != ("--help",)


def ok(names: str, meaning: str, note: str = "", **option: Any) -> Flag:
    """A docker flag squarepeg supports: "different" when it has a note."""
    status: Status = "different" if note else "supported"
    return Flag(tuple(names.split()), status, meaning, note, **option)


def no(names: str, why: str, instead: str, value: bool = True) -> Flag:
    """A docker flag squarepeg refuses: why, and what to use instead."""
    return Flag(tuple(names.split()), "refused", why, instead, metavar="X" if value else None)


def own(names: str, meaning: str, **option: Any) -> Flag:
    """A flag docker does not have."""
    return Flag(tuple(names.split()), "squarepeg", meaning, **option)
