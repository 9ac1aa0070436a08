"""Configuration: the layers of configuration.md, loaded, interpolated, validated and merged.

Owns where config files are looked for (built-in defaults, /etc, $XDG_CONFIG_HOME, the
nearest .squarepeg.yaml, used only once trusted (trust.py), $SQUAREPEG_CONFIG, --config),
reading each as one YAML mapping with
the safe loader, `${VAR}` / `${VAR:-default}` / `$$` interpolation of string values, the
validation of every key (with the same parsers as the flags, file:line and a did-you-mean
in every error), the merge of the layers, and where each merged value came from.

Not here: flags (options.py lays them over this), and claims (claims.py decides which
passthrough entries a flag overrides). Where the files are looked for is injectable
(`environ`, `cwd`, `home`, `system`), so tests need no real /etc or home directory.

Decisions the spec left open, also in the README:
- A typed key reads the scalar's source text, not YAML 1.1's reading of it: `user: 1000:50`
  is that user, not the sexagesimal number 60050; `env: {A: on}` sets A to "on".
- In `kubernetes.*`, a plain (unquoted) scalar that contained `${...}` is typed again after
  interpolation, so `terminationGracePeriodSeconds: ${GRACE}` is a number; quote it to keep
  a string. Dates there stay strings, as in kubectl's YAML.
- Relative `env_file` and `kubeconfig` paths are relative to the config file's directory.
- `env: {NAME: null}` (or `- NAME` in list form) takes the local value, like `-e NAME`.
- A list key also takes a single string (`env_file: .env`).
- Duplicate keys in one mapping are an error (YAML libraries differ on which one wins).
- A config file may come from a repository just cloned, so reading one is bounded: at most
  MAX_FILE_BYTES are read, values nest at most MAX_DEPTH deep, and the file holds at most
  MAX_VALUES values and MAX_TEXT_CHARS characters of text once its aliases are expanded
  (each `*alias` counts the whole value it stands for). A file past a limit is one error
  line, within a second, instead of minutes of CPU or gigabytes of memory ("billion
  laughs"). A real config file is a few hundred bytes; the limits are far above that.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kubectl_squarepeg.build import dockerflags, values
from kubectl_squarepeg.build.claims import deep_merge, describe, is_named_list, named_segment
from kubectl_squarepeg.build.values import ValueProblem
from kubectl_squarepeg.config.trust import Store, Verdict, refusal, user_config_dir
from kubectl_squarepeg.errors import ConfigError

SYSTEM_CONFIG = Path("/etc/squarepeg/config.yaml")
PROJECT_FILE = ".squarepeg.yaml"
CONFIG_ENV = "SQUAREPEG_CONFIG"

# The bounds on reading one config file (see the module docstring).
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_VALUES = 100_000
MAX_TEXT_CHARS = 4 << 20

_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"
# YAML's own scalar tags, which the safe loader resolves plain values to; any other tag
# (`!Ref`, `!!python/...`) belongs to some other tool and is an error naming it.
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "timestamp", "binary", "merge", "value")
)
OriginPath = tuple[str, ...]


@dataclass(frozen=True)
class Origin:
    """Where a value came from: a file and line, or the built-in defaults (`path` None)."""

    path: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        if self.path is None:
            return "default"
        return f"{self.path}:{self.line}" if self.line else self.path


DEFAULT = Origin()


@dataclass(frozen=True)
class Patch:
    """One `kubernetes.patches` operation (claims.PatchOp), with where it was written."""

    op: Mapping[str, Any]
    source: str
    line: int
    index: int  # its position in its own file's list

    @property
    def origin(self) -> str:
        return _where(self.source, self.line)


# --- the keys -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Key:
    kind: str  # "scalar", "bool", "map" or "list"
    form: str  # the accepted form, for errors
    parse: Callable[[str], Any] = str


_PAIR_FORM = "a mapping like `KEY: value`, or a list of KEY=VALUE strings"

# Every `run` flag that makes sense as a default, by its long name in snake_case; the
# repeatable flags whose Kubernetes field is plural take that plural (`--label` -> `labels`).
KEYS: dict[str, _Key] = {
    "mode": _Key("scalar", "pod or job", values.parse_mode),
    "timeout": _Key(
        "scalar", "seconds, or a duration like 90s or 5m", values.parse_duration_seconds
    ),
    "namespace": _Key("scalar", "a namespace name like team-a", values.validate_name),
    "context": _Key("scalar", "a kubeconfig context name", values.parse_nonempty),
    "kubeconfig": _Key("scalar", "a file path", values.parse_nonempty),
    "cleanup": _Key("bool", "true or false"),
    "orphan_sweep": _Key("bool", "true or false"),
    "orphan_sweep_min_age": _Key(
        "scalar", "a whole number of seconds", values.parse_nonnegative_int
    ),
    "job_ttl_seconds_after_finished": _Key(
        "scalar", "a whole number of seconds", values.parse_int32
    ),
    "quiet": _Key("bool", "true or false"),
    "env": _Key("map", _PAIR_FORM),
    "env_file": _Key("list", "a file path, or a list of them", values.parse_nonempty),
    "labels": _Key("map", _PAIR_FORM),
    "annotations": _Key("map", _PAIR_FORM),
    "workdir": _Key("scalar", "an absolute path like /app", values.parse_workdir),
    "user": _Key("scalar", "UID or UID:GID, like 1000:1000", values.parse_user),
    "entrypoint": _Key("scalar", "a program, like /bin/sh", values.parse_entrypoint),
    "cpus": _Key("scalar", "a number of CPUs like 0.5", values.parse_cpus),
    "memory": _Key("scalar", "a size like 512m or 1g", values.parse_memory),
    "memory_reservation": _Key("scalar", "a size like 256m", values.parse_memory),
    "gpus": _Key("scalar", "a GPU count like 1", values.parse_gpus),
    "pull": _Key("scalar", "always, missing or never", values.parse_pull),
    "platform": _Key("scalar", "OS[/ARCH[/VARIANT]] like linux/amd64", values.parse_platform),
    "privileged": _Key("bool", "true or false"),
    "cap_add": _Key("list", "a list of capabilities like [NET_ADMIN]", values.parse_capability),
    "cap_drop": _Key("list", "a list of capabilities like [ALL]", values.parse_capability),
    "read_only": _Key("bool", "true or false"),
    "tmpfs": _Key("list", "a list of PATH[:OPTIONS] like /run:size=64m", values.parse_tmpfs),
    "shm_size": _Key("scalar", "a size like 64m", values.parse_size),
    "hostname": _Key("scalar", "a host name like worker-1", values.validate_hostname),
    "add_host": _Key("list", "a list of HOST:IP strings", values.parse_add_host),
    "dns": _Key("list", "a list of IP addresses", values.parse_dns_ip),
    "dns_search": _Key("list", "a list of domains", values.parse_dns_search),
    "dns_options": _Key(
        "list", "a list of resolv.conf options like [ndots:2]", values.parse_dns_option
    ),
    "group_add": _Key("list", "a list of numeric group IDs like [1000]", values.parse_group_id),
    "sysctls": _Key(
        "list", "a list of KEY=VALUE strings like [net.ipv4.ip_forward=1]", values.parse_sysctl
    ),
    "stop_timeout": _Key("scalar", "a whole number of seconds", values.parse_nonnegative_int),
    "runtime": _Key("scalar", "a RuntimeClass name", values.validate_subdomain),
    "service_account": _Key("scalar", "a service account name", values.validate_subdomain),
    "node_selector": _Key("map", _PAIR_FORM),
    "tolerations": _Key("list", "a list of KEY[=VALUE]:EFFECT strings", values.parse_toleration),
    "image_pull_secrets": _Key("list", "a list of secret names", values.validate_subdomain),
    "priority_class": _Key("scalar", "a PriorityClass name", values.validate_subdomain),
}
KUBERNETES_KEYS = ("metadata", "spec", "patches")
_PATH_KEYS = ("env_file", "kubeconfig")
ALL_KEYS = (*KEYS, "kubernetes")

DEFAULTS: dict[str, Any] = {
    "mode": "pod",
    "timeout": 300.0,
    "cleanup": True,
    "orphan_sweep": True,
    "orphan_sweep_min_age": 300,
    "job_ttl_seconds_after_finished": 600,
}
_DEFAULT_DISPLAY = {**DEFAULTS, "timeout": 300}

# Keys people try that are not keys, and what to do instead.
_NOT_KEYS = {
    "keep": "use `cleanup: false` to keep resources",
    "name": "a fixed name would make two runs collide; pass --name on the command line",
    "rm": "deleting is already the default; `cleanup: false` keeps resources",
    "image": "the image is the first argument of `run`",
    "command": "the command follows IMAGE on the command line; `entrypoint` is a key",
    "dry_run": "pass --dry-run on the command line",
    "config": "list more files in $SQUAREPEG_CONFIG or with --config",
}

_PATCH_OPS = ("add", "remove", "replace", "move", "copy", "test")
_PATCH_MEMBERS = ("op", "path", "value", "from")


# --- interpolation ----------------------------------------------------------------------

_DOLLAR = re.compile(r"\$(\$|\{[^}]*\}|\{)")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Unset(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class _BadReference(Exception):
    pass


def interpolate(text: str, environ: Mapping[str, str]) -> str:
    """`${VAR}`, `${VAR:-default}` and `$$`; the result is not interpolated again.

    A `$` followed by anything else is kept as it is. Raises `_Unset` for an unset VAR
    without a default and `_BadReference` for a `${...}` that is not one of these forms.
    """

    def substitute(match: re.Match[str]) -> str:
        body = match[1]
        if body == "$":
            return "$"
        if body == "{":
            raise _BadReference("${ without a closing }")
        name, has_default, default = body[1:-1].partition(":-")
        if not _VARIABLE.fullmatch(name):
            raise _BadReference(f"${body}")
        value = environ.get(name)
        if has_default:
            return value if value else default
        if value is None:
            raise _Unset(name)
        return value

    return _DOLLAR.sub(substitute, text)


# --- reading one file ----------------------------------------------------------------------


@dataclass
class _Node:
    """A YAML value with its line: a dict of nodes, a list of nodes, or a scalar."""

    value: Any
    line: int
    text: str | None = None  # a scalar's source text, after interpolation
    key_line: int | None = None  # the line of its key, when it is a mapping's value

    @property
    def at(self) -> int:
        """The line that names this value: its key's, or its own in a list."""
        return self.key_line or self.line

    def is_null(self) -> bool:
        return self.text is not None and self.value is None

    def is_scalar(self) -> bool:
        return self.text is not None

    def plain(self) -> Any:
        if isinstance(self.value, dict):
            return {k: v.plain() for k, v in self.value.items()}
        if isinstance(self.value, list):
            return [v.plain() for v in self.value]
        return self.value


