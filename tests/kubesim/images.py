"""Image references and the simulated registry: what the kubelet's image manager needs.

Owns parsing a reference with the Docker reference grammar (a malformed one is the kubelet's
`InvalidImageName`), normalizing it as containerd reports it (`alpine` ->
`docker.io/library/alpine:latest`, with a stable fake `sha256` digest for `imageID`), the
pull policy defaults, and what a pull of a reference not in the scenario's catalogue says
(the containerd error text a real node shows for a repository that does not exist).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from tests.kubesim.scenario import Image, Scenario

_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|-+)"
_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(
    rf"^(?P<name>(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?$"
)
# The same shape with upper case allowed in the path, to tell "must be lowercase" apart.
_ANY_CASE = re.compile(_REFERENCE.pattern.replace("[a-z0-9]+", "[a-zA-Z0-9]+"))


class InvalidReference(ValueError):
    """A reference the runtime cannot parse; str() is the kubelet's message detail."""


@dataclass(frozen=True)
class Reference:
    """A parsed image reference."""

    given: str
    repository: str  # fully qualified: docker.io/library/alpine
    tag: str | None
    digest: str | None

    @property
    def normalized(self) -> str:
        """What containerd reports as the container's `image`."""
        if self.digest and not self.tag:
            return f"{self.repository}@{self.digest}"
        return f"{self.repository}:{self.tag or 'latest'}"

    @property
    def image_id(self) -> str:
        """A stable fake `imageID`: repository@sha256 of the normalized name."""
        digest = self.digest or "sha256:" + hashlib.sha256(self.normalized.encode()).hexdigest()
        return f"{self.repository}@{digest}"

    @property
    def short_name(self) -> str:
        return self.repository.rsplit("/", 1)[-1]


def parse_reference(ref: str) -> Reference:
    """Parse `ref` as the runtime does; raises InvalidReference with the kubelet's text."""
    match = _REFERENCE.match(ref)
    if match is None:
        detail = "invalid reference format"
        loose = _ANY_CASE.match(ref)
        if loose is not None and loose["name"] != loose["name"].lower():
            remote = _qualify(loose["name"]).split("/", 1)[1]
            detail += f": repository name ({remote}) must be lowercase"
        raise InvalidReference(f"couldn't parse image name {_quote(ref)}: {detail}")
    return Reference(ref, _qualify(match["name"]), match["tag"], match["digest"])


def _qualify(name: str) -> str:
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return name
    if not rest:
        return f"docker.io/library/{name}"
    return f"docker.io/{name}"


def _quote(text: str) -> str:
    """Go's %q for the strings that appear here."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def default_pull_policy(ref: str) -> str:
    """The apiserver's default: Always for `:latest` or no tag, else IfNotPresent."""
    match = _REFERENCE.match(ref)
    if match is not None and match["digest"]:
        return "IfNotPresent"
    if match is None or match["tag"] in (None, "latest"):
        return "Always"
    return "IfNotPresent"


def catalogue_entry(scenario: Scenario, ref: Reference) -> Image | None:
    """The scenario's image for a parsed reference (matched by its last path component)."""
    return scenario.images.get(ref.short_name)


def pull_error(ref: Reference) -> str:
    """The containerd error a real node reports for a repository that does not exist."""
    name = ref.normalized
    return (
        f"rpc error: code = Unknown desc = failed to pull and unpack image {_quote(name)}: "
        f"failed to resolve reference {_quote(name)}: pull access denied, repository does not "
        "exist or may require authorization: server message: insufficient_scope: "
        "authorization failed"
    )


def image_size(ref: Reference) -> int:
    """A stable, plausible image size in bytes for the Pulled event."""
    return 3_000_000 + int(hashlib.sha256(ref.repository.encode()).hexdigest()[:6], 16)


def quote(text: str) -> str:
    """Go's %q, for messages built elsewhere."""
    return _quote(text)
