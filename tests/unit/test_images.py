"""Images (plan/images.py): docker's references and digests, --pull, --platform."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_squarepeg.plan import images
from kubectl_squarepeg.plan.values import ValueProblem
from tests.unit.parser_tables import Parser, table_tests

GOOD: list[tuple[Parser, str, Any]] = [
    (images.parse_pull, "always", "Always"),
    (images.parse_pull, "missing", "IfNotPresent"),
    (images.parse_pull, "never", "Never"),
    (images.parse_pull, "IfNotPresent", "IfNotPresent"),
    (images.parse_platform, "linux/amd64", ("linux", "amd64")),
    (images.parse_platform, "linux/arm64/v8", ("linux", "arm64")),
    (images.parse_platform, "linux/x86_64", ("linux", "amd64")),
    (images.parse_platform, "linux/aarch64", ("linux", "arm64")),
    (images.parse_platform, "linux", ("linux", None)),
    # One word naming an architecture is linux/ARCH, as docker on Linux reads it.
    (images.parse_platform, "arm64", ("linux", "arm64")),
    (images.parse_platform, "x86_64", ("linux", "amd64")),
    (images.parse_platform, "AARCH64", ("linux", "arm64")),
    (images.parse_platform, "windows", ("windows", None)),
    (images.parse_platform, "Linux/ARM64", ("linux", "arm64")),
]
BAD: list[tuple[Parser, str, str]] = [
    (images.parse_pull, "sometimes", "use always, missing or never"),
    (images.parse_platform, "linux/", "use OS[/ARCH[/VARIANT]], like linux/amd64"),
    (images.parse_platform, "linux/arm/v7/x", "use OS[/ARCH[/VARIANT]]"),
]
test_accepted_forms, test_refused_forms_say_the_accepted_form = table_tests(GOOD, BAD)


VALID_IMAGES = [
    "alpine",
    "alpine:3.19",
    "library/alpine",
    "docker.io/library/alpine:latest",
    "localhost:5000/team/sub/app:v1.2",
    "localhost/app",
    "127.0.0.1:5000/app",
    "[::1]:5000/app",
    "ghcr.io/org/app@sha256:" + "a" * 64,
    "registry.example.com:5000/foo/bar:tag@sha256:" + "b" * 64,
    "alpine@sha384:" + "c" * 96,
    "alpine@sha512:" + "d" * 128,
    "my_app",
    "a__b--c.d",
    "Registry.Example.com/x",
]


@pytest.mark.parametrize("image", VALID_IMAGES)
def test_docker_image_references_pass(image: str) -> None:
    assert images.parse_image_reference(image) == image


INVALID_IMAGES = [
    ("Alpine", "the repository name (Alpine) must be lowercase; use alpine"),
    ("team/App:1", "the repository name (team/App) must be lowercase"),
    ("alpine:", "invalid reference format; docker's form is [REGISTRY[:PORT]/]REPOSITORY"),
    ("alpine::1", "invalid reference format"),
    ("alpine:" + "x" * 129, "invalid reference format"),
    ("http://host/app", "invalid reference format"),
    ("/alpine", "invalid reference format"),
    ("alpine/", "invalid reference format"),
    ("a_/b", "invalid reference format"),
    ("alpine@sha256:abc", "a digest is ALGORITHM:HEX"),
    ("x@sha256:" + "a" * 63, "a sha256 digest has exactly 64 lowercase hex digits (this one"),
    ("x@sha256:" + "A" * 64, "exactly 64 lowercase hex digits (this one has uppercase ones)"),
    (
        "x@sha512:" + "a" * 64,
        "a sha512 digest has exactly 128 lowercase hex digits (this one has 64)",
    ),
    ("x@md5:" + "a" * 32, "docker refuses the digest algorithm md5 (unsupported digest"),
    ("al pine", "invalid reference format"),
    (" alpine", "no spaces"),
    ("a" * 256, "longer than 255 characters"),
]


@pytest.mark.parametrize(("image", "message"), INVALID_IMAGES, ids=lambda v: str(v)[:24])
def test_docker_invalid_references_say_what_docker_means(image: str, message: str) -> None:
    with pytest.raises(ValueProblem) as caught:
        images.parse_image_reference(image)
    assert message in str(caught.value)
    assert str(caught.value).startswith(("docker calls this an invalid ", "docker refuses ", "an "))
