"""Pure builders of the run's Pod: the container `main`, its resources, security context
and volumes, the pod spec and metadata, and the Job around the Pod in job mode.

Maps every docker-style option of RunOptions onto the pod, and records through a `Claimer`
a claim for each field an explicitly given flag wrote, so that passthrough cannot override
it (claims.py; decision 0009). What is done with the claims, the name, the labels and the
Plan are manifest.py's. Nothing here reads the clock, the environment or a file.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from typing import Any

from kubectl_squarepeg.plan import filehelpers, quantities
from kubectl_squarepeg.plan.claims import Claims
from kubectl_squarepeg.plan.options import RunOptions, flag_name
from kubectl_squarepeg.plan.ports import container_ports
from kubectl_squarepeg.plan.values import ValueProblem

MAIN = "main"
GPU_RESOURCE = "nvidia.com/gpu"
TMPFS_VOLUME = "tmpfs-{}"  # the volume of the Nth --tmpfs
CLAIM_VOLUME = "claim-{}"  # the volume of the Nth -v NAME:DST (a PersistentVolumeClaim)
SHM_VOLUME = "dshm"  # the volume of --shm-size
_MAIN: tuple[str, ...] = ("spec", "containers", f"[name={MAIN}]")


def quantity(text: str) -> str | int:
    """A resource quantity; whole numbers as integers, as people write them in YAML."""
    return int(text) if text.isdigit() else text


# --- claims -----------------------------------------------------------------------------


class Claimer:
    """Records claims for the fields written on behalf of explicitly given flags."""

    def __init__(self, options: RunOptions, claims: Claims) -> None:
        self._options = options
        self._claims = claims

    def __call__(self, param: str, *paths: tuple[str, ...]) -> None:
        if param in self._options.explicit:
            for path in paths:
                self._claims.add(path, flag_name(param))

    def keys(self, param: str, base: tuple[str, ...], named: bool = False) -> None:
        """One claim per key a mapping flag set on the command line."""
        for key, flag in self._options.cli_keys.get(param, {}).items():
            self._claims.add((*base, f"[name={key}]" if named else key), flag)


# --- the Pod ----------------------------------------------------------------------------


def _resources(o: RunOptions, claim: Claimer) -> dict[str, Any]:
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for param, resource, amount in (("cpus", "cpu", o.cpus), ("memory", "memory", o.memory)):
        if amount is not None:
            requests[resource] = limits[resource] = quantity(amount)
            claim(param, (*_MAIN, "resources", "limits", resource))
            if resource == "cpu" or o.memory_reservation is None:
                claim(param, (*_MAIN, "resources", "requests", resource))
    if o.memory_reservation is not None:
        # docker's soft limit is Kubernetes' request: -m then sets the limit alone.
        requests["memory"] = quantity(o.memory_reservation)
        claim("memory_reservation", (*_MAIN, "resources", "requests", "memory"))
    if o.gpus:
        limits[GPU_RESOURCE] = o.gpus
        claim("gpus", (*_MAIN, "resources", "limits", GPU_RESOURCE))
    return {k: v for k, v in (("requests", requests), ("limits", limits)) if v}


def _security_context(o: RunOptions, claim: Claimer) -> dict[str, Any]:
    context: dict[str, Any] = {}
    sc = (*_MAIN, "securityContext")
    if o.user is not None:
        context["runAsUser"] = o.user[0]
        claim("user", (*sc, "runAsUser"))
        if o.user[1] is not None:
            context["runAsGroup"] = o.user[1]
            claim("user", (*sc, "runAsGroup"))
        if o.user[0] != 0:
            # What PodSecurity's `restricted` asks of a user that is not root, and true of it.
            context["runAsNonRoot"] = True
            claim("user", (*sc, "runAsNonRoot"))
    if o.privileged:
        context["privileged"] = True
        claim("privileged", (*sc, "privileged"))
    if o.read_only:
        context["readOnlyRootFilesystem"] = True
        claim("read_only", (*sc, "readOnlyRootFilesystem"))
    capabilities = {k: list(v) for k, v in (("add", o.cap_add), ("drop", o.cap_drop)) if v}
    if capabilities:
        context["capabilities"] = capabilities
        claim("cap_add", (*sc, "capabilities", "add"))
        claim("cap_drop", (*sc, "capabilities", "drop"))
    context.update(_security_options(o.table_values.get("security_opt") or (), claim))
    return context


def _security_options(given: Iterable[tuple[str, str]], claim: Claimer) -> dict[str, Any]:
    """--security-opt's fields of the main container's securityContext (plan/security.py
    parses them)."""
    context: dict[str, Any] = {}
    sc = (*_MAIN, "securityContext")
    for name, value in given:
        if name == "no-new-privileges":
            context["allowPrivilegeEscalation"] = value != "true"
            claim("security_opt", (*sc, "allowPrivilegeEscalation"))
        elif name == "seccomp":
            context["seccompProfile"] = {"type": "Unconfined"}
            claim("security_opt", (*sc, "seccompProfile"))
        elif name == "apparmor":
            context["appArmorProfile"] = ({"type": "Unconfined"} if value == "unconfined"
                                          else {"type": "Localhost", "localhostProfile": value})
            claim("security_opt", (*sc, "appArmorProfile"))
        else:
            field = name.removeprefix("label-")
            context.setdefault("seLinuxOptions", {})[field] = value
            claim("security_opt", (*sc, "seLinuxOptions", field))
    return context


def _pod_security_context(o: RunOptions, claim: Claimer) -> dict[str, Any]:
    """The pod-level securityContext: --group-add and --sysctl apply to the whole pod, and so
    does docker's default seccomp profile (decision 0420)."""
    context: dict[str, Any] = {}
    if not o.privileged:
        # As the runtime's own default profile, for every container of the pod; unclaimed,
        # so a config file's `kubernetes.spec` may set another. `seccomp=unconfined` sets
        # the main container's own.
        context["seccompProfile"] = {"type": "RuntimeDefault"}
    if o.group_add:
        context["supplementalGroups"] = list(o.group_add)
        claim("group_add", ("spec", "securityContext", "supplementalGroups"))
    if o.sysctls:
        context["sysctls"] = [{"name": n, "value": v} for n, v in o.sysctls]
        # Per sysctl: config passthrough may still set others.
        claim(
            "sysctl", *(("spec", "securityContext", "sysctls", f"[name={n}]") for n, _ in o.sysctls)
        )
    return context


