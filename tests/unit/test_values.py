"""Flag and config value parsers: docker's forms in, Kubernetes' forms out, hints on failure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kubectl_squarepeg.plan import values
from kubectl_squarepeg.plan.values import Tmpfs, ValueProblem

GOOD: list[tuple[Callable[[str], Any], str, Any]] = [
    (values.validate_name, "my-run-1", "my-run-1"),
    (values.validate_name, "a" * 63, "a" * 63),
    (values.validate_subdomain, "registry.example-1", "registry.example-1"),
    (values.validate_label_key, "team", "team"),
    (values.validate_label_key, "example.com/team_a.b", "example.com/team_a.b"),
    (values.validate_label_value, "", ""),
    (values.validate_label_value, "Alice_1.x-y", "Alice_1.x-y"),
    (values.parse_cpus, "0.5", "500m"),
    (values.parse_cpus, "2", "2"),
    (values.parse_cpus, "1.25", "1250m"),
    (values.parse_cpus, "0.001", "1m"),
    (values.parse_cpus, "2.0", "2"),
    (values.parse_cpus, ".5", "500m"),
    (values.parse_cpus, "500m", "500m"),
    (values.parse_cpus, "1000m", "1"),
    (values.parse_memory, "512m", "512Mi"),
    (values.parse_memory, "1g", "1Gi"),
    (values.parse_memory, "1G", "1Gi"),
    (values.parse_memory, "512mb", "512Mi"),
    (values.parse_memory, "512MiB", "512Mi"),
    (values.parse_memory, "64k", "64Ki"),
    (values.parse_memory, "2t", "2Ti"),
    (values.parse_memory, "1048576", "1048576"),
    (values.parse_memory, "100b", "100"),
    (values.parse_memory, "1.5g", "1536Mi"),
    (values.parse_memory, "0.5k", "512"),
    (values.parse_size, "64m", "64Mi"),
    (values.parse_gpus, "2", 2),
    (values.parse_gpus, "count=3", 3),
    (values.parse_gpus, "0", 0),
    (values.parse_pull, "always", "Always"),
    (values.parse_pull, "missing", "IfNotPresent"),
    (values.parse_pull, "never", "Never"),
    (values.parse_pull, "IfNotPresent", "IfNotPresent"),
    (values.parse_mode, "job", "job"),
    (values.parse_mode, "Pod", "pod"),
    (values.parse_bool, "yes", True),
    (values.parse_bool, "False", False),
    (values.parse_platform, "linux/amd64", ("linux", "amd64")),
    (values.parse_platform, "linux/arm64/v8", ("linux", "arm64")),
    (values.parse_platform, "linux/x86_64", ("linux", "amd64")),
    (values.parse_platform, "linux/aarch64", ("linux", "arm64")),
    (values.parse_platform, "linux", ("linux", None)),
    # One word naming an architecture is linux/ARCH, as docker on Linux reads it.
    (values.parse_platform, "arm64", ("linux", "arm64")),
    (values.parse_platform, "x86_64", ("linux", "amd64")),
    (values.parse_platform, "AARCH64", ("linux", "arm64")),
    (values.parse_platform, "windows", ("windows", None)),
    (values.parse_cpus, "0", None),
    (values.parse_cpus, "0.0", None),
    (values.parse_memory, "0", None),
    (values.parse_memory, "0m", None),
    (values.parse_size, "0.5k", "512"),
    (values.parse_size, "8191p", "8191Pi"),
    (values.parse_size, "9223372036854775807", "9223372036854775807"),
    (values.parse_cpus, "9223372036854775", "9223372036854775"),
    (values.parse_user, "2147483647:0", (2147483647, 0)),
    (values.parse_entrypoint, "", ""),
    (values.parse_nonnegative_int, "9223372036854775807", 2**63 - 1),
    (values.parse_platform, "Linux/ARM64", ("linux", "arm64")),
    (values.parse_user, "1000", (1000, None)),
    (values.parse_user, "1000:50", (1000, 50)),
    (values.parse_user, "0:0", (0, 0)),
    (values.parse_duration_seconds, "300", 300.0),
    (values.parse_duration_seconds, "90s", 90.0),
    (values.parse_duration_seconds, "5m", 300.0),
    (values.parse_duration_seconds, "1h30m", 5400.0),
    (values.parse_duration_seconds, "1.5", 1.5),
    (values.parse_duration_seconds, "250ms", 0.25),
    (values.parse_nonnegative_int, "0", 0),
    (values.parse_nonnegative_int, "30", 30),
    (values.parse_workdir, "/app", "/app"),
    (values.parse_nonempty, "x", "x"),
    (values.parse_capability, "net_admin", "NET_ADMIN"),
    (values.parse_capability, "CAP_SYS_TIME", "SYS_TIME"),
    (values.parse_capability, "ALL", "ALL"),
    (values.parse_dns_ip, "10.0.0.2", "10.0.0.2"),
    (values.parse_dns_ip, "2001:db8::1", "2001:db8::1"),
    (values.parse_dns_search, "example.com", "example.com"),
    (values.parse_add_host, "db.local:10.0.0.5", ("db.local", "10.0.0.5")),
    (values.parse_add_host, "db=10.0.0.5", ("db", "10.0.0.5")),
    (values.parse_add_host, "v6:[2001:db8::1]", ("v6", "2001:db8::1")),
    (values.parse_add_host, "v6:2001:db8::1", ("v6", "2001:db8::1")),
    (
        values.parse_toleration,
        "gpu=true:NoSchedule",
        {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    ),
    (
        values.parse_toleration,
        "dedicated:NoExecute",
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
    ),
    (values.parse_key_value, "A=b=c", ("A", "b=c")),
    (values.parse_key_value, "A=", ("A", "")),
    (values.parse_tmpfs, "/tmp", Tmpfs("/tmp")),
    (values.parse_tmpfs, "/run:size=64m,ro", Tmpfs("/run", "64Mi", True)),
    (values.parse_tmpfs, "/run:rw,size=1g", Tmpfs("/run", "1Gi", False)),
    # docker's documented example: the mount flags are kept aside for one warning
    (
        values.parse_tmpfs,
        "/run:rw,noexec,nosuid,size=65536k",
        Tmpfs("/run", "65536Ki", False, ("noexec", "nosuid")),
    ),
    (values.parse_tmpfs, "//run/:mode=1777", Tmpfs("/run", None, False, ("mode=1777",))),
    (values.parse_tmpfs, "/dev/shm/", Tmpfs("/dev/shm")),
]


@pytest.mark.parametrize(("parse", "text", "expected"), GOOD)
def test_accepted_forms(parse: Callable[[str], Any], text: str, expected: Any) -> None:
    assert parse(text) == expected


BAD: list[tuple[Callable[[str], Any], str, str]] = [
    (values.validate_name, "My_Run", "lowercase letters, digits and '-'"),
    (values.validate_name, "-run", "starting and ending with a letter or digit"),
    (values.validate_name, "a" * 64, "at most 63 characters (this one has 64)"),
    (values.validate_subdomain, "Secret", "lowercase letters, digits, '-' and '.'"),
    (values.validate_hostname, "foo.example.com", "a pod's host name is one label, without dots"),
    (values.validate_hostname, "Box", "use lowercase letters, digits and '-'"),
    (values.validate_label_key, "Example.com/x", "prefix 'Example.com' must be a lowercase"),
    (values.validate_label_key, "bad key", "a key is NAME or PREFIX/NAME"),
    (values.validate_label_value, "-x", "a label value has at most 63"),
    (values.parse_cpus, "abc", "give a number of CPUs like 0.5"),
    (values.parse_cpus, "-1", "give a number of CPUs like 0.5"),
    (values.parse_cpus, "0.0001", "use at most 3 decimals"),
    (values.parse_cpus, "1_000", "give a number of CPUs"),
    (values.parse_memory, "12x", "give a size like 512m, 1g"),
    (values.parse_memory, "0.0001k", "0.0001k is less than one byte; give a size like 512m"),
    (values.parse_size, "0", "give a size above 0"),
    (values.parse_size, "0.5b", "is less than one byte"),
    (values.parse_memory, "8192p", "Kubernetes stores a size of at most 9223372036854775807 bytes"),
    (values.parse_size, "9223372036854775808", "at most 9223372036854775807 bytes (2^63-1"),
    (values.parse_cpus, "9223372036854776", "in millicores up to 9223372036854775807 (2^63-1)"),
    (values.parse_cpus, "9223372036854775808m", "in millicores up to"),
    (values.parse_user, "2147483648", "Kubernetes stores user and group IDs up to 2147483647"),
    (values.parse_user, "0:4294967296", "up to 2147483647 (2^31-1)"),
    (values.parse_nonnegative_int, "9223372036854775808", "Kubernetes stores at most"),
    (values.parse_int32, "2147483648", "Kubernetes stores at most 2147483647"),
    (values.parse_gpus, "99999999999999999999", "Kubernetes counts at most"),
    (values.parse_entrypoint, "  ", 'or "" to reset the entrypoint'),
    (values.parse_memory, "-5m", "give a size like 512m"),
    (values.parse_gpus, "all", "cannot ask for all of a node's GPUs; give a number like 1"),
    (values.parse_gpus, "device=1", "give a GPU count like 1 or 2"),
    (values.parse_pull, "sometimes", "use always, missing or never"),
    (values.parse_mode, "deamon", "use pod or job"),
    (values.parse_bool, "maybe", "use true or false"),
    (values.parse_platform, "linux/", "use OS[/ARCH[/VARIANT]], like linux/amd64"),
    (values.parse_platform, "linux/arm/v7/x", "use OS[/ARCH[/VARIANT]]"),
    (values.parse_user, "nobody", "Kubernetes needs numeric IDs: use UID or UID:GID"),
    (values.parse_user, "app:1000", "Kubernetes needs numeric IDs"),
    (values.parse_duration_seconds, "-5", "a duration cannot be negative"),
    (values.parse_duration_seconds, "0", "a duration must be more than 0"),
    (values.parse_duration_seconds, "9" * 20, "a duration is at most 365 days"),
    (values.parse_duration_seconds, "9999999h", "a duration is at most 365 days"),
    (values.parse_duration_seconds, "5 minutes", "give seconds like 300, or a duration like 90s"),
    (values.parse_duration_seconds, "5d", "give seconds like 300"),
    (values.parse_nonnegative_int, "-1", "it cannot be negative"),
    (values.parse_nonnegative_int, "1.5", "give a whole number like 30"),
    (values.parse_workdir, "app", "must be an absolute path"),
    (values.parse_nonempty, " ", "give a non-empty value"),
    (values.parse_capability, "net admin", "give a capability name like NET_ADMIN"),
    (values.parse_dns_ip, "dns.google", "'dns.google' is not an IP address"),
    (values.parse_dns_search, "bad domain", "give a domain name like example.com"),
    (values.parse_add_host, "db", "use HOST:IP"),
    (values.parse_add_host, "db:host-gateway", "host-gateway means the docker host"),
    (values.parse_add_host, "db:999.1.1.1", "'999.1.1.1' is not an IP address"),
    (values.parse_add_host, "bad host:10.0.0.1", "'bad host' is not a host name"),
    (values.parse_toleration, "gpu=true", "use KEY[=VALUE]:EFFECT"),
    (values.parse_toleration, "gpu:Sometimes", "EFFECT is one of NoSchedule, PreferNoSchedule"),
    (values.parse_toleration, "bad key:NoSchedule", "a key is NAME or PREFIX/NAME"),
    (values.parse_key_value, "A", "use KEY=VALUE"),
    (values.parse_key_value, "=b", "the key before '=' is empty"),
    (values.parse_tmpfs, "tmp", "must be an absolute path"),
    (values.parse_tmpfs, "/tmp:bogus", "'bogus' is not a tmpfs option; docker's are rw, ro"),
    (values.parse_tmpfs, "/tmp:size=lots", "give a size like 512m"),
]


@pytest.mark.parametrize(("parse", "text", "hint"), BAD)
def test_refused_forms_say_the_accepted_form(
    parse: Callable[[str], Any], text: str, hint: str
) -> None:
    with pytest.raises(ValueProblem) as caught:
        parse(text)
    assert hint in str(caught.value)


def test_annotation_keys_follow_label_key_rules() -> None:
    assert values.validate_annotation_key("example.com/note") == "example.com/note"
    with pytest.raises(ValueProblem):
        values.validate_annotation_key("not ok")


@pytest.mark.parametrize(
    ("key", "reserved"),
    [
        ("app.kubernetes.io/managed-by", True),
        ("squarepeg.io/keep", True),
        ("squarepeg.io/anything", True),
        ("app.kubernetes.io/name", False),
        ("squarepeg", False),
    ],
)
def test_reserved_labels(key: str, reserved: bool) -> None:
    assert values.is_reserved_label(key) is reserved


def test_env_item_bare_key_takes_the_local_value_or_is_skipped() -> None:
    environ = {"HOME": "/home/a", "EMPTY": ""}
    assert values.parse_env_item("A=1", environ) == ("A", "1")
    assert values.parse_env_item("A==x", environ) == ("A", "=x")
    assert values.parse_env_item("HOME", environ) == ("HOME", "/home/a")
    assert values.parse_env_item("EMPTY", environ) == ("EMPTY", "")
    assert values.parse_env_item("UNSET", environ) is None
    with pytest.raises(ValueProblem, match="is not a variable name"):
        values.parse_env_item("=x", environ)


def test_env_file_is_docker_format() -> None:
    text = '\ufeff# a comment\n\nA=1\n   B=two words  \nC="quoted"\nBARE\nD=\nE=x=y\n'
    assert values.parse_env_file_text(text) == [
        ("A", "1"),
        ("B", "two words  "),
        ("C", '"quoted"'),
        "BARE",
        ("D", ""),
        ("E", "x=y"),
    ]


@pytest.mark.parametrize(("text", "line"), [("A=1\n=2\n", 2), ("A B=1\n", 1)])
def test_env_file_errors_name_the_line(text: str, line: int) -> None:
    with pytest.raises(ValueProblem, match=f"line {line} has no valid variable name"):
        values.parse_env_file_text(text)


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
    assert values.parse_image_reference(image) == image


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
    with pytest.raises(values.ValueProblem) as caught:
        values.parse_image_reference(image)
    assert message in str(caught.value)
    assert str(caught.value).startswith(("docker calls this an invalid ", "docker refuses ", "an "))


@pytest.mark.parametrize(
    ("path", "normal"), [("/dev/shm/", "/dev/shm"), ("//run", "/run"), ("/a/./b//c/", "/a/b/c")]
)
def test_mount_paths_are_normalised(path: str, normal: str) -> None:
    assert values.normal_path(path) == normal
