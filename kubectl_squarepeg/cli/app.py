"""The command line: click commands and options, and the one place errors become exit codes.

Each command body is one call: `run` to prepare/launch.py (which prepares the run, checks
it, and prints it or hands it to run/), the verbs to prepare/verbs.py, with the process's
surroundings read once into an `Environment` (prepare/environment.py); those are imported
inside the command, so `--help` and `--version` load only click (and the options'
declarations, cli/runflags.py). `main()` is the boundary: a
`SquarepegError` or a click usage error becomes one `squarepeg: error: ...` line on stderr
and exit 125 (or the error's own code), Ctrl-C outside a run becomes 130, and nothing else
ever prints a traceback to a user.

`run` parses docker's way: options stop at IMAGE (allow_interspersed_args off) and every word
after it, lookalike flags, `--help` and `--` included, is the container's command. A `--`
before IMAGE ends squarepeg's options and is consumed, so `run -- alpine ls` runs `ls`,
while `run alpine -- ls` hands `--` on to the container, as `docker run` does.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
from click.core import ParameterSource

from kubectl_squarepeg import __version__, stoppable
from kubectl_squarepeg import early_signals as _early_signal
from kubectl_squarepeg.cli import runflags
from kubectl_squarepeg.errors import INTERRUPTED, RUNNER_FAILED, SquarepegError
from kubectl_squarepeg.plan import dockerflags

# --- Ctrl-C and hang-up before a run guards them ---------------------------------------------
# A signal that arrives while squarepeg is still being imported (click, mostly)
# must not become a KeyboardInterrupt traceback: the package remembers it (__init__.py) and
# main() acts on it as soon as it can. From main() on, until a run's two-stage handler
# (interrupt.py) takes over, SIGINT and SIGHUP end squarepeg with 130 and 129 and no
# message: nothing has been created yet. A signal squarepeg was started with ignored stays
# ignored (`stoppable`).
HANGUP_EXIT = 128 + signal.SIGHUP
_EARLY_SIGNALS = (signal.SIGINT, signal.SIGHUP)


class _Signalled(BaseException):
    """A SIGINT or SIGHUP before a run: not an Exception, so nothing on the way catches it
    (click would turn a KeyboardInterrupt into a blank line and an Abort)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.exit_code = HANGUP_EXIT if signum == signal.SIGHUP else 130


def _remember_signal(signum: int, frame: FrameType | None) -> None:
    _early_signal.append(signum)


def _quiet_about_signalled(unraisable: sys.UnraisableHookArgs) -> None:
    """Python's report of an exception it swallowed (a weakref callback or a __del__ was
    running): none for `_Signalled`, which `_no_signal_pending` raises again; the rest as usual."""
    if not isinstance(unraisable.exc_value, _Signalled):
        sys.__unraisablehook__(unraisable)


def _raise_signal(signum: int, frame: FrameType | None) -> None:
    if _early_signal:
        return  # the first one is being acted on: squarepeg is on its way out
    _early_signal.append(signum)
    raise _Signalled(signum)


if TYPE_CHECKING:
    from kubectl_squarepeg.prepare.environment import Environment
    from kubectl_squarepeg.terminal.console import Console

F = TypeVar("F", bound=Callable[..., Any])
PROG_NAME = "kubectl squarepeg"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name=PROG_NAME, message="%(prog)s %(version)s")
def cli() -> None:
    """Run one container on a Kubernetes cluster, the way `docker run` does on a laptop."""


# --- run --------------------------------------------------------------------------------


@cli.command(
    context_settings={"allow_interspersed_args": False, "help_option_names": ["--help"]},
    short_help="Run IMAGE with COMMAND on the cluster and return its exit code.",
)
@runflags.run_options
@click.pass_context
def run(ctx: click.Context, /, **flags: Any) -> int:
    """Run IMAGE [COMMAND [ARG...]] as a Pod or Job, stream its output, return its exit code.

    Everything after IMAGE is the container's command (its args), flags included.
    """
    from kubectl_squarepeg.prepare import launch

    explicit = {
        name for name in flags if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
    }
    return launch.run(
        flags, explicit, _environment(), _console(ctx), handing_over=_no_signal_pending
    )


def _no_signal_pending() -> None:
    """Just before a run is handed over: a SIGINT or SIGHUP whose raise was swallowed
    (Python cannot raise out of a weakref callback or a __del__, and one was running when
    the signal was handled) ends squarepeg now. Nothing is created yet."""
    if _early_signal:
        raise _Signalled(_early_signal[0])


def _environment() -> Environment:
    from kubectl_squarepeg.prepare.environment import Environment

    return Environment.of_process()


def _console(ctx: click.Context) -> Console:
    if ctx.obj is None:
        from kubectl_squarepeg.terminal.console import Console

        ctx.obj = Console()
    console: Console = ctx.obj
    return console