def _where(source: str, line: int) -> str:
    return f"{source}:{line}"


class _Reader:
    """Turns one file's YAML into `_Node`s: interpolated, keys as written, line numbers."""

    def __init__(self, source: str, environ: Mapping[str, str]) -> None:
        self.source = source
        self.environ = environ
        self._loader: Any = None
        self._yaml: Any = None
        self._active: set[int] = set()
        self._values = 0  # values met so far, each alias's counted again
        self._chars = 0  # characters of scalar text met so far, likewise
        self._depth = 0
        self._merged: dict[int, list[tuple[Any, Any]]] = {}  # a mapping's pairs, by node id

    def read(self, data: bytes | str) -> _Node | None:
        # Imported here: a run with no config file never needs PyYAML (bench-dry-run).
        import yaml

        self._yaml = yaml
        self._loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(data)
        try:
            try:
                root = self._loader.get_single_node()
                return None if root is None else self._node(root)
            except yaml.MarkedYAMLError as exc:
                mark = exc.problem_mark or exc.context_mark
                line = mark.line + 1 if mark is not None else 1
                if exc.context == "expected a single document in the stream":
                    raise ConfigError(
                        f"{self.source} holds more than one YAML document (another starts at "
                        f"{_where(self.source, line)})",
                        "a config file is one mapping: remove that `---` line and merge the "
                        "documents (configuration layers are separate files)",
                    ) from None
                raise ConfigError(
                    f"invalid YAML: {exc.problem or exc.context} ({_where(self.source, line)})",
                    "fix the syntax there (indentation, a missing ':' or an unclosed quote "
                    "are the usual causes)",
                ) from None
            except yaml.YAMLError as exc:
                raise ConfigError(
                    f"cannot read {self.source}: {' '.join(str(exc).split())}",
                    "save it as UTF-8 YAML text",
                ) from None
            except RecursionError:  # the pure-Python composer, on nesting past MAX_DEPTH
                raise self._too_deep(1) from None
        finally:
            self._loader.dispose()

    def _too_deep(self, line: int) -> ConfigError:
        return ConfigError(
            f"values nest more than {MAX_DEPTH} levels deep ({_where(self.source, line)})",
            "a config file holds a few settings; write them with less nesting",
        )

    def _count(self, node: Any, line: int) -> None:
        """Count one value (and its text) against the file's bounds."""
        self._values += 1
        if isinstance(node, self._yaml.ScalarNode):
            self._chars += len(node.value)
        if self._values > MAX_VALUES or self._chars > MAX_TEXT_CHARS:
            what = (
                f"more than {MAX_VALUES} values"
                if self._values > MAX_VALUES
                else f"more than {MAX_TEXT_CHARS >> 20} MiB of text"
            )
            raise ConfigError(
                f"the file holds {what} once its YAML aliases are expanded "
                f"({_where(self.source, line)})",
                "a config file holds a few settings; write them out instead of aliases of aliases",
            )

    def _node(self, node: Any) -> _Node:
        line = node.start_mark.line + 1
        if id(node) in self._active:
            raise ConfigError(
                f"a YAML alias refers to itself ({_where(self.source, line)})",
                "write the value out instead of using a recursive alias",
            )
        self._count(node, line)
        if isinstance(node, self._yaml.ScalarNode):
            return self._scalar(node, line)
        if self._depth >= MAX_DEPTH:
            raise self._too_deep(line)
        if node.tag not in (_SEQ_TAG, _MAP_TAG):  # e.g. !!python/object/apply
            raise self._tag_refused(node.tag, line)
        self._active.add(id(node))
        self._depth += 1
        try:
            if isinstance(node, self._yaml.SequenceNode):
                return _Node([self._node(item) for item in node.value], line)
            return _Node(self._mapping(node), line)
        finally:
            self._depth -= 1
            self._active.discard(id(node))

    def _tag_refused(self, tag: str, line: int) -> ConfigError:
        shown = tag.replace("tag:yaml.org,2002:", "!!")
        return ConfigError(
            f"the YAML tag {shown} is not allowed in a config file ({_where(self.source, line)})",
            "remove the tag: squarepeg reads plain mappings, lists and values (a custom tag "
            "like !Ref belongs to another tool's files)",
        )

    def _mapping(self, node: Any) -> dict[str, _Node]:
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            if not isinstance(key_node, self._yaml.ScalarNode):
                raise ConfigError(
                    "a mapping key must be a plain word "
                    f"({_where(self.source, key_node.start_mark.line + 1)})",
                    "write keys as `name: value`",
                )
            key_line = key_node.start_mark.line + 1
            if key_node.value in seen:
                raise ConfigError(
                    f"duplicate key {key_node.value!r} ({_where(self.source, key_line)}, "
                    f"first at line {seen[key_node.value]})",
                    "keep one of them",
                )
            seen[key_node.value] = key_line
        result: dict[str, _Node] = {}
        for key_node, value_node in self._pairs(node):
            # Keys stay as written: `on:` is the key "on", never the boolean.
            child = self._node(value_node)
            child.key_line = key_node.start_mark.line + 1
            result[str(key_node.value)] = child
        return result

    def _construct(self, node: Any) -> Any:
        """A typed scalar's value; its text when Python cannot hold it (an int of more than
        4,300 digits), for the key's own parser to refuse."""
        try:
            return self._loader.construct_object(node)
        except ValueError:
            return node.value

    def _pairs(self, node: Any) -> list[tuple[Any, Any]]:
        """A mapping's pairs with its `<<` merge keys resolved as YAML's merge type says:
        its own keys win over merged ones, and an earlier merged mapping over a later one.

        Not PyYAML's flatten_mapping: that one copies every merged pair into the mapping,
        so mappings that merge mappings that merge mappings grow exponentially before a
        single value can be counted. Here each key is kept once, and each mapping's pairs
        are worked out once (`self._merged`), so the work is bounded by the file's size.
        """
        known = self._merged.get(id(node))
        if known is not None:
            return known
        sources: list[Any] = []
        own: list[tuple[Any, Any]] = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                own.append((key_node, value_node))
                continue
            items = (
                value_node.value
                if isinstance(value_node, self._yaml.SequenceNode)
                else [value_node]
            )
            if not all(isinstance(item, self._yaml.MappingNode) for item in items):
                raise ConfigError(
                    "a YAML merge key (<<) takes a mapping or a list of mappings "
                    f"({_where(self.source, key_node.start_mark.line + 1)})",
                    "write `<<: *anchor` where the anchor names a mapping",
                )
            sources.extend(items)
        pairs: dict[Any, tuple[Any, Any]] = {}
        self._active.add(id(node))
        self._depth += 1
        try:
            for source in sources:
                if id(source) in self._active:
                    raise ConfigError(
                        "a YAML merge key (<<) refers to its own mapping "
                        f"({_where(self.source, source.start_mark.line + 1)})",
                        "write the keys out instead of merging",
                    )
                if self._depth >= MAX_DEPTH:
                    raise self._too_deep(source.start_mark.line + 1)
                for key_node, value_node in self._pairs(source):
                    self._count(key_node, key_node.start_mark.line + 1)
                    pairs.setdefault(self._key_of(key_node), (key_node, value_node))
        finally:
            self._depth -= 1
            self._active.discard(id(node))
        for key_node, value_node in own:
            pairs[self._key_of(key_node)] = (key_node, value_node)
        self._merged[id(node)] = result = list(pairs.values())
        return result

    def _key_of(self, key_node: Any) -> str:
        if not isinstance(key_node, self._yaml.ScalarNode):
            raise ConfigError(
                "a mapping key must be a plain word "
                f"({_where(self.source, key_node.start_mark.line + 1)})",
                "write keys as `name: value`",
            )
        return str(key_node.value)

    def _scalar(self, node: Any, line: int) -> _Node:
        if node.tag not in _SCALAR_TAGS:
            raise self._tag_refused(node.tag, line)
        if node.tag != _STR_TAG:
            value = self._construct(node)
            if not isinstance(value, (int, float, bool, type(None))):
                value = node.value  # dates, binary: kept as the text, as kubectl's YAML does
            return _Node(value, line, node.value)
        try:
            text = interpolate(node.value, self.environ)
        except _Unset as unset:
            raise ConfigError(
                f"${{{unset.name}}} is not set ({_where(self.source, line)})",
                f"set {unset.name}, or give a default: ${{{unset.name}:-value}}",
            ) from None
        except _BadReference as bad:
            raise ConfigError(
                f"cannot interpolate {bad} ({_where(self.source, line)})",
                "write ${VAR} or ${VAR:-default}, and $$ for a literal $",
            ) from None
        if node.style in (None, "") and text != node.value:
            # A plain scalar that held ${...} is typed again, as if its value had been
            # written there (see the module docstring).
            scalar_node = self._yaml.ScalarNode
            tag = self._loader.resolve(scalar_node, text, (True, False))
            retyped = self._construct(scalar_node(tag, text))
            if isinstance(retyped, (int, float, bool, type(None))) and tag != _NULL_TAG:
                return _Node(retyped, line, text)
        return _Node(text, line, text)


