"""The command line: click commands and options, and the one place errors become exit codes.

Each command body completes its options, validates them, then hands over to the module
that does the work; those are imported inside the command, so `--help` and `--version`
load only click. `main()` is the boundary: a
`SquarepegError` or a click usage error becomes one `squarepeg: error: ...` line on stderr
and exit 125 (or the error's own code), Ctrl-C outside a run becomes 130, and nothing else
ever prints a traceback to a user.

`run` parses docker's way: options stop at IMAGE (allow_interspersed_args off) and every word
after it, lookalike flags, `--help` and `--` included, is the container's command. A `--`
before IMAGE ends squarepeg's options and is consumed, so `run -- alpine ls` runs `ls`,
while `run alpine -- ls` hands `--` on to the container, as `docker run` does.
"""

from __future__ import annotations

import copy
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
from click.core import ParameterSource

from kubectl_squarepeg import __version__, stoppable
from kubectl_squarepeg import early_signals as _early_signal
from kubectl_squarepeg.errors import INTERRUPTED, RUNNER_FAILED, SquarepegError, UsageError
from kubectl_squarepeg.plan import dockerflags
from kubectl_squarepeg.plan.flagrow import Flag

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
    running): none for `_Signalled`, which `_execute` raises again; the rest as usual."""
    if not isinstance(unraisable.exc_value, _Signalled):
        sys.__unraisablehook__(unraisable)


def _raise_signal(signum: int, frame: FrameType | None) -> None:
    if _early_signal:
        return  # the first one is being acted on: squarepeg is on its way out
    _early_signal.append(signum)
    raise _Signalled(signum)


if TYPE_CHECKING:
    from kubectl_squarepeg.cluster.connect import Connection, KubeconfigProbe
    from kubectl_squarepeg.config.merge import Config
    from kubectl_squarepeg.files.upload import Checked
    from kubectl_squarepeg.plan.manifest import Plan
    from kubectl_squarepeg.plan.options import RunOptions
    from kubectl_squarepeg.terminal.console import Console

F = TypeVar("F", bound=Callable[..., Any])
PROG_NAME = "kubectl squarepeg"
SUFFIX_BYTES = 3  # the generated name's 6 hex characters


def _start_probe(flags: Mapping[str, Any]) -> KubeconfigProbe | None:
    """Start `kubectl config view --minify` now, unless a dry run already knows the namespace.

    It runs while the config files load; connect() collects it (or, if config changed the
    context or kubeconfig, discards it and starts the right one)."""
    if flags["dry_run"] and flags["namespace"] and not flags["context"]:
        return None
    from kubectl_squarepeg.cluster.connect import KubeconfigProbe
    from kubectl_squarepeg.errors import KubectlMissing

    try:
        return KubeconfigProbe(flags["context"], flags["kubeconfig"])
    except KubectlMissing:
        return None  # connect() reports it, or a dry run does without


def new_run_id() -> str:
    """A random (version 4) UUID, as uuid.uuid4() makes it, without importing uuid (which
    imports platform and costs a dry run a few milliseconds)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name=PROG_NAME, message="%(prog)s %(version)s")
def cli() -> None:
    """Run one container on a Kubernetes cluster, the way `docker run` does on a laptop."""


# --- run: its options, made from the flag table (plan/dockerflags.py) ---------------------


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


def _many(*names: str, metavar: str, help: str) -> Callable[[F], F]:
    return click.option(*names, multiple=True, metavar=metavar, help=help)


def _impersonation_options(command: F) -> F:
    """--as and --as-group: kubectl's impersonation, passed to every kubectl call
    (docs/decisions/0250-impersonation-is-part-of-the-target.md); `run`'s rows."""
    as_user, as_group = dockerflags.BY_NAME["--as"], dockerflags.BY_NAME["--as-group"]
    return _table_option(as_user)(_table_option(as_group)(command))


def _impersonation(flags: Mapping[str, Any]) -> dict[str, Any]:
    """connect()'s keywords for --as and --as-group."""
    return {"as_user": flags.get("as_user"), "as_groups": tuple(flags.get("as_group") or ())}


