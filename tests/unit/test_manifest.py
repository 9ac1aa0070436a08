"""The manifest: names, labels, every docker flag's field, Pod vs Job, passthrough, patches and
the claims that keep explicit flags from being overridden."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_squarepeg.config import files as config
from kubectl_squarepeg.errors import ConfigError
from kubectl_squarepeg.plan import manifest
from kubectl_squarepeg.plan.manifest import Plan, template_pod
from tests.unit.test_options import options, usage_error

RUN_ID = "0b7c2a52-6f1e-4c59-9d55-0d8c3a9e4b11"
LABELS = {
    "app.kubernetes.io/managed-by": "squarepeg",
    "squarepeg.io/run-id": RUN_ID,
    "squarepeg.io/created-by": "alice",
}


def plan(
    *conf_texts: str, image: str = "alpine", command: tuple[str, ...] = (), **given: Any
) -> Plan:
    merged = config.from_texts([(f"c{i}.yaml", t) for i, t in enumerate(conf_texts)], {})
    o = options(*conf_texts, image=image, command=command, **given)
    return manifest.build_plan(
        o, merged, namespace="team-a", run_id=RUN_ID, suffix="a1b2c3", username="alice"
    )


def main_container(p: Plan) -> dict[str, Any]:
    spec = p.manifest["spec"]["template"]["spec"] if p.kind == "Job" else p.manifest["spec"]
    container: dict[str, Any] = spec["containers"][0]
    assert container["name"] == "main"
    return container


# --- names and labels --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "slug"),
    [
        ("alpine", "alpine"),
        ("alpine:3.19", "alpine"),
        ("registry.example.com:5000/foo/bar:tag", "bar"),
        ("localhost:5000/x", "x"),
        ("ubuntu@sha256:" + "a" * 64, "ubuntu"),
        ("ghcr.io/org/my_tool:v1@sha256:abc", "my-tool"),
        ("quay.io/a/b.c__d", "b-c-d"),
    ],
)
def test_image_slug(image: str, slug: str) -> None:
    assert manifest.image_slug(image) == slug


def test_generated_names() -> None:
    assert manifest.generate_name("alpine:3.19", "a1b2c3") == "squarepeg-alpine-a1b2c3"
    long = manifest.generate_name("repo/" + "x" * 80, "a1b2c3")
    assert len(long) == 63 and long.endswith("-a1b2c3")
    assert manifest.generate_name("___", "a1b2c3") == "squarepeg-a1b2c3"


def test_created_by_keeps_valid_names_and_hashes_changed_ones() -> None:
    assert manifest.created_by_value("alice") == "alice"
    assert manifest.created_by_value("Alice.Smith_2") == "Alice.Smith_2"
    changed = manifest.created_by_value("alice smith")
    assert changed.startswith("alice-smith-") and len(changed) == len("alice-smith-") + 8
    # Two names that clean up to the same text still get different values.
    assert manifest.created_by_value("alice smith") != manifest.created_by_value("alice@smith")
    assert manifest.created_by_value("alice-smith") == "alice-smith"
    assert len(manifest.created_by_value("x" * 100)) == 63
    assert len(manifest.created_by_value("")) == 8
    assert len(manifest.created_by_value("ünïcode")) <= 63


def test_labels() -> None:
    assert manifest.squarepeg_labels(run_id="r", created_by="u", keep=False) == {
        "app.kubernetes.io/managed-by": "squarepeg",
        "squarepeg.io/run-id": "r",
        "squarepeg.io/created-by": "u",
    }
    assert (
        manifest.squarepeg_labels(run_id="r", created_by="u", keep=True)["squarepeg.io/keep"]
        == "true"
    )


# --- the Pod -----------------------------------------------------------------------------------


# docker's default seccomp profile, on every pod but a --privileged one's (decision 0420).
DEFAULT_POD_SECURITY = {"seccompProfile": {"type": "RuntimeDefault"}}


def test_the_plain_pod() -> None:
    p = plan(command=("echo", "hi"))
    assert p.manifest == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "squarepeg-alpine-a1b2c3", "namespace": "team-a", "labels": LABELS},
        "spec": {
            "containers": [{"name": "main", "image": "alpine", "args": ["echo", "hi"]}],
            "restartPolicy": "Never",
            "securityContext": DEFAULT_POD_SECURITY,
        },
    }
    assert (p.kind, p.name, p.namespace, p.run_id, p.created_by, p.warnings) == (
        "Pod",
        "squarepeg-alpine-a1b2c3",
        "team-a",
        RUN_ID,
        "alice",
        (),
    )


CONTAINER_FLAGS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"entrypoint": "/bin/sh"}, {"command": ["/bin/sh"]}),
    ({"workdir": "/w"}, {"workingDir": "/w"}),
    ({"env": ("A=1", "B=")}, {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": ""}]}),
    (
        {"env_file": ("/f/a.env",)},
        {"env": [{"name": "A", "value": "file"}, {"name": "B", "value": "file"}]},
    ),
    (
        {"user": "1000:50"},
        {"securityContext": {"runAsUser": 1000, "runAsGroup": 50, "runAsNonRoot": True}},
    ),
    ({"user": "1000"}, {"securityContext": {"runAsUser": 1000, "runAsNonRoot": True}}),
    ({"user": "0"}, {"securityContext": {"runAsUser": 0}}),
    (
        {"security_opt": ("no-new-privileges",)},
        {"securityContext": {"allowPrivilegeEscalation": False}},
    ),
    (
        {"security_opt": ("seccomp=unconfined", "apparmor=unconfined", "label=type:spc_t")},
        {"securityContext": {"seccompProfile": {"type": "Unconfined"},
                             "appArmorProfile": {"type": "Unconfined"},
                             "seLinuxOptions": {"type": "spc_t"}}},
    ),
    (
        {"security_opt": ("apparmor=k8s-guard",)},
        {"securityContext": {"appArmorProfile": {"type": "Localhost",
                                                 "localhostProfile": "k8s-guard"}}},
    ),
    ({"cpus": "0.5"}, {"resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "500m"}}}),
    ({"cpus": "2"}, {"resources": {"requests": {"cpu": 2}, "limits": {"cpu": 2}}}),
    (
        {"memory": "512m"},
        {"resources": {"requests": {"memory": "512Mi"}, "limits": {"memory": "512Mi"}}},
    ),
    ({"gpus": "2"}, {"resources": {"limits": {"nvidia.com/gpu": 2}}}),
    ({"pull": "missing"}, {"imagePullPolicy": "IfNotPresent"}),
    ({"privileged": True}, {"securityContext": {"privileged": True}}),
    ({"read_only": True}, {"securityContext": {"readOnlyRootFilesystem": True}}),
    (
        {"cap_add": ("NET_ADMIN",), "cap_drop": ("ALL",)},
        {"securityContext": {"capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]}}},
    ),
    (
        {"tmpfs": ("/t:size=1m,ro",)},
        {"volumeMounts": [{"name": "tmpfs-1", "mountPath": "/t", "readOnly": True}]},
    ),
    ({"shm_size": "64m"}, {"volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}),
]


@pytest.mark.parametrize(("given", "fields"), CONTAINER_FLAGS)
def test_container_flags(given: dict[str, Any], fields: dict[str, Any]) -> None:
    assert main_container(plan(**given)) == {"name": "main", "image": "alpine", **fields}


POD_FLAGS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"hostname": "box"}, {"hostname": "box"}),
    ({"stop_timeout": "30"}, {"terminationGracePeriodSeconds": 30}),
    ({"runtime": "gvisor"}, {"runtimeClassName": "gvisor"}),
    ({"service_account": "builder"}, {"serviceAccountName": "builder"}),
    ({"priority_class": "high"}, {"priorityClassName": "high"}),
    ({"max_runtime": "90s"}, {"activeDeadlineSeconds": 90}),
    ({"max_runtime": "0.2"}, {"activeDeadlineSeconds": 1}),  # rounded up, never early
    (
        {"add_host": ("a:10.0.0.1", "b:10.0.0.1", "c:10.0.0.2")},
        {
            "hostAliases": [
                {"ip": "10.0.0.1", "hostnames": ["a", "b"]},
                {"ip": "10.0.0.2", "hostnames": ["c"]},
            ]
        },
    ),
    (
        {"dns": ("1.1.1.1",), "dns_search": ("example.com",)},
        {
            "dnsPolicy": "None",
            "dnsConfig": {"nameservers": ["1.1.1.1"], "searches": ["example.com"]},
        },
    ),
    (
        {"platform": "linux/arm64"},
        {"nodeSelector": {"kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64"}},
    ),
    ({"node_selector": ("disk=ssd",)}, {"nodeSelector": {"disk": "ssd"}}),
    (
        {"toleration": ("gpu=true:NoSchedule",)},
        {
            "tolerations": [
                {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
            ]
        },
    ),
    ({"image_pull_secret": ("a", "b")}, {"imagePullSecrets": [{"name": "a"}, {"name": "b"}]}),
    ({"tmpfs": ("/t",)}, {"volumes": [{"name": "tmpfs-1", "emptyDir": {"medium": "Memory"}}]}),
    (
        {"shm_size": "64m"},
        {"volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}}]},
    ),
]


@pytest.mark.parametrize(("given", "fields"), POD_FLAGS)
def test_pod_flags(given: dict[str, Any], fields: dict[str, Any]) -> None:
    spec = plan(**given).manifest["spec"]
    assert {k: v for k, v in spec.items() if k not in ("containers", "restartPolicy")} == {
        "securityContext": DEFAULT_POD_SECURITY, **fields}
    assert spec["restartPolicy"] == "Never"


def test_metadata_flags() -> None:
    p = plan(name="my-run", label=("team=a",), annotation=("note=hi there",), keep=True)
    assert p.manifest["metadata"] == {
        "name": "my-run",
        "namespace": "team-a",
        "labels": {**LABELS, "squarepeg.io/keep": "true", "team": "a"},
        "annotations": {"note": "hi there"},
    }
    assert p.name == "my-run"


def test_config_values_build_the_same_fields() -> None:
    p = plan("cpus: 1\nenv: {A: '1'}\nlabels: {team: a}\nhostname: box\n")
    assert main_container(p)["env"] == [{"name": "A", "value": "1"}]
    assert main_container(p)["resources"]["limits"] == {"cpu": 1}
    assert p.manifest["metadata"]["labels"]["team"] == "a"
    assert p.manifest["spec"]["hostname"] == "box"


# --- the Job -----------------------------------------------------------------------------------


def test_the_job() -> None:
    p = plan(mode="job", command=("true",), label=("team=a",))
    labels = {**LABELS, "team": "a"}
    assert p.manifest == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "squarepeg-alpine-a1b2c3", "namespace": "team-a", "labels": labels},
        "spec": {
            "backoffLimit": 0,
            "completions": 1,
            "parallelism": 1,
            "ttlSecondsAfterFinished": 600,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "main", "image": "alpine", "args": ["true"]}],
                    "restartPolicy": "Never",
                    "securityContext": DEFAULT_POD_SECURITY,
                },
            },
        },
    }
    assert p.kind == "Job"
    # The two label sets are separate objects (no YAML aliases, no shared edits).
    assert (
        p.manifest["metadata"]["labels"] is not p.manifest["spec"]["template"]["metadata"]["labels"]
    )


def test_a_kept_job_has_no_ttl_and_the_ttl_is_configurable() -> None:
    assert "ttlSecondsAfterFinished" not in plan(mode="job", keep=True).manifest["spec"]
    assert "ttlSecondsAfterFinished" not in plan("cleanup: false\n", mode="job").manifest["spec"]
    configured = plan("job_ttl_seconds_after_finished: 60\n", mode="job")
    assert configured.manifest["spec"]["ttlSecondsAfterFinished"] == 60


# --- passthrough, patches and claims ----------------------------------------------------------

PASSTHROUGH = """
kubernetes:
  metadata:
    labels: {team: conf, extra: x}
    annotations: {note: conf}
  spec:
    hostname: conf-host
    containers:
    - name: main
      image: conf-image
      env: [{name: A, value: conf}, {name: C, value: conf}]
      resources: {limits: {cpu: '4'}}
    - name: side
      image: busybox
