"""`run`'s preparation: flags, config files and the environment turned into one immutable
`PreparedRun`, checked, before anything is created.

Owns the order of the steps before a run (kubectl's Complete and Validate): the kubeconfig
probe started first (it runs while the config files load; connect() collects it), IMAGE
checked, the config files loaded, the flags laid over them (plan/options.py), every rule
across flags checked at once (plan/rules.py `validate`), what `-d` changes
(plan/detached.py), the local sources of `-v` checked (files/upload.py), the local ports of
`-p` reserved (run/ports.py), `-it` without a terminal on stdin downgraded to `-i` (as
kubectl does; docker refuses), the connection resolved (cluster/connect.py), the plan
built and refused if it is not UTF-8 text.

A client-side dry run imports nothing of run/ here: the sources and ports are only checked
for a run that creates something (CONTRIBUTING.md's start-up rule). The heavy imports wait
until the probe has started, so that its kubectl start-up overlaps them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubectl_squarepeg.errors import KubectlMissing, UsageError
from kubectl_squarepeg.prepare.environment import Environment

if TYPE_CHECKING:
    from kubectl_squarepeg.cluster.connect import Connection, KubeconfigProbe
    from kubectl_squarepeg.config.merge import Config
    from kubectl_squarepeg.files.upload import Checked
    from kubectl_squarepeg.plan.manifest import Plan
    from kubectl_squarepeg.terminal.console import Console

SUFFIX_BYTES = 3  # the generated name's 6 hex characters


@dataclass(frozen=True)
class PreparedRun:
    """Everything `run` decided before the cluster is asked to create anything."""

    plan: Plan  # the manifest, its kind and name, and the RunOptions as `plan.options`
    connection: Connection
    detach: bool
    files_checked: Checked | None  # -v with a local path: the sources, checked
    config_files: tuple[str, ...]  # the config files in effect, for the banner
    notes: tuple[str, ...] = ()  # what -d changed, said before the plan's warnings


def prepare_run(
    flags: Mapping[str, Any], explicit: set[str], env: Environment, console: Console
) -> PreparedRun:
    """`run`'s flags (click's parameters; `explicit` names those given on the command line)
    as a PreparedRun, or the UsageError (ConfigError, ClusterError) that stops it."""
    # The kubeconfig probe (a kubectl process, unless the view is cached) runs while
    # Python imports and reads the config files; connect() collects it.
    probe = _start_probe(flags)

    from kubectl_squarepeg.cluster.connect import connect
    from kubectl_squarepeg.config import files as config
    from kubectl_squarepeg.plan import manifest, rules
    from kubectl_squarepeg.plan.options import build_run_options, check_image

    check_image(flags["image"])
    merged = config.load(explicit=flags["config"], environ=env.environ, cwd=env.cwd)
    options = build_run_options(
        flags,
        explicit,
        merged,
        environ=env.environ,
        read_text=config.read_key_value_file_text,
    )
    detach, remove_when_done = bool(flags["detach"]), bool(flags["rm"])
    asked = rules.Asked(
        detach=detach,
        rm=remove_when_done and "rm" in explicit,
        keep=bool(flags["keep"]) and "keep" in explicit,
        mode_given="mode" in explicit,
    )
    rules.validate(options, asked)
    notes: list[str] = []
    if detach:
        from kubectl_squarepeg.plan.detached import detach_options

        options, notes = detach_options(options, remove_when_done=remove_when_done)
    console.quiet = options.quiet
    creates = not (options.dry_run or options.dry_run_server)
    files_checked = None
    if options.binds and creates:
        files_checked = _check_file_sources(options.binds, options.max_upload_bytes, console)
    if options.publish and creates and not detach:  # -d -p: `port` forwards them later
        from kubectl_squarepeg.run.ports import reserve

        # -p: every local port checked free (an empty one chosen) before anything else.
        options = dataclasses.replace(options, publish=reserve(options.publish))
    if options.interactive and options.tty and not env.stdin_is_tty and not detach:
        # kubectl's behaviour (docker refuses): a CI job piping data into `-it` still runs.
        # Without the terminal: a pty would turn the piped bytes' newlines into CRLF.
        console.warn(
            "-t needs a terminal on stdin and this one is not a terminal; "
            "running as -i (stdin piped to the container, no terminal)"
        )
        options = dataclasses.replace(options, tty=False)
    connection = connect(
        options,
        environ=env.environ,
        local_only=options.dry_run,
        probe=probe,
        kubeconfig_origin=key_origin(merged, "kubeconfig", "kubeconfig" in explicit),
        **impersonation(flags),
    )
    plan = manifest.build_plan(
        options,
        merged,
        namespace=connection.namespace,
        run_id=new_run_id(),
        suffix=os.urandom(SUFFIX_BYTES).hex(),
        username=env.username,
    )
    if detach:
        from kubectl_squarepeg.plan.detached import detach_plan

        plan = detach_plan(plan, remove_when_done=remove_when_done)
    check_encodable(plan.manifest)
    return PreparedRun(
        plan, connection, detach, files_checked, tuple(merged.files), tuple(notes)
    )


def _start_probe(flags: Mapping[str, Any]) -> KubeconfigProbe | None:
    """Start `kubectl config view --minify` now, unless a dry run already knows the namespace.

    It runs while the config files load; connect() collects it (or, if config changed the
    context or kubeconfig, discards it and starts the right one)."""
    if flags["dry_run"] and flags["namespace"] and not flags["context"]:
        return None
    from kubectl_squarepeg.cluster.connect import KubeconfigProbe

    try:
        return KubeconfigProbe(flags["context"], flags["kubeconfig"])
    except KubectlMissing:
        return None  # connect() reports it, or a dry run does without


def _check_file_sources(binds: Any, max_upload_bytes: int, console: Console) -> Checked:
    """A run with a local path mounted: every SRC checked before anything is created
    (exists, readable, within max_upload_bytes; files/upload.py), what a copy cannot carry
    named."""
    from kubectl_squarepeg.files.upload import check_sources

    checked = check_sources(binds, max_upload_bytes)
    for warning in checked.warnings:
        console.warn(warning)
    return checked


def new_run_id() -> str:
    """A random (version 4) UUID, as uuid.uuid4() makes it, without importing uuid (which
    imports platform and costs a dry run a few milliseconds)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def impersonation(flags: Mapping[str, Any]) -> dict[str, Any]:
    """connect()'s keywords for --as and --as-group."""
    return {"as_user": flags.get("as_user"), "as_groups": tuple(flags.get("as_group") or ())}


def key_origin(merged: Config, key: str, flag_given: bool) -> str | None:
    """FILE:LINE of a config key's value, for an error about it (None when a flag set it)."""
    if flag_given or merged.values.get(key) is None:
        return None
    return str(merged.origin_of(key))


def check_encodable(manifest: Any, path: str = "") -> None:
    """Refuse a manifest with text that is not UTF-8: an argument, environment variable or
    file given as bytes that do not decode (Python keeps them as lone surrogates), which
    neither the dry run's output nor the API server could carry."""
    if isinstance(manifest, dict):
        for key, value in manifest.items():
            check_encodable(key, path)
            check_encodable(value, f"{path}.{key}" if path else str(key))
    elif isinstance(manifest, list):
        for index, item in enumerate(manifest):
            check_encodable(item, f"{path}[{index}]")
    elif isinstance(manifest, str):
        try:
            manifest.encode("utf-8")
        except UnicodeEncodeError:
            # The value itself is not shown: it may be a secret (an env variable's value).
            raise UsageError(
                f"the manifest's {path or 'text'} is not UTF-8 text",
                "give UTF-8 text in flags, environment variables and files",
            ) from None