class _WithHiddenAlias(click.Option):
    """An option whose last name is an alias docker accepts but hides from its help
    (`--dns-opt`): parsed like the others, left out of `run --help` as docker does."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        shown = copy.copy(self)
        shown.opts = self.opts[:-1]
        return click.Option.get_help_record(shown, ctx)


# --- run --------------------------------------------------------------------------------


@cli.command(
    context_settings={"allow_interspersed_args": False, "help_option_names": ["--help"]},
    short_help="Run IMAGE with COMMAND on the cluster and return its exit code.",
)
@_run_options
@click.argument("image")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def run(ctx: click.Context, /, **flags: Any) -> int:
    """Run IMAGE [COMMAND [ARG...]] as a Pod or Job, stream its output, return its exit code.

    Everything after IMAGE is the container's command (its args), flags included.
    """
    console = _console(ctx)
    # The kubeconfig probe (a kubectl process, unless the view is cached) runs while
    # Python imports and reads the config files; connect() collects it.
    probe = _start_probe(flags)

    import dataclasses

    from kubectl_squarepeg.cluster.connect import connect
    from kubectl_squarepeg.config import files as config
    from kubectl_squarepeg.plan import manifest, yamlout
    from kubectl_squarepeg.plan.options import build_run_options, check_image

    check_image(flags["image"])
    explicit = {
        name for name in flags if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
    }
    merged = config.load(explicit=flags["config"])
    options = build_run_options(
        flags,
        explicit,
        merged,
        environ=os.environ,
        read_text=config.read_key_value_file_text,
    )
    if flags["detach"] and options.publish:
        raise UsageError(dockerflags.PUBLISH_WITH_DETACH, dockerflags.PUBLISH_WITH_DETACH_FIX)
    detach_notes: list[str] = []
    if flags["detach"]:
        from kubectl_squarepeg.plan.detached import detach_options

        options, detach_notes = detach_options(
            options, remove_when_done=bool(flags["rm"]), mode_given="mode" in explicit
        )
    console.quiet = options.quiet
    files_checked = None
    if options.binds and not (options.dry_run or options.dry_run_server):
        files_checked = _check_file_sources(options, console, detach=bool(flags["detach"]))
    if options.publish and not (options.dry_run or options.dry_run_server):
        from kubectl_squarepeg.run.ports import reserve

        # -p: every local port checked free (an empty one chosen) before anything else.
        options = dataclasses.replace(options, publish=reserve(options.publish))
    if options.interactive and options.tty and not sys.stdin.isatty():
        # kubectl's behaviour (docker refuses): a CI job piping data into `-it` still runs.
        # Without the terminal: a pty would turn the piped bytes' newlines into CRLF.
        console.warn(
            "-t needs a terminal on stdin and this one is not a terminal; "
            "running as -i (stdin piped to the container, no terminal)"
        )
        options = dataclasses.replace(options, tty=False)
    connection = connect(
        options,
        local_only=options.dry_run,
        probe=probe,
        kubeconfig_origin=_key_origin(merged, "kubeconfig", "kubeconfig" in explicit),
        **_impersonation(flags),
    )
    plan = manifest.build_plan(
        options,
        merged,
        namespace=connection.namespace,
        run_id=new_run_id(),
        suffix=os.urandom(SUFFIX_BYTES).hex(),
        username=_username(os.environ),
    )
    if flags["detach"]:
        from kubectl_squarepeg.plan.detached import detach_plan

        plan = detach_plan(plan, remove_when_done=bool(flags["rm"]))
    _check_encodable(plan.manifest)
    for note in detach_notes:
        console.status(note)
    for warning in plan.warnings:
        console.warn(warning)
    if options.dry_run:
        for note in plan.notes:
            console.status(note)
        if connection.degraded:
            console.status(f"{connection.degraded}; namespace {connection.namespace}")
        sys.stdout.write(yamlout.dump(plan.manifest))
        return 0
    console.status(connection.banner() + _config_files_note(merged.files))
    return _execute(
        plan, connection, console, detach=bool(flags["detach"]), files_checked=files_checked
    )


def _check_file_sources(options: RunOptions, console: Console, *, detach: bool) -> Checked:
    """A run with a local path mounted: every SRC checked before anything is created
    (exists, readable, within max_upload_bytes; files/upload.py), what a copy cannot carry
    named. `-d` is refused: the upload and the copy-back need squarepeg there
    (docs/decisions/0220)."""
    from kubectl_squarepeg.files.upload import check_sources

    if detach:
        first = options.binds[0]
        raise UsageError(
            f"-d with -v {first.source}:{first.target}: a local path is copied in and back by "
            "squarepeg itself, which -d does not wait for",
            "run without -d, or mount a PersistentVolumeClaim with -v NAME:DST",
        )
    checked = check_sources(options.binds, options.max_upload_bytes)
    for warning in checked.warnings:
        console.warn(warning)
    return checked


def _key_origin(merged: Config, key: str, flag_given: bool) -> str | None:
    """FILE:LINE of a config key's value, for an error about it (None when a flag set it)."""
    if flag_given or merged.values.get(key) is None:
        return None
    return str(merged.origin_of(key))


