"""Claims: the manifest fields the command line set, and config that must not change them.

Owns claim paths (`/spec/containers/[name=main]/env/[name=FOO]`: JSON-pointer segments, and
`[name=X]` for the item of a list of named objects; a claim covers its whole subtree), the
merge of lists of named objects item by item (as a strategic merge patch would), the deep
merge of `kubernetes.metadata`/`kubernetes.spec` passthrough into a manifest, and the
`kubernetes.patches` operations. A passthrough value or patch operation that would change a
claimed field is dropped and reported as a `Dropped`; it never fails the run. A patch that
cannot apply is a `ConfigError` naming its file, line and index.

Pure apart from jsonpatch, which is imported only when there are patches to apply.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubectl_squarepeg.errors import ConfigError

Path = tuple[str, ...]
RESERVED = "squarepeg"  # the claimant of the always-claimed fields
_MISSING: Any = object()


# --- paths --------------------------------------------------------------------------------


def escape(segment: str) -> str:
    """One segment of a JSON pointer / claim path (`/` and `~` escaped)."""
    return segment.replace("~", "~0").replace("/", "~1")


def parse_path(text: str) -> Path:
    """`/a/b~1c/[name=x]` -> ("a", "b/c", "[name=x]"); "" is the whole document."""
    if not text:
        return ()
    if not text.startswith("/"):
        raise ValueError(f"a path starts with '/': {text!r}")
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in text[1:].split("/"))


def format_path(path: Iterable[str]) -> str:
    return "".join("/" + escape(segment) for segment in path)


def named_segment(name: str) -> str:
    return f"[name={name}]"


def is_named_list(items: Any) -> bool:
    """A non-empty list whose every item is a mapping with a string `name`."""
    return (
        isinstance(items, list)
        and bool(items)
        and all(isinstance(i, Mapping) and isinstance(i.get("name"), str) for i in items)
    )


def item_segment(items: list[Any], index: int) -> str:
    """How a claim path names a list item: `[name=X]` in a named list, else its index."""
    if is_named_list(items):
        return named_segment(items[index]["name"])
    return str(index)


def _segment_matches(claimed: str, segment: str) -> bool:
    # A claim segment ending in `*` covers every key with that prefix (squarepeg.io/*).
    if claimed.endswith("*"):
        return segment.startswith(claimed[:-1])
    return claimed == segment


def related(claim: Path, path: Path) -> bool:
    """True when changing `path` changes something under `claim`: one contains the other."""
    return all(_segment_matches(c, p) for c, p in zip(claim, path, strict=False))


# --- claims -------------------------------------------------------------------------------


class Claims:
    """Claimed paths, each with the flag (or `squarepeg`, for reserved fields) that set it."""

    def __init__(self) -> None:
        self._claims: dict[Path, str] = {}

    def add(self, path: str | Path, flag: str) -> None:
        key = parse_path(path) if isinstance(path, str) else tuple(path)
        self._claims.setdefault(key, flag)

    @classmethod
    def reserved(cls, main: str = "main") -> Claims:
        """The fields claimed whatever the flags: the orphan sweep depends on them."""
        claims = cls()
        for path in (
            ("metadata", "name"),
            ("metadata", "namespace"),
            ("metadata", "labels", "app.kubernetes.io/managed-by"),
            ("metadata", "labels", "squarepeg.io/*"),
            ("spec", "containers", named_segment(main), "name"),
        ):
            claims.add(path, RESERVED)
        return claims

    def paths(self) -> dict[str, str]:
        """Every claim as `path -> flag`, for messages and tests."""
        return {format_path(path): flag for path, flag in self._claims.items()}

    def claimant(self, path: Path) -> tuple[Path, str] | None:
        """The first claim that changing `path` would touch, with its flag."""
        for claim, flag in self._claims.items():
            if related(claim, path):
                return claim, flag
        return None

    def for_job(self) -> Claims:
        """The same claims for a Job: the pod's spec lives under /spec/template/spec and its
        metadata is both the Job's own and the template's."""
        job = Claims()
        for path, flag in self._claims.items():
            if path[:1] == ("metadata",):
                job.add(path, flag)
                job.add(("spec", "template", *path), flag)
            elif path[:1] == ("spec",):
                job.add(("spec", "template", *path), flag)
            else:
                job.add(path, flag)
        return job


@dataclass(frozen=True)
class Dropped:
    """A config entry that was not applied because it would change a claimed field."""

    entry: str  # e.g. kubernetes.spec.containers[name=main].image, kubernetes.patches[1]
    origin: str  # FILE:LINE
    path: str  # the claimed field it would have changed
    claimant: str  # the flag that claimed it, or RESERVED

    def warning(self) -> str:
        why = (
            "which squarepeg always sets itself"
            if self.claimant == RESERVED
            else f"which {self.claimant} set on the command line"
        )
        return f"ignored config {self.entry} ({self.origin}): it would change {self.path}, {why}"


# --- deep merge ----------------------------------------------------------------------------


def deep_merge(base: Any, overlay: Any) -> Any:
    """`overlay` over `base`, both left untouched: mappings recursively, lists of named
    objects item by item on `name`, anything else replaced. A None in `overlay` is kept
    (it deletes the key when the result is merged into a manifest)."""
    if isinstance(base, Mapping) and isinstance(overlay, Mapping):
        merged = {key: copy.deepcopy(value) for key, value in base.items()}
        for key, value in overlay.items():
            merged[key] = deep_merge(base[key], value) if key in base else copy.deepcopy(value)
        return merged
    if is_named_list(base) and is_named_list(overlay):
        items = [copy.deepcopy(item) for item in base]
        index = {item["name"]: i for i, item in enumerate(items)}
        for item in overlay:
            if item["name"] in index:
                items[index[item["name"]]] = deep_merge(items[index[item["name"]]], item)
            else:
                index[item["name"]] = len(items)
                items.append(copy.deepcopy(item))
        return items
    return copy.deepcopy(overlay)


def describe(root: str, path: Sequence[str | int]) -> str:
    """A config entry for messages: `kubernetes.spec` + (containers, [name=main], image)."""
    text = root
    for segment in path:
        segment = str(segment)
        if segment.startswith("[") or segment.isdigit():
            text += segment if segment.startswith("[") else f"[{segment}]"
        elif "." in segment or "/" in segment:
            text += f'["{segment}"]'
        else:
            text += "." + segment
    return text


def _shown(claim: Path, path: Path) -> str:
    # The field to name in a warning: the changed one when it lies inside the claim, the
    # claimed one when the change would replace a whole subtree around it.
    return format_path(path if len(path) >= len(claim) else claim)


class _Passthrough:
    """One merge of passthrough config into a manifest, collecting what claims dropped."""

    def __init__(self, claims: Claims, entry_root: str, origin_of: Callable[[Path], str]):
        self.claims = claims
        self.entry_root = entry_root
        self.origin_of = origin_of
        self.dropped: list[Dropped] = []

    def _blocked(self, path: Path, overlay_path: Path) -> bool:
        found = self.claims.claimant(path)
        if found is None:
            return False
        claim, flag = found
        self.dropped.append(
            Dropped(
                describe(self.entry_root, overlay_path),
                self.origin_of(overlay_path),
                _shown(claim, path),
                flag,
            )
        )
        return True

    def mapping(
        self, target: dict[str, Any], overlay: Mapping[str, Any], at: Path, o: Path
    ) -> None:
        for key, value in overlay.items():
            path, opath = (*at, key), (*o, key)
            current = target.get(key, _MISSING)
            if value is None:  # null deletes, as in a strategic merge patch
                if current is not _MISSING and not self._blocked(path, opath):
                    del target[key]
            elif isinstance(value, Mapping) and isinstance(current, dict):
                self.mapping(current, value, path, opath)
            elif is_named_list(value) and is_named_list(current):
                self.named_list(current, value, path, opath)
            elif current != value and not self._blocked(path, opath):
                target[key] = _without_nulls(copy.deepcopy(value))

    def named_list(self, target: list[Any], overlay: list[Any], at: Path, o: Path) -> None:
        for item in overlay:
            segment = named_segment(item["name"])
            path, opath = (*at, segment), (*o, segment)
            existing = next((t for t in target if t.get("name") == item["name"]), None)
            if existing is not None:
                self.mapping(existing, item, path, opath)
            elif not self._blocked(path, opath):
                target.append(_without_nulls(copy.deepcopy(item)))


def _without_nulls(value: Any) -> Any:
    # A null that has nothing to delete is simply absent.
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def merge_passthrough(
    target: dict[str, Any],
    overlay: Mapping[str, Any],
    *,
    at: str,
    claims: Claims,
    origin_of: Callable[[Path], str],
    entry_root: str = "kubernetes",
) -> list[Dropped]:
    """Deep-merge `overlay` into `target` (which lives at claim path `at`) in place.

    `origin_of` maps a path inside the overlay (keys and `[name=X]`) to FILE:LINE, for the
    warning of each dropped entry.
    """
    merge = _Passthrough(claims, entry_root, origin_of)
    merge.mapping(target, overlay, parse_path(at), ())
    return merge.dropped


# --- JSON patches --------------------------------------------------------------------------


class PatchOp(Protocol):
    """One `kubernetes.patches` operation and where it was written."""

    @property
    def op(self) -> Mapping[str, Any]: ...
    @property
    def origin(self) -> str: ...
    @property
    def index(self) -> int: ...


def _locate(doc: Any, pointer: str) -> Path:
    """The claim path of `pointer` in `doc`: list indices become `[name=X]` in named lists.

    Parts past the first missing one are kept as written (jsonpatch reports those)."""
    node = doc
    path: list[str] = []
    for part in parse_path(pointer):
        if isinstance(node, dict):
            path.append(part)
            node = node.get(part, _MISSING)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            path.append(item_segment(node, int(part)))
            node = node[int(part)]
        else:
            path.append(part)
            node = _MISSING
    return tuple(path)


def _parent(doc: Any, path: Path) -> Any:
    node = doc
    for part in path:
        if isinstance(node, dict):
            node = node.get(part, _MISSING)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _value_at(doc: Any, pointer: str) -> Any:
    return _parent(doc, parse_path(pointer))


def _insertion(doc: Any, pointer: str, value: Any) -> list[Path]:
    """The paths an `add` of `value` at `pointer` changes.

    Into a list, an add inserts: no existing item changes, but a named item joins under
    its own name (so adding a second `FOO` to a claimed env is caught)."""
    parts = parse_path(pointer)
    if not parts:
        return [()]
    parent = _parent(doc, parts[:-1])
    if isinstance(parent, list):
        base = _locate(doc, format_path(parts[:-1]))
        if isinstance(value, Mapping) and isinstance(value.get("name"), str):
            return [(*base, named_segment(value["name"]))]
        return [(*base, "-")]
    return [_locate(doc, pointer)]


def touched_paths(doc: Any, op: Mapping[str, Any]) -> list[Path]:
    """Every claim path one RFC 6902 operation would change in `doc`."""
    kind, pointer = op.get("op"), str(op.get("path", ""))
    if kind == "test":
        return []
    if kind == "remove":
        return [_locate(doc, pointer)]
    if kind == "add":
        return _insertion(doc, pointer, op.get("value"))
    if kind == "replace":
        paths = [_locate(doc, pointer)]
        parts = parse_path(pointer)
        if parts and isinstance(_parent(doc, parts[:-1]), list):
            paths += _insertion(doc, pointer, op.get("value"))
        return paths
    source = str(op.get("from", ""))
    moved = _value_at(doc, source)
    paths = _insertion(doc, pointer, None if moved is _MISSING else moved)
    if kind == "move":
        paths.append(_locate(doc, source))
    return paths


def apply_patches(
    doc: dict[str, Any], patches: Sequence[PatchOp], claims: Claims
) -> tuple[dict[str, Any], list[Dropped]]:
    """Apply each operation in order to a copy of `doc`, skipping those that touch a claim."""
    import jsonpatch
    import jsonpointer

    dropped: list[Dropped] = []
    for patch in patches:
        entry = f"kubernetes.patches[{patch.index}] `{patch.op.get('op')} {patch.op.get('path')}`"
        blocked = None
        for path in touched_paths(doc, patch.op):
            blocked = claims.claimant(path)
            if blocked is not None:
                claim, flag = blocked
                dropped.append(Dropped(entry, patch.origin, _shown(claim, path), flag))
                break
        if blocked is not None:
            continue
        try:
            doc = jsonpatch.apply_patch(doc, [dict(patch.op)])
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise ConfigError(
                f"kubernetes.patches[{patch.index}] ({patch.origin}) cannot be applied: {exc}",
                "fix its path or value; `kubectl squarepeg run --dry-run ...` without it "
                "shows the manifest the patches apply to (a Job's pod is under /spec/template)",
            ) from None
    return doc, dropped