"""


def test_passthrough_fills_in_everything_no_flag_claimed() -> None:
    p = plan(PASSTHROUGH, image="alpine", env=("A=flag",), hostname="flag-host")
    assert p.manifest["metadata"]["labels"] == {**LABELS, "team": "conf", "extra": "x"}
    assert p.manifest["metadata"]["annotations"] == {"note": "conf"}
    assert p.manifest["spec"]["hostname"] == "flag-host"
    assert p.manifest["spec"]["containers"] == [
        {
            "name": "main",
            "image": "alpine",
            "env": [{"name": "A", "value": "flag"}, {"name": "C", "value": "conf"}],
            "resources": {"limits": {"cpu": "4"}},
        },
        {"name": "side", "image": "busybox"},
    ]
    assert p.warnings == (
        "ignored config kubernetes.spec.hostname (c0.yaml:7): it would change /spec/hostname, "
        "which --hostname set on the command line",
        "ignored config kubernetes.spec.containers[name=main].image (c0.yaml:10): it would "
        "change /spec/containers/[name=main]/image, which IMAGE set on the command line",
        "ignored config kubernetes.spec.containers[name=main].env[name=A].value (c0.yaml:11): "
        "it would change /spec/containers/[name=main]/env/[name=A]/value, which --env set on "
        "the command line",
    )


def test_config_keys_do_not_claim_passthrough_may_override_them() -> None:
    p = plan("hostname: key-host\n" + PASSTHROUGH)
    assert p.manifest["spec"]["hostname"] == "conf-host"
    assert not any("hostname" in w for w in p.warnings)


def test_flags_claim_the_fields_they_wrote() -> None:
    spec = """
