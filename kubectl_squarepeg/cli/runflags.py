"""The options of the command line: `run`'s docker flags, and the options the verbs share.

Owns how a flag is declared to click: every supported `docker run` flag as an option of
`run` (`run_options`, in the order `run --help` lists them), a hidden option for each flag
squarepeg refuses that fails with why and what to use instead (plan/dockerflags.py is the
table), `--restart` accepting only `no`, `--dns-opt` as a hidden alias, the impersonation
options, and the cluster options of the verbs on the user's runs (`cluster_options`). What
a flag's value means is plan/'s.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, TypeVar

import click

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.plan import dockerflags

F = TypeVar("F", bound=Callable[..., Any])


def _refused_options(command: F) -> F:
    """A hidden option for every docker flag squarepeg refuses: it fails with why, and what
    to use instead, rather than a bare "No such option"."""
    for flag in reversed(dockerflags.FLAGS):
        if flag.status == "refused":
            command = _refused_option(flag)(command)
    return command


def _refused_option(flag: dockerflags.DockerFlag) -> Callable[[F], F]:
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
            dockerflags.RESTART_NOTE.removeprefix("any other policy is refused: "),
        )


def many(*names: str, metavar: str, help: str) -> Callable[[F], F]:
    return click.option(*names, multiple=True, metavar=metavar, help=help)


def impersonation_options(command: F) -> F:
    """--as and --as-group: kubectl's impersonation, passed to every kubectl call
    (docs/decisions/0250-impersonation-is-part-of-the-target.md)."""
    groups = many("--as-group", metavar="GROUP", help="Act as a member of GROUP (with --as).")
    user = click.option("--as", "as_user", metavar="USER", help="Act as USER (impersonation).")
    return user(groups(command))


class _WithHiddenAlias(click.Option):
    """An option whose last name is an alias docker accepts but hides from its help
    (`--dns-opt`): parsed like the others, left out of `run --help` as docker does."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        shown = copy.copy(self)
        shown.opts = self.opts[:-1]
        return click.Option.get_help_record(shown, ctx)


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


def run_options(command: F) -> F:
    """`run`'s options and arguments, as `run --help` lists them."""
    for option in reversed(_RUN_OPTIONS):
        command = option(command)
    return command