# --- validating one file -------------------------------------------------------------------


@dataclass
class _Layer:
    """One file's keys, validated: parsed values, their display form, and their lines."""

    source: str
    parsed: dict[str, Any] = field(default_factory=dict)  # None: reset to the default
    display: dict[str, Any] = field(default_factory=dict)
    lines: dict[OriginPath, int] = field(default_factory=dict)
    kubernetes: dict[str, Any] = field(default_factory=dict)  # metadata/spec/patches or None


def _canonical(items: list[Any], index: int) -> str:
    return named_segment(items[index]["name"]) if is_named_list(items) else str(index)


def _record_lines(lines: dict[OriginPath, int], node: _Node, path: OriginPath) -> None:
    lines[path] = node.at
    if isinstance(node.value, dict):
        for key, child in node.value.items():
            _record_lines(lines, child, (*path, key))
    elif isinstance(node.value, list):
        plain = [child.plain() for child in node.value]
        for index, child in enumerate(node.value):
            _record_lines(lines, child, (*path, _canonical(plain, index)))


def _display_scalar(node: _Node) -> Any:
    # The value as written; for a number or switch whose YAML reading differs from its
    # text (1000:50, 0755, 1.10), the text, which is what squarepeg reads.
    if isinstance(node.value, bool):
        return node.value
    if isinstance(node.value, (int, float)) and str(node.value) == node.text:
        return node.value
    return node.text