def _config_files_note(files: Sequence[str]) -> str:
    """The banner's end: the config files in effect, so none acts unseen."""
    if not files:
        return ""
    return "; config " + ", ".join(files)


def _check_encodable(manifest: Any, path: str = "") -> None:
    """Refuse a manifest with text that is not UTF-8: an argument, environment variable or
    file given as bytes that do not decode (Python keeps them as lone surrogates), which
    neither the dry run's output nor the API server could carry."""
    if isinstance(manifest, dict):
        for key, value in manifest.items():
            _check_encodable(key, path)
            _check_encodable(value, f"{path}.{key}" if path else str(key))
    elif isinstance(manifest, list):
        for index, item in enumerate(manifest):
            _check_encodable(item, f"{path}[{index}]")
    elif isinstance(manifest, str):
        try:
            manifest.encode("utf-8")
        except UnicodeEncodeError:
            # The value itself is not shown: it may be a secret (an env variable's value).
            raise UsageError(
                f"the manifest's {path or 'text'} is not UTF-8 text",
                "give UTF-8 text in flags, environment variables and files",
            ) from None


def _console(ctx: click.Context) -> Console:
    if ctx.obj is None:
        from kubectl_squarepeg.terminal.console import Console

        ctx.obj = Console()
    console: Console = ctx.obj
    return console


def _username(environ: Any) -> str:
    """The local user, for the created-by label: getpass, then $USER, then "unknown"."""
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return str(environ.get("USER") or "unknown")


# --- config -----------------------------------------------------------------------------


@cli.group(name="config")
def config_group() -> None:
    """Inspect squarepeg's configuration, and trust a project's config file."""


@config_group.command(name="view")
@click.option("--show-origin", is_flag=True, help="Say which file and line set each value.")
@_many("--config", metavar="FILE", help="Read this config file too, as `run --config` does.")
def config_view(show_origin: bool, config: tuple[str, ...]) -> int:
    """Print the merged configuration as YAML, after the files it came from.

    A project file that is not trusted is listed, and left out of the merge."""
    from kubectl_squarepeg.config.files import load
    from kubectl_squarepeg.config.view import view_text

    merged = load(explicit=config, skip_untrusted=True)
    sys.stdout.write(view_text(merged, show_origin=show_origin))
    return 0


def _project_file_argument(file: str | None) -> str:
    """FILE as given, or the project file `run` would find from the working directory."""
    from pathlib import Path

    from kubectl_squarepeg.config.files import PROJECT_FILE, find_project_file

    if file is not None:
        return file
    found = find_project_file(Path.cwd())
    if found is None:
        raise UsageError(
            f"no {PROJECT_FILE} in this directory or above it",
            "give the file to trust: `kubectl squarepeg config trust FILE`",
        )
    return str(found)


def _trust_store() -> Any:
    from pathlib import Path

    from kubectl_squarepeg.config import trust

    return trust.Store.load(trust.user_config_dir(os.environ, Path.home()))


@config_group.command(name="trust")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.pass_context
def config_trust(ctx: click.Context, file: str | None) -> int:
    """Let `run` use FILE (default: the nearest .squarepeg.yaml) as it is now.

    Records its path and SHA-256 in your config directory; if the file changes, it is
    untrusted again. Read it first: it decides what runs with your credentials."""
    from pathlib import Path

    path = _project_file_argument(file)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(
            f"cannot read {path}: {exc.strerror or exc}", "give the path of a config file"
        ) from None
    store = _trust_store()
    store.trust(path, data)
    store.save()
    _console(ctx).status(f"trusted {os.path.realpath(path)} as it is now")
    return 0


@config_group.command(name="untrust")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.pass_context
def config_untrust(ctx: click.Context, file: str | None) -> int:
    """Stop trusting FILE (default: the nearest .squarepeg.yaml)."""
    path = _project_file_argument(file)
    store = _trust_store()
    if store.untrust(path):
        store.save()
        _console(ctx).status(f"no longer trusted: {os.path.realpath(path)}")
    else:
        _console(ctx).status(f"{os.path.realpath(path)} was not trusted; nothing to do")
    return 0


# --- sweep ------------------------------------------------------------------------------


