"""Pure builders of what a run sends: the name, the labels, the Pod or the Job, the Plan.

Maps every docker-style option of RunOptions onto the manifest, records a claim for each
field an explicitly given flag wrote, then lets config passthrough and patches in around
those claims (claims.py decides what is dropped). The random name suffix, the run id and
the local username are parameters: nothing here reads the clock, the environment or a
file, and nothing here talks to a cluster.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kubectl_squarepeg.errors import ConfigError
from kubectl_squarepeg.plan import filehelpers, mounts, names, values
from kubectl_squarepeg.plan.claims import (
    RESERVED,
    Claims,
    Dropped,
    apply_patches,
    merge_passthrough,
)
from kubectl_squarepeg.plan.configured import Configured
from kubectl_squarepeg.plan.labels import (
    CREATED_BY_LABEL,
    KEEP_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    RUN_ID_LABEL,
)
from kubectl_squarepeg.plan.options import RunOptions, flag_name
from kubectl_squarepeg.plan.ports import container_ports

MAIN = "main"
GPU_RESOURCE = "nvidia.com/gpu"
NAME_PREFIX = "squarepeg-"
SUFFIX_LENGTH = 6
MAX_NAME = 63
TMPFS_VOLUME = "tmpfs-{}"  # the volume of the Nth --tmpfs
CLAIM_VOLUME = "claim-{}"  # the volume of the Nth -v NAME:DST (a PersistentVolumeClaim)
SHM_VOLUME = "dshm"  # the volume of --shm-size
_MAIN: tuple[str, ...] = ("spec", "containers", f"[name={MAIN}]")


@dataclass(frozen=True)
class Plan:
    """What one run will create, and everything the lifecycle needs to find it again."""

    options: RunOptions
    manifest: dict[str, Any]
    kind: Literal["Pod", "Job"]
    name: str
    namespace: str
    run_id: str
    created_by: str
    warnings: tuple[str, ...] = ()  # one line per config entry a claim dropped
    notes: tuple[str, ...] = ()  # what a --dry-run reader should know about the manifest


# --- name and labels ------------------------------------------------------------------------


def image_slug(image: str) -> str:
    """The image's last path component without registry, tag or digest, as a DNS label part.

    `registry.example.com:5000/foo/bar:tag` -> `bar`; `alpine@sha256:...` -> `alpine`.
    """
    last = image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
    return re.sub(r"[^a-z0-9]+", "-", last.lower()).strip("-")


def generate_name(image: str, suffix: str) -> str:
    """`squarepeg-<slug>-<suffix>`, the slug cut so the whole stays a valid name (<= 63)."""
    room = MAX_NAME - len(NAME_PREFIX) - len(suffix) - 1
    slug = image_slug(image)[:room].rstrip("-")
    return f"{NAME_PREFIX}{slug}-{suffix}" if slug else f"{NAME_PREFIX}{suffix}"


def created_by_value(username: str) -> str:
    """The username as a label value; a changed one gets a hash of the original appended.

    The orphan sweep selects on this label, so two users must never share a value: a name
    that already is a valid label value is kept as it is; any other is cleaned up and
    suffixed with 8 hex digits of its SHA-256, which a valid name cannot collide with by
    accident.
    """
    if username:
        try:
            return names.validate_label_value(username)
        except values.ValueProblem:
            pass
    import hashlib  # only for the rare name that needs changing

    digest = hashlib.sha256(username.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", username).strip("-_.")
    cleaned = cleaned[: MAX_NAME - len(digest) - 1].rstrip("-_.")
    return f"{cleaned}-{digest}" if cleaned else digest


def squarepeg_labels(*, run_id: str, created_by: str, keep: bool) -> dict[str, str]:
    """The labels the lifecycle spec puts on every Pod and Job squarepeg creates."""
    labels = {MANAGED_BY_LABEL: MANAGED_BY, RUN_ID_LABEL: run_id, CREATED_BY_LABEL: created_by}
    if keep:
        labels[KEEP_LABEL] = "true"
    return labels


def quantity(text: str) -> str | int:
    """A resource quantity; whole numbers as integers, as people write them in YAML."""
    return int(text) if text.isdigit() else text


# --- claims -----------------------------------------------------------------------------


class _Claimer:
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


def _resources(o: RunOptions, claim: _Claimer) -> dict[str, Any]:
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


def _security_context(o: RunOptions, claim: _Claimer) -> dict[str, Any]:
    context: dict[str, Any] = {}
    sc = (*_MAIN, "securityContext")
    if o.user is not None:
        context["runAsUser"] = o.user[0]
        claim("user", (*sc, "runAsUser"))
        if o.user[1] is not None:
            context["runAsGroup"] = o.user[1]
            claim("user", (*sc, "runAsGroup"))
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
    return context


def _pod_security_context(o: RunOptions, claim: _Claimer) -> dict[str, Any]:
    """The pod-level securityContext: --group-add and --sysctl apply to the whole pod."""
    context: dict[str, Any] = {}
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


def _memory_volumes(o: RunOptions, claim: _Claimer) -> tuple[list[Any], list[Any]]:
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


def _mount_flag(o: RunOptions) -> str:
    """The parameter a claim of -v/--mount's fields is recorded under."""
    return "volume" if "volume" in o.explicit else "mount"


