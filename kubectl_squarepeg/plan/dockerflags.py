"""Every flag of `docker run`, and squarepeg's answer to each: the single source.

Owns the table of docker's run flags (docker's reference, `docker run --help`): each is
SUPPORTED (what it sets on the Pod), DIFFERENT (accepted, with a documented difference), or
REFUSED (one line saying why, and what to use instead). cli/app.py makes a hidden option of
every refused flag from this table, so no docker flag gets a bare "No such option", and
leaves them out of "did you mean"; `scripts/gen-docker-flags` writes docs/docker-flags.md
from it (a test fails when the committed doc differs); tests/unit/test_dockerflags.py walks
it against the parser. Pure data and formatting: importing it costs nothing measurable, as
`run --help` loads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["supported", "different", "refused"]


@dataclass(frozen=True)
class DockerFlag:
    """One `docker run` flag: its names, whether it takes a value, and squarepeg's answer.

    `meaning` says what it sets (SUPPORTED, DIFFERENT) or why it cannot be used (REFUSED);
    `note` is the difference (DIFFERENT) or what to use instead (REFUSED)."""

    names: tuple[str, ...]
    status: Status
    takes_value: bool
    meaning: str
    note: str = ""


def _ok(names: str, meaning: str, note: str = "", value: bool = True) -> DockerFlag:
    return DockerFlag(
        tuple(names.split()), "different" if note else "supported", value, meaning, note
    )


def _no(names: str, why: str, instead: str, value: bool = True) -> DockerFlag:
    return DockerFlag(tuple(names.split()), "refused", value, why, instead)


# Reasons shared by several refused flags.
_HOST_RESOURCE = "a pod cannot reach a device or cgroup setting of your machine"
_SPEC = "set it under `kubernetes.spec` in a config file"
_CPU_FINE = "Kubernetes limits CPU by quota only, in its own period"
_USE_CPUS = "use --cpus"
_NETWORK = "every pod is on the cluster's network"
_NETWORK_FIX = (
    "leave it out; to change a pod's networking (e.g. hostNetwork), set it under "
    "`kubernetes.spec` in a config file"
)
_PUBLISH_FIX = "leave it out; -p CONTAINER_PORT publishes a port while the run lasts"
# docs/decisions/0230: what -p does, and how it differs from docker's.
PUBLISH_MEANING = (
    "kubectl port-forward from your machine to the pod while the run lasts (started once "
    "the container runs, restarted if it drops, stopped at the end and on Ctrl-C), one line "
    "per port (`squarepeg: 127.0.0.1:8080 -> 80/tcp`); the main container's `ports`"
)
PUBLISH_NOTE = (
    "binds 127.0.0.1 unless HOST_IP is given (docker binds every interface: give 0.0.0.0 "
    "for that); an empty HOST_PORT takes a free port; a taken local port is refused before "
    "anything is created; `/udp`, `/sctp`, a host range for one container port, and -p "
    "with -d (nobody would forward) are refused"
)
PUBLISH_WITH_DETACH = (
    "-d and -p cannot be used together: a detached run outlives squarepeg, the process "
    "that forwards its ports"
)
PUBLISH_WITH_DETACH_FIX = (
    "run it without -d, or forward yourself while it runs: `kubectl port-forward "
    "pod/NAME HOST_PORT:CONTAINER_PORT` (--name NAME fixes the name)"
)
_VOLUME = "a pod mounts claims and copies of files, not docker's volume plugins"
_VOLUME_FIX = (
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
_VOLUME_MEANING = (
    "a PersistentVolumeClaim for a name (`-v NAME:DST[:ro]`); an emptyDir with a copy of your "
    "files for a local path"
)
_WINDOWS = "it applies to Windows containers on a docker host only"
_LOGS = "the cluster's container runtime keeps the logs, which squarepeg streams"
_HEALTH = "Kubernetes never runs an image's HEALTHCHECK; a probe needs a long-running pod"
_HEALTH_FIX = "leave it out; a liveness or startup probe goes under `kubernetes.spec`"
_NAMESPACES = "the pod's Linux namespaces are the cluster's choice"

RESTART_NOTE = (
    "any other policy is refused: a run is one attempt (`restartPolicy: Never`, a Job's "
    "`backoffLimit: 0`); retry in your shell, like `until kubectl squarepeg run ...; do sleep "
    "5; done`"
)

FLAGS: tuple[DockerFlag, ...] = (
    _ok(
        "--add-host",
        "`spec.hostAliases` (HOST:IP)",
        "host-gateway is refused: a pod has no docker host",
    ),
    _ok(
        "--annotation",
        "`metadata.annotations`",
        "on the Pod (or Job), not handed to the OCI runtime",
    ),
    _no(
        "-a --attach",
        "squarepeg always shows the container's output, stdout and stderr merged by the log API",
        "leave it out",
    ),
    _no("--blkio-weight", _HOST_RESOURCE, "leave it out"),
    _no("--blkio-weight-device", _HOST_RESOURCE, "leave it out"),
    _ok("--cap-add", "`securityContext.capabilities.add`"),
    _ok("--cap-drop", "`securityContext.capabilities.drop`"),
    _no("--cgroup-parent", _HOST_RESOURCE, "leave it out"),
    _no("--cgroupns", _NAMESPACES, "leave it out"),
    _no(
        "--cidfile", "a pod has a name, not a container ID", "use --name NAME to know it in advance"
    ),
    _no("--cpu-count", _WINDOWS, _USE_CPUS),
    _no("--cpu-percent", _WINDOWS, _USE_CPUS),
    _no("--cpu-period", _CPU_FINE, _USE_CPUS),
    _no("--cpu-quota", _CPU_FINE, _USE_CPUS),
    _no("--cpu-rt-period", _CPU_FINE, "leave it out"),
    _no("--cpu-rt-runtime", _CPU_FINE, "leave it out"),
    _no("-c --cpu-shares", "Kubernetes weighs CPU by the request", _USE_CPUS),
    _ok(
        "--cpus",
        "`resources.requests.cpu` and `limits.cpu` (`0.5` -> `500m`); `0` means no limit, as in "
        "docker",
    ),
    _no(
        "--cpuset-cpus",
        _HOST_RESOURCE,
        "use --cpus; CPU pinning is the kubelet's CPU manager policy",
    ),
    _no("--cpuset-mems", _HOST_RESOURCE, "leave it out"),
    _ok(
        "-d --detach",
        "waits for the container's start as a run does, prints the run's name and exits 0, "
        "leaving the Pod or Job (labelled `squarepeg.io/detached`) running; "
        "`kubectl squarepeg ps`, `logs`, `wait` and `rm` work on it",
        "the name, not a container ID; no sweep takes it, `rm` does; `-d --rm` runs a Job "
        "with `ttlSecondsAfterFinished: 0`, so the cluster deletes it when it exits; "
        "with -i or -t it is refused (there is no `attach`), with -p too (nobody forwards)",
        value=False,
    ),
    _no(
        "--detach-keys",
        "with -it every key goes to the container: there is no detaching",
        "leave it out; the container's own exit ends the run",
    ),
    _no(
        "--device",
        _HOST_RESOURCE,
        "use a device plugin's resource (--gpus for nvidia.com/gpu), or " + _SPEC,
    ),
    _no("--device-cgroup-rule", _HOST_RESOURCE, "leave it out"),
    _no("--device-read-bps", _HOST_RESOURCE, "leave it out"),
    _no("--device-read-iops", _HOST_RESOURCE, "leave it out"),
    _no("--device-write-bps", _HOST_RESOURCE, "leave it out"),
    _no("--device-write-iops", _HOST_RESOURCE, "leave it out"),
    _ok(
        "--disable-content-trust",
        "nothing",
        "accepted as a no-op: Kubernetes verifies no content trust (docker's default is to skip "
        "it too)",
        value=False,
    ),
    _ok(
        "--dns",
        "`spec.dnsConfig.nameservers`, with `dnsPolicy: None`",
        "replaces the cluster's nameservers as docker's replaces the host's: cluster service "
        "names stop resolving",
    ),
    _ok(
        "--dns-option --dns-opt",
        "`spec.dnsConfig.options` (`ndots:2` -> name `ndots`, value `2`; `rotate` -> name only)",
        "added to the cluster's resolv.conf options; alone it keeps the cluster's `dnsPolicy`",
    ),
    _ok("--dns-search", "`spec.dnsConfig.searches`"),
    _no(
        "--domainname",
        "a pod's domain is its subdomain in the cluster",
        "set `subdomain` under `kubernetes.spec` in a config file",
    ),
    _ok(
        "--entrypoint",
        'the main container\'s `command`; `--entrypoint ""` resets it, as in docker: the words '
        "after IMAGE are then the whole `command`",
    ),
    _ok("-e --env", "the main container's `env` (a bare KEY takes your local value)"),
    _ok("--env-file", "the main container's `env`, from docker's env-file format"),
    _no("--expose", "docker's EXPOSE metadata has no use on a pod", _PUBLISH_FIX),
    _ok(
        "--gpus",
        '`resources.limits["nvidia.com/gpu"]`',
        "a count (`N`, `count=N`) only: `all` and device lists are refused",
    ),
    _ok(
        "--group-add",
        "the pod's `securityContext.supplementalGroups`",
        "numeric GIDs only: Kubernetes cannot look a group name up in the image",
    ),
    _no("--health-cmd", _HEALTH, _HEALTH_FIX),
    _no("--health-interval", _HEALTH, _HEALTH_FIX),
    _no("--health-retries", _HEALTH, _HEALTH_FIX),
    _no("--health-start-interval", _HEALTH, _HEALTH_FIX),
    _no("--health-start-period", _HEALTH, _HEALTH_FIX),
    _no("--health-timeout", _HEALTH, _HEALTH_FIX),
    _ok("--help", "prints `run`'s help", value=False),
    _ok(
        "-h --hostname",
        "`spec.hostname`",
        "one label: a dotted name is refused (the domain is `subdomain` under `kubernetes.spec`)",
    ),
    _no(
        "--init",
        "the pod has no docker-init; its main process is PID 1",
        "leave it out, or set `shareProcessNamespace: true` under `kubernetes.spec` (the pause "
        "process then reaps zombies)",
        value=False,
    ),
    _ok(
        "-i --interactive",
        "main container `stdin: true`, `stdinOnce: true`; your stdin reaches it through "
        "`kubectl attach -i`",
        "the output still comes from the log stream, complete from the first byte",
        value=False,
    ),
    _no("--io-maxbandwidth", _WINDOWS, "leave it out"),
    _no("--io-maxiops", _WINDOWS, "leave it out"),
    _no("--ip", "the cluster's network assigns pod addresses", "leave it out"),
    _no("--ip6", "the cluster's network assigns pod addresses", "leave it out"),
    _no(
        "--ipc",
        _NAMESPACES,
        "set `hostIPC` or `shareProcessNamespace` under `kubernetes.spec` in a config file",
    ),
    _no("--isolation", _WINDOWS, "leave it out"),
    _no("--kernel-memory", "docker itself no longer supports it", "use -m"),
    _ok(
        "-l --label",
        '`metadata.labels` (`squarepeg.io/*` is reserved; a bare KEY has the value `""`)',
    ),
    _ok(
        "--label-file",
        "`metadata.labels`, from a file of KEY=VALUE lines (blank lines and `#` comments "
        "skipped; -l wins over it)",
    ),
    _no("--link", _NETWORK, "reach other pods by their Service's DNS name"),
    _no("--link-local-ip", _NETWORK, _NETWORK_FIX),
    _no("--log-driver", _LOGS, "leave it out"),
    _no("--log-opt", _LOGS, "leave it out"),
    _no("--mac-address", _NETWORK, _NETWORK_FIX),
    _ok(
        "-m --memory",
        "`resources.requests.memory` and `limits.memory` (`512m` -> `512Mi`); `0` means no "
        "limit, as in docker",
    ),
    _ok(
        "--memory-reservation",
        "`resources.requests.memory` (with -m, -m sets only `limits.memory`)",
        "a request reserves memory for scheduling, it does not reclaim memory under pressure "
        "as docker's soft limit does; one above -m is refused, as Kubernetes would",
    ),
    _no("--memory-swap", "Kubernetes sets swap per node, not per container", "use -m"),
    _no("--memory-swappiness", "Kubernetes sets swap per node, not per container", "leave it out"),
    _ok(
        "--mount",
        "`type=volume,src=NAME,dst=DST`: a PersistentVolumeClaim (`volume-subpath` -> `subPath`); "
        "`type=tmpfs` as --tmpfs; `type=bind,src=PATH`: a copy of your files",
        FILES_COPIED + "; so are `bind-propagation`, `volume-opt`, `volume-driver`, other types",
    ),
    _ok("--name", "`metadata.name` (a lowercase RFC 1123 label)"),
    _no("--network --net", _NETWORK, _NETWORK_FIX),
    _no("--network-alias --net-alias", _NETWORK, "give the pod a Service"),
    _ok(
        "--no-healthcheck",
        "nothing",
        "accepted as a no-op: Kubernetes never runs an image's HEALTHCHECK",
        value=False,
    ),
    _no(
        "--oom-kill-disable",
        "the kubelet always OOM-kills a container over its limit",
        "raise -m",
        value=False,
    ),
    _no("--oom-score-adj", "the kubelet sets it from the pod's QoS class", "leave it out"),
    _no(
        "--pid",
        _NAMESPACES,
        "set `hostPID` or `shareProcessNamespace` under `kubernetes.spec` in a config file",
    ),
    _no("--pids-limit", "Kubernetes sets the PID limit per node", "leave it out"),
    _ok(
        "--platform",
        "`nodeSelector` `kubernetes.io/os` and `kubernetes.io/arch`",
        "a variant (`linux/arm64/v8`) is accepted and dropped: nodes carry no label for it; an "
        "OS alone (`linux`) selects no architecture, where docker picks its host's",
    ),
    _ok("--privileged", "`securityContext.privileged: true`", value=False),
    _ok("-p --publish", PUBLISH_MEANING, PUBLISH_NOTE),
    _no(
        "-P --publish-all",
        "the image's EXPOSE ports are not known without pulling the image",
        "leave it out; publish each port with -p CONTAINER_PORT",
        value=False,
    ),
    _ok("--pull", "`imagePullPolicy` (always -> Always, missing -> IfNotPresent, never -> Never)"),
    _ok(
        "-q --quiet",
        "no status lines on stderr",
        "docker's hides the pull output; squarepeg's every status line (warnings and errors stay)",
        value=False,
    ),
    _ok("--read-only", "`securityContext.readOnlyRootFilesystem: true`", value=False),
    _ok("--restart", "nothing: `no`, docker's default, is what a run does", RESTART_NOTE),
    _ok(
        "--rm",
        "nothing; with -d, the Job's `ttlSecondsAfterFinished: 0`",
        "accepted out of habit: deleting is the default (it also overrides `cleanup: false`); "
        "`-d --rm` makes the run a Job the cluster deletes when it exits",
        value=False,
    ),
    _ok("--runtime", "`spec.runtimeClassName`", "a RuntimeClass name, not a docker runtime"),
    _no(
        "--security-opt",
        "seccomp, AppArmor and SELinux are set in the securityContext",
        "set `securityContext` (seccompProfile, appArmorProfile, seLinuxOptions) under "
        "`kubernetes.spec` in a config file",
    ),
    _ok("--shm-size", "a memory-backed `emptyDir` with that `sizeLimit` at /dev/shm"),
    _no(
        "--sig-proxy",
        "squarepeg handles Ctrl-C itself: the first deletes the pod, the second leaves it",
        "leave it out",
    ),
    _no(
        "--stop-signal",
        "the kubelet stops a container with the image's STOPSIGNAL",
        "set STOPSIGNAL in the image",
    ),
    _ok("--stop-timeout", "`terminationGracePeriodSeconds`"),
    _no(
        "--storage-opt",
        _HOST_RESOURCE,
        "leave it out; `resources.limits.ephemeral-storage` under `kubernetes.spec` limits "
        "scratch space",
    ),
    _ok(
        "--sysctl",
        "the pod's `securityContext.sysctls`",
        "an unsafe sysctl (outside the kubelet's safe set) runs only where the kubelet allows "
        "it (`--allowed-unsafe-sysctls`); elsewhere the pod is rejected (SysctlForbidden)",
    ),
    _ok(
        "--tmpfs",
        "a memory-backed `emptyDir` at PATH (`size=` -> `sizeLimit`, `ro` -> a read-only mount)",
        "`noexec`, `nosuid`, `nodev`, `exec`, `mode=` have no Kubernetes equivalent: one "
        "warning, then ignored",
    ),
    _ok(
        "-t --tty",
        "main container `tty: true`; with -i on a terminal, `kubectl attach -it` on yours",
        "with -i and a stdin that is not a terminal: one warning, then as -i, without tty",
        value=False,
    ),
    _no("--ulimit", "Kubernetes sets ulimits per node", "leave it out"),
    _no("--use-api-socket", "a pod cannot reach your docker daemon", "leave it out"),
    _ok(
        "-u --user",
        "`securityContext.runAsUser` and `runAsGroup`",
        "numeric UID[:GID] only: Kubernetes cannot look a name up in the image",
    ),
    _no("--userns", _NAMESPACES, "set `hostUsers: false` under `kubernetes.spec` in a config file"),
    _no("--uts", _NAMESPACES, "leave it out"),
    _ok("-v --volume", _VOLUME_MEANING, FILES_COPIED),
    _no("--volume-driver", _VOLUME, _VOLUME_FIX),
    _no("--volumes-from", "pods share no volumes with containers elsewhere", _VOLUME_FIX),
    _ok("-w --workdir", "the main container's `workingDir`"),
)

BY_NAME: dict[str, DockerFlag] = {name: flag for flag in FLAGS for name in flag.names}
REFUSED_NAMES = frozenset(name for flag in FLAGS if flag.status == "refused" for name in flag.names)


def refusal(flag: DockerFlag, given: str) -> tuple[str, str]:
    """(message, hint) of a refused flag as given (`-p 8080:80`)."""
    return f"{'/'.join(flag.names)} cannot be used: {flag.meaning} ({given})", flag.note


_HEADINGS = {
    "supported": "what it sets",
    "different": "what it sets; the difference",
    "refused": "why not; what to use instead",
}


def markdown() -> str:
    """docs/docker-flags.md: every docker run flag and squarepeg's answer."""
    counts = {s: sum(f.status == s for f in FLAGS) for s in ("supported", "different", "refused")}
    lines = [
        "# docker run's flags in `kubectl squarepeg run`",
        "",
        "Generated by `scripts/gen-docker-flags` from `kubectl_squarepeg/plan/dockerflags.py`; do",
        "not edit by hand. Every flag of docker's `docker run` reference is here:",
        f"{counts['supported']} supported, {counts['different']} accepted with a documented "
        f"difference, {counts['refused']} refused with one line saying why and what to use",
        "instead. Flags squarepeg adds (`--namespace`, `--mode`, `--timeout`, ...) are in the",
        "README.",
        "",
        "| flag | answer | what it sets, or why not | difference, or what to use instead |",
        "|---|---|---|---|",
    ]
    for flag in FLAGS:
        names = ", ".join(f"`{name}`" for name in flag.names)
        lines.append(f"| {names} | {flag.status} | {flag.meaning} | {flag.note} |")
    return "\n".join(lines) + "\n"
