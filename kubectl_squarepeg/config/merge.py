"""The merged configuration: the layers laid over the built-in defaults, lowest first
(configuration.md, Merge), with where each merged value came from.

`Config` is what `run` builds from (plan/options.py and plan/manifest.py read it through
their own Protocol, plan.configured.Configured), and what `config view` prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_squarepeg.config.keys import ALL_KEYS, DEFAULT_DISPLAY, DEFAULTS, KEYS, KUBERNETES_KEYS
from kubectl_squarepeg.config.records import DEFAULT, FoundFile, Layer, Origin, OriginPath, Patch
from kubectl_squarepeg.plan.claims import deep_merge, describe, is_named_list, named_segment


@dataclass(frozen=True)
class Config:
    """The merged configuration of every layer."""

    values: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULTS))
    origins: Mapping[str, Origin] = field(default_factory=dict)  # top-level key -> origin
    metadata: Mapping[str, Any] = field(default_factory=dict)
    spec: Mapping[str, Any] = field(default_factory=dict)
    patches: tuple[Patch, ...] = ()
    display: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_DISPLAY))
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


def _add_from(origins: dict[OriginPath, Origin], layer: Layer, prefix: OriginPath) -> None:
    for path, line in layer.lines.items():
        if path[: len(prefix)] == prefix:
            origins[path] = Origin(layer.source, line)


def _overlay_origins(
    origins: dict[OriginPath, Origin], layer: Layer, base: Any, overlay: Any, path: OriginPath
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


def merge(layers: Sequence[Layer]) -> Config:
    """Lay the layers over the built-in defaults, lowest first (configuration.md, Merge)."""
    parsed: dict[str, Any] = dict(DEFAULTS)
    display: dict[str, Any] = dict(DEFAULT_DISPLAY)
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
                    parsed[key], display[key] = DEFAULTS[key], DEFAULT_DISPLAY[key]
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

def entry_name(path: OriginPath) -> str:
    """A path as a config entry: kubernetes.spec.containers[name=main].image"""
    return describe(path[0], path[1:]) if path else ""
