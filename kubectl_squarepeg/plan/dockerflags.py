"""The table of `run`'s flags, one row each: every flag of `docker run` and squarepeg's own.

Each docker flag is SUPPORTED (what it sets on the Pod), DIFFERENT (accepted, with a
documented difference), or REFUSED (one line saying why, and what to use instead); a row of
squarepeg's own is SQUAREPEG. A row (plan/flagrow.py) also carries the click option (metavar,
help, shape), the parser of its value and its config key. From this table cli/app.py makes
`run`'s options, in the table's order, and a hidden option of every refused flag, so no docker
flag gets a bare "No such option", leaving them out of "did you mean"; config/keys.py makes
the config keys of the flags; plan/options.py the flag -> key lookup; completion reads the
metavars; `scripts/gen-docker-flags` writes docs/docker-flags.md and the flag table of
docs/flags.md (plan/flagdocs.py; a test fails when a committed page differs);
tests/unit/test_dockerflags.py walks it against docker's reference and the parser. Pure data:
importing it costs nothing measurable (no parser module is imported), as `run --help` loads it.
"""

from __future__ import annotations

from kubectl_squarepeg.plan import flagtexts as texts
from kubectl_squarepeg.plan.flagrow import ConfigKey, Flag, Parser, no, ok, own

PAIR_FORM = "a mapping like `KEY: value`, or a list of KEY=VALUE strings"
_BOOL = ConfigKey("bool", "true or false")