def _memory_volumes(o: RunOptions, claim: Claimer) -> tuple[list[Any], list[Any]]:
    """(volumes, mounts) for --tmpfs and --shm-size: emptyDirs with medium Memory."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []

    def add(param: str, name: str, path: str, size: str | None, read_only: bool) -> None:
        empty_dir: dict[str, Any] = {"medium": "Memory"}
        if size is not None:
            empty_dir["sizeLimit"] = size
        volumes.append({"name": name, "emptyDir": empty_dir})
        mount: dict[str, Any] = {"name": name, "mountPath": path}
        if read_only:
            mount["readOnly"] = True
        mounts.append(mount)
        segment = f"[name={name}]"
        claim(param, ("spec", "volumes", segment), (*_MAIN, "volumeMounts", segment))

    tmpfs_flag = "tmpfs" if "tmpfs" in o.explicit else "mount"  # --mount type=tmpfs alone
    for index, tmpfs in enumerate(o.tmpfs, start=1):
        add(tmpfs_flag, TMPFS_VOLUME.format(index), tmpfs.path, tmpfs.size_limit, tmpfs.read_only)
    if o.shm_size is not None:
        add("shm_size", SHM_VOLUME, "/dev/shm", o.shm_size, False)
    return volumes, mounts


def mount_flag(o: RunOptions) -> str:
    """The parameter a claim of -v/--mount's fields is recorded under."""
    return "volume" if "volume" in o.explicit else "mount"