kubernetes:
  spec:
    containers:
    - name: main
      resources: {limits: {cpu: '9', memory: 9Gi}}
      securityContext: {runAsUser: 0, privileged: false}
      workingDir: /conf
    tolerations: [{key: conf, operator: Exists}]
    imagePullSecrets: [{name: conf}, {name: flag}]
    nodeSelector: {kubernetes.io/arch: amd64, disk: hdd}
"""
    p = plan(
        spec,
        cpus="1",
        user="1000",
        workdir="/w",
        toleration=("gpu:NoSchedule",),
        image_pull_secret=("flag",),
        platform="linux/arm64",
    )
    container = main_container(p)
    assert container["resources"]["limits"] == {"cpu": 1, "memory": "9Gi"}
    assert container["securityContext"] == {"runAsUser": 1000, "privileged": False,
                                            "runAsNonRoot": True}
    assert container["workingDir"] == "/w"
    assert p.manifest["spec"]["tolerations"] == [
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    # Per-item claim: config may add other pull secrets.
    assert p.manifest["spec"]["imagePullSecrets"] == [{"name": "flag"}, {"name": "conf"}]
    assert p.manifest["spec"]["nodeSelector"] == {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64",
        "disk": "hdd",
    }
    claimed = sorted(w.split(", which ")[1] for w in p.warnings)
    assert claimed == [
        "--cpus set on the command line",
        "--platform set on the command line",
        "--toleration set on the command line",
        "--user set on the command line",
        "--workdir set on the command line",
    ]


def test_reserved_fields_are_always_claimed() -> None:
    meta = """
