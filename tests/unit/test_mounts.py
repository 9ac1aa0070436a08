"""-v/--volume, --mount and --tmpfs: the grammar (plan/mounts.py), the merge and its checks
(plan/options.py), and what the pod gets (plan/manifest.py, plan/filehelpers.py): emptyDirs,
the helpers, claims, the QoS class kept, and the claims the flags record."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_squarepeg.plan import filehelpers
from kubectl_squarepeg.plan.mounts import (
    BindMount,
    Tmpfs,
    VolumeMount,
    human_bytes,
    normal_path,
    parse_mount,
    parse_tmpfs,
    parse_upload_limit,
    parse_volume,
)
from kubectl_squarepeg.plan.values import ValueProblem
from tests.unit.parser_tables import Parser, table_tests
from tests.unit.test_manifest import main_container, plan
from tests.unit.test_options import options, usage_error


@pytest.mark.parametrize(
    ("text", "mount"),
    [
        ("/data:/data", BindMount("/data", "/data")),
        ("./src:/src:ro", BindMount("./src", "/src", read_only=True)),
        ("src/sub:/w/:rw", BindMount("src/sub", "/w")),
        (".:/w", BindMount(".", "/w")),
        ("~/cfg.json:/etc/cfg.json:ro,cached", BindMount("~/cfg.json", "/etc/cfg.json", True)),
        ("cache:/cache", VolumeMount("cache", "/cache")),
        ("cache:/cache:ro,nocopy", VolumeMount("cache", "/cache", read_only=True)),
    ],
)
def test_volume_forms(text: str, mount: Any) -> None:
    assert parse_volume(text) == mount


@pytest.mark.parametrize(
    ("text", "mount"),
    [
        ("type=bind,src=./s,dst=/s,readonly", BindMount("./s", "/s", read_only=True)),
        ("type=bind,source=/s,target=/t,ro=false", BindMount("/s", "/t")),
        ("src=db-data,dst=/var/lib/db", VolumeMount("db-data", "/var/lib/db")),
        ("type=volume,src=v,dst=/v,volume-subpath=a/b", VolumeMount("v", "/v", False, "a/b")),
        ("type=tmpfs,dst=/scratch,tmpfs-size=64m", Tmpfs("/scratch", "64Mi")),
        ('"type=bind","src=/a,b",dst=/c', BindMount("/a,b", "/c")),  # docker reads CSV
    ],
)
def test_mount_forms(text: str, mount: Any) -> None:
    assert parse_mount(text) == mount


@pytest.mark.parametrize(
    ("parse", "text", "says"),
    [
        (parse_volume, "./s:rel", "must be an absolute path"),
        (parse_volume, "./s:/", "cannot be /"),
        (parse_volume, "./s:/x:z", "SELinux relabelling ('z')"),
        (parse_volume, "./s:/x:Z", "SELinux relabelling ('Z')"),
        (parse_volume, "./s:/x:rslave", "mount propagation ('rslave')"),
        (parse_volume, "./s:/x:nocopy", "not a volume option"),
        (parse_volume, "/x", "anonymous volume"),
        (parse_volume, "My_Vol:/x", "neither a path nor a claim name"),
        (parse_volume, "a:b:c:d", "too many ':'"),
        (parse_mount, "type=bind,src=.,dst=/x,bind-propagation=rprivate", "bind-propagation"),
        (parse_mount, "type=volume,src=v,dst=/x,volume-opt=type=nfs", "volume-opt"),
        (parse_mount, "type=npipe,src=p,dst=/x", "type=npipe cannot be used"),
        (parse_mount, "type=overlay,src=p,dst=/x", "not a mount type"),
        (parse_mount, "type=bind,src=.,dst=/x,colour=red", "'colour' is not a key"),
        (parse_mount, "type=bind,src=.,dst=/x,tmpfs-size=1m", "not a key of a bind mount"),
        (parse_mount, "type=bind,dst=/x", "src= is missing"),
        (parse_mount, "type=bind,src=.", "dst= is missing"),
        (parse_mount, "type=volume,src=./d,dst=/x", "use type=bind"),
        (parse_mount, "type=tmpfs,src=a,dst=/x", "no source"),
        (parse_mount, "dst=/x,dst=/y", "given twice"),
    ],
)
def test_bad_forms_say_why(parse: Any, text: str, says: str) -> None:
    with pytest.raises(ValueProblem, match=None) as raised:
        parse(text)
    assert says in str(raised.value)


def test_sizes() -> None:
    assert parse_upload_limit("1g") == 1 << 30
    assert human_bytes(3 << 20) == "3 MiB" and human_bytes(1536 << 20) == "1.5 GiB"
    assert human_bytes(900) == "900 bytes"


# --- options ------------------------------------------------------------------------------


def test_flags_become_binds_claims_and_tmpfs_and_config_sets_the_helper() -> None:
    o = options(
        "files_helper_image: registry.local/busybox:1.36\nmax_upload_bytes: 2g\n",
        volume=("./src:/src", "cache:/cache:ro"),
        mount=("type=tmpfs,dst=/t", "type=bind,src=/etc/x,dst=/x,readonly"),
    )
    assert o.binds == (BindMount("./src", "/src"), BindMount("/etc/x", "/x", True))
    assert o.volume_mounts == (VolumeMount("cache", "/cache", True),)
    assert o.tmpfs == (Tmpfs("/t"),)
    assert o.files_helper_image == "registry.local/busybox:1.36"
    assert o.max_upload_bytes == 2 << 30


def test_defaults_of_the_keys() -> None:
    o = options()
    assert o.files_helper_image == filehelpers.DEFAULT_HELPER_IMAGE
    assert o.max_upload_bytes == 1 << 30


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"volume": ("./a:/x", "b:/x/")}, "two mounts at /x: -v ./a:/x and -v b:/x"),
        ({"volume": ("./a:/dev/shm",), "shm_size": "64m"}, "two mounts at /dev/shm"),
        ({"volume": ("./a:/t",), "tmpfs": ("/t",)}, "two mounts at /t"),
        ({"mount": ("type=tmpfs,dst=/t", "type=bind,src=.,dst=/t")}, "two mounts at /t"),
        ({"volume": ("./a:/x:z",)}, "invalid value './a:/x:z' for --volume; SELinux"),
    ],
)
def test_bad_combinations(given: dict[str, Any], says: str) -> None:
    assert says in usage_error(**given)


def test_a_bad_config_key_value_names_the_key() -> None:
    with pytest.raises(Exception, match="max_upload_bytes"):
        options("max_upload_bytes: lots\n")


# --- the manifest -------------------------------------------------------------------------


def _spec(p: Any) -> dict[str, Any]:
    spec: dict[str, Any] = p.manifest["spec"]
    return spec


def test_a_rw_bind_mount_adds_its_emptydir_both_helpers_and_the_grace() -> None:
    p = plan(volume=("./src:/src",))
    spec = _spec(p)
    assert main_container(p)["volumeMounts"] == [
        {"name": "files-1", "mountPath": "/src", "subPath": "content"}
    ]
    assert [v["name"] for v in spec["volumes"]] == ["files-1", "squarepeg-control"]
    assert spec["volumes"][0] == {"name": "files-1", "emptyDir": {}}
    upload, back = spec["initContainers"]
    assert upload["name"] == "squarepeg-files" and "restartPolicy" not in upload
    assert back["name"] == "squarepeg-files-back" and back["restartPolicy"] == "Always"
    for helper in (upload, back):
        assert helper["image"] == filehelpers.DEFAULT_HELPER_IMAGE
        assert helper["imagePullPolicy"] == "IfNotPresent"
        assert helper["securityContext"]["allowPrivilegeEscalation"] is False
        assert {"name": "files-1", "mountPath": "/squarepeg/mounts/1"} in helper["volumeMounts"]
        assert "resources" not in helper  # main is BestEffort: so is the pod still
    assert upload["securityContext"] is not back["securityContext"]  # no YAML aliases
    assert spec["terminationGracePeriodSeconds"] == filehelpers.COPY_BACK_GRACE_SECONDS
    assert any("a snapshot of ./src fills the emptyDir files-1" in n for n in p.notes)


def test_the_runs_delete_gives_back_the_grace_raised_for_the_copy_back() -> None:
    rw = plan(volume=("./src:/src",)).options
    assert filehelpers.grace_after_copy_back(rw.binds, rw.stop_timeout) == \
        filehelpers.DEFAULT_GRACE_SECONDS
    # The user's own --stop-timeout is the pod's grace already; a ro mount raised nothing.
    timed = plan(volume=("./src:/src",), stop_timeout="5").options
    assert filehelpers.grace_after_copy_back(timed.binds, timed.stop_timeout) is None
    ro = plan(volume=("./cfg:/cfg:ro",)).options
    assert filehelpers.grace_after_copy_back(ro.binds, ro.stop_timeout) is None


def test_a_ro_bind_mount_is_read_only_and_has_no_copy_back() -> None:
    p = plan(volume=("/etc/cfg.json:/etc/cfg.json:ro",), stop_timeout="10")
    spec = _spec(p)
    assert main_container(p)["volumeMounts"][0]["readOnly"] is True
    assert [c["name"] for c in spec["initContainers"]] == ["squarepeg-files"]
    assert spec["terminationGracePeriodSeconds"] == 10
    assert any("read-only in main, never copied back" in n for n in p.notes)


def test_a_named_volume_is_a_claim_and_needs_no_helper() -> None:
    p = plan(mount=("type=volume,src=cache,dst=/c,readonly,volume-subpath=v1",))
    spec = _spec(p)
    assert "initContainers" not in spec
    assert spec["volumes"] == [
        {"name": "claim-1", "persistentVolumeClaim": {"claimName": "cache", "readOnly": True}}
    ]
    assert main_container(p)["volumeMounts"] == [
        {"name": "claim-1", "mountPath": "/c", "readOnly": True, "subPath": "v1"}
    ]
    assert "terminationGracePeriodSeconds" not in spec


def test_passthrough_cannot_replace_what_the_mount_flags_wrote() -> None:
    conf = (
        "kubernetes:\n  spec:\n    initContainers:\n    - name: squarepeg-files\n"
        "      image: evil\n"
    )
    p = plan(conf, volume=("./s:/s",))
    upload = _spec(p)["initContainers"][0]
    assert upload["image"] == filehelpers.DEFAULT_HELPER_IMAGE
    assert any("initContainers" in w and "--volume" in w for w in p.warnings)


@pytest.mark.parametrize(
    ("given", "upload", "back"),
    [
        ({}, {}, {}),
        (
            {"cpus": "2", "memory": "1g"},
            {"requests": {"cpu": 2, "memory": "1Gi"}, "limits": {"cpu": 2, "memory": "1Gi"}},
            {"requests": {"cpu": "50m", "memory": "32Mi"},
             "limits": {"cpu": "50m", "memory": "32Mi"}},
        ),
        (
            {"memory_reservation": "256m"},
            {"requests": {"memory": "256Mi"}},
            {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
        ),
    ],
)
def test_helpers_keep_the_qos_class(given: dict[str, Any], upload: Any, back: Any) -> None:
    p = plan(volume=("./s:/s",), **given)
    first, second = _spec(p)["initContainers"]
    assert first.get("resources", {}) == upload
    assert second.get("resources", {}) == back


def test_with_a_user_the_helpers_run_as_it_without_capabilities() -> None:
    p = plan(volume=("./s:/s",), user="1000:1000")
    context = _spec(p)["initContainers"][0]["securityContext"]
    assert context["runAsUser"] == 1000 and context["runAsGroup"] == 1000
    assert context["runAsNonRoot"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert filehelpers.upload_command(owner_kept=False)[2].count("tar -xo ") == 1


def test_a_job_carries_the_same_pod() -> None:
    p = plan(volume=("./s:/s:ro",), mode="job")
    spec = p.manifest["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["squarepeg-files"]


def test_a_read_only_root_with_a_rw_mount_is_fine_and_says_nothing() -> None:
    p = plan(volume=("./s:/s",), read_only=True)
    assert main_container(p)["securityContext"]["readOnlyRootFilesystem"] is True
    assert "readOnly" not in main_container(p)["volumeMounts"][0]
    assert p.warnings == ()


# --- --tmpfs --------------------------------------------------------------------------------

TMPFS_GOOD: list[tuple[Parser, str, Any]] = [
    (parse_tmpfs, "/tmp", Tmpfs("/tmp")),
    (parse_tmpfs, "/run:size=64m,ro", Tmpfs("/run", "64Mi", True)),
    (parse_tmpfs, "/run:rw,size=1g", Tmpfs("/run", "1Gi", False)),
    # docker's documented example: the mount flags are kept aside for one warning
    (
        parse_tmpfs,
        "/run:rw,noexec,nosuid,size=65536k",
        Tmpfs("/run", "65536Ki", False, ("noexec", "nosuid")),
    ),
    (parse_tmpfs, "//run/:mode=1777", Tmpfs("/run", None, False, ("mode=1777",))),
    (parse_tmpfs, "/dev/shm/", Tmpfs("/dev/shm")),
]
TMPFS_BAD: list[tuple[Parser, str, str]] = [
    (parse_tmpfs, "tmp", "must be an absolute path"),
    (parse_tmpfs, "/tmp:bogus", "'bogus' is not a tmpfs option; docker's are rw, ro"),
    (parse_tmpfs, "/tmp:size=lots", "give a size like 512m"),
]
test_accepted_forms, test_refused_forms_say_the_accepted_form = table_tests(TMPFS_GOOD, TMPFS_BAD)


@pytest.mark.parametrize(
    ("path", "normal"), [("/dev/shm/", "/dev/shm"), ("//run", "/run"), ("/a/./b//c/", "/a/b/c")]
)
def test_mount_paths_are_normalised(path: str, normal: str) -> None:
    assert normal_path(path) == normal