# --- config -----------------------------------------------------------------------------


@cli.group(name="config")
def config_group() -> None:
    """Inspect squarepeg's configuration, and trust a project's config file."""


@config_group.command(name="view")
@click.option("--show-origin", is_flag=True, help="Say which file and line set each value.")
@runflags.many(
    "--config", metavar="FILE", help="Read this config file too, as `run --config` does."
)
def config_view(show_origin: bool, config: tuple[str, ...]) -> int:
    """Print the merged configuration as YAML, after the files it came from.

    A project file that is not trusted is listed, and left out of the merge."""
    from kubectl_squarepeg.prepare import configs

    return configs.view(show_origin, config, _environment())


@config_group.command(name="trust")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.pass_context
def config_trust(ctx: click.Context, file: str | None) -> int:
    """Let `run` use FILE (default: the nearest .squarepeg.yaml) as it is now.

    Records its path and SHA-256 in your config directory; if the file changes, it is
    untrusted again. Read it first: it decides what runs with your credentials."""
    from kubectl_squarepeg.prepare import configs

    return configs.trust(file, _environment(), _console(ctx))


@config_group.command(name="untrust")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.pass_context
def config_untrust(ctx: click.Context, file: str | None) -> int:
    """Stop trusting FILE (default: the nearest .squarepeg.yaml)."""
    from kubectl_squarepeg.prepare import configs

    return configs.untrust(file, _environment(), _console(ctx))


# --- sweep ------------------------------------------------------------------------------


@cli.command(short_help="Delete what earlier runs of yours left behind in the namespace.")
@click.option("--dry-run", is_flag=True, help="List what would be deleted; delete nothing.")
@click.option("-n", "--namespace", metavar="NS", help="Namespace (default: the context's).")
@click.option("--context", metavar="NAME", help="Kubeconfig context to use.")
@click.option("--kubeconfig", metavar="FILE", help="Kubeconfig file to use.")
@runflags.impersonation_options
@click.option("-q", "--quiet", is_flag=True, help="Only errors and warnings on stderr.")
@runflags.many("--config", metavar="FILE", help="Read this config file too (orphan_sweep_min_age).")
@click.pass_context
def sweep(ctx: click.Context, /, **flags: Any) -> int:
    """The orphan sweep of every run, on its own: this user's finished or stuck Pods and Jobs,
    older than orphan_sweep_min_age, are listed (on stderr) and deleted."""
    from kubectl_squarepeg.prepare import verbs

    return verbs.sweep(flags, _environment(), _console(ctx))


# --- detached runs: ps, logs, wait, rm (run/detached.py), attach, port (run/rejoin.py) ---


def _complete_run_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from kubectl_squarepeg.cli.completion import run_name_items
    from kubectl_squarepeg.prepare.verbs import verb_connection

    return run_name_items(ctx, incomplete, lambda: verb_connection(ctx.params, _environment()))


@cli.command(short_help="List your runs in the namespace (docker ps).")
@click.option("-a", "--all", "all_runs", is_flag=True, help="Finished runs too.")
@click.option("-A", "--all-namespaces", "all_namespaces", is_flag=True,
              help="Your runs in every namespace (kubectl's -A).")
@click.option("-f", "--filter", "filters", multiple=True, metavar="KEY=VALUE",
              help="Filter output based on conditions provided: name=, status=, label=.")
@click.option("-q", "--quiet", is_flag=True, help="Only the names.")
@click.option("--format", "output_format", metavar="table|json", help="json: one object a line.")
@runflags.cluster_options
@click.pass_context
def ps(ctx: click.Context, /, **flags: Any) -> int:
    """Your runs in the namespace: NAME, IMAGE, COMMAND, CREATED, STATUS, MODE.

    Without -a (or a status= filter), the running and pending ones only."""
    from kubectl_squarepeg.prepare import verbs

    return verbs.ps(flags, _environment())


@cli.command(short_help="Print a run's output (docker logs).")
@click.option("-f", "--follow", is_flag=True, help="Follow the output until the container ends.")
@click.option("--since", metavar="DURATION|TIME", help="Only output since 42m ago, or a time.")
@click.option("-t", "--timestamps", is_flag=True, help="Prefix each line with its time.")
@click.option("--tail", metavar="N", help="Only the last N lines (all: every line).")
@runflags.cluster_options
@click.argument("name", shell_complete=_complete_run_names)
@click.pass_context
def logs(ctx: click.Context, /, **flags: Any) -> int:
    """The output of run NAME's container, as raw bytes; exit 0 (docker's), or 125 when it
    could not all be read. `wait` gives the container's exit code.

    -n is the namespace, as everywhere in kubectl (docker's `logs -n` is --tail)."""
    from kubectl_squarepeg.prepare import verbs

    return verbs.logs(flags, _environment(), _console(ctx))


