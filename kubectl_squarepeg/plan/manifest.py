"""Pure builders of what a run sends: the name, the labels, and the Plan: the Pod or Job
(podspec.py builds them from RunOptions, recording a claim for each field an explicitly
given flag wrote) with config passthrough and patches let in around those claims (claims.py
decides what is dropped). The random name suffix, the run id and
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
from kubectl_squarepeg.plan import filehelpers, mounts, names, secretenv, values
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
from kubectl_squarepeg.plan.podspec import (
    CLAIM_VOLUME,
    DOLLAR_NOTE,
    MAIN,
    SHM_VOLUME,
    TMPFS_VOLUME,
    Claimer,
    job_from_pod,
    mount_flag,
    pod_metadata,
    pod_spec,
)

NAME_PREFIX = "squarepeg-"
SUFFIX_LENGTH = 6
MAX_NAME = 63

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
    # The Secret of --secret-env's values, created before the Pod or Job (plan/secretenv.py).
    secret: dict[str, Any] | None = None


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
        given = flag_name(mount_flag(options))
        for target in [b.target for b in options.binds]:
            flag_paths[target] = given
        for target in [v.target for v in options.volume_mounts]:
            flag_paths[target] = given
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
    claim = Claimer(options, claims)
    metadata = pod_metadata(options, claim, name=name, namespace=namespace, labels=labels)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": pod_spec(options, claim),
    }
    secret = _secret(options, pod, claims, labels=labels, run_id=run_id)
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
        notes=(*_notes(options), *_secret_note(secret, options.mode)),
        secret=secret,
    )


def _secret(
    options: RunOptions, pod: dict[str, Any], claims: Claims, *, labels: dict[str, str],
    run_id: str,
) -> dict[str, Any] | None:
    """The run's Secret, and the main container's env turned into references to it."""
    values = secretenv.secret_values(options.env, options.secret_env,
                                     options.secret_env_all)
    if not values:
        return None
    meta = pod["metadata"]
    name = secretenv.secret_name(meta["name"], run_id)
    # A kept run keeps its Secret through ownership, not through a label of its own.
    own = {k: v for k, v in labels.items() if k != KEEP_LABEL}
    secret = secretenv.secret_manifest(values, name=name, namespace=meta["namespace"],
                                       labels=own)
    secretenv.refer(pod["spec"]["containers"][0], values, name)
    for key in options.secret_env:
        claims.add(("spec", "containers", f"[name={MAIN}]", "env", f"[name={key}]"),
                   "--secret-env")
    return secret


def _secret_note(secret: dict[str, Any] | None, mode: str) -> tuple[str, ...]:
    if secret is None:
        return ()
    kind = "Job" if mode == "job" else "Pod"
    keys = ", ".join(secret["data"])
    return (
        f"the values of {keys} go into Secret {secret['metadata']['name']}, created before "
        f"the {kind} and owned by it; they are not printed",
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


def template_pod(job: Mapping[str, Any]) -> dict[str, Any]:
    """The Pod a Job's controller would make of its template, for `--dry-run-server` in job
    mode: admission judges a Job and the pods it makes by different rules (PodSecurity
    enforces on pods alone, a quota counts pods), so the Job's own dry run cannot say
    whether its pod would be admitted (decision 0300)."""
    template = job["spec"]["template"]
    metadata = {
        "name": f"{job['metadata']['name']}-dry-run",
        "namespace": job["metadata"]["namespace"],
        **{k: copy.deepcopy(v) for k, v in template.get("metadata", {}).items()
           if k in ("labels", "annotations")},
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": copy.deepcopy(template["spec"])}