kubernetes:
  metadata:
    name: other
    namespace: other
    labels: {squarepeg.io/keep: 'true', app.kubernetes.io/managed-by: me, squarepeg.io/x: y}
  spec:
    containers: [{name: main, image: alpine}]
"""
    with pytest.raises(ConfigError) as caught:
        plan(meta)
    assert caught.value.one_line().startswith(
        "config kubernetes.metadata.name (c0.yaml:4) would change /metadata/name, which "
        "squarepeg's run depends on; remove it"
    )
    # The same values as squarepeg's own are no change, and no error.
    same = "kubernetes:\n  spec:\n    restartPolicy: Never\n    containers: [{name: main}]\n"
    assert plan(same).manifest["spec"]["restartPolicy"] == "Never"


@pytest.mark.parametrize(
    ("text", "mode", "field"),
    [
        ("kubernetes:\n  spec:\n    restartPolicy: OnFailure\n", "pod", "/spec/restartPolicy"),
        (
            "kubernetes:\n  spec:\n    restartPolicy: Always\n",
            "job",
            "/spec/template/spec/restartPolicy",
        ),
        (
            "kubernetes:\n  patches:\n  - {op: replace, path: /spec/backoffLimit, value: 2}\n",
            "job",
            "/spec/backoffLimit",
        ),
        (
            "kubernetes:\n  patches:\n  - {op: remove, path: /spec/restartPolicy}\n",
            "pod",
            "/spec/restartPolicy",
        ),
    ],
)
def test_the_runs_contract_is_refused_not_warned(text: str, mode: str, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        plan(text, mode=mode)
    assert f"would change {field}, which squarepeg's run depends on" in caught.value.message


def test_job_mode_rehomes_passthrough_under_the_template() -> None:
    p = plan(PASSTHROUGH, mode="job", hostname="flag-host")
    template = p.manifest["spec"]["template"]
    assert template["metadata"]["labels"] == {**LABELS, "team": "conf", "extra": "x"}
    assert template["metadata"]["annotations"] == {"note": "conf"}
    assert p.manifest["metadata"]["labels"] == LABELS  # the Job's own are untouched
    assert template["spec"]["hostname"] == "flag-host"
    assert [c["name"] for c in template["spec"]["containers"]] == ["main", "side"]
    assert p.warnings[0] == (
        "ignored config kubernetes.spec.hostname (c0.yaml:7): it would change "
        "/spec/template/spec/hostname, which --hostname set on the command line"
    )


PATCHES = """
kubernetes:
  patches:
  - {op: add, path: /metadata/annotations, value: {patched: 'yes'}}
  - {op: add, path: /spec/containers/0/env, value: [{name: P, value: '1'}]}
  - {op: replace, path: /spec/containers/0/image, value: evil}
  - {op: test, path: /kind, value: Pod}