class _Validator:
    """Checks one file's top-level mapping against KEYS, into a `_Layer`."""

    def __init__(self, source: str, environ: Mapping[str, str]) -> None:
        self.source = source
        self.environ = environ
        self.layer = _Layer(source)
        self.base = Path(source).parent

    def where(self, node: _Node) -> str:
        return _where(self.source, node.at)

    def problem(self, what: str, node: _Node, hint: str) -> ConfigError:
        return ConfigError(f"{what} ({self.where(node)})", hint)

    def validate(self, root: _Node | None) -> _Layer:
        if root is None:
            return self.layer
        if not isinstance(root.value, dict):
            raise self.problem(
                "a config file must be a YAML mapping", root, "write keys like `cpus: 0.5`"
            )
        for key, node in root.value.items():
            if key == "kubernetes":
                self.kubernetes(node)
                continue
            spec = KEYS.get(key)
            if spec is None:
                raise self.problem(f"unknown config key {key!r}", node, _suggest(key))
            self.layer.lines[(key,)] = node.at
            if node.is_null():
                self.layer.parsed[key] = self.layer.display[key] = None
                continue
            check: Callable[[str, _Key, _Node], tuple[Any, Any]] = getattr(
                self, "check_" + spec.kind
            )
            parsed, display = check(key, spec, node)
            self.layer.parsed[key], self.layer.display[key] = parsed, display
        return self.layer

    def check_scalar(self, key: str, spec: _Key, node: _Node) -> tuple[Any, Any]:
        if not node.is_scalar():
            raise self.problem(f"{key} takes a single value", node, f"give {spec.form}")
        assert node.text is not None
        return self.parse(key, spec, node, node.text), _display_scalar(node)

    def check_bool(self, key: str, spec: _Key, node: _Node) -> tuple[Any, Any]:
        if isinstance(node.value, bool):
            return node.value, node.value
        try:
            if not node.is_scalar():
                raise ValueProblem("use true or false")
            assert node.text is not None
            parsed = values.parse_bool(node.text)
        except ValueProblem:
            shown = node.text if node.is_scalar() else "a " + type(node.value).__name__
            raise self.problem(
                f"invalid value {shown!r} for {key}", node, "use true or false"
            ) from None
        return parsed, parsed

    def parse(self, key: str, spec: _Key, node: _Node, text: str) -> Any:
        try:
            parsed = spec.parse(text)
        except ValueProblem as problem:
            raise self.problem(
                f"invalid value {values.quoted(text)} for {key}", node, str(problem)
            ) from None
        if key in _PATH_KEYS:
            # A relative path in a config file is relative to that file (as in compose).
            expanded = os.path.expanduser(parsed)
            return expanded if os.path.isabs(expanded) else str(self.base / expanded)
        return parsed

    def check_list(self, key: str, spec: _Key, node: _Node) -> tuple[Any, Any]:
        items = node.value if isinstance(node.value, list) else [node] if node.is_scalar() else None
        if items is None:
            raise self.problem(f"{key} takes a list", node, f"give {spec.form}")
        parsed, display = [], []
        for item in items:
            if not item.is_scalar() or item.is_null():
                raise self.problem(
                    f"an item of {key} must be a single value", item, f"give {spec.form}"
                )
            assert item.text is not None
            parsed.append(self.parse(key, spec, item, item.text))
            display.append(_display_scalar(item))
        _record_lines(self.layer.lines, node, (key,))
        return parsed, display

    def check_map(self, key: str, spec: _Key, node: _Node) -> tuple[Any, Any]:
        pairs: list[tuple[str, str | None, _Node]] = []
        if isinstance(node.value, dict):
            for name, child in node.value.items():
                if not child.is_scalar():
                    raise self.problem(
                        f"{key}.{name} must be a single value", child, f"give {spec.form}"
                    )
                pairs.append((name, None if child.is_null() else child.text, child))
        elif isinstance(node.value, list):
            for child in node.value:
                if not child.is_scalar() or child.is_null():
                    raise self.problem(
                        f"an item of {key} must be a KEY=VALUE string", child, f"give {spec.form}"
                    )
                assert child.text is not None
                name, equals, text = child.text.partition("=")
                pairs.append((name, text if equals else None, child))
        else:
            raise self.problem(f"{key} takes a mapping", node, f"give {spec.form}")
        parsed: dict[str, str] = {}
        for name, text, child in pairs:
            value = self.pair(key, name, text, child)
            if value is not None:
                parsed[name] = value
                self.layer.lines[(key, name)] = child.at
        return parsed, dict(parsed)

    def pair(self, key: str, name: str, text: str | None, node: _Node) -> str | None:
        shown = name if text is None else f"{name}={text}"
        try:
            if key == "env":
                item = values.parse_env_item(shown, self.environ)
                return None if item is None else item[1]
            if text is None:
                raise ValueProblem("give a value (an empty one is '')")
            if key == "annotations":
                values.validate_annotation_key(name)
            else:
                values.validate_label_key(name)
                values.validate_label_value(text)
        except ValueProblem as problem:
            raise self.problem(f"invalid {key} entry {shown!r}", node, str(problem)) from None
        if key == "labels" and values.is_reserved_label(name):
            raise self.problem(
                f"the label {name!r} is reserved for squarepeg", node, values.RESERVED_LABEL_HINT
            )
        return text

    def kubernetes(self, node: _Node) -> None:
        self.layer.lines[("kubernetes",)] = node.at
        if node.is_null():
            self.layer.kubernetes = dict.fromkeys(KUBERNETES_KEYS)
            return
        if not isinstance(node.value, dict):
            raise self.problem(
                "kubernetes must be a mapping", node, "give `metadata:`, `spec:` and/or `patches:`"
            )
        for key, child in node.value.items():
            if key not in KUBERNETES_KEYS:
                raise self.problem(
                    f"unknown config key 'kubernetes.{key}'",
                    child,
                    _suggest(key, KUBERNETES_KEYS, "kubernetes takes metadata, spec and patches"),
                )
            path = ("kubernetes", key)
            if child.is_null():
                self.layer.kubernetes[key] = None
                self.layer.lines[path] = child.at
            elif key == "patches":
                self.layer.kubernetes[key] = self.patches(child)
                _record_lines(self.layer.lines, child, path)
            elif isinstance(child.value, dict):
                self.layer.kubernetes[key] = child.plain()
                _record_lines(self.layer.lines, child, path)
            else:
                raise self.problem(
                    f"kubernetes.{key} must be a mapping",
                    child,
                    f"write it as the Pod's {key}, like `{key}: {{...}}`",
                )

    def patches(self, node: _Node) -> list[Patch]:
        if not isinstance(node.value, list):
            raise self.problem(
                "kubernetes.patches must be a list of operations",
                node,
                "write `- {op: add, path: /spec/..., value: ...}` items (RFC 6902)",
            )
        patches = []
        for index, item in enumerate(node.value):
            patches.append(Patch(self.patch_op(index, item), self.source, item.at, index))
        return patches

    def patch_op(self, index: int, item: _Node) -> dict[str, Any]:
        name = f"kubernetes.patches[{index}]"
        form = "an RFC 6902 operation like {op: add, path: /spec/hostname, value: box}"
        if not isinstance(item.value, dict):
            raise self.problem(f"{name} must be a mapping", item, f"write {form}")
        op: dict[str, Any] = item.plain()
        for member in op:
            if member not in _PATCH_MEMBERS:
                raise self.problem(
                    f"{name} has an unknown member {member!r}",
                    item.value[member],
                    _suggest(member, _PATCH_MEMBERS, f"write {form}"),
                )
        if op.get("op") not in _PATCH_OPS:
            raise self.problem(
                f"{name} has op {op.get('op')!r}", item, f"use one of {', '.join(_PATCH_OPS)}"
            )
        needs = {
            "add": "value",
            "replace": "value",
            "test": "value",
            "move": "from",
            "copy": "from",
        }
        for needed in ("path", needs.get(op["op"])):
            if needed is not None and needed not in op:
                raise self.problem(f"{name} ({op['op']}) needs {needed!r}", item, f"write {form}")
        for member in ("path", "from"):
            pointer = op.get(member)
            if member in op and not (
                isinstance(pointer, str) and (pointer == "" or pointer.startswith("/"))
            ):
                raise self.problem(
                    f"{name} has {member} {pointer!r}",
                    item.value[member],
                    "give a JSON pointer like /spec/containers/0/env/- (~1 stands for / in a key)",
                )
        return op