def _file_volumes(
    o: RunOptions, claim: _Claimer, main_resources: dict[str, Any]
) -> tuple[list[Any], list[Any], list[Any]]:
    """(volumes, main's mounts, init containers) of -v/--mount: an emptyDir per bind mount
    with the helpers that fill it and copy it back, a PersistentVolumeClaim per named volume
    (docs/decisions/0180)."""
    flag = _mount_flag(o)
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
    o: RunOptions, claim: _Claimer, mounts: list[Any], resources: dict[str, Any]
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


def _node_selector(o: RunOptions, claim: _Claimer) -> dict[str, str]:
    selector = dict(o.node_selector)
    claim.keys("node_selector", ("spec", "nodeSelector"))
    if o.platform is not None:
        for key, value in zip(("os", "arch"), o.platform, strict=True):
            if value is not None:
                selector[f"kubernetes.io/{key}"] = value
                claim("platform", ("spec", "nodeSelector", f"kubernetes.io/{key}"))
    return selector


def pod_spec(o: RunOptions, claim: _Claimer) -> dict[str, Any]:
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
        claim(_mount_flag(o), ("spec", "terminationGracePeriodSeconds"))
    simple: tuple[tuple[str, str, Any], ...] = (
        ("hostname", "hostname", o.hostname),
        ("stop_timeout", "terminationGracePeriodSeconds", grace),
        ("runtime", "runtimeClassName", o.runtime),
        ("service_account", "serviceAccountName", o.service_account),
        ("priority_class", "priorityClassName", o.priority_class),
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
    o: RunOptions, claim: _Claimer, *, name: str, namespace: str, labels: Mapping[str, str]
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


# --- the Plan ---------------------------------------------------------------------------


def _origin_lookup(config: Configured, part: str) -> Callable[[tuple[str, ...]], str]:
    def origin_of(path: tuple[str, ...]) -> str:
        return str(config.origin_of("kubernetes", part, *path) or f"kubernetes.{part}")

    return origin_of


def _tmpfs_notes(options: RunOptions) -> list[str]:
    """One warning per tmpfs whose options an emptyDir cannot express (docker's own example,
    `/run:rw,noexec,nosuid,size=65536k`, works: those flags are dropped, and said so)."""
    return [
        f"--tmpfs {t.path}: {', '.join(t.ignored)} cannot be set on a Kubernetes emptyDir and "
        "are ignored (it is mounted with the container runtime's defaults)"
        for t in options.tmpfs
        if t.ignored
    ]


def _flag_mounts_win(
    options: RunOptions, config: Configured, spec: dict[str, Any], at: str
) -> list[Dropped]:
    """A passthrough volumeMount of `main` at the path a --tmpfs or --shm-size flag mounts
    (compared normalised: `/dev/shm/`, `//run`) is dropped, with the usual claim warning:
    two mounts at one path are an invalid pod, and the flag wins."""
    flag_paths = {t.path: "--tmpfs" for t in options.tmpfs} if "tmpfs" in options.explicit else {}
    if "shm_size" in options.explicit and options.shm_size is not None:
        flag_paths["/dev/shm"] = "--shm-size"
    if "volume" in options.explicit or "mount" in options.explicit:
        mount_flag = flag_name(_mount_flag(options))
        for target in [b.target for b in options.binds]:
            flag_paths[target] = mount_flag
        for target in [v.target for v in options.volume_mounts]:
            flag_paths[target] = mount_flag
    main = next((c for c in spec.get("containers", []) if c.get("name") == MAIN), None)
    if not flag_paths or main is None or not isinstance(main.get("volumeMounts"), list):
        return []
    ours = {TMPFS_VOLUME.format(i) for i in range(1, len(options.tmpfs) + 1)} | {SHM_VOLUME}
    ours |= {filehelpers.FILES_VOLUME.format(i) for i in range(1, len(options.binds) + 1)}
    ours |= {CLAIM_VOLUME.format(i) for i in range(1, len(options.volume_mounts) + 1)}
    kept, dropped = [], []
    for mount in main["volumeMounts"]:
        path = mount.get("mountPath") if isinstance(mount, dict) else None
        flag = flag_paths.get(mounts.normal_path(path)) if isinstance(path, str) else None
        if flag is None or mount.get("name") in ours:
            kept.append(mount)
            continue
        segment = f"[name={mount.get('name')}]"
        entry_path = ("containers", f"[name={MAIN}]", "volumeMounts", segment)
        origin = config.origin_of("kubernetes", "spec", *entry_path)
        dropped.append(
            Dropped(
                "kubernetes.spec.containers[name=main].volumeMounts" + segment,
                str(origin or "kubernetes.spec"),
                f"{at}/containers/[name={MAIN}]/volumeMounts/{segment} (mountPath {path})",
                flag,
            )
        )
    main["volumeMounts"] = kept
    return dropped


def _refuse_contract_changes(dropped: list[Dropped]) -> None:
    """A config entry that would change what the run itself depends on is an error, not a
    warning: the lifecycle (restartPolicy Never, a Job's backoffLimit 0, the container
    `main`, the name and labels the sweep selects on) is squarepeg's, not passthrough's."""
    for entry in dropped:
        if entry.claimant == RESERVED:
            raise ConfigError(
                f"config {entry.entry} ({entry.origin}) would change {entry.path}, which "
                "squarepeg's run depends on",
                "remove it; squarepeg sets restartPolicy Never, a Job's backoffLimit 0, the "
                "name and squarepeg labels, and the container `main` itself",
            )


def build_plan(
    options: RunOptions,
    config: Configured,
    *,
    namespace: str,
    run_id: str,
    suffix: str,
    username: str,
) -> Plan:
    """The manifest of this run with passthrough and patches applied, and its identity."""
    name = options.name or generate_name(options.image, suffix)
    created_by = created_by_value(username)
    labels = squarepeg_labels(run_id=run_id, created_by=created_by, keep=options.keep)
    claims = Claims.reserved(MAIN)
    claims.add(("spec", "restartPolicy"), RESERVED)  # the run's contract: one attempt
    claim = _Claimer(options, claims)
    metadata = pod_metadata(options, claim, name=name, namespace=namespace, labels=labels)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": pod_spec(options, claim),
    }
    if options.mode == "job":
        ttl = None if options.keep else options.job_ttl_seconds_after_finished
        doc = job_from_pod(pod, ttl_seconds=ttl)
        claims = claims.for_job()
        for field in ("backoffLimit", "completions", "parallelism"):  # one pod, one attempt
            claims.add(("spec", field), RESERVED)
        template = doc["spec"]["template"]
        targets = (
            (template["metadata"], "/spec/template/metadata"),
            (template["spec"], "/spec/template/spec"),
        )
    else:
        doc = pod
        targets = ((pod["metadata"], "/metadata"), (pod["spec"], "/spec"))
    dropped: list[Dropped] = []
    for (target, at), part in zip(targets, ("metadata", "spec"), strict=True):
        overlay = config.metadata if part == "metadata" else config.spec
        if overlay:
            dropped += merge_passthrough(
                target,
                overlay,
                at=at,
                claims=claims,
                origin_of=_origin_lookup(config, part),
                entry_root=f"kubernetes.{part}",
            )
    dropped += _flag_mounts_win(options, config, targets[1][0], targets[1][1])
    if config.patches:
        doc, patch_dropped = apply_patches(doc, config.patches, claims)
        dropped += patch_dropped
    _refuse_contract_changes(dropped)
    notes = [d.warning() for d in dropped] + _tmpfs_notes(options)
    return Plan(
        options=options,
        manifest=doc,
        kind="Job" if options.mode == "job" else "Pod",
        name=name,
        namespace=namespace,
        run_id=run_id,
        created_by=created_by,
        warnings=tuple(notes),
        notes=_notes(options),
    )


def bind_notes(options: RunOptions) -> list[str]:
    """What each bind mount will do, for a dry run's reader (SRC is not read here)."""
    notes = []
    for number, bind in enumerate(options.binds, start=1):
        volume = filehelpers.FILES_VOLUME.format(number)
        back = (
            "read-only in main, never copied back"
            if bind.read_only
            else "copied back into it after main ends (new and changed files; files the "
            "container deleted stay)"
        )
        notes.append(
            f"{bind.source} -> {bind.target}: a snapshot of {bind.source} fills the emptyDir "
            f"{volume} through the init container {filehelpers.UPLOAD_HELPER} before main "
            f"starts; {back}"
        )
    return notes


def _notes(options: RunOptions) -> tuple[str, ...]:
    words = [*options.command, *([options.entrypoint] if options.entrypoint else [])]
    dollar = [DOLLAR_NOTE] if any("$" in word for word in words) else []
    return (*dollar, *bind_notes(options))
