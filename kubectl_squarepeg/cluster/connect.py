"""Which cluster and namespace a run talks to, and the banner that says so.

Owns the credential order of the lifecycle spec (kubeconfig honouring --context and
--kubeconfig; the pod's own service account only when no --context was given and the
kubeconfig could not be used at all) and the namespace order: explicit -n, then config
`namespace`, then the kubeconfig context's namespace, then the in-cluster namespace file,
then "default". An impersonated identity (`--as`, `--as-group`) rides on the target, so
every kubectl call and printed command carries it, and the banner says it. The kubeconfig is
read by kubectl itself (`kubectl config view --minify`),
so squarepeg resolves it exactly as every later kubectl call will. For in-cluster runs it
writes a temporary kubeconfig, removed at exit, that kubectl is pointed at.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kubectl_squarepeg.cluster import viewcache
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.cluster.target import DEFAULT_NAMESPACE, Target
from kubectl_squarepeg.errors import ClusterError, KubectlMissing, UsageError


class ClusterChoice(Protocol):
    """What the user said about where to run: `run`'s RunOptions, or `sweep`'s flags."""

    @property
    def context(self) -> str | None: ...
    @property
    def kubeconfig(self) -> str | None: ...
    @property
    def namespace(self) -> str | None: ...


@dataclass(frozen=True)
class ClusterFlags:
    """A ClusterChoice of its own, for commands that build no RunOptions."""

    context: str | None = None
    kubeconfig: str | None = None
    namespace: str | None = None


SERVICEACCOUNT_DIR_ENV = "SQUAREPEG_SERVICEACCOUNT_DIR"
DEFAULT_SERVICEACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
IN_CLUSTER = "in-cluster"
_MINIFY = ("config", "view", "--minify", "-o", "json")
_VIEW = ("config", "view", "-o", "json")


@dataclass(frozen=True)
class Connection:
    """The resolved cluster: kubectl's target arguments, the namespace and where they came from."""

    target: Target
    namespace: str
    source: str  # the kubeconfig context's name, or "in-cluster"
    in_cluster: bool
    # Why a dry run fell back to a namespace without a usable kubeconfig (None if it did not).
    degraded: str | None = None

    def banner(self) -> str:
        as_whom = self.target.as_whom()
        if self.in_cluster:
            return f"using in-cluster config, namespace {self.namespace}{as_whom}"
        return f"using context {self.source}, namespace {self.namespace}{as_whom}"


class KubeconfigProbe:
    """`kubectl config view --minify -o json`, started before it is needed.

    Start-up (Python, click, config) costs about as much as this command, so the run
    command starts it first and `connect` collects it; `connect` starts a fresh one when
    config changed the context or kubeconfig the probe was started with. While the
    kubeconfig files are unchanged, the answer of an earlier run is used instead and no
    kubectl starts at all (viewcache.py).
    """

    def __init__(
        self,
        context: str | None,
        kubeconfig: str | None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.key = (context, kubeconfig)
        environ = os.environ if environ is None else environ
        self._cache_file = viewcache.cache_file(environ)
        self._cache_key = viewcache.key_for(context, kubeconfig, environ, now=time.time())
        known = viewcache.lookup(self._cache_key, self._cache_file) if self._cache_key else None
        self._known = None if known is None else ContextView(*known)
        self._child = None
        if self._known is None:
            # The door is imported only when kubectl must run: a dry run whose kubeconfig
            # view is cached never loads it (tests/e2e/test_lazy_sh.py).
            from kubectl_squarepeg.cluster import kubectl

            target = Target(context=context, kubeconfig=kubeconfig)
            self._child = kubectl.start(_MINIFY, target, namespaced=False)

    def view(self) -> tuple[ContextView | None, str]:
        """The context kubectl would use, or None and why there is none."""
        if self._known is not None:
            return self._known, ""
        assert self._child is not None
        from kubectl_squarepeg.cluster import kubectl

        result = kubectl.collect(self._child)
        view = parse_minified(result.stdout) if result.ok else None
        if view is None:
            return None, result.error_text if not result.ok else "it has no current context"
        if self._cache_key is not None:
            viewcache.store(self._cache_key, view.name, view.namespace, self._cache_file)
        return view, ""

    @property
    def remembered(self) -> ContextView | None:
        """The view of an earlier run for these kubeconfig files (viewcache.py), if any."""
        return self._known

    def discard(self) -> None:
        if self._child is not None:
            self._child.terminate()


# --- pure parts -------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextView:
    """What `config view --minify` says about the context kubectl would use."""

    name: str
    namespace: str | None


def _json_object(stdout: bytes) -> dict[str, Any] | None:
    try:
        doc = json.loads(stdout)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def parse_minified(stdout: bytes) -> ContextView | None:
    """The current context of minified `config view -o json` output; None if it has none."""
    doc = _json_object(stdout)
    if doc is None:
        return None
    name = doc.get("current-context")
    for entry in doc.get("contexts") or ():
        if isinstance(entry, dict) and entry.get("name") == name and name:
            context = entry.get("context") or {}
            namespace = context.get("namespace") if isinstance(context, dict) else None
            return ContextView(str(name), str(namespace) if namespace else None)
    return None


def context_names(stdout: bytes) -> list[str] | None:
    """Every context name in full `config view -o json` output; None if it is not that."""
    doc = _json_object(stdout)
    if doc is None:
        return None
    entries = doc.get("contexts") or ()
    return [str(e["name"]) for e in entries if isinstance(e, dict) and "name" in e]


def in_cluster_kubeconfig(
    *, host: str, port: str, serviceaccount_dir: Path, namespace: str, with_ca: bool
) -> dict[str, Any]:
    """A kubeconfig that uses the pod's service account; kubectl re-reads the token file."""
    server_host = f"[{host}]" if ":" in host else host
    cluster: dict[str, Any] = {"server": f"https://{server_host}:{port}"}
    if with_ca:
        cluster["certificate-authority"] = str(serviceaccount_dir / "ca.crt")
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": IN_CLUSTER, "cluster": cluster}],
        "users": [{"name": IN_CLUSTER, "user": {"tokenFile": str(serviceaccount_dir / "token")}}],
        "contexts": [
            {
                "name": IN_CLUSTER,
                "context": {"cluster": IN_CLUSTER, "user": IN_CLUSTER, "namespace": namespace},
            }
        ],
        "current-context": IN_CLUSTER,
    }


