"""RunOptions: every setting of one `run`, after the command line has been laid over config.

Owns how a flag and a config key combine, and the parsing of flag values (through the
parsers of values.py, names.py, quantities.py, network.py, images.py, security.py and
mounts.py, naming the flag in every error); the rules across fields are plan/rules.py's.
Reading an `--env-file` or a `--label-file` goes through the `read_text` seam, so this
module itself touches nothing.

How the two sources combine (the spec leaves the multi-valued case open; docs/decisions/0005):
- a single value: the flag when it was given on the command line, else the config value
  (which already holds the built-in default);
- a mapping (`env`, `labels`, `annotations`, `node_selector`): config first, then the
  command line, merged per key, the command line winning. For `env` the order is config
  `env_file`, config `env`, `--env-file`, `-e`: later wins, as in docker and compose;
- a list (`cap_add`, `tmpfs`, `dns`, `tolerations`, ...): config items, then the flag's
  items, without repeating an item already present.
`explicit` names the parameters given on the command line and `cli_keys` the keys each
mapping flag set: manifest.py turns exactly those into claims.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.plan import (
    dockerflags,
    filehelpers,
    images,
    mounts,
    names,
    network,
    ports,
    quantities,
    secretenv,
    security,
    values,
)
from kubectl_squarepeg.plan.configured import Configured
from kubectl_squarepeg.plan.mounts import BindMount, Tmpfs, VolumeMount
from kubectl_squarepeg.plan.values import ValueProblem

Mode = Literal["pod", "job"]
T = TypeVar("T")

# The config key of each flag whose key is not its parameter's name (the table's rows).
CONFIG_KEY = {
    flag.param: flag.key_name
    for flag in dockerflags.FLAGS
    if flag.key_name is not None and flag.key_name != flag.param
}


@dataclass(frozen=True)
class RunOptions:
    """All flag and config values of one `run`, parsed, merged and checked."""

    image: str
    command: tuple[str, ...] = ()
    name: str | None = None
    mode: Mode = "pod"
    timeout: float = 300.0
    keep: bool = False
    quiet: bool = False
    interactive: bool = False  # -i: stdin goes to the container through kubectl attach
    tty: bool = False  # -t: the container runs on a terminal
    dry_run: bool = False
    dry_run_server: bool = False
    orphan_sweep: bool = True
    orphan_sweep_min_age: int = 300
    orphan_sweep_silence: float = 120.0
    job_ttl_seconds_after_finished: int = 600
    context: str | None = None
    kubeconfig: str | None = None
    namespace: str | None = None
    config_paths: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    # --secret-env, and config secret_env_all (every env value): into the run's Secret,
    # read through secretKeyRef (plan/secretenv.py; decision 0361).
    secret_env: Mapping[str, str] = field(default_factory=dict)
    secret_env_all: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    workdir: str | None = None
    user: tuple[int, int | None] | None = None
    entrypoint: str | None = None
    cpus: str | None = None
    memory: str | None = None
    memory_reservation: str | None = None
    gpus: int | None = None
    pull: str | None = None
    platform: tuple[str, str | None] | None = None
    privileged: bool = False
    read_only: bool = False
    cap_add: tuple[str, ...] = ()
    cap_drop: tuple[str, ...] = ()
    tmpfs: tuple[Tmpfs, ...] = ()
    shm_size: str | None = None
    hostname: str | None = None
    add_host: tuple[tuple[str, str], ...] = ()
    dns: tuple[str, ...] = ()
    dns_search: tuple[str, ...] = ()
    dns_options: tuple[tuple[str, str | None], ...] = ()
    group_add: tuple[int, ...] = ()
    sysctls: tuple[tuple[str, str], ...] = ()
    stop_timeout: int | None = None
    runtime: str | None = None
    service_account: str | None = None
    tolerations: tuple[Mapping[str, str], ...] = ()
    image_pull_secrets: tuple[str, ...] = ()
    priority_class: str | None = None
    binds: tuple[BindMount, ...] = ()  # -v/--mount with a local path: files in (and out)
    volume_mounts: tuple[VolumeMount, ...] = ()  # -v/--mount with a claim name
    publish: tuple[ports.PublishedPort, ...] = ()  # -p: forwarded while the run lasts
    files_helper_image: str = filehelpers.DEFAULT_HELPER_IMAGE
    max_upload_bytes: int = mounts.DEFAULT_MAX_UPLOAD_BYTES
    # The flags with no field above whose row says how they merge (dockerflags `merge`), by
    # parameter: a flag added by its row alone reaches podspec.py here (None when not set).
    table_values: Mapping[str, Any] = field(default_factory=dict)
    # Parameters given on the command line (click names: "cpus", "cap_add", "image", ...).
    explicit: frozenset[str] = frozenset()
    # For mapping flags: param -> {key given on the command line -> the flag that set it}.
    cli_keys: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def flag_name(param: str) -> str:
    """How a click parameter is written on the command line (`cap_add` -> `--cap-add`)."""
    if param in ("image", "command"):
        return param.upper()
    return "--" + param.replace("_", "-")


def _shown(param: str, raw: str) -> str:
    """A flag value as an error may quote it: an `-e KEY=VALUE`'s value may be a secret, so
    only its KEY is shown (docs/decisions/0026)."""
    if param in ("env", "secret_env"):
        key, equals, _ = raw.partition("=")
        return key + ("=..." if equals else "")
    return raw


def _flag_value(param: str, raw: str, parse: Callable[[str], T]) -> T:
    try:
        return parse(raw)
    except ValueProblem as problem:
        shown = _shown(param, raw)
        raise UsageError(
            f"invalid value {values.quoted(shown)} for {flag_name(param)}", str(problem)
        ) from None


def _unique(items: Iterable[T]) -> tuple[T, ...]:
    seen: list[T] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return tuple(seen)


class _Merger:
    """Lays command-line values over config values, one parameter at a time."""

    def __init__(self, flags: Mapping[str, Any], explicit: Collection[str], config: Configured):
        self.flags = flags
        self.explicit = frozenset(explicit)
        self.config = config
        self.cli_keys: dict[str, dict[str, str]] = {}

    def given(self, param: str) -> bool:
        return param in self.explicit and self.flags.get(param) not in (None, (), False)

    def conf(self, param: str, default: Any = None) -> Any:
        value = self.config.values.get(CONFIG_KEY.get(param, param))
        return default if value is None else value

    def scalar(self, param: str, parse: Callable[[str], Any], default: Any = None) -> Any:
        if self.given(param):
            return _flag_value(param, str(self.flags[param]), parse)
        return self.conf(param, default)

    def switch(self, param: str) -> bool:
        return bool(self.flags.get(param)) if self.given(param) else bool(self.conf(param, False))

    def items(self, param: str, parse: Callable[[str], T]) -> list[T]:
        if not self.given(param):
            return []
        return [_flag_value(param, raw, parse) for raw in self.flags[param]]

    def listing(self, param: str, parse: Callable[[str], T]) -> tuple[T, ...]:
        return _unique([*self.conf(param, []), *self.items(param, parse)])

    def mapping(
        self,
        param: str,
        validate: Callable[[str, str], None],
        split: Callable[[str], tuple[str, str]] = values.parse_key_value,
    ) -> dict[str, str]:
        merged = dict(self.conf(param, {}))
        for key, value in self.items(param, lambda s: _checked_pair(s, validate, split)):
            merged[key] = value
            self.cli_keys.setdefault(param, {})[key] = flag_name(param)
        return merged


def _table_values(merger: _Merger) -> dict[str, Any]:
    """The values of the flags whose row says how they merge, laid over config."""
    merged: dict[str, Any] = {}
    for flag in dockerflags.FLAGS:
        parse = flag.parse or str
        if flag.merge == "scalar":
            merged[flag.param] = merger.scalar(flag.param, parse, flag.key and flag.key.default)
        elif flag.merge == "switch":
            merged[flag.param] = merger.switch(flag.param)
        elif flag.merge == "listing":
            merged[flag.param] = merger.listing(flag.param, parse)
    return merged


def _checked_pair(
    raw: str,
    validate: Callable[[str, str], None],
    split: Callable[[str], tuple[str, str]] = values.parse_key_value,
) -> tuple[str, str]:
    key, value = split(raw)
    validate(key, value)
    return key, value


def _validate_label(key: str, value: str) -> None:
    names.validate_label_key(key)
    names.validate_label_value(value)


def _validate_annotation(key: str, _value: str) -> None:
    names.validate_annotation_key(key)


def _env_file_items(text: str, environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """The variables of one docker env file's text."""
    pairs: list[tuple[str, str]] = []
    for item in values.parse_env_file_text(text):
        if isinstance(item, str):
            if item in environ:  # a bare KEY takes the local value, and is skipped when unset
                pairs.append((item, environ[item]))
        else:
            pairs.append(item)
    return pairs