@cli.command(short_help="Delete what earlier runs of yours left behind in the namespace.")
@click.option("--dry-run", is_flag=True, help="List what would be deleted; delete nothing.")
@click.option("-n", "--namespace", metavar="NS", help="Namespace (default: the context's).")
@click.option("--context", metavar="NAME", help="Kubeconfig context to use.")
@click.option("--kubeconfig", metavar="FILE", help="Kubeconfig file to use.")
@_impersonation_options
@click.option("-q", "--quiet", is_flag=True, help="Only errors and warnings on stderr.")
@_many("--config", metavar="FILE", help="Read this config file too (orphan_sweep_min_age).")
@click.pass_context
def sweep(ctx: click.Context, /, **flags: Any) -> int:
    """The orphan sweep of every run, on its own: this user's finished or stuck Pods and Jobs,
    older than orphan_sweep_min_age, are listed (on stderr) and deleted."""
    from kubectl_squarepeg.plan.manifest import created_by_value
    from kubectl_squarepeg.run import sweep as orphan_sweep

    connection, merged = _user_connection(flags)
    console = _console(ctx)
    console.quiet = bool(flags["quiet"] or merged.values.get("quiet"))
    console.status(connection.banner() + _config_files_note(merged.files))
    return orphan_sweep.sweep_now(
        connection,
        created_by_value(_username(os.environ)),
        min_age=int(merged.values.get("orphan_sweep_min_age") or 0),
        silence=float(merged.values.get("orphan_sweep_silence") or 120.0),
        console=console,
        dry_run=bool(flags["dry_run"]),
    )


# --- detached runs: ps, logs, wait, rm (run/detached.py) ---------------------------------


def _cluster_options(command: F) -> F:
    """-n, --context, --kubeconfig and --config, as `run` and `sweep` take them."""
    for option in reversed(
        (
            click.option("-n", "--namespace", metavar="NS", help="Namespace (default: context's)."),
            click.option("--context", metavar="NAME", help="Kubeconfig context to use."),
            click.option("--kubeconfig", metavar="FILE", help="Kubeconfig file to use."),
            _many("--config", metavar="FILE", help="Read this config file too."),
        )
    ):
        command = option(command)
    return _impersonation_options(command)


def _user_connection(flags: Mapping[str, Any]) -> tuple[Any, Config]:
    """The connection that -n, --context, --kubeconfig, --as and the config files given
    with --config name, for a command on the user's runs (sweep, ps, logs, wait, rm), and
    the merged config it came from."""
    from kubectl_squarepeg.cluster.connect import ClusterFlags, connect
    from kubectl_squarepeg.config import files as config
    from kubectl_squarepeg.plan.names import validate_name
    from kubectl_squarepeg.plan.values import ValueProblem

    merged = config.load(explicit=flags.get("config") or ())

    def setting(name: str) -> str | None:
        value = flags.get(name) or merged.values.get(name)
        return None if value is None else str(value)

    namespace = setting("namespace")
    if namespace is not None:
        try:
            validate_name(namespace)
        except ValueProblem as problem:
            raise UsageError(f"invalid value {namespace!r} for --namespace", str(problem)) from None
    choice = ClusterFlags(setting("context"), setting("kubeconfig"), namespace)
    connection = connect(
        choice,
        kubeconfig_origin=_key_origin(merged, "kubeconfig", bool(flags.get("kubeconfig"))),
        **_impersonation(flags),
    )
    return connection, merged


def _verb_connection(ctx: click.Context, flags: Mapping[str, Any]) -> tuple[Any, str]:
    """The connection and the user's created-by value, for a verb on the user's runs."""
    from kubectl_squarepeg.plan.manifest import created_by_value

    connection, _ = _user_connection(flags)
    return connection, created_by_value(_username(os.environ))


def _run_names(names: Sequence[str]) -> list[str]:
    from kubectl_squarepeg.plan.detached import check_run_name

    return [check_run_name(name) for name in names]


def _complete_run_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from kubectl_squarepeg.cli.completion import run_name_items

    return run_name_items(ctx, incomplete, lambda: _verb_connection(ctx, ctx.params))


@cli.command(short_help="List your runs in the namespace (docker ps).")
@click.option("-a", "--all", "all_runs", is_flag=True, help="Finished runs too.")
@click.option("-q", "--quiet", is_flag=True, help="Only the names.")
@click.option("--format", "output_format", metavar="table|json", help="json: one object a line.")
@_cluster_options
@click.pass_context
def ps(ctx: click.Context, /, **flags: Any) -> int:
    """Your runs in the namespace: NAME, IMAGE, COMMAND, CREATED, STATUS, MODE.

    Without -a, the running and pending ones only."""
    fmt = (flags["output_format"] or "table").strip().lower()
    if fmt not in ("table", "json"):
        raise UsageError(
            f"invalid value {flags['output_format']!r} for --format", "use table or json"
        )
    from kubectl_squarepeg.run import detached

    connection, created_by = _verb_connection(ctx, flags)
    return detached.ps(
        connection,
        created_by,
        all_runs=bool(flags["all_runs"]),
        quiet=bool(flags["quiet"]),
        as_json=fmt == "json",
    )


