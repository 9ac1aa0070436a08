"""What building needs of the merged configuration, as a Protocol.

config/merge.py's `Config` satisfies it; plan/options.py and plan/manifest.py read the
configuration through it, so the pure builders never import the config package (which reads
files): configuration sits above building, and data flows one way, files to manifest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from kubectl_squarepeg.plan.claims import PatchOp


class Configured(Protocol):
    """The merged configuration's values, passthrough, patches and origins."""

    @property
    def values(self) -> Mapping[str, Any]: ...
    @property
    def origins(self) -> Mapping[str, object]: ...  # a top-level key's origin, shown with str()
    @property
    def metadata(self) -> Mapping[str, Any]: ...
    @property
    def spec(self) -> Mapping[str, Any]: ...
    @property
    def patches(self) -> Sequence[PatchOp]: ...

    def origin_of(self, *path: str) -> object | None:
        """The origin of a value (shown with str()), or of its nearest ancestor that has one."""
        ...