def _read_lines_file(
    path: str, read_text: Callable[[str], str], kind: str, where: str, parse: Callable[[str], T]
) -> T:
    """One env or label file (`kind`), read and parsed; every problem names the file."""
    try:
        return parse(read_text(path))
    except OSError as exc:
        raise UsageError(
            f"cannot read the {kind} file {path!r} ({where}): {exc.strerror or exc}",
            "give the path of a readable file of KEY=VALUE lines",
        ) from None
    except UnicodeDecodeError:
        raise UsageError(
            f"the {kind} file {path!r} is not UTF-8 text ({where})", "save it as UTF-8"
        ) from None
    except ValueProblem as problem:
        raise UsageError(f"bad {kind} file {path!r} ({where})", str(problem)) from None


def _read_env_file(
    path: str, read_text: Callable[[str], str], environ: Mapping[str, str], where: str
) -> list[tuple[str, str]]:
    return _read_lines_file(
        path, read_text, "env", where, lambda text: _env_file_items(text, environ)
    )


def _merge_env(
    merger: _Merger, read_text: Callable[[str], str], environ: Mapping[str, str]
) -> dict[str, str]:
    env: dict[str, str] = {}
    origin = merger.config.origins.get("env_file")
    for path in merger.conf("env_file", []):
        env.update(_read_env_file(path, read_text, environ, f"env_file, {origin}"))
    env.update(merger.conf("env", {}))
    keys: dict[str, str] = {}
    for path in merger.flags["env_file"] if merger.given("env_file") else ():
        for key, value in _read_env_file(path, read_text, environ, "--env-file"):
            env[key] = value
            keys[key] = "--env-file"
    for item in merger.items("env", lambda s: values.parse_env_item(s, environ)):
        if item is not None:  # a bare KEY that is unset locally is skipped, as docker does
            env[item[0]] = item[1]
            keys[item[0]] = "--env"
    if keys:
        merger.cli_keys["env"] = keys
    return env


