"""Validating one file's nodes against the key table, into a Layer: parsed values, their
display form and the line of every entry, with file:line and a did-you-mean in every error.

Decisions the spec left open (also in docs/decisions/):
- Relative `env_file` and `kubeconfig` paths are relative to the config file's directory.
- `env: {NAME: null}` (or `- NAME` in list form) takes the local value, like `-e NAME`.
- A list key also takes a single string (`env_file: .env`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kubectl_squarepeg.config.keys import (
    KEYS,
    KUBERNETES_KEYS,
    PATCH_MEMBERS,
    PATCH_OPS,
    PATH_KEYS,
    Key,
    suggest,
)
from kubectl_squarepeg.config.reader import Node, Reader, file_line
from kubectl_squarepeg.config.records import Layer, OriginPath, Patch
from kubectl_squarepeg.errors import ConfigError
from kubectl_squarepeg.plan import names, values
from kubectl_squarepeg.plan.claims import is_named_list, named_segment
from kubectl_squarepeg.plan.values import ValueProblem


def canonical_segment(items: list[Any], index: int) -> str:
    return named_segment(items[index]["name"]) if is_named_list(items) else str(index)


def _record_lines(lines: dict[OriginPath, int], node: Node, path: OriginPath) -> None:
    lines[path] = node.at
    if isinstance(node.value, dict):
        for key, child in node.value.items():
            _record_lines(lines, child, (*path, key))
    elif isinstance(node.value, list):
        plain = [child.plain() for child in node.value]
        for index, child in enumerate(node.value):
            _record_lines(lines, child, (*path, canonical_segment(plain, index)))


def _display_scalar(node: Node) -> Any:
    # The value as written; for a number or switch whose YAML reading differs from its
    # text (1000:50, 0755, 1.10), the text, which is what squarepeg reads.
    if isinstance(node.value, bool):
        return node.value
    if isinstance(node.value, (int, float)) and str(node.value) == node.text:
        return node.value
    return node.text


class Validator:
    """Checks one file's top-level mapping against KEYS, into a `Layer`."""

    def __init__(self, source: str, environ: Mapping[str, str]) -> None:
        self.source = source
        self.environ = environ
        self.layer = Layer(source)
        self.base = Path(source).parent

    def where(self, node: Node) -> str:
        return file_line(self.source, node.at)

    def problem(self, what: str, node: Node, hint: str) -> ConfigError:
        return ConfigError(f"{what} ({self.where(node)})", hint)

    def validate(self, root: Node | None) -> Layer:
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
                raise self.problem(f"unknown config key {key!r}", node, suggest(key))
            self.layer.lines[(key,)] = node.at
            if node.is_null():
                self.layer.parsed[key] = self.layer.display[key] = None
                continue
            check: Callable[[str, Key, Node], tuple[Any, Any]] = getattr(
                self, "check_" + spec.kind
            )
            parsed, display = check(key, spec, node)
            self.layer.parsed[key], self.layer.display[key] = parsed, display
        return self.layer

    def check_scalar(self, key: str, spec: Key, node: Node) -> tuple[Any, Any]:
        if not node.is_scalar():
            raise self.problem(f"{key} takes a single value", node, f"give {spec.form}")
        assert node.text is not None
        return self.parse(key, spec, node, node.text), _display_scalar(node)

    def check_bool(self, key: str, spec: Key, node: Node) -> tuple[Any, Any]:
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

    def parse(self, key: str, spec: Key, node: Node, text: str) -> Any:
        try:
            parsed = spec.parse(text)
        except ValueProblem as problem:
            raise self.problem(
                f"invalid value {values.quoted(text)} for {key}", node, str(problem)
            ) from None
        if key in PATH_KEYS:
            # A relative path in a config file is relative to that file (as in compose).
            expanded = os.path.expanduser(parsed)
            return expanded if os.path.isabs(expanded) else str(self.base / expanded)
        return parsed

    def check_list(self, key: str, spec: Key, node: Node) -> tuple[Any, Any]:
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

    def check_map(self, key: str, spec: Key, node: Node) -> tuple[Any, Any]:
        pairs: list[tuple[str, str | None, Node]] = []
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

    def pair(self, key: str, name: str, text: str | None, node: Node) -> str | None:
        shown = name if text is None else f"{name}={text}"
        try:
            if key == "env":
                item = values.parse_env_item(shown, self.environ)
                return None if item is None else item[1]
            if text is None:
                raise ValueProblem("give a value (an empty one is '')")
            if key == "annotations":
                names.validate_annotation_key(name)
            else:
                names.validate_label_key(name)
                names.validate_label_value(text)
        except ValueProblem as problem:
            raise self.problem(f"invalid {key} entry {shown!r}", node, str(problem)) from None
        if key == "labels" and names.is_reserved_label(name):
            raise self.problem(
                f"the label {name!r} is reserved for squarepeg", node, names.RESERVED_LABEL_HINT
            )
        return text

    def kubernetes(self, node: Node) -> None:
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
                    suggest(key, KUBERNETES_KEYS, "kubernetes takes metadata, spec and patches"),
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

    def patches(self, node: Node) -> list[Patch]:
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

    def patch_op(self, index: int, item: Node) -> dict[str, Any]:
        name = f"kubernetes.patches[{index}]"
        form = "an RFC 6902 operation like {op: add, path: /spec/hostname, value: box}"
        if not isinstance(item.value, dict):
            raise self.problem(f"{name} must be a mapping", item, f"write {form}")
        op: dict[str, Any] = item.plain()
        for member in op:
            if member not in PATCH_MEMBERS:
                raise self.problem(
                    f"{name} has an unknown member {member!r}",
                    item.value[member],
                    suggest(member, PATCH_MEMBERS, f"write {form}"),
                )
        if op.get("op") not in PATCH_OPS:
            raise self.problem(
                f"{name} has op {op.get('op')!r}", item, f"use one of {', '.join(PATCH_OPS)}"
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

def parse_file(data: bytes | str, source: str, environ: Mapping[str, str]) -> Layer:
    """Read and validate one config file's contents (`source` names it in messages)."""
    root = Reader(source, environ).read(data)
    return Validator(source, environ).validate(root)