def _suggest(key: str, known: Iterable[str] = ALL_KEYS, fallback: str | None = None) -> str:
    if key in _NOT_KEYS:
        return _NOT_KEYS[key]
    refused = dockerflags.BY_NAME.get("--" + key.replace("_", "-"))
    if known is ALL_KEYS and refused is not None and refused.status == "refused":
        # A docker flag squarepeg refuses gets the same answer as on the command line.
        return f"docker's {'/'.join(refused.names)} is refused: {refused.meaning}; {refused.note}"
    candidates = list(known)
    import difflib  # only for the error path

    match = difflib.get_close_matches(key.replace("-", "_").lower(), candidates, n=1, cutoff=0.6)
    if match:
        return f"did you mean {match[0]!r}?"
    return fallback or (
        "remove it; the keys are the long names of `run` flags in snake_case "
        "(`kubectl squarepeg config view` shows the merged ones)"
    )


def parse_file(data: bytes | str, source: str, environ: Mapping[str, str]) -> _Layer:
    """Read and validate one config file's contents (`source` names it in messages)."""
    root = _Reader(source, environ).read(data)
    return _Validator(source, environ).validate(root)


# --- merging the layers --------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """The merged configuration of every layer."""

    values: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULTS))
    origins: Mapping[str, Origin] = field(default_factory=dict)  # top-level key -> origin
    metadata: Mapping[str, Any] = field(default_factory=dict)
    spec: Mapping[str, Any] = field(default_factory=dict)
    patches: tuple[Patch, ...] = ()
    display: Mapping[str, Any] = field(default_factory=lambda: dict(_DEFAULT_DISPLAY))
    tree_origins: Mapping[OriginPath, Origin] = field(default_factory=dict)
    files: tuple[str, ...] = ()  # the files that were read, lowest layer first
    # Every config file found, used or not, lowest layer first (for `config view`).
    found: tuple[FoundFile, ...] = ()

    def _under(self, prefix: OriginPath) -> dict[OriginPath, Origin]:
        return {
            p[len(prefix) :]: o for p, o in self.tree_origins.items() if p[: len(prefix)] == prefix
        }

    @property
    def metadata_origins(self) -> dict[OriginPath, Origin]:
        """Origins inside kubernetes.metadata, by path (keys and `[name=X]`)."""
        return self._under(("kubernetes", "metadata"))

    @property
    def spec_origins(self) -> dict[OriginPath, Origin]:
        """Origins inside kubernetes.spec, by path (keys and `[name=X]`)."""
        return self._under(("kubernetes", "spec"))

    def origin_of(self, *path: str) -> Origin | None:
        """The origin of a value, or of its nearest ancestor that has one."""
        for end in range(len(path), 0, -1):
            origin = self.tree_origins.get(tuple(path[:end]))
            if origin is not None:
                return origin
        return None