def _label_file_items(path: str, read_text: Callable[[str], str]) -> list[tuple[str, str]]:
    """The labels of one docker label file, each checked as -l checks one; a problem with a
    line names the file and the line."""
    lines = _read_lines_file(path, read_text, "label", "--label-file", values.parse_label_file_text)
    pairs: list[tuple[str, str]] = []
    for number, key, value in lines:
        where = f"--label-file {path}, line {number}"
        try:
            _validate_label(key, value)
        except ValueProblem as problem:
            raise UsageError(
                f"invalid label {values.quoted(key + '=' + value)} ({where})", str(problem)
            ) from None
        if names.is_reserved_label(key):
            raise UsageError(
                f"the label {key} ({where}) is reserved for squarepeg", names.RESERVED_LABEL_HINT
            )
        pairs.append((key, value))
    return pairs


def _merge_secret_env(
    merger: _Merger, env: Mapping[str, str], environ: Mapping[str, str]
) -> dict[str, str]:
    """--secret-env's values, in the order given; with secret_env_all, every env key must be
    able to be a Secret's key too (checked here, where the error can name its source)."""
    if merger.conf("secret_env_all", False):
        for key in env:
            try:
                secretenv.check_key(key)
            except ValueProblem as problem:
                raise UsageError(
                    f"env {key!r} cannot be kept secret (secret_env_all)", str(problem)
                ) from None
    return dict(merger.items("secret_env", lambda s: secretenv.parse_secret_env(s, environ)))


