"""The options of the command line: `run`'s, made from the flag table, and the options the
verbs share.

Owns how a flag is declared to click: every row of plan/dockerflags.py that is an option of
`run` becomes one (`run_options`, in the table's order, which is `run --help`'s), a refused
docker flag a hidden option that fails with why and what to use instead, `--restart`
accepting only `no`, `--dns-opt` a hidden alias, the impersonation options from their rows,
and the cluster options of the verbs on the user's runs (`cluster_options`). What a flag's
value means is plan/'s.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, TypeVar

import click

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.plan import dockerflags
from kubectl_squarepeg.plan.flagrow import Flag

F = TypeVar("F", bound=Callable[..., Any])


def run_options(command: F) -> F:
    """`run`'s options and arguments, as `run --help` lists them."""
    command = click.argument("command", nargs=-1, type=click.UNPROCESSED)(command)
    command = click.argument("image")(command)
    return _run_options(command)


def cluster_options(command: F) -> F:
    """-n, --context, --kubeconfig and --config, as `run` and `sweep` take them."""
    for option in reversed(
        (
            click.option("-n", "--namespace", metavar="NS", help="Namespace (default: context's)."),
            click.option("--context", metavar="NAME", help="Kubeconfig context to use."),
            click.option("--kubeconfig", metavar="FILE", help="Kubeconfig file to use."),
            many("--config", metavar="FILE", help="Read this config file too."),
        )
    ):
        command = option(command)
    return impersonation_options(command)


def _run_options(command: F) -> F:
    """Every option of `run`, in the table's order: the options of the flags squarepeg
    takes, then a hidden option for every docker flag it refuses, which fails with why and
    what to use instead rather than a bare "No such option"."""
    for flag in reversed(dockerflags.FLAGS):
        if flag.is_option:
            command = _table_option(flag)(command)
    return command


def _table_option(flag: Flag) -> Callable[[F], F]:
    """The click option of one row of the table."""
    if flag.status == "refused":
        return _refused_option(flag)
    settings: dict[str, Any] = {"metavar": flag.metavar, "help": flag.help}
    if not flag.takes_value:
        settings = {"is_flag": True, "help": flag.help}
    if flag.many:
        settings["multiple"] = True
    if flag.hidden_alias:
        settings["cls"] = _WithHiddenAlias
    if not flag.exposed:
        settings["expose_value"] = False
    if flag.param in _CHECKS:
        settings["callback"] = _CHECKS[flag.param]
    names = (*flag.names, flag.dest) if flag.dest else flag.names
    return click.option(*names, **settings)


def _refused_option(flag: Flag) -> Callable[[F], F]:
    def refuse(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value:
            given = param.opts[0] if not flag.takes_value else f"{param.opts[0]} {value[0]}"
            raise UsageError(*dockerflags.refusal(flag, given))

    return click.option(
        *flag.names,
        is_flag=not flag.takes_value,
        multiple=flag.takes_value,
        hidden=True,
        expose_value=False,
        callback=refuse,
    )


def _restart(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None and value.strip().lower() != "no":
        raise UsageError(
            f"--restart {value} cannot be used: squarepeg runs the container once",
            dockerflags.BY_NAME["--restart"].note.removeprefix("any other policy is refused: "),
        )


# The options whose value click checks as it parses, by parameter.
_CHECKS: dict[str, Callable[[click.Context, click.Parameter, Any], None]] = {"restart": _restart}


def many(*names: str, metavar: str, help: str) -> Callable[[F], F]:
    return click.option(*names, multiple=True, metavar=metavar, help=help)


def impersonation_options(command: F) -> F:
    """--as and --as-group: kubectl's impersonation, passed to every kubectl call
    (docs/decisions/0250-impersonation-is-part-of-the-target.md); `run`'s rows."""
    as_user, as_group = dockerflags.BY_NAME["--as"], dockerflags.BY_NAME["--as-group"]
    return _table_option(as_user)(_table_option(as_group)(command))


class _WithHiddenAlias(click.Option):
    """An option whose last name is an alias docker accepts but hides from its help
    (`--dns-opt`): parsed like the others, left out of `run --help` as docker does."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        shown = copy.copy(self)
        shown.opts = self.opts[:-1]
        return click.Option.get_help_record(shown, ctx)