def _drop_under(origins: dict[OriginPath, Origin], prefix: OriginPath) -> None:
    for path in [p for p in origins if p[: len(prefix)] == prefix]:
        del origins[path]


def _add_from(origins: dict[OriginPath, Origin], layer: _Layer, prefix: OriginPath) -> None:
    for path, line in layer.lines.items():
        if path[: len(prefix)] == prefix:
            origins[path] = Origin(layer.source, line)


def _overlay_origins(
    origins: dict[OriginPath, Origin], layer: _Layer, base: Any, overlay: Any, path: OriginPath
) -> None:
    """Origins after `overlay` (from `layer`) is deep-merged over `base` at `path`."""
    if isinstance(base, Mapping) and isinstance(overlay, Mapping):
        origins[path] = Origin(layer.source, layer.lines.get(path))
        for key, value in overlay.items():
            _overlay_origins(origins, layer, base.get(key), value, (*path, key))
    elif is_named_list(base) and is_named_list(overlay):
        origins[path] = Origin(layer.source, layer.lines.get(path))
        by_name = {item["name"]: item for item in base}
        for item in overlay:
            segment = named_segment(item["name"])
            _overlay_origins(origins, layer, by_name.get(item["name"]), item, (*path, segment))
    else:
        _drop_under(origins, path)
        _add_from(origins, layer, path)