def _merge_labels(merger: _Merger, read_text: Callable[[str], str]) -> dict[str, str]:
    # config `labels`, then each --label-file, then -l: later wins, as for env.
    labels = dict(merger.conf("label", {}))
    keys: dict[str, str] = {}
    for path in merger.flags["label_file"] if merger.given("label_file") else ():
        for key, value in _label_file_items(path, read_text):
            labels[key] = value
            keys[key] = "--label-file"
    label_pair = values.parse_docker_pair
    for key, value in merger.items(
        "label", lambda s: _checked_pair(s, _validate_label, label_pair)
    ):
        labels[key] = value
        keys[key] = "--label"
    if keys:
        merger.cli_keys["label"] = keys
    return labels


def _flag_mounts(merger: _Merger) -> list[mounts.Mount]:
    """-v then --mount, in the order of each flag's items."""
    return [
        *merger.items("volume", mounts.parse_volume),
        *merger.items("mount", mounts.parse_mount),
    ]


def _merge_tmpfs(merger: _Merger, from_mounts: list[Tmpfs]) -> tuple[Tmpfs, ...]:
    # A --tmpfs at a path config also mounts replaces config's mount there.
    given = [*merger.items("tmpfs", mounts.parse_tmpfs), *from_mounts]
    paths = {t.path for t in given}
    return _unique([*(t for t in merger.conf("tmpfs", []) if t.path not in paths), *given])


def _published(merger: _Merger) -> tuple[ports.PublishedPort, ...]:
    """Every -p, ranges expanded (plan/ports.py); -p has no config key."""
    published = tuple(p for group in merger.items("publish", ports.parse_publish) for p in group)
    problem = ports.check_published(published)
    if problem is not None:
        raise UsageError(f"-p/--publish: {problem}", "give each host port once")
    return published


def _check_reserved_labels(merger: _Merger) -> None:
    # Config labels were checked when the file was read, with its line.
    for key, flag in merger.cli_keys.get("label", {}).items():
        if names.is_reserved_label(key):
            raise UsageError(
                f"{flag} {key} touches a label reserved for squarepeg", names.RESERVED_LABEL_HINT
            )


def _merge_sysctls(merger: _Merger) -> tuple[tuple[str, str], ...]:
    # One value per sysctl: a --sysctl replaces config's value of the same name.
    given = merger.items("sysctl", security.parse_sysctl)
    given_names = {name for name, _ in given}
    kept = [(n, v) for n, v in merger.conf("sysctl", []) if n not in given_names]
    by_name = dict([*kept, *given])  # the last --sysctl of a name wins, as in docker
    return tuple(by_name.items())


def check_image(image: str) -> None:
    """IMAGE must look like an image reference, not a misplaced flag."""
    if image.startswith("-"):
        raise UsageError(
            f"IMAGE {image!r} starts with '-'",
            "put squarepeg's flags before IMAGE and the container's command after it, "
            "like `kubectl squarepeg run --cpus 1 alpine ls -l`",
        )
    if not image.strip():
        raise UsageError("IMAGE is empty", "give an image reference like alpine:3.19")
    try:
        images.parse_image_reference(image)
    except ValueProblem as problem:
        raise UsageError(f"invalid IMAGE {image!r}", str(problem)) from None