"""


def test_patches_apply_to_the_final_pod_around_claims() -> None:
    p = plan(PATCHES)
    assert p.manifest["metadata"]["annotations"] == {"patched": "yes"}
    assert main_container(p) == {
        "name": "main",
        "image": "alpine",
        "env": [{"name": "P", "value": "1"}],
    }
    assert p.warnings == (
        "ignored config kubernetes.patches[2] `replace /spec/containers/0/image` (c0.yaml:6): "
        "it would change /spec/containers/[name=main]/image, which IMAGE set on the command line",
    )


def test_patches_apply_to_the_job_itself_in_job_mode() -> None:
    p = plan(
        "kubernetes:\n  patches:\n  - {op: add, path: /spec/activeDeadlineSeconds, value: 9}\n",
        mode="job",
    )
    assert p.manifest["spec"]["activeDeadlineSeconds"] == 9
    with pytest.raises(ConfigError) as caught:
        plan(PATCHES, mode="job")
    assert caught.value.one_line().startswith(
        "kubernetes.patches[1] (c0.yaml:5) cannot be applied: "
    )


# --- docker's meanings ---------------------------------------------------------------------


def test_an_empty_entrypoint_makes_the_command_the_whole_command_line() -> None:
    container = main_container(plan(entrypoint="", command=("sh", "-c", "echo hi")))
    assert container["command"] == ["sh", "-c", "echo hi"] and "args" not in container


def test_dns_replaces_the_clusters_nameservers() -> None:
    spec = plan(dns=("1.1.1.1",)).manifest["spec"]
    assert (spec["dnsPolicy"], spec["dnsConfig"]) == ("None", {"nameservers": ["1.1.1.1"]})
    assert "dnsPolicy" not in plan(dns_search=("example.com",)).manifest["spec"]


def test_platform_with_a_variant_or_an_os_alone() -> None:
    assert plan(platform="linux/arm64/v8").manifest["spec"]["nodeSelector"] == {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64",
    }
    assert plan(platform="windows").manifest["spec"]["nodeSelector"] == {
        "kubernetes.io/os": "windows"
    }


def test_dockers_tmpfs_example_works_with_one_warning() -> None:
    p = plan(tmpfs=("/run:rw,noexec,nosuid,size=65536k",))
    assert p.manifest["spec"]["volumes"] == [
        {"name": "tmpfs-1", "emptyDir": {"medium": "Memory", "sizeLimit": "65536Ki"}}
    ]
    assert main_container(p)["volumeMounts"] == [{"name": "tmpfs-1", "mountPath": "/run"}]
    assert p.warnings == (
        "--tmpfs /run: noexec, nosuid cannot be set on a Kubernetes emptyDir and are ignored "
        "(it is mounted with the container runtime's defaults)",
    )


def test_a_flag_mount_wins_at_a_config_volumes_path() -> None:
    conf = """