@cli.command(short_help="Wait for runs to end and print their exit codes (docker wait).")
@runflags.cluster_options
@click.argument("names", nargs=-1, required=True, metavar="NAME...",
                shell_complete=_complete_run_names)
@click.pass_context
def wait(ctx: click.Context, /, **flags: Any) -> int:
    """Block until each run's container has ended; print its exit code, one a line.

    A run that never finishes (deleted, evicted) gets its reason on stderr, and exit 125."""
    from kubectl_squarepeg.prepare import verbs

    return verbs.wait(flags, _environment(), _console(ctx))


@cli.command(short_help="Delete finished runs of yours (docker rm).")
@click.option("-f", "--force", is_flag=True, help="Running ones too.")
@runflags.cluster_options
@click.argument("names", nargs=-1, required=True, metavar="NAME...",
                shell_complete=_complete_run_names)
@click.pass_context
def rm(ctx: click.Context, /, **flags: Any) -> int:
    """Delete runs (a Job with its pod); a running one only with -f. Only your own."""
    from kubectl_squarepeg.prepare import verbs

    return verbs.rm(flags, _environment(), _console(ctx))


@cli.command(short_help="Attach your terminal to a detached run (docker attach).")
@runflags.cluster_options
@click.argument("name", shell_complete=_complete_run_names)
@click.pass_context
def attach(ctx: click.Context, /, **flags: Any) -> int:
    """Attach local standard input and output streams to a running run (`run -d -i`,
    `run -dit`); its stderr is in `logs`.

    Ctrl-P Ctrl-Q detaches a terminal (-t), Ctrl-C a run without one; the run goes on."""
    from kubectl_squarepeg.prepare import verbs

    return verbs.attach(flags, _environment(), _console(ctx))


@cli.command(short_help="Forward local ports to a detached run (docker port, kept open).")
@click.option("-p", "--publish", multiple=True, metavar="[HOST_IP:]HOST_PORT:CONTAINER_PORT",
              help="Publish a container's port to the host (default: what run -d -p recorded).")
@runflags.cluster_options
@click.argument("name", shell_complete=_complete_run_names)
@click.pass_context
def port(ctx: click.Context, /, **flags: Any) -> int:
    """Forward local ports to run NAME until Ctrl-C (kubectl port-forward, restarted when
    it drops); without -p, the ports `run -d -p` recorded."""
    from kubectl_squarepeg.prepare import verbs

    return verbs.port(flags, _environment(), _console(ctx))


# --- exec, stop: inside a running run (run/onrun.py) --------------------------------------


@cli.command(
    "exec",
    short_help="Execute a command in a running run's container (docker exec).",
    context_settings={"allow_interspersed_args": False},
)
@click.option("-i", "--interactive", is_flag=True, help="Keep STDIN open even if not attached.")
@click.option("-t", "--tty", is_flag=True, help="Allocate a pseudo-TTY (with -i, on a terminal).")
@runflags.cluster_options
@click.argument("name", shell_complete=_complete_run_names)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="COMMAND...")
@click.pass_context
def exec_(ctx: click.Context, /, **flags: Any) -> int:
    """Execute COMMAND in run NAME's container (`main`, never a sidecar), while it runs.

    Its output is yours byte for byte, its exit code squarepeg's; 126 or 127 when the
    command cannot be executed or is not found, as docker's."""
    from kubectl_squarepeg.prepare import verbs

    return verbs.exec_command(flags, _environment())


@cli.command(short_help="Stop one or more running runs; they stay until rm (docker stop).")
@click.option("-t", "--time", "seconds", metavar="SECONDS",
              help="Seconds to wait before killing: the run's --stop-timeout (fixed at run).")
@runflags.cluster_options
@click.argument("names", nargs=-1, required=True, metavar="NAME...",
                shell_complete=_complete_run_names)
@click.pass_context
def stop(ctx: click.Context, /, **flags: Any) -> int:
    """Send SIGTERM to each run's container, and SIGKILL after its grace period; print
    its name once it has ended. The run, its log and its exit code stay (`wait`, `ps -a`)
    until `rm`."""
    from kubectl_squarepeg.prepare import verbs

    return verbs.stop(flags, _environment(), _console(ctx))
