"""The verbs on the user's runs (`sweep`, `ps`, `logs`, `wait`, `rm`, `exec`, `stop`, `cp`,
`attach`, `port`) from their flags to their exit code: each the one call its command makes.

Owns what a verb needs before it acts: the connection that -n, --context, --kubeconfig,
--as and the config files given with --config name (`user_connection`), the user's
created-by value, the names checked (plan/detached.py `check_run_name`), --format, --since,
--tail, `ps --filter` (plan/psfilter.py) and `port -p` (plan/ports.py) read; then the
hand-over to run/sweep.py, run/detached.py, run/onrun.py or run/rejoin.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.prepare.environment import Environment
from kubectl_squarepeg.prepare.launch import config_files_note
from kubectl_squarepeg.prepare.prepared import impersonation, key_origin

if TYPE_CHECKING:
    from kubectl_squarepeg.config.merge import Config
    from kubectl_squarepeg.terminal.console import Console


def user_connection(flags: Mapping[str, Any], env: Environment) -> tuple[Any, Config]:
    """The connection that -n, --context, --kubeconfig, --as and the config files given
    with --config name, for a command on the user's runs (sweep, ps, logs, wait, rm), and
    the merged config it came from."""
    from kubectl_squarepeg.cluster.connect import ClusterFlags, connect
    from kubectl_squarepeg.config import files as config
    from kubectl_squarepeg.plan import names
    from kubectl_squarepeg.plan.values import ValueProblem

    merged = config.load(explicit=flags.get("config") or (), environ=env.environ, cwd=env.cwd)

    def setting(name: str) -> str | None:
        value = flags.get(name) or merged.values.get(name)
        return None if value is None else str(value)

    namespace = setting("namespace")
    if namespace is not None:
        try:
            names.validate_name(namespace)
        except ValueProblem as problem:
            raise UsageError(f"invalid value {namespace!r} for --namespace", str(problem)) from None
    choice = ClusterFlags(setting("context"), setting("kubeconfig"), namespace)
    connection = connect(
        choice,
        environ=env.environ,
        kubeconfig_origin=key_origin(merged, "kubeconfig", bool(flags.get("kubeconfig"))),
        **impersonation(flags),
    )
    return connection, merged


def verb_connection(flags: Mapping[str, Any], env: Environment) -> tuple[Any, str]:
    """The connection and the user's created-by value, for a verb on the user's runs."""
    from kubectl_squarepeg.plan.manifest import created_by_value

    connection, _ = user_connection(flags, env)
    return connection, created_by_value(env.username)


def _run_names(names: Sequence[str]) -> list[str]:
    from kubectl_squarepeg.plan.detached import check_run_name

    return [check_run_name(name) for name in names]


def sweep(flags: Mapping[str, Any], env: Environment, console: Console) -> int:
    """`sweep [--dry-run]`: the orphan sweep of every run, on its own."""
    from kubectl_squarepeg.plan.manifest import created_by_value
    from kubectl_squarepeg.run import sweep as orphan_sweep

    connection, merged = user_connection(flags, env)
    console.quiet = bool(flags["quiet"] or merged.values.get("quiet"))
    console.status(connection.banner() + config_files_note(merged.files))
    return orphan_sweep.sweep_now(
        connection,
        created_by_value(env.username),
        min_age=int(merged.values.get("orphan_sweep_min_age") or 0),
        silence=float(merged.values.get("orphan_sweep_silence") or 120.0),
        console=console,
        dry_run=bool(flags["dry_run"]),
    )


def ps(flags: Mapping[str, Any], env: Environment) -> int:
    """`ps [-a] [-A] [-q] [--filter KEY=VALUE]... [--format table|json]`."""
    fmt = (flags["output_format"] or "table").strip().lower()
    if fmt not in ("table", "json"):
        raise UsageError(
            f"invalid value {flags['output_format']!r} for --format", "use table or json"
        )
    from kubectl_squarepeg.plan.psfilter import parse_filters

    filters = parse_filters(flags.get("filters") or ())
    from kubectl_squarepeg.run import detached

    connection, created_by = verb_connection(flags, env)
    return detached.ps(
        connection,
        created_by,
        all_runs=bool(flags["all_runs"]),
        quiet=bool(flags["quiet"]),
        as_json=fmt == "json",
        all_namespaces=bool(flags.get("all_namespaces")),
        filters=filters,
    )


def logs(flags: Mapping[str, Any], env: Environment, console: Console) -> int:
    """`logs [-f] [--since D] [-t] [--tail N] NAME`."""
    from kubectl_squarepeg.plan.detached import parse_since

    name = _run_names([flags["name"]])[0]
    since = parse_since(flags["since"]) if flags["since"] is not None else None
    tail = _tail(flags["tail"])
    from kubectl_squarepeg.run import detached

    connection, created_by = verb_connection(flags, env)
    return detached.logs(
        connection,
        created_by,
        name,
        follow=bool(flags["follow"]),
        since=since,
        timestamps=bool(flags["timestamps"]),
        tail=tail,
        console=console,
    )


def _tail(text: str | None) -> int | None:
    if text is None or text.strip().lower() == "all":
        return None
    cleaned = text.strip()
    if not cleaned.isascii() or not cleaned.isdigit() or len(cleaned) > 9:
        raise UsageError(f"invalid value {text!r} for --tail", "give a number of lines, or all")
    return int(cleaned)


def wait(flags: Mapping[str, Any], env: Environment, console: Console) -> int:
    """`wait NAME...`."""
    names = _run_names(flags["names"])
    from kubectl_squarepeg.run import detached

    connection, created_by = verb_connection(flags, env)
    return detached.wait(connection, created_by, names, console=console)


def rm(flags: Mapping[str, Any], env: Environment, console: Console) -> int:
    """`rm [-f] NAME...`."""
    names = _run_names(flags["names"])
    from kubectl_squarepeg.run import detached

    connection, created_by = verb_connection(flags, env)
    return detached.rm(
        connection, created_by, names, force=bool(flags["force"]), console=console
    )


def attach(flags: Mapping[str, Any], env: Environment, console: Console) -> int:
    """`attach NAME`."""
    name = _run_names([flags["name"]])[0]
    from kubectl_squarepeg.run import rejoin

    connection, created_by = verb_connection(flags, env)
    return rejoin.attach(
        connection, created_by, name, stdin_fd=0, stdin_is_tty=env.stdin_is_tty, console=console
    )


def port(flags: Mapping[str, Any], env: Environment, console: Console) -> int:
    """`port NAME [-p [HOST_IP:]HOST_PORT:CONTAINER_PORT]...`."""
    from kubectl_squarepeg.plan.ports import PublishedPort, check_published, parse_publish
    from kubectl_squarepeg.plan.values import ValueProblem

    name = _run_names([flags["name"]])[0]
    published: list[PublishedPort] = []
    for text in flags.get("publish") or ():
        try:
            published.extend(parse_publish(text))
        except ValueProblem as bad:
            raise UsageError(f"invalid value {text!r} for -p/--publish", str(bad)) from None
    twice = check_published(tuple(published))
    if twice:
        raise UsageError(f"-p/--publish: {twice}", "give each host port once")
    from kubectl_squarepeg.run import rejoin

    connection, created_by = verb_connection(flags, env)
    return rejoin.port(connection, created_by, name, published, console=console)


def exec_command(flags: Mapping[str, Any], env: Environment) -> int:
    """`exec [-i] [-t] NAME CMD...`."""
    name = _run_names([flags["name"]])[0]
    interactive, tty = bool(flags["interactive"]), bool(flags["tty"])
    if tty and not interactive:
        raise UsageError(
            "exec -t without -i: the terminal would not reach the command",
            "use -it for an interactive terminal, or neither",
        )
    if tty and not env.stdin_is_tty:
        raise UsageError("exec -t: the input device is not a TTY", "drop -t when stdin is a pipe")
    from kubectl_squarepeg.run import onrun

    connection, created_by = verb_connection(flags, env)
    return onrun.exec_command(
        connection, created_by, name, flags["command"], interactive=interactive, tty=tty
    )


def stop(flags: Mapping[str, Any], env: Environment, console: Console) -> int:
    """`stop [-t SECONDS] NAME...`."""
    names = _run_names(flags["names"])
    seconds = None
    if flags["seconds"] is not None:
        text = str(flags["seconds"]).strip()
        if not text.isascii() or not text.isdigit() or len(text) > 9:
            raise UsageError(
                f"invalid value {flags['seconds']!r} for -t/--time", "give a number of seconds"
            )
        seconds = int(text)
    from kubectl_squarepeg.run import onrun

    connection, created_by = verb_connection(flags, env)
    return onrun.stop(connection, created_by, names, timeout=seconds, console=console)
def cp(flags: Mapping[str, Any], env: Environment, console: Console) -> int:
    """`cp NAME:PATH DEST` and `cp SRC NAME:PATH` (`-` for a tar on stdout or stdin)."""
    from kubectl_squarepeg.plan.copying import parse_copy

    plan = parse_copy(flags["source"], flags["dest"])
    if env.cwd is None and not plan.streamed:
        raise UsageError("cp: the working directory was deleted", "cd somewhere that exists")
    cwd = str(env.cwd) if env.cwd is not None else "/"
    home = env.environ.get("HOME") or "/"
    from kubectl_squarepeg.run import copy

    connection, created_by = verb_connection(flags, env)
    return copy.cp(connection, created_by, plan, cwd=cwd, home=home, console=console)