kubernetes:
  spec:
    containers:
    - name: main
      volumeMounts: [{name: cache, mountPath: /run/}, {name: other, mountPath: /other}]
    volumes: [{name: cache, emptyDir: {}}, {name: other, emptyDir: {}}]
"""
    p = plan(conf, tmpfs=("//run",))
    assert main_container(p)["volumeMounts"] == [
        {"name": "tmpfs-1", "mountPath": "/run"},
        {"name": "other", "mountPath": "/other"},
    ]
    assert p.warnings == (
        "ignored config kubernetes.spec.containers[name=main].volumeMounts[name=cache] "
        "(c0.yaml:6): it would change /spec/containers/[name=main]/volumeMounts/[name=cache] "
        "(mountPath /run/), which --tmpfs set on the command line",
    )


def test_shm_size_wins_at_a_config_mount_of_dev_shm() -> None:
    conf = """
kubernetes:
  spec:
    containers:
    - name: main
      volumeMounts: [{name: shm, mountPath: /dev//shm/}]
    volumes: [{name: shm, emptyDir: {medium: Memory}}]
"""
    p = plan(conf, shm_size="64m")
    assert main_container(p)["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert p.warnings == (
        "ignored config kubernetes.spec.containers[name=main].volumeMounts[name=shm] "
        "(c0.yaml:6): it would change /spec/containers/[name=main]/volumeMounts/[name=shm] "
        "(mountPath /dev//shm/), which --shm-size set on the command line",
    )


# --- the five flags mapped after the first release ------------------------------------------


def test_memory_reservation_is_the_request_and_m_then_only_the_limit() -> None:
    both = main_container(plan(memory="1g", memory_reservation="256m"))["resources"]
    assert both == {"requests": {"memory": "256Mi"}, "limits": {"memory": "1Gi"}}
    alone = main_container(plan(memory_reservation="256m"))["resources"]
    assert alone == {"requests": {"memory": "256Mi"}}
    with_cpus = main_container(plan(cpus="1", memory_reservation="1g"))["resources"]
    assert with_cpus == {"requests": {"cpu": 1, "memory": "1Gi"}, "limits": {"cpu": 1}}


def test_dns_options_alone_keep_the_clusters_dns_policy() -> None:
    spec = plan(dns_option=("ndots:2", "rotate")).manifest["spec"]
    assert "dnsPolicy" not in spec
    assert spec["dnsConfig"] == {"options": [{"name": "ndots", "value": "2"}, {"name": "rotate"}]}
    with_dns = plan(dns=("1.1.1.1",), dns_option=("timeout:1",)).manifest["spec"]
    assert with_dns["dnsPolicy"] == "None"
    assert with_dns["dnsConfig"] == {
        "nameservers": ["1.1.1.1"],
        "options": [{"name": "timeout", "value": "1"}],
    }


def test_group_add_and_sysctls_go_in_the_pods_security_context() -> None:
    p = plan(group_add=("1000", "0"), sysctl=("net.ipv4.ip_forward=1",), user="5")
    assert p.manifest["spec"]["securityContext"] == {
        **DEFAULT_POD_SECURITY,
        "supplementalGroups": [1000, 0],
        "sysctls": [{"name": "net.ipv4.ip_forward", "value": "1"}],
    }
    # -u stays on the container; the pod-level context holds only these and the default.
    assert main_container(p)["securityContext"] == {"runAsUser": 5, "runAsNonRoot": True}
    assert plan().manifest["spec"]["securityContext"] == DEFAULT_POD_SECURITY
    assert "securityContext" not in plan(privileged=True).manifest["spec"]


def test_label_file_labels_are_on_the_pod_and_the_job_template() -> None:
    p = plan(label_file=("/f/a.labels",), mode="job")
    for metadata in (p.manifest["metadata"], p.manifest["spec"]["template"]["metadata"]):
        assert {"team": "a", "owner": "x", "flag": "", "tier": "file"}.items() <= metadata[
            "labels"
        ].items()


def test_the_five_flags_claim_their_fields_per_name_where_the_field_is_a_named_list() -> None:
    spec = """
kubernetes:
  metadata:
    labels: {team: conf, other: conf}
  spec:
    containers:
    - name: main
      resources: {requests: {memory: 9Gi}, limits: {memory: 9Gi}}
    dnsConfig:
      options: [{name: ndots, value: '5'}, {name: edns0}]
    securityContext:
      supplementalGroups: [7]
      sysctls: [{name: net.ipv4.ip_forward, value: '0'}, {name: kernel.msgmax, value: '9'}]
"""
    p = plan(
        spec,
        memory_reservation="1g",
        dns_option=("ndots:2",),
        group_add=("1000",),
        sysctl=("net.ipv4.ip_forward=1",),
        label_file=("/f/a.labels",),
    )
    assert main_container(p)["resources"] == {
        "requests": {"memory": "1Gi"},
        "limits": {"memory": "9Gi"},
    }
    assert p.manifest["spec"]["dnsConfig"]["options"] == [
        {"name": "ndots", "value": "2"},
        {"name": "edns0"},
    ]
    assert p.manifest["spec"]["securityContext"] == {
        **DEFAULT_POD_SECURITY,
        "supplementalGroups": [1000],
        "sysctls": [
            {"name": "net.ipv4.ip_forward", "value": "1"},
            {"name": "kernel.msgmax", "value": "9"},
        ],
    }
    assert {"team": "a", "other": "conf"}.items() <= p.manifest["metadata"]["labels"].items()
    claimed = sorted(w.split(", which ")[1] for w in p.warnings)
    assert claimed == [
        "--dns-option set on the command line",
        "--group-add set on the command line",
        "--label-file set on the command line",
        "--memory-reservation set on the command line",
        "--sysctl set on the command line",
    ]


def test_with_a_reservation_m_claims_only_the_limit() -> None:
    spec = """
kubernetes:
  spec:
    containers:
    - name: main
      resources: {requests: {memory: 9Gi}, limits: {memory: 9Gi}}
"""
    p = plan(spec, memory="2g", memory_reservation="1g")
    assert main_container(p)["resources"] == {
        "requests": {"memory": "1Gi"},
        "limits": {"memory": "2Gi"},
    }
    assert sorted(w.split(", which ")[1] for w in p.warnings) == [
        "--memory set on the command line",
        "--memory-reservation set on the command line",
    ]
    assert "requests/memory" in next(w for w in p.warnings if "--memory-reservation" in w)
    assert "limits/memory" in next(w for w in p.warnings if "--memory set" in w)


# --- --stop-signal (decision 0310) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "signal"),
    [("SIGINT", "SIGINT"), ("int", "SIGINT"), (" quit ", "SIGQUIT"), ("2", "SIGINT"),
     ("9", "SIGKILL"), ("34", "SIGRTMIN"), ("35", "SIGRTMIN+1"), ("64", "SIGRTMAX"),
     ("SIGRTMAX-1", "SIGRTMAX-1"), ("sigcld", "SIGCLD"), ("USR1", "SIGUSR1")],
)  # fmt: skip
def test_stop_signal_is_the_containers_lifecycle_with_the_pods_os(given: str, signal: str) -> None:
    p = plan(stop_signal=given)
    assert main_container(p) == {
        "name": "main", "image": "alpine", "lifecycle": {"stopSignal": signal}
    }
    assert p.manifest["spec"]["os"] == {"name": "linux"}


@pytest.mark.parametrize(
    "bad", ["", "SIGNOPE", "0", "32", "65", "-1", "SIG", "TERM9", "٣", "²", "1" * 5000, "002"]
)
def test_a_stop_signal_kubernetes_cannot_take_is_refused_at_the_flag(bad: str) -> None:
    assert "for --stop-signal" in usage_error(stop_signal=bad)


def test_stop_signal_os_follows_platform() -> None:
    p = plan(stop_signal="SIGTERM", platform="windows/amd64")
    assert p.manifest["spec"]["os"] == {"name": "windows"}


def test_stop_signal_from_config_and_the_flag_over_it() -> None:
    assert main_container(plan("stop_signal: SIGQUIT\n"))["lifecycle"] == {
        "stopSignal": "SIGQUIT"
    }
    flagged = plan("stop_signal: SIGQUIT\n", stop_signal="SIGINT")
    assert main_container(flagged)["lifecycle"] == {"stopSignal": "SIGINT"}
    assert "spec" not in plan().manifest or "os" not in plan().manifest["spec"]


def test_stop_signal_claims_its_fields() -> None:
    p = plan(
        """
kubernetes:
  spec:
    os: {name: windows}
    containers:
    - name: main
      lifecycle: {stopSignal: SIGKILL, preStop: {sleep: {seconds: 1}}}
""",
        stop_signal="SIGINT",
    )
    assert main_container(p)["lifecycle"] == {
        "stopSignal": "SIGINT", "preStop": {"sleep": {"seconds": 1}}
    }
    assert p.manifest["spec"]["os"] == {"name": "linux"}
    assert sorted(w.split(", which ")[1] for w in p.warnings) == [
        "--stop-signal set on the command line", "--stop-signal set on the command line"
    ]


def test_stop_signal_in_a_job() -> None:
    p = plan(stop_signal="SIGINT", mode="job")
    assert main_container(p)["lifecycle"] == {"stopSignal": "SIGINT"}
    assert p.manifest["spec"]["template"]["spec"]["os"] == {"name": "linux"}


def test_the_pod_of_a_jobs_template_is_what_its_controller_would_make() -> None:
    job = plan(mode="job", command=("true",), label=("team=a",)).manifest
    pod = template_pod(job)
    assert pod["kind"] == "Pod" and pod["apiVersion"] == "v1"
    assert pod["metadata"] == {"name": "squarepeg-alpine-a1b2c3-dry-run",
                               "namespace": "team-a",
                               "labels": job["spec"]["template"]["metadata"]["labels"]}
    assert pod["spec"] == job["spec"]["template"]["spec"]
    assert pod["spec"] is not job["spec"]["template"]["spec"]
