"""Images: docker's image reference, its digest, `--pull` and `--platform`.

Owns docker's reference grammar ([REGISTRY[:PORT]/]REPOSITORY[:TAG][@DIGEST], after
distribution/reference), with what docker means by "invalid reference format" in each case;
the digests docker can verify; the pull policy; and the platform as the nodes' os and arch
labels. A reference is returned unchanged: the kubelet's runtime resolves it.
"""

from __future__ import annotations

import re

from kubectl_squarepeg.plan.values import ValueProblem

_PULL_POLICIES = {
    "always": "Always",
    "missing": "IfNotPresent",
    "never": "Never",
    "ifnotpresent": "IfNotPresent",
}


def parse_pull(text: str) -> str:
    """docker's `--pull` as an imagePullPolicy (Kubernetes' own names are accepted too)."""
    policy = _PULL_POLICIES.get(text.strip().lower())
    if policy is None:
        raise ValueProblem("use always, missing or never")
    return policy


_PLATFORM = r"([a-z0-9]+)(?:/([a-z0-9_]+)(/[a-z0-9]+)?)?"
# The names docker normalises to Go's GOARCH, which the nodes' kubernetes.io/arch label uses.
_ARCH_ALIASES = {"x86_64": "amd64", "x86-64": "amd64", "aarch64": "arm64", "armhf": "arm",
                 "armel": "arm", "i386": "386", "i686": "386"}  # fmt: skip


# Go's GOARCH names: an architecture alone (`arm64`) is one of these, not an OS.
_GO_ARCHES = frozenset({
    "386", "amd64", "amd64p32", "arm", "armbe", "arm64", "arm64be", "loong64", "mips", "mipsle",
    "mips64", "mips64le", "mips64p32", "mips64p32le", "ppc", "ppc64", "ppc64le", "riscv",
    "riscv64", "s390", "s390x", "sparc", "sparc64", "wasm",
})  # fmt: skip


def parse_platform(text: str) -> tuple[str, str | None]:
    """docker's `OS[/ARCH[/VARIANT]]` as the nodes' kubernetes.io/os and kubernetes.io/arch
    labels. Nodes carry no label for a variant (`linux/arm64/v8` is `linux/arm64`), and
    docker's architecture aliases (`x86_64`, `aarch64`) become GOARCH names as docker's do.
    One word that names an architecture (`arm64`) is `linux/arm64`, as docker on Linux
    reads it; any other one word is an OS, whatever the node's architecture."""
    lowered = text.strip().lower()
    if lowered in _ARCH_ALIASES or lowered in _GO_ARCHES:
        return "linux", _ARCH_ALIASES.get(lowered, lowered)
    for alias, arch in _ARCH_ALIASES.items():
        lowered = lowered.replace(f"/{alias}", f"/{arch}")
    match = re.fullmatch(_PLATFORM, lowered)
    if not match:
        raise ValueProblem("use OS[/ARCH[/VARIANT]], like linux/amd64 or linux/arm64/v8")
    return match[1], match[2]


# docker's reference grammar (distribution/reference): [HOST[:PORT]/]PATH[:TAG][@DIGEST].
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:.]+\])"
_REGISTRY = rf"{_HOST}(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REMOTE = (
    rf"(?P<path>{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?"
)
MAX_IMAGE_NAME = 255
_IMAGE_FORM = (
    "docker's form is [REGISTRY[:PORT]/]REPOSITORY[:TAG][@DIGEST], the repository in "
    "lowercase, like alpine:3.19, ghcr.io/org/app@sha256:<64 hex> or localhost:5000/team/app"
)


def _split_domain(text: str) -> tuple[str | None, str]:
    """docker's rule: the first part is a registry when it has a '.' or ':', or is
    localhost, or holds an uppercase letter (which a repository may not)."""
    first, slash, rest = text.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        return first, rest
    return None, text


def parse_image_reference(text: str) -> str:
    """IMAGE as docker reads it; anything docker calls an "invalid reference format" is
    refused with what that means. Returned unchanged: the kubelet's runtime resolves it."""
    if text != text.strip() or not text:
        raise ValueProblem(f"an image reference has no spaces; {_IMAGE_FORM}")
    domain, remainder = _split_domain(text)
    name = re.split(r"[:@]", remainder, maxsplit=1)[0]
    if name != name.lower():
        raise ValueProblem(
            f"docker calls this an invalid reference format: the repository name ({name}) "
            f"must be lowercase; use {name.lower()}"
        )
    match = re.fullmatch(_REMOTE, remainder)
    if match is None or (domain is not None and not re.fullmatch(_REGISTRY, domain)):
        why = "invalid reference format"
        if "@" in text and not re.search(rf"@{_DIGEST}$", text):
            why += ": a digest is ALGORITHM:HEX, like sha256: and 64 hex digits"
        raise ValueProblem(f"docker calls this an {why}; {_IMAGE_FORM}")
    full_name = (f"{domain}/" if domain else "") + match["path"]
    if len(full_name) > MAX_IMAGE_NAME:
        raise ValueProblem(
            f"docker calls this an invalid reference format: the repository name is longer "
            f"than {MAX_IMAGE_NAME} characters"
        )
    if match["digest"]:
        _check_digest(match["digest"])
    return text


# The digests docker can verify (go-digest's algorithms), by their count of hex digits.
_DIGEST_HEX_DIGITS = {"sha256": 64, "sha384": 96, "sha512": 128}


def _check_digest(digest: str) -> None:
    """What the grammar lets through but docker's digest check refuses: an algorithm it
    cannot verify ("unsupported digest algorithm"), or the wrong count or case of hex
    digits ("invalid checksum digest format")."""
    algorithm, _, encoded = digest.partition(":")
    digits = _DIGEST_HEX_DIGITS.get(algorithm)
    if digits is None:
        raise ValueProblem(
            f"docker refuses the digest algorithm {algorithm} (unsupported digest algorithm); "
            "a digest is sha256:, sha384: or sha512: and its hex digits, like sha256:<64 hex>"
        )
    if len(encoded) != digits or encoded != encoded.lower():
        this_one = f"{len(encoded)}" if len(encoded) != digits else "uppercase ones"
        raise ValueProblem(
            f"docker calls this an invalid checksum digest format: a {algorithm} digest has "
            f"exactly {digits} lowercase hex digits (this one has {this_one})"
        )
