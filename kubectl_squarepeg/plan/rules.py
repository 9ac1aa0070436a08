"""The rules across the flags of one `run`: one function, `validate`, holds them all.

Owns what no single value can say is wrong, only two together: --dry-run with
--dry-run-server, --rm with --keep, two flags writing one field (--platform and
--node-selector, `--entrypoint ""` with no command), two mounts at one path, --shm-size with
a tmpfs at /dev/shm, a memory request over the limit, more nameservers or search domains
than Kubernetes takes, and what `run -d` refuses (-p, -i/-t, `--rm --mode pod`, a local
path to copy; docs/decisions/0160 and 0220). What the command line asked beyond the
settings themselves comes in `Asked`. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.plan import quantities
from kubectl_squarepeg.plan.options import RunOptions, check_image


@dataclass(frozen=True)
class Asked:
    """What the command line asked beyond RunOptions' settings."""

    detach: bool = False  # -d
    rm: bool = False  # --rm
    keep: bool = False  # --keep given on the command line
    mode_given: bool = False  # --mode given on the command line


def validate(options: RunOptions, asked: Asked) -> None:
    """Every rule across flags of one `run`, in the order they are checked; each failure
    is a UsageError naming the flags involved."""
    if options.dry_run and options.dry_run_server:
        raise UsageError(
            "--dry-run and --dry-run-server cannot be used together",
            "pass --dry-run to print the manifest locally, or --dry-run-server to have the "
            "apiserver validate it",
        )
    if asked.rm and asked.keep:
        raise UsageError(
            "--rm and --keep contradict each other",
            "leave out --rm (deleting is the default), or leave out --keep",
        )
    check_image(options.image)
    _check_one_source_per_field(options)
    if options.shm_size is not None and any(t.path == "/dev/shm" for t in options.tmpfs):
        raise UsageError(
            "--shm-size and a tmpfs at /dev/shm both mount /dev/shm",
            "use --shm-size SIZE, or --tmpfs /dev/shm:size=SIZE, not both",
        )
    _check_memory_reservation(options)
    _check_dns_counts(options)
    paths = [t.path for t in options.tmpfs]
    for path in paths:
        if paths.count(path) > 1:
            raise UsageError(
                f"--tmpfs {path} is given twice with different options",
                "give each tmpfs mount point once",
            )
    _check_mount_targets(options)
    if asked.detach:
        _check_detach(options, asked)


def _check_detach(options: RunOptions, asked: Asked) -> None:
    """`run -d`: no Pod for --rm, no local path to copy in and back (docs/decisions/0160,
    0220). -i, -t and -p are a detached run's since `attach` and `port` (0161, 0231)."""
    if asked.rm and options.mode == "pod" and asked.mode_given:
        raise UsageError(
            "-d --rm cannot be used with --mode pod: a Pod has no time-to-live, and a "
            "detached run has no squarepeg process left to delete it when it exits",
            "leave out --mode pod (-d --rm runs a Job that the cluster deletes when it "
            "exits), or leave out --rm and delete it with `kubectl squarepeg rm NAME`",
        )
    if options.binds and not (options.dry_run or options.dry_run_server):
        first = options.binds[0]
        raise UsageError(
            f"-d with -v {first.source}:{first.target}: a local path is copied in and back by "
            "squarepeg itself, which -d does not wait for",
            "run without -d, or mount a PersistentVolumeClaim with -v NAME:DST",
        )


def _check_mount_targets(options: RunOptions) -> None:
    """Two mounts at one path are an invalid pod: name both (paths compared normalised)."""
    seen: dict[str, str] = {}
    targets = [
        *((b.target, f"-v {b.source}:{b.target}") for b in options.binds),
        *((v.target, f"-v {v.claim}:{v.target}") for v in options.volume_mounts),
        *((t.path, f"--tmpfs {t.path}") for t in options.tmpfs),
        *((("/dev/shm", "--shm-size"),) if options.shm_size is not None else ()),
    ]
    for target, given in targets:
        if target in seen:
            raise UsageError(
                f"two mounts at {target}: {seen[target]} and {given}",
                "give each mount point (DST) once",
            )
        seen[target] = given


# What the API server accepts in a pod's dnsConfig (docker takes any number).
MAX_NAMESERVERS = 3
MAX_DNS_SEARCHES = 32
MAX_DNS_SEARCH_CHARS = 2048  # the search list joined by spaces


def _check_dns_counts(options: RunOptions) -> None:
    if len(options.dns) > MAX_NAMESERVERS:
        raise UsageError(
            f"--dns: {len(options.dns)} nameservers in all (config's `dns` included); Kubernetes "
            f"takes at most {MAX_NAMESERVERS}, the number a resolver uses",
            f"give at most {MAX_NAMESERVERS} --dns",
        )
    if len(options.dns_search) > MAX_DNS_SEARCHES:
        raise UsageError(
            f"--dns-search: {len(options.dns_search)} search domains in all (config's "
            f"`dns_search` included); Kubernetes takes at most {MAX_DNS_SEARCHES}",
            f"give at most {MAX_DNS_SEARCHES} --dns-search",
        )
    if (chars := len(" ".join(options.dns_search))) > MAX_DNS_SEARCH_CHARS:
        raise UsageError(
            f"--dns-search: the search domains in all (config's `dns_search` included) come to "
            f"{chars} characters with a space between each; Kubernetes takes at most "
            f"{MAX_DNS_SEARCH_CHARS}",
            "give fewer or shorter --dns-search",
        )


def _check_memory_reservation(options: RunOptions) -> None:
    # Kubernetes refuses a pod whose memory request is above its limit; say so at the flag.
    limit, request = options.memory, options.memory_reservation
    if limit is None or request is None:
        return
    if quantities.size_bytes(request) > quantities.size_bytes(limit):
        raise UsageError(
            f"--memory-reservation {request} is larger than the -m limit {limit} "
            "(Kubernetes refuses a memory request above the limit)",
            "give a --memory-reservation no larger than -m, or raise -m",
        )


# Node labels a flag's value also sets: (the flag's parameter, the node-selector keys).
_SELECTOR_KEYS = ("kubernetes.io/os", "kubernetes.io/arch")


def _check_one_source_per_field(options: RunOptions) -> None:
    """Two flags that write the same field are an error naming both, never a silent
    overwrite (config values are defaults, and lose to either flag without a word)."""
    if "platform" in options.explicit and options.platform is not None:
        given = options.cli_keys.get("node_selector", {})
        for key in _SELECTOR_KEYS:
            if key in given:
                raise UsageError(
                    f"--platform and --node-selector {key}=... both set the node selector {key}",
                    "give one of them",
                )
    if options.entrypoint == "" and not options.command:
        raise UsageError(
            '--entrypoint "" resets the image\'s entrypoint and leaves nothing to run',
            "give the command after IMAGE, like `run --entrypoint \"\" IMAGE sh -c 'echo hi'`",
        )