def merge(layers: Sequence[_Layer]) -> Config:
    """Lay the layers over the built-in defaults, lowest first (configuration.md, Merge)."""
    parsed: dict[str, Any] = dict(DEFAULTS)
    display: dict[str, Any] = dict(_DEFAULT_DISPLAY)
    key_origins: dict[str, Origin] = dict.fromkeys(DEFAULTS, DEFAULT)
    origins: dict[OriginPath, Origin] = {(key,): DEFAULT for key in DEFAULTS}
    origins[("kubernetes",)] = DEFAULT
    origins.update({("kubernetes", key): DEFAULT for key in KUBERNETES_KEYS})
    passthrough: dict[str, Any] = {"metadata": {}, "spec": {}}
    patches: list[Patch] = []
    for layer in layers:
        for key, value in layer.parsed.items():
            if KEYS[key].kind != "map" or value is None:  # mappings merge, all else replaces
                _drop_under(origins, (key,))
            if value is None:  # null: back to the built-in default
                parsed.pop(key, None)
                display.pop(key, None)
                key_origins.pop(key, None)
                if key in DEFAULTS:
                    parsed[key], display[key] = DEFAULTS[key], _DEFAULT_DISPLAY[key]
                    key_origins[key] = origins[(key,)] = DEFAULT
                continue
            if KEYS[key].kind == "map":
                parsed[key] = {**parsed.get(key, {}), **value}
                display[key] = {**display.get(key, {}), **layer.display[key]}
            else:
                parsed[key], display[key] = value, layer.display[key]
            key_origins[key] = Origin(layer.source, layer.lines[(key,)])
            _add_from(origins, layer, (key,))
        for key, value in layer.kubernetes.items():
            path = ("kubernetes", key)
            if value is None:  # null: back to empty
                if key == "patches":
                    patches.clear()
                else:
                    passthrough[key] = {}
                _drop_under(origins, path)
                origins[path] = DEFAULT
            elif key == "patches":  # concatenated; each operation's origin is set below
                patches.extend(value)
                origins[path] = Origin(layer.source, layer.lines[path])
            else:
                _overlay_origins(origins, layer, passthrough[key], value, path)
                passthrough[key] = deep_merge(passthrough[key], value)
        if ("kubernetes",) in layer.lines:
            origin = Origin(layer.source, layer.lines[("kubernetes",)])
            key_origins["kubernetes"] = origins[("kubernetes",)] = origin
    order = {key: i for i, key in enumerate(ALL_KEYS)}
    display = dict(sorted(display.items(), key=lambda item: order[item[0]]))
    kubernetes = {
        "metadata": passthrough["metadata"],
        "spec": passthrough["spec"],
        "patches": [dict(p.op) for p in patches],
    }
    display["kubernetes"] = kubernetes
    # Patches are shown as one list; the origin of each operation is where it was written.
    for position, patch in enumerate(patches):
        origins[("kubernetes", "patches", str(position))] = Origin(patch.source, patch.line)
    return Config(
        values=parsed,
        origins=key_origins,
        metadata=passthrough["metadata"],
        spec=passthrough["spec"],
        patches=tuple(patches),
        display=display,
        tree_origins=origins,
        files=tuple(layer.source for layer in layers),
    )


# --- the files -----------------------------------------------------------------------------

PROJECT = "project"  # Source.why of the one layer that needs trust (trust.py)


@dataclass(frozen=True)
class Source:
    """A config file to read, and whether its absence is an error."""

    path: str
    required: bool
    why: str  # how it was named, for the error when it is missing


@dataclass(frozen=True)
class FoundFile:
    """A config file that exists, its layer, and (project files only) its trust."""

    path: str
    why: str
    verdict: Verdict | None = None  # None: a layer that needs no trust

    @property
    def used(self) -> bool:
        return self.verdict in (None, Verdict.TRUSTED)

    def describe(self) -> str:
        """`PATH (user)`, `PATH (project, trusted)`, `PATH (project, not trusted: not used)`."""
        if self.verdict is None:
            return f"{self.path} ({self.why})"
        if self.used:
            return f"{self.path} ({self.why}, {self.verdict.value})"
        return f"{self.path} ({self.why}, {self.verdict.value}: not used)"