def _file_volumes(
    o: RunOptions, claim: Claimer, main_resources: dict[str, Any]
) -> tuple[list[Any], list[Any], list[Any]]:
    """(volumes, main's mounts, init containers) of -v/--mount: an emptyDir per bind mount
    with the helpers that fill it and copy it back, a PersistentVolumeClaim per named volume
    (docs/decisions/0180)."""
    flag = mount_flag(o)
    volumes = filehelpers.volumes(o.binds) if o.binds else []
    mounts_ = filehelpers.main_mounts(o.binds)
    helpers = filehelpers.init_containers(
        o.binds, image=o.files_helper_image, user=o.user, main_resources=main_resources
    )
    for index, volume in enumerate(o.volume_mounts, start=1):
        name = CLAIM_VOLUME.format(index)
        source: dict[str, Any] = {"claimName": volume.claim}
        if volume.read_only:
            source["readOnly"] = True
        volumes.append({"name": name, "persistentVolumeClaim": source})
        mount: dict[str, Any] = {"name": name, "mountPath": volume.target}
        if volume.read_only:
            mount["readOnly"] = True
        if volume.sub_path is not None:
            mount["subPath"] = volume.sub_path
        mounts_.append(mount)
    for entry in [*volumes, *mounts_]:
        segment = f"[name={entry['name']}]"
        claim(flag, ("spec", "volumes", segment), (*_MAIN, "volumeMounts", segment))
    for helper in helpers:
        claim(flag, ("spec", "initContainers", f"[name={helper['name']}]"))
    return volumes, mounts_, helpers


# --- docker's --stop-signal: the main container's lifecycle.stopSignal ------------------

# The signals Kubernetes takes as a Linux container's stop signal (the API's Signal values),
# by their Linux numbers, which docker also accepts: index N is signal N.
_LINUX_SIGNALS = (
    "", "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE",
    "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM", "SIGSTKFLT",
    "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGXCPU",
    "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO", "SIGPWR", "SIGSYS", "", "",
    "SIGRTMIN", *(f"SIGRTMIN+{n}" for n in range(1, 16)),
    *(f"SIGRTMAX-{n}" for n in range(14, 0, -1)), "SIGRTMAX",
)  # fmt: skip
# Names Kubernetes also takes for a signal above: Linux's aliases.
_ALIASES = {"SIGCLD": "SIGCHLD", "SIGIOT": "SIGABRT", "SIGPOLL": "SIGIO"}
STOP_SIGNALS = frozenset({*_LINUX_SIGNALS, *_ALIASES} - {""})


def parse_stop_signal(text: str) -> str:
    """A stop signal as Kubernetes takes it: `SIGINT`, from docker's `SIGINT`, `int` or `2`."""
    given = text.strip().upper()
    if given.isascii() and given.isdigit():  # not `٣` or `²`, which str.isdigit takes
        number = int(given) if len(given) <= 2 else 0
        if 0 < number < len(_LINUX_SIGNALS) and _LINUX_SIGNALS[number]:
            return _LINUX_SIGNALS[number]
        raise ValueProblem("not a Linux signal number; give a name like SIGINT")
    name = given if given.startswith("SIG") else "SIG" + given
    if name not in STOP_SIGNALS:
        raise ValueProblem("a signal name like SIGINT, SIGQUIT or SIGUSR1 (or its number)")
    return name


def parse_max_runtime(text: str) -> int:
    """--max-runtime: `activeDeadlineSeconds`, a whole number of seconds from 1. A fraction
    is rounded up, so that the pod is never stopped before the time given."""
    return math.ceil(quantities.parse_duration_seconds(text))


# Kubernetes expands `$(VAR)` in a container's command and args and turns `$$` into `$`;
# docker passes the words untouched. Every `$` of the words typed is written `$$`, so the
# container gets exactly those words. Passthrough and patches are the user's own Kubernetes:
# they stay as written.
DOLLAR_NOTE = (
    "every `$` of the command and --entrypoint is written `$$` in the manifest, so that "
    "Kubernetes passes the words as typed (it would expand `$(VAR)` and turn `$$` into `$`)"
)


def escape_dollars(word: str) -> str:
    """A word as Kubernetes must be given it to pass it on unchanged."""
    return word.replace("$", "$$")


