"""Pure: an image pull the registry refused for want of credentials, and what to say about it.

Owns the reading of the kubelet's `ErrImagePull` / `ImagePullBackOff` message (the runtime's
error, quoted by the kubelet) for the words a registry's refusal of credentials leaves in
it, and the fix squarepeg then gives: a docker-registry Secret passed with
`--image-pull-secret` (decision 0424). A pull that failed for another reason (a typo'd tag,
an unreachable registry) is not this: None, and the generic image hint stays.

The words, as recorded (tests/unit/test_pullauth.py holds the messages whole):
- containerd 2.2 against a registry asking for HTTP Basic credentials (localkube's private
  registry, tests/localkube/private_registry.py): `authorization failed: no basic auth
  credentials` when it was given none, `unexpected status from HEAD request to URL: 401
  Unauthorized` when it refused those given;
- registries with token authentication (Docker Hub, GHCR, Quay): `pull access denied,
  repository does not exist or may require authorization`, `insufficient_scope:
  authorization failed`, `failed to authorize: failed to fetch anonymous token`, `403
  Forbidden`, `denied: requested access to the resource is denied`;
- the Docker Engine runtime (cri-dockerd): `unauthorized: authentication required`.
Docker Hub says "pull access denied, repository does not exist or may require
authorization: server message: insufficient_scope" of a private repository and of a
missing one alike (kubesim's typo'd image says so too): with only such words, and no pull
secret given, squarepeg says both and puts the image name first in the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PULL_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff"})
# Lower-case fragments. Any one of these: the registry wants credentials, or others.
_REFUSAL_WORDS = (
    "401 unauthorized",
    "403 forbidden",
    "no basic auth credentials",
    "failed to authorize",
    "unauthorized: authentication required",
    "requested access to the resource is denied",
)
# Any one of these alone: a token registry (Docker Hub) that says the same of a repository
# that does not exist as of one the anonymous user may not pull.
_AMBIGUOUS_WORDS = (
    "pull access denied",
    "may require authorization",
    "insufficient_scope",
)
_QUOTED_IMAGE = re.compile(r'(?:pull(?:ing)?|image) (?:image )?"([^"\s]+)"')
DOCKER_HUB = "docker.io"


@dataclass(frozen=True)
class PullRefusal:
    """A pull the registry refused: the image (as the kubelet quoted it), its registry
    host, and the pull secrets the pod named (empty: it had none)."""

    image: str
    registry: str
    secrets: tuple[str, ...]
    # False: the registry's words fit a repository that does not exist just as well.
    certain: bool = True

    def said(self) -> str:
        if not self.certain and not self.secrets:
            return (f"the registry {self.registry} refused to pull {self.image}: the "
                    "repository does not exist there, or needs credentials")
        if self.secrets:
            named = ", ".join(self.secrets)
            return (f"the registry {self.registry} refused to pull {self.image} with the "
                    f"credentials of --image-pull-secret {named}")
        return f"the registry {self.registry} refused to pull {self.image} without credentials"

    def secret_args(self) -> tuple[str, ...]:
        """kubectl's arguments that make a Secret for the registry: a template (NAME, USER
        and PASSWORD are the user's to fill in)."""
        return ("create", "secret", "docker-registry", "NAME",
                f"--docker-server={self.registry}", "--docker-username=USER",
                "--docker-password=PASSWORD")

    def fix(self, create: str) -> str:
        """The fix; `create` is `secret_args` as a command line (with the run's context and
        namespace: the Secret must be in the pod's namespace)."""
        if self.secrets:
            return (f"check that the Secret {', '.join(self.secrets)} exists in the namespace "
                    f"and holds credentials for {self.registry} that may pull the image "
                    f"(make one with `{create}`)")
        given = (f"pass `--image-pull-secret NAME`, NAME a docker-registry Secret in the "
                 f"namespace (`{create}`)")
        if not self.certain:
            return f"check the image name and tag; if it is private, {given}"
        return given


def credentials_refused(message: str) -> bool | None:
    """Whether the kubelet's pull failure message is a registry refusing credentials: True,
    certainly; None, perhaps (or the repository does not exist); False, not at all."""
    lowered = message.lower()
    if any(words in lowered for words in _REFUSAL_WORDS):
        return True
    if any(words in lowered for words in _AMBIGUOUS_WORDS):
        return None
    return False


def registry_host(image: str) -> str:
    """The registry host of an image reference, by docker's rule: the first path part
    when it has a dot or a port or is `localhost`, else Docker Hub."""
    first, slash, _ = image.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return first
    return DOCKER_HUB


def refusal(
    reason: str, message: str, image: str, pull_secrets: Iterable[str] = ()
) -> PullRefusal | None:
    """The refusal a waiting container's `reason` and `message` say, for a container of
    `image` (its spec's; the image the kubelet quotes is preferred), or None."""
    refused = credentials_refused(message)
    if reason not in PULL_REASONS or refused is False:
        return None
    quoted = _QUOTED_IMAGE.search(message)
    named = quoted.group(1) if quoted else image
    return PullRefusal(named, registry_host(named), tuple(pull_secrets), refused is True)


def pod_refusal(pod: Mapping[str, Any], container: str, reason: str,
                message: str) -> PullRefusal | None:
    """`refusal` for the container named `container` of a pod's JSON."""
    spec = pod.get("spec") or {}
    image = ""
    for kind in ("initContainers", "containers"):
        for item in spec.get(kind) or ():
            if isinstance(item, Mapping) and item.get("name") == container:
                image = str(item.get("image") or "")
    secrets = [str(s.get("name")) for s in spec.get("imagePullSecrets") or ()
               if isinstance(s, Mapping) and s.get("name")]
    return refusal(reason, message, image, secrets)