# --- resolution -------------------------------------------------------------------------


def _read_namespace_file(serviceaccount_dir: Path) -> str | None:
    try:
        text = (serviceaccount_dir / "namespace").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


def _write_temporary_kubeconfig(doc: dict[str, Any]) -> str:
    import tempfile  # in-cluster runs only

    fd, path = tempfile.mkstemp(prefix="squarepeg-in-cluster-", suffix=".kubeconfig")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:  # mkstemp made it 0600
        json.dump(doc, handle)  # JSON is YAML, and keeps PyYAML out of this path
    atexit.register(_remove_quietly, path)
    return path


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _missing_context(options: ClusterChoice) -> UsageError | None:
    """An error if the explicit --context is not in the kubeconfig (None if it is)."""
    from kubectl_squarepeg.cluster import kubectl

    context = options.context
    listing = kubectl.run(_VIEW, Target(kubeconfig=options.kubeconfig), namespaced=False)
    names = context_names(listing.stdout) if listing.ok else None
    if names is not None and context in names:
        return None
    where = f"--kubeconfig {options.kubeconfig}" if options.kubeconfig else "the kubeconfig"
    if names is None:
        return UsageError(
            f"--context {context}: {where} cannot be read ({listing.error_text})",
            "fix the kubeconfig file, or point --kubeconfig or KUBECONFIG at a working one",
        )
    known = ", ".join(names) if names else "none"
    listing_command = Commands(Target(kubeconfig=options.kubeconfig)).kubectl(
        "config", "get-contexts", namespaced=False
    )
    return UsageError(
        f"--context {context} does not exist in {where} (contexts: {known})",
        f"pass one of the names `{listing_command}` lists",
    )


def _in_cluster(
    options: ClusterChoice, environ: Mapping[str, str], kubeconfig_error: str, local_only: bool
) -> Connection:
    directory = Path(environ.get(SERVICEACCOUNT_DIR_ENV) or DEFAULT_SERVICEACCOUNT_DIR)
    namespace = options.namespace or _read_namespace_file(directory) or DEFAULT_NAMESPACE
    host = environ.get("KUBERNETES_SERVICE_HOST")
    usable = bool(host) and (directory / "token").is_file()
    if local_only:
        # A dry run never talks to the cluster, so it needs no credentials, only names.
        target = Target(kubeconfig=options.kubeconfig, namespace=namespace)
        source = IN_CLUSTER if usable else "none"
        note = None if usable or options.namespace else f"no usable kubeconfig ({kubeconfig_error})"
        return Connection(target, namespace, source, usable, note)
    if not usable or host is None:
        listing = Commands(Target(kubeconfig=options.kubeconfig)).kubectl(
            "config", "get-contexts", namespaced=False
        )
        raise ClusterError(
            f"no usable kubeconfig ({kubeconfig_error}) and not running inside a cluster",
            "point KUBECONFIG or --kubeconfig at a kubeconfig with a current context, or "
            f"pass --context NAME (`{listing}` lists them)",
        )
    doc = in_cluster_kubeconfig(
        host=host,
        port=environ.get("KUBERNETES_SERVICE_PORT") or "443",
        serviceaccount_dir=directory,
        namespace=namespace,
        with_ca=(directory / "ca.crt").is_file(),
    )
    target = Target(
        context=IN_CLUSTER, kubeconfig=_write_temporary_kubeconfig(doc), namespace=namespace
    )
    return Connection(target, namespace, IN_CLUSTER, True)