def main_container(
    o: RunOptions, claim: Claimer, mounts: list[Any], resources: dict[str, Any]
) -> dict[str, Any]:
    """The container named `main`: IMAGE, its command and every container-level flag."""
    c: dict[str, Any] = {"name": MAIN, "image": o.image}
    claim("image", (*_MAIN, "image"))
    if o.entrypoint == "":
        # docker's `--entrypoint ""`: no entrypoint, so COMMAND is the whole command line.
        c["command"] = [escape_dollars(word) for word in o.command]
        claim("entrypoint", (*_MAIN, "command"), (*_MAIN, "args"))
    else:
        if o.entrypoint is not None:
            c["command"] = [escape_dollars(o.entrypoint)]
            claim("entrypoint", (*_MAIN, "command"))
        if o.command:
            c["args"] = [escape_dollars(word) for word in o.command]
            claim("command", (*_MAIN, "args"))
    if o.interactive:
        # stdinOnce: the container's stdin closes when squarepeg's attach ends, so a
        # program reading it sees the end of squarepeg's input, and never waits on a
        # second attach that will not come.
        c["stdin"] = True
        c["stdinOnce"] = True
        claim("interactive", (*_MAIN, "stdin"), (*_MAIN, "stdinOnce"))
    if o.tty:
        c["tty"] = True
        claim("tty", (*_MAIN, "tty"))
    if o.workdir is not None:
        c["workingDir"] = o.workdir
        claim("workdir", (*_MAIN, "workingDir"))
    if o.env:
        c["env"] = [{"name": k, "value": v} for k, v in o.env.items()]
        claim.keys("env", (*_MAIN, "env"), named=True)
    if resources:
        c["resources"] = resources
    if o.publish:
        # -p: the ports kubectl port-forward reaches (run/ports.py); listed, as docker's
        # EXPOSE would be, so that `kubectl describe` shows them.
        c["ports"] = [
            {"containerPort": port, "protocol": "TCP"} for port in container_ports(o.publish)
        ]
        claim("publish", (*_MAIN, "ports"))
    if o.pull is not None:
        c["imagePullPolicy"] = o.pull
        claim("pull", (*_MAIN, "imagePullPolicy"))
    if (stop_signal := o.table_values.get("stop_signal")) is not None:
        c["lifecycle"] = {"stopSignal": stop_signal}
        claim("stop_signal", (*_MAIN, "lifecycle", "stopSignal"))
    if security := _security_context(o, claim):
        c["securityContext"] = security
    if mounts:
        c["volumeMounts"] = mounts
    return c