@cli.command(short_help="Print a run's output (docker logs).")
@click.option("-f", "--follow", is_flag=True, help="Follow the output until the container ends.")
@click.option("--since", metavar="DURATION|TIME", help="Only output since 42m ago, or a time.")
@click.option("-t", "--timestamps", is_flag=True, help="Prefix each line with its time.")
@click.option("--tail", metavar="N", help="Only the last N lines (all: every line).")
@_cluster_options
@click.argument("name", shell_complete=_complete_run_names)
@click.pass_context
def logs(ctx: click.Context, /, **flags: Any) -> int:
    """The output of run NAME's container, as raw bytes; exit 0 (docker's), or 125 when it
    could not all be read. `wait` gives the container's exit code.

    -n is the namespace, as everywhere in kubectl (docker's `logs -n` is --tail)."""
    from kubectl_squarepeg.plan.detached import parse_since

    name = _run_names([flags["name"]])[0]
    since = parse_since(flags["since"]) if flags["since"] is not None else None
    tail = _tail(flags["tail"])
    from kubectl_squarepeg.run import detached

    connection, created_by = _verb_connection(ctx, flags)
    return detached.logs(
        connection,
        created_by,
        name,
        follow=bool(flags["follow"]),
        since=since,
        timestamps=bool(flags["timestamps"]),
        tail=tail,
        console=_console(ctx),
    )


def _tail(text: str | None) -> int | None:
    if text is None or text.strip().lower() == "all":
        return None
    cleaned = text.strip()
    if not cleaned.isascii() or not cleaned.isdigit() or len(cleaned) > 9:
        raise UsageError(f"invalid value {text!r} for --tail", "give a number of lines, or all")
    return int(cleaned)


@cli.command(short_help="Wait for runs to end and print their exit codes (docker wait).")
@_cluster_options
@click.argument("names", nargs=-1, required=True, metavar="NAME...",
                shell_complete=_complete_run_names)
@click.pass_context
def wait(ctx: click.Context, /, **flags: Any) -> int:
    """Block until each run's container has ended; print its exit code, one a line.

    A run that never finishes (deleted, evicted) gets its reason on stderr, and exit 125."""
    names = _run_names(flags["names"])
    from kubectl_squarepeg.run import detached

    connection, created_by = _verb_connection(ctx, flags)
    return detached.wait(connection, created_by, names, console=_console(ctx))


@cli.command(short_help="Delete finished runs of yours (docker rm).")
@click.option("-f", "--force", is_flag=True, help="Running ones too.")
@_cluster_options
@click.argument("names", nargs=-1, required=True, metavar="NAME...",
                shell_complete=_complete_run_names)
@click.pass_context
def rm(ctx: click.Context, /, **flags: Any) -> int:
    """Delete runs (a Job with its pod); a running one only with -f. Only your own."""
    names = _run_names(flags["names"])
    from kubectl_squarepeg.run import detached

    connection, created_by = _verb_connection(ctx, flags)
    return detached.rm(
        connection, created_by, names, force=bool(flags["force"]), console=_console(ctx)
    )


# --- the real run: the lead engineer's ----------------------------------------------------
# `run` calls this once the plan is built, for a real run and for --dry-run-server; a
# client-side --dry-run never gets here.


def _execute(
    plan: Plan,
    connection: Connection,
    console: Console,
    *,
    detach: bool = False,
    files_checked: Checked | None = None,
) -> int:
    """Create what `plan` describes (or, with --dry-run-server, have the apiserver check it)
    and return the exit code.

    Receives the finished Plan (manifest, kind, name, namespace, run id, created-by, and the
    RunOptions as `plan.options`), the resolved Connection (kubectl target, namespace,
    in-cluster or not) and the Console (quiet already set; the "using context" banner and
    any dropped-config warnings are already printed).
    """
    from kubectl_squarepeg.run import runner

    if _early_signal:
        # Its raise was swallowed: Python cannot raise out of a weakref callback or a
        # __del__, and one was running when the signal was handled. Nothing is created yet.
        raise _Signalled(_early_signal[0])
    if detach and not plan.options.dry_run_server:
        from kubectl_squarepeg.run import detached

        return detached.run_detached(plan, connection, console)
    return runner.execute(plan, connection, console, files_checked)


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
    try:
        result = cli.main(args=argv, prog_name=PROG_NAME, standalone_mode=False, obj=console)
        return result if isinstance(result, int) else 0
    except SquarepegError as exc:
        console.error(exc.one_line())
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
