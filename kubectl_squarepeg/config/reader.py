"""Reading one config file's YAML into line-numbered nodes, bounded and interpolated.

A config file may come from a repository just cloned, so reading one is bounded: at most
MAX_FILE_BYTES are read, values nest at most MAX_DEPTH deep, and the file holds at most
MAX_VALUES values and MAX_TEXT_CHARS characters of text once its aliases are expanded (each
`*alias` counts the whole value it stands for). A file past a limit is one error line, within
a second, instead of minutes of CPU or gigabytes of memory ("billion laughs"). A real config
file is a few hundred bytes; the limits are far above that.

Decisions the spec left open (also in docs/decisions/):
- A typed key reads the scalar's source text, not YAML 1.1's reading of it: `user: 1000:50`
  is that user, not the sexagesimal number 60050; `env: {A: on}` sets A to "on".
- In `kubernetes.*`, a plain (unquoted) scalar that contained `${...}` is typed again after
  interpolation, so `terminationGracePeriodSeconds: ${GRACE}` is a number; quote it to keep
  a string. Dates there stay strings, as in kubectl's YAML.
- Duplicate keys in one mapping are an error (YAML libraries differ on which one wins).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_squarepeg.config.interpolate import BadReference, Unset, interpolate
from kubectl_squarepeg.errors import ConfigError

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


@dataclass
class Node:
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


def file_line(source: str, line: int) -> str:
    return f"{source}:{line}"


class Reader:
    """Turns one file's YAML into `Node`s: interpolated, keys as written, line numbers."""

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

    def read(self, data: bytes | str) -> Node | None:
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
                        f"{file_line(self.source, line)})",
                        "a config file is one mapping: remove that `---` line and merge the "
                        "documents (configuration layers are separate files)",
                    ) from None
                raise ConfigError(
                    f"invalid YAML: {exc.problem or exc.context} ({file_line(self.source, line)})",
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
            f"values nest more than {MAX_DEPTH} levels deep ({file_line(self.source, line)})",
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
                f"({file_line(self.source, line)})",
                "a config file holds a few settings; write them out instead of aliases of aliases",
            )

    def _node(self, node: Any) -> Node:
        line = node.start_mark.line + 1
        if id(node) in self._active:
            raise ConfigError(
                f"a YAML alias refers to itself ({file_line(self.source, line)})",
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
                return Node([self._node(item) for item in node.value], line)
            return Node(self._mapping(node), line)
        finally:
            self._depth -= 1
            self._active.discard(id(node))

    def _tag_refused(self, tag: str, line: int) -> ConfigError:
        shown = tag.replace("tag:yaml.org,2002:", "!!")
        return ConfigError(
            f"the YAML tag {shown} is not allowed in a config file "
            f"({file_line(self.source, line)})",
            "remove the tag: squarepeg reads plain mappings, lists and values (a custom tag "
            "like !Ref belongs to another tool's files)",
        )

    def _mapping(self, node: Any) -> dict[str, Node]:
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            if not isinstance(key_node, self._yaml.ScalarNode):
                raise ConfigError(
                    "a mapping key must be a plain word "
                    f"({file_line(self.source, key_node.start_mark.line + 1)})",
                    "write keys as `name: value`",
                )
            key_line = key_node.start_mark.line + 1
            if key_node.value in seen:
                raise ConfigError(
                    f"duplicate key {key_node.value!r} ({file_line(self.source, key_line)}, "
                    f"first at line {seen[key_node.value]})",
                    "keep one of them",
                )
            seen[key_node.value] = key_line
        result: dict[str, Node] = {}
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
                    f"({file_line(self.source, key_node.start_mark.line + 1)})",
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
                        f"({file_line(self.source, source.start_mark.line + 1)})",
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
                f"({file_line(self.source, key_node.start_mark.line + 1)})",
                "write keys as `name: value`",
            )
        return str(key_node.value)

    def _scalar(self, node: Any, line: int) -> Node:
        if node.tag not in _SCALAR_TAGS:
            raise self._tag_refused(node.tag, line)
        if node.tag != _STR_TAG:
            value = self._construct(node)
            if not isinstance(value, (int, float, bool, type(None))):
                value = node.value  # dates, binary: kept as the text, as kubectl's YAML does
            return Node(value, line, node.value)
        try:
            text = interpolate(node.value, self.environ)
        except Unset as unset:
            raise ConfigError(
                f"${{{unset.name}}} is not set ({file_line(self.source, line)})",
                f"set {unset.name}, or give a default: ${{{unset.name}:-value}}",
            ) from None
        except BadReference as bad:
            raise ConfigError(
                f"cannot interpolate {bad} ({file_line(self.source, line)})",
                "write ${VAR} or ${VAR:-default}, and $$ for a literal $",
            ) from None
        if node.style in (None, "") and text != node.value:
            # A plain scalar that held ${...} is typed again, as if its value had been
            # written there (see the module docstring).
            scalar_node = self._yaml.ScalarNode
            tag = self._loader.resolve(scalar_node, text, (True, False))
            retyped = self._construct(scalar_node(tag, text))
            if isinstance(retyped, (int, float, bool, type(None))) and tag != _NULL_TAG:
                return Node(retyped, line, text)
        return Node(text, line, text)