def _complete_copy_side(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """A run's name as `NAME:` while the word has no `:` or `/` yet; else, or when no run's
    name fits, local file names (the shell's own)."""
    from click.shell_completion import CompletionItem

    names = [] if ":" in incomplete or "/" in incomplete else [
        CompletionItem(item.value + ":") for item in _complete_run_names(ctx, param, incomplete)
    ]
    return names or [CompletionItem(incomplete, type="file")]


@cli.command(short_help="Copy files/folders between a run's container and the local filesystem "
                        "(docker cp).")
@runflags.cluster_options
@click.argument("source", metavar="SRC", shell_complete=_complete_copy_side)
@click.argument("dest", metavar="DEST", shell_complete=_complete_copy_side)
@click.pass_context
def cp(ctx: click.Context, /, **flags: Any) -> int:
    """Copy files/folders between a run's container and the local filesystem.

    \b
      kubectl squarepeg cp NAME:SRC_PATH DEST_PATH|-
      kubectl squarepeg cp SRC_PATH|- NAME:DEST_PATH

    Use '-' as the source to read a tar archive from stdin and extract it to a directory
    destination in the container. Use '-' as the destination to stream a tar archive of a
    container source to stdout. A trailing '/.' on SRC_PATH copies a directory's content.
    The run's container must be running and have sh and tar (docs/cp.md)."""
    from kubectl_squarepeg.prepare import verbs

    return verbs.cp(flags, _environment(), _console(ctx))


# --- completion: completion.py's ---------------------------------------------------------


@cli.command(short_help="Print the shell completion script for bash, zsh or fish.")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> int:
    """Print the completion script for SHELL.

    \b
      bash:  source <(kubectl squarepeg completion bash)
      zsh:   source <(kubectl squarepeg completion zsh)
      fish:  kubectl squarepeg completion fish | source

    `kubectl squarepeg <TAB>` is completed by kubectl's own completion, which runs
    kubectl_complete-squarepeg from PATH; the script completes `kubectl-squarepeg <TAB>`.
    """
    from kubectl_squarepeg.cli.completion import print_script

    print_script(shell)
    return 0


# --- main ------------------------------------------------------------------------------


def _usage_line(exc: click.ClickException) -> str:
    if isinstance(exc, click.NoSuchOption) and exc.possibilities:
        # "Did you mean" offers only what works: never a flag squarepeg refuses.
        offered = [p for p in exc.possibilities if p not in dockerflags.REFUSED_NAMES]
        exc = click.NoSuchOption(exc.option_name, possibilities=offered, ctx=exc.ctx)
    message = " ".join(exc.format_message().split()).removesuffix(".")
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else PROG_NAME
    return f"{message}; see `{command} --help`"


# click >= 8.2 raises this for a bare group; older versions print the help and exit 0.
_NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point of the `kubectl-squarepeg` executable."""
    try:
        if argv is None:  # the executable, not a test calling main()
            sys.unraisablehook = _quiet_about_signalled
        for signum in stoppable(_EARLY_SIGNALS):
            signal.signal(signum, _raise_signal)
        if _early_signal:
            raise _Signalled(_early_signal[0])
        code = _main(argv)
    except _Signalled as exc:  # also one that arrives while an error is being reported
        code = exc.exit_code
    for signum in stoppable(_EARLY_SIGNALS):  # on the way out: one more is not worth a traceback
        signal.signal(signum, _remember_signal)
    _leave(code, fast=argv is None)


def _main(argv: list[str] | None) -> int:
    from kubectl_squarepeg.terminal.console import Console

    console = Console()
    code = _answer(argv, console)
    console.events.emit("exit", exit_code=code)  # --events: a pipeline's last line
    return code


def _answer(argv: list[str] | None, console: Console) -> int:
    try:
        result = cli.main(args=argv, prog_name=PROG_NAME, standalone_mode=False, obj=console)
        return result if isinstance(result, int) else 0
    except SquarepegError as exc:
        console.error(exc.one_line())
        console.events.emit(
            "error", message=" ".join(exc.message.split()), hint=exc.hint or None,
            exit_code=exc.exit_code,
        )
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        return INTERRUPTED
    except _NO_ARGS_IS_HELP as exc:
        click.echo(exc.format_message())  # bare `kubectl squarepeg`: the help, not an error
        return 0
    except click.ClickException as exc:
        console.error(_usage_line(exc))
        return RUNNER_FAILED
    except KeyboardInterrupt:
        return INTERRUPTED
    except BrokenPipeError:
        return RUNNER_FAILED


def _leave(code: int, *, fast: bool) -> NoReturn:
    """Exit with `code`. `fast` (the executable itself, not a test calling main()) skips the
    interpreter's teardown of every module and object, once the exit handlers have run and
    the streams are flushed: after a run it cost tens of milliseconds, for nothing."""
    import contextlib

    if not fast:
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            sys.stdout.flush()
        sys.exit(code)
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            stream.flush()
    os._exit(code)


def complete_main() -> NoReturn:
    """Entry point of `kubectl_complete-squarepeg` (kubectl's plugin completion hook)."""
    from kubectl_squarepeg.cli.completion import complete_main as answer_completion

    answer_completion(cli)