# The flags of `run`, in the order of `run --help`: docker's that squarepeg supports and
# squarepeg's own. Then docker's that squarepeg refuses (hidden options), by name.
FLAGS: tuple[Flag, ...] = (
    ok(
        "--name",
        "`metadata.name` (a lowercase RFC 1123 label)",
        metavar="NAME", help="Pod/Job name (lowercase RFC 1123 label).",
    ),
    ok(
        "-e --env",
        "the main container's `env` (a bare KEY takes your local value)",
        metavar="KEY[=VALUE]", help="Set an environment variable.", many=True,
        key=ConfigKey("map", PAIR_FORM),
    ),
    ok(
        "--env-file",
        "the main container's `env`, from docker's env-file format",
        metavar="FILE", help="Read environment variables from a docker env file.", many=True,
        parse=Parser("values", "parse_nonempty"),
        key=ConfigKey("list", "a file path, or a list of them", path=True),
    ),
    ok(
        "-l --label",
        '`metadata.labels` (`squarepeg.io/*` is reserved; a bare KEY has the value `""`)',
        metavar="KEY[=VALUE]", help="Add a label.", many=True,
        key=ConfigKey("map", PAIR_FORM, "labels"),
    ),
    ok(
        "--label-file",
        "`metadata.labels`, from a file of KEY=VALUE lines (blank lines and `#` comments "
        "skipped; -l wins over it)",
        metavar="FILE", help="Read labels from a file of KEY=VALUE lines.", many=True,
    ),
    ok(
        "--annotation",
        "`metadata.annotations`",
        "on the Pod (or Job), not handed to the OCI runtime",
        metavar="KEY[=VALUE]", help="Add an annotation.", many=True,
        key=ConfigKey("map", PAIR_FORM, "annotations"),
    ),
    ok(
        "-w --workdir",
        "the main container's `workingDir`",
        metavar="DIR", help="Working directory inside the container.",
        parse=Parser("values", "parse_workdir"),
        key=ConfigKey("scalar", "an absolute path like /app"),
    ),
    ok(
        "-u --user",
        "`securityContext.runAsUser` and `runAsGroup`",
        "numeric UID[:GID] only: Kubernetes cannot look a name up in the image",
        metavar="UID[:GID]", help="Numeric user (and group) to run as.",
        parse=Parser("security", "parse_user"),
        key=ConfigKey("scalar", "UID or UID:GID, like 1000:1000"),
    ),
    ok(
        "--entrypoint",
        'the main container\'s `command`; `--entrypoint ""` resets it, as in docker: the words '
        "after IMAGE are then the whole `command`",
        metavar="CMD", help='Replace the image\'s ENTRYPOINT ("" resets it).',
        parse=Parser("values", "parse_entrypoint"),
        key=ConfigKey("scalar", "a program, like /bin/sh"),
    ),
    ok(
        "--cpus",
        "`resources.requests.cpu` and `limits.cpu` (`0.5` -> `500m`); `0` means no limit, as in "
        "docker",
        metavar="N", help="CPUs requested and limited, e.g. 0.5 (0: no limit).",
        parse=Parser("quantities", "parse_cpus"),
        key=ConfigKey("scalar", "a number of CPUs like 0.5"),
    ),
    ok(
        "-m --memory",
        "`resources.requests.memory` and `limits.memory` (`512m` -> `512Mi`); `0` means no "
        "limit, as in docker",
        metavar="SIZE", help="Memory requested and limited, e.g. 512m (0: no limit).",
        parse=Parser("quantities", "parse_memory"),
        key=ConfigKey("scalar", "a size like 512m or 1g"),
    ),
    ok(
        "--memory-reservation",
        "`resources.requests.memory` (with -m, -m sets only `limits.memory`)",
        "a request reserves memory for scheduling, it does not reclaim memory under pressure "
        "as docker's soft limit does; one above -m is refused, as Kubernetes would",
        metavar="SIZE", help="Memory requested, e.g. 256m.",
        parse=Parser("quantities", "parse_memory"),
        key=ConfigKey("scalar", "a size like 256m"),
    ),
    ok(
        "--gpus",
        '`resources.limits["nvidia.com/gpu"]`',
        "a count (`N`, `count=N`) only: `all` and device lists are refused",
        metavar="N", help="Number of nvidia.com/gpu.", parse=Parser("quantities", "parse_gpus"),
        key=ConfigKey("scalar", "a GPU count like 1"),
    ),
    ok(
        "--pull",
        "`imagePullPolicy` (always -> Always, missing -> IfNotPresent, never -> Never)",
        metavar="always|missing|never", help="Image pull policy.",
        parse=Parser("images", "parse_pull"),
        key=ConfigKey("scalar", "always, missing or never"),
    ),
    ok(
        "--platform",
        "`nodeSelector` `kubernetes.io/os` and `kubernetes.io/arch`",
        "a variant (`linux/arm64/v8`) is accepted and dropped: nodes carry no label for it; an "
        "OS alone (`linux`) selects no architecture, where docker picks its host's",
        metavar="OS[/ARCH[/VARIANT]]", help="Run on nodes of this OS/architecture.",
        parse=Parser("images", "parse_platform"),
        key=ConfigKey("scalar", "OS[/ARCH[/VARIANT]] like linux/amd64"),
    ),
    ok(
        "--privileged",
        "`securityContext.privileged: true`",
        help="Run the container privileged.", key=_BOOL,
    ),
    ok(
        "--cap-add",
        "`securityContext.capabilities.add`",
        metavar="CAP", help="Add a Linux capability.", many=True,
        parse=Parser("security", "parse_capability"),
        key=ConfigKey("list", "a list of capabilities like [NET_ADMIN]"),
    ),
    ok(
        "--cap-drop",
        "`securityContext.capabilities.drop`",
        metavar="CAP", help="Drop a Linux capability.", many=True,
        parse=Parser("security", "parse_capability"),
        key=ConfigKey("list", "a list of capabilities like [ALL]"),
    ),
    ok(
        "--security-opt",
        texts.SECURITY_OPT_MEANING,
        texts.SECURITY_OPT_NOTE,
        metavar="OPT", help="Security option (no-new-privileges, seccomp=unconfined, ...).",
        many=True, parse=Parser("security", "parse_security_opt"), merge="listing",
        key=ConfigKey("list", "a list like [no-new-privileges]"),
    ),
    ok(
        "--group-add",
        "the pod's `securityContext.supplementalGroups`",
        "numeric GIDs only: Kubernetes cannot look a group name up in the image",
        metavar="GID", help="Add a supplementary group (numeric).", many=True,
        parse=Parser("security", "parse_group_id"),
        key=ConfigKey("list", "a list of numeric group IDs like [1000]"),
    ),
    ok(
        "--sysctl",
        "the pod's `securityContext.sysctls`",
        "an unsafe sysctl (outside the kubelet's safe set) runs only where the kubelet allows "
        "it (`--allowed-unsafe-sysctls`); elsewhere the pod is rejected (SysctlForbidden)",
        metavar="KEY=VALUE", help="Set a namespaced kernel parameter.", many=True,
        parse=Parser("security", "parse_sysctl"),
        key=ConfigKey(
            "list", "a list of KEY=VALUE strings like [net.ipv4.ip_forward=1]", "sysctls"
        ),
    ),
    ok(
        "--read-only",
        "`securityContext.readOnlyRootFilesystem: true`",
        help="Mount the root filesystem read-only.", key=_BOOL,
    ),
    ok(
        "--tmpfs",
        "a memory-backed `emptyDir` at PATH (`size=` -> `sizeLimit`, `ro` -> a read-only mount)",
        "`noexec`, `nosuid`, `nodev`, `exec`, `mode=` have no Kubernetes equivalent: one "
        "warning, then ignored",
        metavar="PATH[:OPTS]", help="Mount an in-memory filesystem (rw, ro, size=SIZE).", many=True,
        parse=Parser("mounts", "parse_tmpfs"),
        key=ConfigKey("list", "a list of PATH[:OPTIONS] like /run:size=64m"),
    ),
    ok(
        "-v --volume",
        texts.VOLUME_MEANING,
        texts.FILES_COPIED,
        metavar="SRC:DST[:ro]", help="Mount a claim NAME, or copy a local path.", many=True,
    ),
    ok(
        "--mount",
        "`type=volume,src=NAME,dst=DST`: a PersistentVolumeClaim (`volume-subpath` -> `subPath`); "
        "`type=tmpfs` as --tmpfs; `type=bind,src=PATH`: a copy of your files",
        texts.FILES_COPIED
        + "; so are `bind-propagation`, `volume-opt`, `volume-driver`, other types",
        metavar="type=TYPE,src=SRC,dst=DST", help="Mount (bind, volume or tmpfs).", many=True,
    ),
    ok(
        "-p --publish",
        texts.PUBLISH_MEANING,
        texts.PUBLISH_NOTE,
        metavar="[IP:][HOST_PORT:]PORT",
        help="Forward a local port (127.0.0.1) to the container's while it runs.", many=True,
    ),
    ok(
        "--shm-size",
        "a memory-backed `emptyDir` with that `sizeLimit` at /dev/shm",
        metavar="SIZE", help="Size of /dev/shm.", parse=Parser("quantities", "parse_size"),
        key=ConfigKey("scalar", "a size like 64m"),
    ),
    ok(
        "-h --hostname",
        "`spec.hostname`",
        "one label: a dotted name is refused (the domain is `subdomain` under `kubernetes.spec`)",
        metavar="NAME", help="The pod's host name.", parse=Parser("names", "validate_hostname"),
        key=ConfigKey("scalar", "a host name like worker-1"),
    ),
    ok(
        "--add-host",
        "`spec.hostAliases` (HOST:IP)",
        "host-gateway is refused: a pod has no docker host",
        metavar="HOST:IP", help="Add an /etc/hosts entry.", many=True,
        parse=Parser("network", "parse_add_host"),
        key=ConfigKey("list", "a list of HOST:IP strings"),
    ),
    ok(
        "--dns",
        "`spec.dnsConfig.nameservers`, with `dnsPolicy: None`",
        "replaces the cluster's nameservers as docker's replaces the host's: cluster service "
        "names stop resolving",
        metavar="IP", help="Use this nameserver instead of the cluster's.", many=True,
        parse=Parser("network", "parse_dns_ip"), key=ConfigKey("list", "a list of IP addresses"),
    ),
    ok(
        "--dns-search",
        "`spec.dnsConfig.searches`",
        metavar="DOMAIN", help="Add a DNS search domain.", many=True,
        parse=Parser("network", "parse_dns_search"), key=ConfigKey("list", "a list of domains"),
    ),
    ok(
        "--dns-option --dns-opt",
        "`spec.dnsConfig.options` (`ndots:2` -> name `ndots`, value `2`; `rotate` -> name only)",
        "added to the cluster's resolv.conf options; alone it keeps the cluster's `dnsPolicy`",
        metavar="OPT[:VALUE]", help="Add a resolv.conf option, e.g. ndots:2.", many=True,
        hidden_alias=True, parse=Parser("network", "parse_dns_option"),
        key=ConfigKey("list", "a list of resolv.conf options like [ndots:2]", "dns_options"),
    ),
    ok(
        "--stop-signal",
        "the main container's `lifecycle.stopSignal`, and the pod's `spec.os.name` (`linux`, or "
        "--platform's OS), which Kubernetes requires with it",
        "a name (`SIGINT`, `int`) or docker's Linux number (`2`); only clusters with the "
        "ContainerStopSignals feature gate on (alpha since 1.33, off by default) keep it, others "
        "drop it without a word and the image's STOPSIGNAL applies: `--dry-run-server` shows "
        "which ([decision 0310](decisions/0310-stop-signal.md))",
        metavar="SIGNAL", help="Signal that stops the container (where the cluster allows).",
        parse=Parser("podspec", "parse_stop_signal"), merge="scalar",
        key=ConfigKey("scalar", "a signal name like SIGINT"),
    ),
    ok(
        "--stop-timeout",
        "`terminationGracePeriodSeconds`",
        metavar="SECONDS", help="Grace period before SIGKILL.",
        parse=Parser("quantities", "parse_nonnegative_int"),
        key=ConfigKey("scalar", "a whole number of seconds"),
    ),
    ok(
        "--runtime",
        "`spec.runtimeClassName`",
        "a RuntimeClass name, not a docker runtime",
        metavar="NAME", help="RuntimeClass to run with.",
        parse=Parser("names", "validate_subdomain"),
        key=ConfigKey("scalar", "a RuntimeClass name"),
    ),
    ok(
        "--rm",
        "nothing; with -d, the Job's `ttlSecondsAfterFinished: 0`",
        "accepted out of habit: deleting is the default (it also overrides `cleanup: false`); "
        "`-d --rm` makes the run a Job the cluster deletes when it exits",
        help="Accepted for docker habit: deleting is the default.",
    ),
    ok(
        "-d --detach",
        "waits for the container's start as a run does, prints the run's name and exits 0, "
        "leaving the Pod or Job (labelled `squarepeg.io/detached`) running; "
        "`kubectl squarepeg ps`, `logs`, `wait` and `rm` work on it",
        "the name, not a container ID; no sweep takes it, `rm` does; `-d --rm` runs a Job "
        "with `ttlSecondsAfterFinished: 0`, so the cluster deletes it when it exits; "
        "with -i or -t it is refused (there is no `attach`), with -p too (nobody forwards)",
        help="Start it, print its name and leave it running.",
    ),
    own(
        "-n --namespace",
        "where it runs (default: the context's); handed to every kubectl call",
        metavar="NS", help="Namespace (default: the context's).",
        parse=Parser("names", "validate_name"),
        key=ConfigKey("scalar", "a namespace name like team-a"),
    ),
    own(
        "--context",
        "the kubeconfig context; handed to every kubectl call",
        metavar="NAME", help="Kubeconfig context to use.", parse=Parser("values", "parse_nonempty"),
        key=ConfigKey("scalar", "a kubeconfig context name"),
    ),
    own(
        "--kubeconfig",
        "the kubeconfig file; handed to every kubectl call",
        metavar="FILE", help="Kubeconfig file to use.", parse=Parser("values", "parse_nonempty"),
        key=ConfigKey("scalar", "a file path", path=True),
    ),
    own(
        "--as",
        "kubectl's impersonation: handed to every kubectl call and printed command; the "
        "banner says it ([decision 0250](decisions/0250-impersonation-is-part-of-the-target.md))",
        metavar="USER", help="Act as USER (impersonation).", dest="as_user",
    ),
    own(
        "--as-group",
        "kubectl's impersonation of a group; needs `--as`",
        metavar="GROUP", help="Act as a member of GROUP (with --as).", many=True,
    ),
    own(
        "--mode",
        "a bare Pod (default) or a Job (`backoffLimit: 0`, a `ttlSecondsAfterFinished` backstop)",
        metavar="pod|job", help="Create a Pod (default) or a Job.",
        parse=Parser("values", "parse_mode"),
        key=ConfigKey("scalar", "pod or job", default="pod"),
    ),
    own(
        "--timeout",
        "the startup timeout, default 300 (`90s`, `5m` accepted); it covers startup only",
        metavar="SECONDS", help="Startup timeout (default 300; 90s, 5m).",
        parse=Parser("quantities", "parse_duration_seconds"),
        key=ConfigKey("scalar", "seconds, or a duration like 90s or 5m", default=300.0),
    ),
    own(
        "--max-runtime",
        texts.MAX_RUNTIME,
        metavar="DURATION", help="Longest the pod may run (90s, 5m, 1h); then exit 124.",
        parse=Parser("podspec", "parse_max_runtime"), merge="scalar",
        key=ConfigKey("scalar", "seconds, or a duration like 90s, 5m or 1h"),
    ),
    own(
        "--secret-env",
        texts.SECRET_ENV,
        metavar="KEY[=VALUE]", help="Set an environment variable through a Secret.", many=True,
    ),
    own(
        "--keep",
        "delete nothing; label it `squarepeg.io/keep` and print how to inspect it",
        help="Do not delete the Pod/Job afterwards.",
    ),
    own(
        "--dry-run",
        "print the manifest; create nothing",
        help="Print the manifest; create nothing.",
    ),
    own(
        "--dry-run-server",
        "print the apiserver's answer to the manifest; create nothing",
        help="Have the apiserver check the manifest.",
    ),
    ok(
        "-q --quiet",
        "no status lines on stderr",
        "docker's hides the pull output; squarepeg's every status line (warnings and errors stay)",
        help="No status messages on stderr.", key=_BOOL,
    ),
    own(
        "--events",
        "the run's phases as JSON lines, into FILE, or with `-` on stderr in place of "
        "squarepeg's lines ([docs/events.md](events.md))",
        metavar="FILE", help="Write the run's events as JSON lines to FILE (-: stderr).",
        parse=Parser("values", "parse_nonempty"), merge="scalar",
    ),
    ok(
        "-i --interactive",
        "main container `stdin: true`, `stdinOnce: true`; your stdin reaches it through "
        "`kubectl attach -i`",
        "the output still comes from the log stream, complete from the first byte",
        help="Send stdin to the container (kubectl attach).",
    ),
    ok(
        "-t --tty",
        "main container `tty: true`; with -i on a terminal, `kubectl attach -it` on yours",
        "with -i and a stdin that is not a terminal: one warning, then as -i, without tty",
        help="Give the container a terminal; -it attaches yours.",
    ),
    own(
        "--config",
        "one more config file, read last (highest precedence)",
        metavar="FILE", help="Read this config file too (highest precedence).", many=True,
    ),
    own(
        "--service-account",
        "`serviceAccountName`",
        metavar="NAME", help="Service account to run as.",
        parse=Parser("names", "validate_subdomain"),
        key=ConfigKey("scalar", "a service account name"),
    ),
    own(
        "--node-selector",
        "`nodeSelector`; a key --platform also sets is an error",
        metavar="KEY=VALUE", help="Only run on nodes with this label.", many=True,
        key=ConfigKey("map", PAIR_FORM),
    ),
    own(
        "--toleration",
        "`tolerations`",
        metavar="KEY[=VALUE]:EFFECT", help="Tolerate a node taint.", many=True,
        parse=Parser("names", "parse_toleration"),
        key=ConfigKey("list", "a list of KEY[=VALUE]:EFFECT strings", "tolerations"),
    ),
    own(
        "--image-pull-secret",
        "`imagePullSecrets`",
        metavar="NAME", help="Secret for pulling the image.", many=True,
        parse=Parser("names", "validate_subdomain"),
        key=ConfigKey("list", "a list of secret names", "image_pull_secrets"),
    ),
    own(
        "--priority-class",
        "`priorityClassName`",
        metavar="NAME", help="PriorityClass of the pod.",
        parse=Parser("names", "validate_subdomain"),
        key=ConfigKey("scalar", "a PriorityClass name"),
    ),
    ok(
        "--restart",
        "nothing: `no`, docker's default, is what a run does",
        texts.RESTART_NOTE,
        metavar="no", help="Only `no`: one attempt.", exposed=False,
    ),
    ok(
        "--no-healthcheck",
        "nothing",
        "accepted as a no-op: Kubernetes never runs an image's HEALTHCHECK",
        help="Accepted: Kubernetes runs none.", exposed=False,
    ),
    ok(
        "--disable-content-trust",
        "nothing",
        "accepted as a no-op: Kubernetes verifies no content trust (docker's default is to skip "
        "it too)",
        help="Accepted: a no-op.", exposed=False,
    ),
    ok("--help", "prints `run`'s help"),
    no(
        "-a --attach",
        "squarepeg always shows the container's output, stdout and stderr merged by the log API",
        "leave it out",
    ),
    no("--blkio-weight", texts.HOST_RESOURCE, "leave it out"),
    no("--blkio-weight-device", texts.HOST_RESOURCE, "leave it out"),
    no("--cgroup-parent", texts.HOST_RESOURCE, "leave it out"),
    no("--cgroupns", texts.NAMESPACES, "leave it out"),
    no(
        "--cidfile", "a pod has a name, not a container ID", "use --name NAME to know it in advance"
    ),
    no("--cpu-count", texts.WINDOWS, texts.USE_CPUS),
    no("--cpu-percent", texts.WINDOWS, texts.USE_CPUS),
    no("--cpu-period", texts.CPU_FINE, texts.USE_CPUS),
    no("--cpu-quota", texts.CPU_FINE, texts.USE_CPUS),
    no("--cpu-rt-period", texts.CPU_FINE, "leave it out"),
    no("--cpu-rt-runtime", texts.CPU_FINE, "leave it out"),
    no("-c --cpu-shares", "Kubernetes weighs CPU by the request", texts.USE_CPUS),
    no(
        "--cpuset-cpus",
        texts.HOST_RESOURCE,
        "use --cpus; CPU pinning is the kubelet's CPU manager policy",
    ),
    no("--cpuset-mems", texts.HOST_RESOURCE, "leave it out"),
    no(
        "--detach-keys",
        "with -it every key goes to the container: there is no detaching",
        "leave it out; the container's own exit ends the run",
    ),
    no(
        "--device",
        texts.HOST_RESOURCE,
        "use a device plugin's resource (--gpus for nvidia.com/gpu), or " + texts.SPEC,
    ),
    no("--device-cgroup-rule", texts.HOST_RESOURCE, "leave it out"),
    no("--device-read-bps", texts.HOST_RESOURCE, "leave it out"),
    no("--device-read-iops", texts.HOST_RESOURCE, "leave it out"),
    no("--device-write-bps", texts.HOST_RESOURCE, "leave it out"),
    no("--device-write-iops", texts.HOST_RESOURCE, "leave it out"),
    no(
        "--domainname",
        "a pod's domain is its subdomain in the cluster",
        "set `subdomain` under `kubernetes.spec` in a config file",
    ),
    no("--expose", "docker's EXPOSE metadata has no use on a pod", texts.PUBLISH_FIX),
    no("--health-cmd", texts.HEALTH, texts.HEALTH_FIX),
    no("--health-interval", texts.HEALTH, texts.HEALTH_FIX),
    no("--health-retries", texts.HEALTH, texts.HEALTH_FIX),
    no("--health-start-interval", texts.HEALTH, texts.HEALTH_FIX),
    no("--health-start-period", texts.HEALTH, texts.HEALTH_FIX),
    no("--health-timeout", texts.HEALTH, texts.HEALTH_FIX),
    no(
        "--init",
        "the pod has no docker-init; its main process is PID 1",
        "leave it out, or set `shareProcessNamespace: true` under `kubernetes.spec` (the pause "
        "process then reaps zombies)",
        value=False,
    ),
    no("--io-maxbandwidth", texts.WINDOWS, "leave it out"),
    no("--io-maxiops", texts.WINDOWS, "leave it out"),
    no("--ip", "the cluster's network assigns pod addresses", "leave it out"),
    no("--ip6", "the cluster's network assigns pod addresses", "leave it out"),
    no(
        "--ipc",
        texts.NAMESPACES,
        "set `hostIPC` or `shareProcessNamespace` under `kubernetes.spec` in a config file",
    ),
    no("--isolation", texts.WINDOWS, "leave it out"),
    no("--kernel-memory", "docker itself no longer supports it", "use -m"),
    no("--link", texts.NETWORK, "reach other pods by their Service's DNS name"),
    no("--link-local-ip", texts.NETWORK, texts.NETWORK_FIX),
    no("--log-driver", texts.LOGS, "leave it out"),
    no("--log-opt", texts.LOGS, "leave it out"),
    no("--mac-address", texts.NETWORK, texts.NETWORK_FIX),
    no("--memory-swap", "Kubernetes sets swap per node, not per container", "use -m"),
    no("--memory-swappiness", "Kubernetes sets swap per node, not per container", "leave it out"),
    no("--network --net", texts.NETWORK, texts.NETWORK_FIX),
    no("--network-alias --net-alias", texts.NETWORK, "give the pod a Service"),
    no(
        "--oom-kill-disable",
        "the kubelet always OOM-kills a container over its limit",
        "raise -m",
        value=False,
    ),
    no("--oom-score-adj", "the kubelet sets it from the pod's QoS class", "leave it out"),
    no(
        "--pid",
        texts.NAMESPACES,
        "set `hostPID` or `shareProcessNamespace` under `kubernetes.spec` in a config file",
    ),
    no("--pids-limit", "Kubernetes sets the PID limit per node", "leave it out"),
    no(
        "-P --publish-all",
        "the image's EXPOSE ports are not known without pulling the image",
        "leave it out; publish each port with -p CONTAINER_PORT",
        value=False,
    ),
    no(
        "--sig-proxy",
        "squarepeg handles Ctrl-C itself: the first deletes the pod, the second leaves it",
        "leave it out",
    ),
    no(
        "--storage-opt",
        texts.HOST_RESOURCE,
        "leave it out; `resources.limits.ephemeral-storage` under `kubernetes.spec` limits "
        "scratch space",
    ),
    no("--ulimit", "Kubernetes sets ulimits per node", "leave it out"),
    no("--use-api-socket", "a pod cannot reach your docker daemon", "leave it out"),
    no("--userns", texts.NAMESPACES,
       "set `hostUsers: false` under `kubernetes.spec` in a config file"),
    no("--uts", texts.NAMESPACES, "leave it out"),
    no("--volume-driver", texts.VOLUME, texts.VOLUME_FIX),
    no("--volumes-from", "pods share no volumes with containers elsewhere", texts.VOLUME_FIX),
)

BY_NAME: dict[str, Flag] = {name: flag for flag in FLAGS for name in flag.names}
BY_PARAM: dict[str, Flag] = {flag.param: flag for flag in FLAGS if flag.is_option}
REFUSED_NAMES = frozenset(name for flag in FLAGS if flag.status == "refused" for name in flag.names)


def refusal(flag: Flag, given: str) -> tuple[str, str]:
    """(message, hint) of a refused flag as given (`-p 8080:80`)."""
    return f"{'/'.join(flag.names)} cannot be used: {flag.meaning} ({given})", flag.note