def build_run_options(
    flags: Mapping[str, Any],
    explicit: Collection[str],
    config: Configured,
    *,
    environ: Mapping[str, str],
    read_text: Callable[[str], str],
) -> RunOptions:
    """Merge click's values (`flags`, by parameter name) over `config` and check the result.

    `explicit` holds the parameters whose value came from the command line; only those
    override config and become claims.
    """
    m = _Merger(flags, explicit, config)
    flag_mounts = _flag_mounts(m)
    env = _merge_env(m, read_text, environ)
    labels = _merge_labels(m, read_text)
    _check_reserved_labels(m)
    if m.given("keep"):
        keep = True
    elif m.given("rm"):
        keep = False  # --rm asks for deletion, even over `cleanup: false`
    else:
        keep = not m.conf("cleanup", True)
    options = RunOptions(
        image=str(flags["image"]),
        command=tuple(flags.get("command") or ()),
        name=_flag_value("name", flags["name"], names.validate_name) if m.given("name") else None,
        mode=m.scalar("mode", values.parse_mode, "pod"),
        timeout=float(m.scalar("timeout", quantities.parse_duration_seconds, 300.0)),
        keep=keep,
        quiet=m.switch("quiet"),
        interactive=bool(flags.get("interactive")),
        tty=bool(flags.get("tty")),
        dry_run=bool(flags.get("dry_run")),
        dry_run_server=bool(flags.get("dry_run_server")),
        orphan_sweep=bool(m.conf("orphan_sweep", True)),
        orphan_sweep_min_age=int(m.conf("orphan_sweep_min_age", 300)),
        orphan_sweep_silence=float(m.conf("orphan_sweep_silence", 120.0)),
        job_ttl_seconds_after_finished=int(m.conf("job_ttl_seconds_after_finished", 600)),
        context=m.scalar("context", values.parse_nonempty),
        kubeconfig=m.scalar("kubeconfig", values.parse_nonempty),
        namespace=m.scalar("namespace", names.validate_name),
        config_paths=tuple(flags.get("config") or ()),
        env=env,
        secret_env=_merge_secret_env(m, env, environ),
        secret_env_all=bool(m.conf("secret_env_all", False)),
        labels=labels,
        annotations=m.mapping("annotation", _validate_annotation, values.parse_docker_pair),
        node_selector=m.mapping("node_selector", _validate_label),
        workdir=m.scalar("workdir", values.parse_workdir),
        user=m.scalar("user", security.parse_user),
        entrypoint=m.scalar("entrypoint", values.parse_entrypoint),
        cpus=m.scalar("cpus", quantities.parse_cpus),
        memory=m.scalar("memory", quantities.parse_memory),
        memory_reservation=m.scalar("memory_reservation", quantities.parse_memory),
        gpus=m.scalar("gpus", quantities.parse_gpus),
        pull=m.scalar("pull", images.parse_pull),
        platform=m.scalar("platform", images.parse_platform),
        privileged=m.switch("privileged"),
        read_only=m.switch("read_only"),
        cap_add=m.listing("cap_add", security.parse_capability),
        cap_drop=m.listing("cap_drop", security.parse_capability),
        tmpfs=_merge_tmpfs(m, [t for t in flag_mounts if isinstance(t, Tmpfs)]),
        shm_size=m.scalar("shm_size", quantities.parse_size),
        hostname=m.scalar("hostname", names.validate_hostname),
        add_host=m.listing("add_host", network.parse_add_host),
        dns=m.listing("dns", network.parse_dns_ip),
        dns_search=m.listing("dns_search", network.parse_dns_search),
        dns_options=m.listing("dns_option", network.parse_dns_option),
        group_add=m.listing("group_add", security.parse_group_id),
        sysctls=_merge_sysctls(m),
        stop_timeout=m.scalar("stop_timeout", quantities.parse_nonnegative_int),
        runtime=m.scalar("runtime", names.validate_subdomain),
        service_account=m.scalar("service_account", names.validate_subdomain),
        tolerations=m.listing("toleration", names.parse_toleration),
        image_pull_secrets=m.listing("image_pull_secret", names.validate_subdomain),
        priority_class=m.scalar("priority_class", names.validate_subdomain),
        binds=tuple(b for b in flag_mounts if isinstance(b, BindMount)),
        volume_mounts=tuple(v for v in flag_mounts if isinstance(v, VolumeMount)),
        publish=_published(m),
        files_helper_image=str(m.conf("files_helper_image", filehelpers.DEFAULT_HELPER_IMAGE)),
        max_upload_bytes=int(m.conf("max_upload_bytes", mounts.DEFAULT_MAX_UPLOAD_BYTES)),
        table_values=_table_values(m),
        explicit=frozenset(p for p in explicit if m.given(p)) | {"image"},
        cli_keys={k: dict(v) for k, v in m.cli_keys.items()},
    )
    return options
