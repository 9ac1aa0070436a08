"""cluster/pullauth.py: a registry's refusal of credentials told from other pull failures."""

from __future__ import annotations

import pytest

from kubectl_squarepeg.cluster import pullauth

IMAGE = "private.localkube:5001/private/alpine:latest"
# Recorded on localkube's kubelet node (containerd 2.2.9, kubelet 1.34.4), 2026-12-07,
# against tests/localkube/private_registry.py: no pull secret, and a missing one.
NO_CREDENTIALS = (
    f'failed to pull and unpack image "{IMAGE}": failed to resolve image: pull access denied, '
    "repository does not exist or may require authorization: authorization failed: no basic "
    "auth credentials"
)
# The same, with a Secret of the wrong password.
WRONG_PASSWORD = (
    f'failed to pull and unpack image "{IMAGE}": failed to resolve image: unexpected status '
    "from HEAD request to http://127.0.0.1:5001/v2/private/alpine/manifests/latest?ns="
    "private.localkube%3A5001: 401 Unauthorized"
)
# The kubelet's message once it backs off (the pull's message after its reason).
BACK_OFF = f'Back-off pulling image "{IMAGE}": ErrImagePull: {NO_CREDENTIALS}'
# Token registries (Docker Hub, GHCR): written after containerd's error texts in its
# sources and bug reports, not recorded here (localkube has no token server).
DOCKER_HUB = (
    'failed to pull and unpack image "docker.io/acme/secret:1": failed to resolve reference '
    '"docker.io/acme/secret:1": pull access denied, repository does not exist or may require '
    "authorization: server message: insufficient_scope: authorization failed"
)
GHCR = (
    'failed to pull and unpack image "ghcr.io/acme/tool:2": failed to resolve reference '
    '"ghcr.io/acme/tool:2": failed to authorize: failed to fetch anonymous token: unexpected '
    "status from GET request to https://ghcr.io/token?scope=repository%3Aacme%2Ftool%3Apull"
    "&service=ghcr.io: 401 Unauthorized"
)
# Not a refusal of credentials: a tag that is not there (recorded on the same node), and a
# registry that does not answer (written, not recorded).
NOT_FOUND = (
    'rpc error: code = NotFound desc = failed to pull and unpack image '
    '"docker.io/library/alpine:nope": failed to resolve image: docker.io/library/alpine:nope: '
    "not found"
)
UNREACHABLE = (
    'failed to pull and unpack image "registry.example:5000/x:1": failed to resolve reference '
    '"registry.example:5000/x:1": failed to do request: Head "https://registry.example:5000/v2/'
    'x/manifests/1": dial tcp: lookup registry.example: no such host'
)


CREATE = "kubectl create secret docker-registry NAME"


@pytest.mark.parametrize("message", [NO_CREDENTIALS, WRONG_PASSWORD, BACK_OFF, GHCR])
def test_refusals_of_credentials_are_recognized(message: str) -> None:
    assert pullauth.credentials_refused(message) is True


def test_docker_hubs_words_fit_a_missing_repository_as_well() -> None:
    assert pullauth.credentials_refused(DOCKER_HUB) is None
    refused = pullauth.refusal("ErrImagePull", DOCKER_HUB, "acme/secret:1")
    assert refused is not None and not refused.certain
    assert refused.said() == ("the registry docker.io refused to pull docker.io/acme/secret:1: "
                              "the repository does not exist there, or needs credentials")
    assert refused.fix(CREATE).startswith("check the image name and tag; if it is private, pass "
                                    "`--image-pull-secret NAME`")


@pytest.mark.parametrize("message", [NOT_FOUND, UNREACHABLE, "", "pull QPS exceeded"])
def test_other_pull_failures_are_not(message: str) -> None:
    assert pullauth.credentials_refused(message) is False
    assert pullauth.refusal("ErrImagePull", message, "x") is None


def test_only_the_pull_reasons_count() -> None:
    assert pullauth.refusal("CreateContainerError", NO_CREDENTIALS, IMAGE) is None
    assert pullauth.refusal("ImagePullBackOff", BACK_OFF, IMAGE) is not None


@pytest.mark.parametrize(("image", "host"), [
    ("alpine", "docker.io"), ("acme/tool:1", "docker.io"), ("ghcr.io/acme/tool", "ghcr.io"),
    ("localhost/x", "localhost"), (IMAGE, "private.localkube:5001"),
    ("registry:5000/x", "registry:5000")])
def test_the_registry_host_follows_dockers_rule(image: str, host: str) -> None:
    assert pullauth.registry_host(image) == host


def test_without_a_secret_the_fix_names_the_flag_and_the_secrets_shape() -> None:
    refused = pullauth.refusal("ErrImagePull", NO_CREDENTIALS, "ignored")
    assert refused is not None and refused.certain
    assert refused.image == IMAGE  # the kubelet's quote, not the spec's
    assert refused.said() == (f"the registry private.localkube:5001 refused to pull {IMAGE} "
                              "without credentials")
    assert refused.fix(CREATE) == ("pass `--image-pull-secret NAME`, NAME a docker-registry "
                                   f"Secret in the namespace (`{CREATE}`)")
    assert refused.secret_args() == (
        "create", "secret", "docker-registry", "NAME", "--docker-server=private.localkube:5001",
        "--docker-username=USER", "--docker-password=PASSWORD")


def test_with_a_secret_the_fix_names_it() -> None:
    pod = {"spec": {"containers": [{"name": "main", "image": "ghcr.io/acme/tool:2"}],
                    "imagePullSecrets": [{"name": "ghcr"}]}}
    refused = pullauth.pod_refusal(pod, "main", "ErrImagePull", GHCR)
    assert refused is not None
    assert refused.secrets == ("ghcr",)
    assert refused.registry == "ghcr.io"
    assert "with the credentials of --image-pull-secret ghcr" in refused.said()
    assert "check that the Secret ghcr exists" in refused.fix(CREATE)


def test_the_spec_image_stands_in_when_the_message_quotes_none() -> None:
    pod = {"spec": {"initContainers": [{"name": "files", "image": "quay.io/a/b"}],
                    "containers": [{"name": "main", "image": "alpine"}]}}
    refused = pullauth.pod_refusal(pod, "files", "ErrImagePull", "401 Unauthorized")
    assert refused is not None
    assert (refused.image, refused.registry, refused.secrets) == ("quay.io/a/b", "quay.io", ())
