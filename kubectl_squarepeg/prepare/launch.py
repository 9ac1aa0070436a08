"""`run` from its flags to its exit code: the one call the command line makes.

Owns what happens to a PreparedRun (prepare/prepared.py): its notes and warnings said; a
client-side dry run printed as YAML (the manifest on stdout, nothing created, nothing of
run/ imported); otherwise the banner (the context, namespace and config files in effect),
then the hand-over to run/: `run -d` (run/detached.py), a server-side dry run or the whole
lifecycle (run/runner.py). `handing_over` is called just before: the command line's last
word on a signal that arrived while preparing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubectl_squarepeg.prepare.environment import Environment
from kubectl_squarepeg.prepare.prepared import PreparedRun, prepare_run

if TYPE_CHECKING:
    from kubectl_squarepeg.terminal.console import Console


def run(
    flags: Mapping[str, Any],
    explicit: set[str],
    env: Environment,
    console: Console,
    *,
    handing_over: Callable[[], None] = lambda: None,
) -> int:
    """`run`: prepared, then printed (--dry-run) or executed; the exit code."""
    return launch(prepare_run(flags, explicit, env, console), console, handing_over)


def launch(
    prepared: PreparedRun, console: Console, handing_over: Callable[[], None] = lambda: None
) -> int:
    plan, connection = prepared.plan, prepared.connection
    for note in prepared.notes:
        console.status(note)
    for warning in plan.warnings:
        console.warn(warning)
    if plan.options.dry_run:
        from kubectl_squarepeg.plan import yamlout

        for note in plan.notes:
            console.status(note)
        if connection.degraded:
            console.status(f"{connection.degraded}; namespace {connection.namespace}")
        sys.stdout.write(yamlout.dump(plan.manifest))
        return 0
    _stream_events(plan.options.table_values.get("events"), console)
    # The banner names what the run creates, so that a CI log always says what ran.
    creates = "" if plan.options.dry_run_server else f"{plan.kind.lower()}/{plan.name}: "
    console.status(creates + connection.banner() + config_files_note(prepared.config_files))
    from kubectl_squarepeg.run import runner

    handing_over()
    if prepared.detach and not plan.options.dry_run_server:
        from kubectl_squarepeg.run import detached

        return detached.run_detached(plan, connection, console)
    return runner.execute(plan, connection, console, prepared.files_checked)


def _stream_events(destination: str | None, console: Console) -> None:
    """`--events`: the sink opened before anything is created, so that a path that cannot
    be written is a bad input (exit 125) and the stream misses no phase."""
    if destination is None:
        return
    from kubectl_squarepeg.errors import UsageError
    from kubectl_squarepeg.terminal.eventstream import STDERR, open_sink

    try:
        sink = open_sink(destination)
    except OSError as exc:
        raise UsageError(
            f"--events {destination}: cannot write it ({exc.strerror or exc})",
            "give a file in a directory you can write, or `-` for stderr",
        ) from None
    console.stream_events(sink, instead_of_lines=destination == STDERR)


def config_files_note(files: Sequence[str]) -> str:
    """The banner's end: the config files in effect, so none acts unseen."""
    if not files:
        return ""
    return "; config " + ", ".join(files)