def _host_aliases(pairs: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    # One entry per IP, its host names in the order given, as kubectl and docker list them.
    by_ip: dict[str, list[str]] = {}
    for host, ip in pairs:
        by_ip.setdefault(ip, []).append(host)
    return [{"ip": ip, "hostnames": hosts} for ip, hosts in by_ip.items()]


def _node_selector(o: RunOptions, claim: Claimer) -> dict[str, str]:
    selector = dict(o.node_selector)
    claim.keys("node_selector", ("spec", "nodeSelector"))
    if o.platform is not None:
        for key, value in zip(("os", "arch"), o.platform, strict=True):
            if value is not None:
                selector[f"kubernetes.io/{key}"] = value
                claim("platform", ("spec", "nodeSelector", f"kubernetes.io/{key}"))
    return selector


def pod_spec(o: RunOptions, claim: Claimer) -> dict[str, Any]:
    """The Pod spec: the main container, restartPolicy Never and every pod-level flag."""
    resources = _resources(o, claim)
    volumes, mounts = _memory_volumes(o, claim)
    file_volumes, file_mounts, helpers = _file_volumes(o, claim, resources)
    volumes, mounts = [*file_volumes, *volumes], [*file_mounts, *mounts]
    spec: dict[str, Any] = {"containers": [main_container(o, claim, mounts, resources)]}
    if helpers:
        spec["initContainers"] = helpers
    spec["restartPolicy"] = "Never"
    grace = o.stop_timeout
    if grace is None and any(b.copied_back for b in o.binds):
        # The kubelet gives the copy-back helper the pod's grace period after main ends.
        grace = filehelpers.COPY_BACK_GRACE_SECONDS
        claim(mount_flag(o), ("spec", "terminationGracePeriodSeconds"))
    simple: tuple[tuple[str, str, Any], ...] = (
        ("hostname", "hostname", o.hostname),
        ("stop_timeout", "terminationGracePeriodSeconds", grace),
        ("runtime", "runtimeClassName", o.runtime),
        ("service_account", "serviceAccountName", o.service_account),
        ("priority_class", "priorityClassName", o.priority_class),
        ("max_runtime", "activeDeadlineSeconds", o.table_values.get("max_runtime")),
    )
    for param, key, value in simple:
        if value is not None:
            spec[key] = value
            claim(param, ("spec", key))
    if o.add_host:
        spec["hostAliases"] = _host_aliases(o.add_host)
        claim("add_host", ("spec", "hostAliases"))
    dns: dict[str, Any] = {
        k: list(v) for k, v in (("nameservers", o.dns), ("searches", o.dns_search)) if v
    }
    if o.dns_options:
        # Options alone keep the cluster's dnsPolicy: Kubernetes adds them to its resolv.conf.
        dns["options"] = [
            {"name": n} if v is None else {"name": n, "value": v} for n, v in o.dns_options
        ]
    if o.dns:
        # docker's --dns replaces the host's nameservers; `None` replaces the cluster's.
        spec["dnsPolicy"] = "None"
        claim("dns", ("spec", "dnsPolicy"))
    if dns:
        spec["dnsConfig"] = dns
        claim("dns", ("spec", "dnsConfig", "nameservers"))
        claim("dns_search", ("spec", "dnsConfig", "searches"))
        claim(
            "dns_option",
            *(("spec", "dnsConfig", "options", f"[name={n}]") for n, _ in o.dns_options),
        )
    if pod_security := _pod_security_context(o, claim):
        spec["securityContext"] = pod_security
    if selector := _node_selector(o, claim):
        spec["nodeSelector"] = selector
    if o.table_values.get("stop_signal") is not None:
        # Kubernetes takes a stop signal only from a pod that names its OS (decision 0310).
        spec["os"] = {"name": o.platform[0] if o.platform is not None else "linux"}
        claim("stop_signal", ("spec", "os", "name"))
    if o.tolerations:
        spec["tolerations"] = [dict(t) for t in o.tolerations]
        claim("toleration", ("spec", "tolerations"))
    if o.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": s} for s in o.image_pull_secrets]
        # Per secret: config passthrough may still add others.
        claim(
            "image_pull_secret",
            *(("spec", "imagePullSecrets", f"[name={s}]") for s in o.image_pull_secrets),
        )
    if volumes:
        spec["volumes"] = volumes
    return spec


def pod_metadata(
    o: RunOptions, claim: Claimer, *, name: str, namespace: str, labels: Mapping[str, str]
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    metadata["labels"] = {**labels, **o.labels}
    claim.keys("label", ("metadata", "labels"))
    if o.annotations:
        metadata["annotations"] = dict(o.annotations)
        claim.keys("annotation", ("metadata", "annotations"))
    return metadata


# --- the Job ----------------------------------------------------------------------------


def job_from_pod(pod: dict[str, Any], *, ttl_seconds: int | None) -> dict[str, Any]:
    """A Job that runs `pod` once: no retries, one completion, labels on both levels."""
    metadata = pod["metadata"]
    # Separate copies: passthrough and patches change one level only, and the YAML of a
    # dry run must not turn shared objects into aliases.
    template_metadata = copy.deepcopy(
        {k: metadata[k] for k in ("labels", "annotations") if k in metadata}
    )
    spec: dict[str, Any] = {"backoffLimit": 0, "completions": 1, "parallelism": 1}
    if ttl_seconds is not None:
        spec["ttlSecondsAfterFinished"] = ttl_seconds
    spec["template"] = {"metadata": template_metadata, "spec": pod["spec"]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}