def missing_kubeconfig(
    options: ClusterChoice, environ: Mapping[str, str], config_origin: str | None = None
) -> UsageError | None:
    """An error when the kubeconfig the user named does not exist: `--kubeconfig FILE` (or
    the config key, whose FILE:LINE is `config_origin`), or a $KUBECONFIG none of whose
    files exists. Checked before anything else, a dry run included: a typo there must not
    quietly become the `default` namespace. (kubectl itself skips a missing file in a
    $KUBECONFIG list, so one existing file is enough.)"""
    if options.kubeconfig:
        if os.path.exists(options.kubeconfig):
            return None
        if config_origin is not None:
            return UsageError(
                f"the kubeconfig file {options.kubeconfig} does not exist (config kubeconfig, "
                f"{config_origin})",
                "fix the path there (a relative one is relative to that config file), or remove "
                "the key to use $KUBECONFIG or ~/.kube/config",
            )
        return UsageError(
            f"the kubeconfig file {options.kubeconfig} does not exist (--kubeconfig)",
            "check the path, or leave --kubeconfig out to use $KUBECONFIG or ~/.kube/config",
        )
    listed = [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if not listed or any(os.path.exists(p) for p in listed):
        return None
    return UsageError(
        f"KUBECONFIG names no file that exists ({os.pathsep.join(listed)})",
        "fix KUBECONFIG, or unset it to use ~/.kube/config",
    )


def needs_kubeconfig(options: ClusterChoice, *, local_only: bool) -> bool:
    """False when a dry run already knows everything (-n given, no --context to check)."""
    return not (local_only and options.namespace and not options.context)


def check_impersonation(as_user: str | None, as_groups: tuple[str, ...]) -> None:
    """Refuse what kubectl would refuse only at its first call: --as-group without --as,
    and an empty name."""
    if as_user is not None and not as_user.strip():
        raise UsageError("--as is empty", "give the user to act as: --as USER")
    if any(not group.strip() for group in as_groups):
        raise UsageError("--as-group is empty", "give a group name: --as-group GROUP")
    if as_groups and as_user is None:
        raise UsageError(
            f"--as-group {as_groups[0]} without --as",
            "Kubernetes impersonates groups only with a user: add --as USER",
        )


def connect(
    options: ClusterChoice,
    *,
    environ: Mapping[str, str] | None = None,
    local_only: bool = False,
    probe: KubeconfigProbe | None = None,
    kubeconfig_origin: str | None = None,
    as_user: str | None = None,
    as_groups: tuple[str, ...] = (),
) -> Connection:
    """Resolve the target of every kubectl call of this run.

    `local_only` (a client-side dry run) degrades to the "default" namespace on a missing
    or broken kubeconfig, but an explicit --context that does not exist is an error.
    `kubeconfig_origin` is the FILE:LINE of a kubeconfig a config file named (None when it
    came from --kubeconfig), for the error when that file does not exist. `as_user` and
    `as_groups` (--as, --as-group) go on the target, for every call.
    """
    check_impersonation(as_user, as_groups)
    connection = _connect(
        options,
        environ=os.environ if environ is None else environ,
        local_only=local_only,
        probe=probe,
        kubeconfig_origin=kubeconfig_origin,
    )
    if as_user is None:
        return connection
    import dataclasses

    return dataclasses.replace(
        connection, target=connection.target.impersonating(as_user, as_groups)
    )


def _connect(
    options: ClusterChoice,
    *,
    environ: Mapping[str, str],
    local_only: bool,
    probe: KubeconfigProbe | None,
    kubeconfig_origin: str | None,
) -> Connection:
    missing = missing_kubeconfig(options, environ, kubeconfig_origin)
    if missing is not None:
        if probe is not None:
            probe.discard()
        raise missing
    key = (options.context, options.kubeconfig)
    if probe is not None and probe.key != key:
        probe.discard()
        probe = None
    if not needs_kubeconfig(options, local_only=local_only):
        if probe is not None:
            probe.discard()
        namespace = options.namespace or DEFAULT_NAMESPACE
        target = Target(kubeconfig=options.kubeconfig, namespace=namespace)
        return Connection(target, namespace, "kubeconfig", False)
    try:
        view, error = (probe or KubeconfigProbe(*key, environ)).view()
    except KubectlMissing as no_kubectl:
        if not (local_only and options.context is None):
            raise
        # A dry run without kubectl can still print the manifest, in the fallback namespace.
        namespace = options.namespace or DEFAULT_NAMESPACE
        target = Target(kubeconfig=options.kubeconfig, namespace=namespace)
        return Connection(target, namespace, "none", False, no_kubectl.message)
    if view is not None:
        target = Target.of_context(
            view.name, view.namespace, kubeconfig=options.kubeconfig, namespace=options.namespace
        )
        return Connection(target, target.namespace or DEFAULT_NAMESPACE, view.name, False)
    if options.context is None:
        return _in_cluster(options, environ, error, local_only)
    missing = _missing_context(options)
    if missing is not None:
        raise missing
    if local_only:
        namespace = options.namespace or DEFAULT_NAMESPACE
        target = Target(context=options.context, kubeconfig=options.kubeconfig, namespace=namespace)
        return Connection(target, namespace, options.context, False)
    check = Commands(Target(context=options.context, kubeconfig=options.kubeconfig)).kubectl(
        "config", "view", "--minify", namespaced=False
    )
    raise ClusterError(
        f"kubeconfig context {options.context} cannot be used ({error})",
        f"check it with `{check}`",
    )
