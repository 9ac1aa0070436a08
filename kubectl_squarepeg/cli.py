"""The command line: click commands and options, and the one place errors become exit codes.

Each command body completes its options, validates them, then hands over to the module
that does the work; those are imported inside the command, so `--help` and `--version`
load only click. `main()` is the boundary: a `SquarepegError` or a click usage error
becomes one `squarepeg: error: ...` line on stderr and exit 125 (or the error's own code),
Ctrl-C outside a run becomes 130, and nothing else ever prints a traceback to a user.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from kubectl_squarepeg import __version__
from kubectl_squarepeg.errors import INTERRUPTED, RUNNER_FAILED, SquarepegError

PROG_NAME = "kubectl squarepeg"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name=PROG_NAME, message="%(prog)s %(version)s")
def cli() -> None:
    """Run one container on a Kubernetes cluster, the way `docker run` does on a laptop."""


# --- run -------------------------------------------------------------------------------
# Flags and the body of `run` are filled in by the manifest work (issue 2); the lifecycle
# after the manifest is runner.py's.


@cli.command(
    context_settings={"allow_interspersed_args": False},
    short_help="Run IMAGE with COMMAND on the cluster and return its exit code.",
)
@click.argument("image")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def run(image: str, command: tuple[str, ...]) -> None:
    """Run IMAGE [COMMAND [ARG...]] as a Pod or Job, stream its output, return its exit code."""
    raise SquarepegError("`run` is not implemented yet")


# --- main ------------------------------------------------------------------------------


def _usage_line(exc: click.ClickException) -> str:
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else PROG_NAME
    return f"{message}; see `{command} --help`"


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point of the `kubectl-squarepeg` executable."""
    from kubectl_squarepeg.console import Console

    console = Console()
    try:
        result = cli.main(args=argv, prog_name=PROG_NAME, standalone_mode=False)
        code = result if isinstance(result, int) else 0
    except SquarepegError as exc:
        console.error(exc.one_line())
        code = exc.exit_code
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.exceptions.Abort:
        code = INTERRUPTED
    except click.ClickException as exc:
        console.error(_usage_line(exc))
        code = RUNNER_FAILED
    except KeyboardInterrupt:
        code = INTERRUPTED
    except BrokenPipeError:
        code = RUNNER_FAILED
    sys.stdout.flush()
    sys.exit(code)


def complete_main() -> NoReturn:
    """Entry point of `kubectl_complete-squarepeg` (kubectl's plugin completion hook)."""
    raise SystemExit(RUNNER_FAILED)