_RUN_OPTIONS: tuple[Callable[[Any], Any], ...] = (
    click.option("--name", metavar="NAME", help="Pod/Job name (lowercase RFC 1123 label)."),
    many("-e", "--env", metavar="KEY[=VALUE]", help="Set an environment variable."),
    many("--env-file", metavar="FILE", help="Read environment variables from a docker env file."),
    many("-l", "--label", metavar="KEY[=VALUE]", help="Add a label."),
    many("--label-file", metavar="FILE", help="Read labels from a file of KEY=VALUE lines."),
    many("--annotation", metavar="KEY[=VALUE]", help="Add an annotation."),
    click.option("-w", "--workdir", metavar="DIR", help="Working directory inside the container."),
    click.option("-u", "--user", metavar="UID[:GID]", help="Numeric user (and group) to run as."),
    click.option(
        "--entrypoint", metavar="CMD", help='Replace the image\'s ENTRYPOINT ("" resets it).'
    ),
    click.option("--cpus", metavar="N", help="CPUs requested and limited, e.g. 0.5 (0: no limit)."),
    click.option(
        "-m", "--memory", metavar="SIZE",
        help="Memory requested and limited, e.g. 512m (0: no limit).",
    ),
    click.option("--memory-reservation", metavar="SIZE", help="Memory requested, e.g. 256m."),
    click.option("--gpus", metavar="N", help="Number of nvidia.com/gpu."),
    click.option("--pull", metavar="always|missing|never", help="Image pull policy."),
    click.option(
        "--platform", metavar="OS[/ARCH[/VARIANT]]", help="Run on nodes of this OS/architecture."
    ),
    click.option("--privileged", is_flag=True, help="Run the container privileged."),
    many("--cap-add", metavar="CAP", help="Add a Linux capability."),
    many("--cap-drop", metavar="CAP", help="Drop a Linux capability."),
    many("--group-add", metavar="GID", help="Add a supplementary group (numeric)."),
    many("--sysctl", metavar="KEY=VALUE", help="Set a namespaced kernel parameter."),
    click.option("--read-only", is_flag=True, help="Mount the root filesystem read-only."),
    many(
        "--tmpfs", metavar="PATH[:OPTS]", help="Mount an in-memory filesystem (rw, ro, size=SIZE)."
    ),
    many(
        "-v", "--volume", metavar="SRC:DST[:ro]", help="Mount a claim NAME, or copy a local path."
    ),
    many("--mount", metavar="type=TYPE,src=SRC,dst=DST", help="Mount (bind, volume or tmpfs)."),
    many(
        "-p",
        "--publish",
        metavar="[IP:][HOST_PORT:]PORT",
        help="Forward a local port (127.0.0.1) to the container's while it runs.",
    ),
    click.option("--shm-size", metavar="SIZE", help="Size of /dev/shm."),
    click.option("-h", "--hostname", metavar="NAME", help="The pod's host name."),
    many("--add-host", metavar="HOST:IP", help="Add an /etc/hosts entry."),
    many("--dns", metavar="IP", help="Use this nameserver instead of the cluster's."),
    many("--dns-search", metavar="DOMAIN", help="Add a DNS search domain."),
    click.option(
        "--dns-option",
        "--dns-opt",
        cls=_WithHiddenAlias,
        multiple=True,
        metavar="OPT[:VALUE]",
        help="Add a resolv.conf option, e.g. ndots:2.",
    ),
    click.option("--stop-timeout", metavar="SECONDS", help="Grace period before SIGKILL."),
    click.option("--runtime", metavar="NAME", help="RuntimeClass to run with."),
    click.option("--rm", is_flag=True, help="Accepted for docker habit: deleting is the default."),
    click.option(
        "-d", "--detach", is_flag=True, help="Start it, print its name and leave it running."
    ),
    click.option("-n", "--namespace", metavar="NS", help="Namespace (default: the context's)."),
    click.option("--context", metavar="NAME", help="Kubeconfig context to use."),
    click.option("--kubeconfig", metavar="FILE", help="Kubeconfig file to use."),
    impersonation_options,
    click.option("--mode", metavar="pod|job", help="Create a Pod (default) or a Job."),
    click.option("--timeout", metavar="SECONDS", help="Startup timeout (default 300; 90s, 5m)."),
    click.option("--keep", is_flag=True, help="Do not delete the Pod/Job afterwards."),
    click.option("--dry-run", is_flag=True, help="Print the manifest; create nothing."),
    click.option("--dry-run-server", is_flag=True, help="Have the apiserver check the manifest."),
    click.option("-q", "--quiet", is_flag=True, help="No status messages on stderr."),
    click.option(
        "-i", "--interactive", is_flag=True, help="Send stdin to the container (kubectl attach)."
    ),
    click.option(
        "-t", "--tty", is_flag=True, help="Give the container a terminal; -it attaches yours."
    ),
    many("--config", metavar="FILE", help="Read this config file too (highest precedence)."),
    click.option("--service-account", metavar="NAME", help="Service account to run as."),
    many("--node-selector", metavar="KEY=VALUE", help="Only run on nodes with this label."),
    many("--toleration", metavar="KEY[=VALUE]:EFFECT", help="Tolerate a node taint."),
    many("--image-pull-secret", metavar="NAME", help="Secret for pulling the image."),
    click.option("--priority-class", metavar="NAME", help="PriorityClass of the pod."),
    click.option(
        "--restart", metavar="no", expose_value=False, callback=_restart,
        help="Only `no`: one attempt."
    ),
    click.option(
        "--no-healthcheck", is_flag=True, expose_value=False, help="Accepted: Kubernetes runs none."
    ),
    click.option(
        "--disable-content-trust", is_flag=True, expose_value=False, help="Accepted: a no-op."
    ),
    _refused_options,
    click.argument("image"),
    click.argument("command", nargs=-1, type=click.UNPROCESSED),
)
