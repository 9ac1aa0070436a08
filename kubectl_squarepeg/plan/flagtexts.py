"""The long texts of the flag table (plan/dockerflags.py): the reasons several refused flags
share, and the answers that other modules quote too (-p with -d, --restart).

Shared texts are public where another module prints them; the table re-exports those.
"""

from __future__ import annotations

# Reasons shared by several refused flags.
HOST_RESOURCE = "a pod cannot reach a device or cgroup setting of your machine"
SPEC = "set it under `kubernetes.spec` in a config file"
CPU_FINE = "Kubernetes limits CPU by quota only, in its own period"
USE_CPUS = "use --cpus"
NETWORK = "every pod is on the cluster's network"
NETWORK_FIX = (
    "leave it out; to change a pod's networking (e.g. hostNetwork), set it under "
    "`kubernetes.spec` in a config file"
)
PUBLISH_FIX = "leave it out; -p CONTAINER_PORT publishes a port while the run lasts"
# docs/decisions/0230: what -p does, and how it differs from docker's.
PUBLISH_MEANING = (
    "kubectl port-forward from your machine to the pod while the run lasts (started once "
    "the container runs, restarted if it drops, stopped at the end and on Ctrl-C), one line "
    "per port (`squarepeg: 127.0.0.1:8080 -> 80/tcp`); the main container's `ports`"
)
PUBLISH_NOTE = (
    "binds 127.0.0.1 unless HOST_IP is given (docker binds every interface: give 0.0.0.0 "
    "for that); an empty HOST_PORT takes a free port; a taken local port is refused before "
    "anything is created; `/udp`, `/sctp`, and a host range for one container port are "
    "refused; with -d the ports are recorded and `kubectl squarepeg port NAME` forwards them"
)
VOLUME = "a pod mounts claims and copies of files, not docker's volume plugins"
VOLUME_FIX = (
    "leave it out; mount a PersistentVolumeClaim with -v NAME:DST, or add a volume and its "
    "volumeMount under `kubernetes.spec` in a config file"
)
# docs/decisions/0180 and 0220: a copy in before main starts, and back after it ends.
FILES_COPIED = (
    "a local path (SRC with a `/`, `.` or `~`) is an emptyDir at DST filled with a snapshot of "
    "SRC (streamed through an exec into the pod) before the container starts, and copied back "
    "after it ends unless `ro` (new and changed files; deleted ones stay): a copy, no live "
    "sync; not with `-d`. `z`, `Z` and propagation are refused"
)
VOLUME_MEANING = (
    "a PersistentVolumeClaim for a name (`-v NAME:DST[:ro]`); an emptyDir with a copy of your "
    "files for a local path"
)
WINDOWS = "it applies to Windows containers on a docker host only"
LOGS = "the cluster's container runtime keeps the logs, which squarepeg streams"
HEALTH = "Kubernetes never runs an image's HEALTHCHECK; a probe needs a long-running pod"
HEALTH_FIX = "leave it out; a liveness or startup probe goes under `kubernetes.spec`"
NAMESPACES = "the pod's Linux namespaces are the cluster's choice"

RESTART_NOTE = (
    "any other policy is refused: a run is one attempt (`restartPolicy: Never`, a Job's "
    "`backoffLimit: 0`); retry in your shell, like `until kubectl squarepeg run ...; do sleep "
    "5; done`"
)


# docs/decisions/0420: what --security-opt sets, and docker's default seccomp profile.
SECURITY_OPT_MEANING = (
    "the main container's `securityContext`: `no-new-privileges` "
    "`allowPrivilegeEscalation: false`, `seccomp=unconfined` `seccompProfile` Unconfined, "
    "`apparmor=P` `appArmorProfile`, `label=user|role|type|level:V` `seLinuxOptions`"
)
SECURITY_OPT_NOTE = (
    "docker's default seccomp profile is the runtime's `RuntimeDefault`, set on every run "
    "but `--privileged` and `seccomp=unconfined`; a profile file, `label=disable`, "
    "`systempaths` and masks have no flag: `kubernetes.spec` in a config file "
    "([decision 0420](decisions/0420-restricted-pod-security.md))"
)

SECRET_ENV = (
    "the main container's `env` as `valueFrom.secretKeyRef` of one Secret the run creates and "
    "its Pod or Job owns (a bare KEY takes your local value, and must be set); config "
    "`secret_env_all: true` sends every -e/--env-file value the same way "
    "([decision 0361](decisions/0361-secret-env.md))"
)

MAX_RUNTIME = (
    "`activeDeadlineSeconds` of the Pod (a Job's: its pod template's); past it the run "
    "exits 124 ([decision 0360](decisions/0360-max-runtime.md))"
)