def sources(
    *,
    explicit: Sequence[str] = (),
    environ: Mapping[str, str],
    cwd: Path,
    home: Path,
    system: Path = SYSTEM_CONFIG,
) -> list[Source]:
    """The layers' files, lowest precedence first (configuration.md, Layers)."""
    found = [Source(str(system), False, "system")]
    user_dir = user_config_dir(environ, home)
    found.append(Source(str(user_dir / "config.yaml"), False, "user"))
    project = find_project_file(cwd)
    if project is not None:
        found.append(Source(str(project), False, PROJECT))
    for entry in environ.get(CONFIG_ENV, "").split(os.pathsep):
        if entry:
            found.append(Source(entry, True, f"${CONFIG_ENV}"))
    found += [Source(path, True, "--config") for path in explicit]
    # A file named twice is read once, at its highest place (its patches apply once).
    keyed = [(os.path.realpath(s.path), s) for s in found]
    return [s for i, (real, s) in enumerate(keyed) if all(real != r for r, _ in keyed[i + 1 :])]


def find_project_file(cwd: Path) -> Path | None:
    """The nearest `.squarepeg.yaml` in `cwd` or a directory above it."""
    for directory in (cwd, *cwd.parents):
        candidate = directory / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def read_source(source: Source) -> bytes | None:
    """The file's bytes; None for an optional file that does not exist."""
    try:
        with open(source.path, "rb") as handle:
            # One byte past the limit tells a file at the limit from a larger one, without
            # reading all of a huge file (or of an endless one, like /dev/zero).
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        if not source.required:
            return None
        hint = (
            f"fix or unset {CONFIG_ENV}"
            if source.why.startswith("$")
            else "check the path, or leave out that --config"
        )
        raise ConfigError(
            f"config file {source.path} does not exist (from {source.why})", hint
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read config file {source.path}: {exc.strerror}",
            "make it a readable file, or remove it",
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(
            f"config file {source.path} is larger than {MAX_FILE_BYTES >> 20} MiB "
            f"(from {source.why})",
            "a config file holds a few settings; point at the right file",
        )
    return data


def read_key_value_file_text(path: str) -> str:
    """An env or label file's text (the `read_text` of options.build_run_options): UTF-8,
    at most MAX_FILE_BYTES, read no further than that (`--env-file /dev/zero` ends at once).
    Raises OSError, UnicodeDecodeError, or ValueProblem for a file past the limit."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueProblem(
            f"it is larger than {MAX_FILE_BYTES >> 20} MiB; an env or label file holds "
            "KEY=VALUE lines, point at the right file"
        )
    return data.decode("utf-8")


def _home_directory() -> Path:
    """The user's home: $HOME, or the password database's when $HOME cannot be used (it is
    `~`, say: pathlib then raises instead of answering)."""
    try:
        return Path.home()
    except RuntimeError:
        import pwd

        try:
            return Path(pwd.getpwuid(os.getuid()).pw_dir)
        except KeyError:
            return Path("/nonexistent")


def load(
    *,
    explicit: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    system: Path = SYSTEM_CONFIG,
    skip_untrusted: bool = False,
) -> Config:
    """Every layer, read, interpolated, validated and merged.

    A project file that is not trusted (trust.py), or changed since, is a ConfigError naming
    it and `config trust`; with `skip_untrusted` (for `config view`) it is left out instead
    and listed in `Config.found` with its verdict.
    """
    environ = os.environ if environ is None else environ
    home = home or _home_directory()
    layers = []
    found: list[FoundFile] = []
    for source in sources(
        explicit=explicit,
        environ=environ,
        cwd=cwd or Path.cwd(),
        home=home,
        system=system,
    ):
        data = read_source(source)
        if data is None:
            continue
        verdict = None
        if source.why == PROJECT:
            verdict = Store.load(user_config_dir(environ, home)).verdict(source.path, data)
            if verdict is not Verdict.TRUSTED and not skip_untrusted:
                raise refusal(source.path, verdict)
        found.append(FoundFile(source.path, source.why, verdict))
        if found[-1].used:
            layers.append(parse_file(data, source.path, environ))
    return replace(merge(layers), found=tuple(found))


def from_texts(texts: Iterable[tuple[str, str]], environ: Mapping[str, str]) -> Config:
    """A Config from (name, YAML text) pairs, lowest first, as if they were files."""
    pairs = list(texts)
    merged = merge([parse_file(text, name, environ) for name, text in pairs])
    return replace(merged, found=tuple(FoundFile(name, "text") for name, _ in pairs))


def entry_name(path: OriginPath) -> str:
    """A path as a config entry: kubernetes.spec.containers[name=main].image"""
    return describe(path[0], path[1:]) if path else ""


# --- config view ---------------------------------------------------------------------------


def view_text(config: Config, *, show_origin: bool = False) -> str:
    """`config view`: the merged configuration as YAML, after comment lines naming every
    config file found (with a project file's trust); with `show_origin`, each value's origin
    (FILE:LINE, or default) as a comment at the end of its line."""
    from kubectl_squarepeg.build import yamlout

    def comment(path: OriginPath) -> str:
        return str(config.origin_of(*path) or DEFAULT)

    header = "".join(
        f"# {line}\n"
        for line in (
            "config files, lowest precedence first:" if config.found else "no config files",
            *(f"  {found.describe()}" for found in config.found),
        )
    )
    return header + yamlout.dump(
        config.display,
        comment=comment if show_origin else None,
        segment=lambda items, index: _canonical(list(items), index),
    )
