"""Cluster policy made with real API objects: a ValidatingAdmissionPolicy, and what a
server-side dry run adds to the manifest (quotas and Pod Security: test_admission.py).

Unlike test_run_scenario.py (kubesim's scenario rules), every object here is made with
kubectl as a cluster admin would make it, so the tests run on localkube too; the ones that
need objects kubesim does not implement say so with `localkube_only`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Squarepeg, wait_until
from tests.e2e.test_admission import assert_refused_at_once, timed_run
from tests.helpers import pod_manifest


@pytest.fixture
def pinned_images_policy(kubesim: Any, namespace: str) -> Iterator[str]:
    """A ValidatingAdmissionPolicy denying `:latest` images, bound to this namespace only
    (policies are cluster-wide, the cluster is shared); deleted afterwards."""
    name = f"pinned-{uuid.uuid4().hex[:8]}"
    objects = [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": name},
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [{
                      "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                      "resources": ["pods"]}]},
                  "validations": [{
                      "expression": "object.spec.containers.all(c, !c.image.endsWith(':latest'))",
                      "message": "images must be pinned"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
         "spec": {"policyName": name, "validationActions": ["Deny"],
                  "matchResources": {"namespaceSelector": {"matchLabels": {
                      "kubernetes.io/metadata.name": namespace}}}}},
    ]
    made = kubesim.kubectl("create", "-f", "-",
                           input="---\n".join(yaml.safe_dump(o) for o in objects).encode())
    assert made.returncode == 0, made.stderr

    def denies() -> bool:  # the API server loads new policies a moment after they are made
        probe = pod_manifest("probe", image="alpine:latest", restart_policy=None)
        done = kubesim.kubectl("create", "--dry-run=server", "-n", namespace, "-f", "-",
                               input=json.dumps(probe).encode())
        return b"images must be pinned" in done.stderr

    try:
        wait_until(denies, 30, "the policy to take effect")
        yield name
    finally:
        kubesim.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy",
                        name, "--wait=false")


@pytest.mark.localkube_only("kubesim has no ValidatingAdmissionPolicy objects (its deny "
                            "rules come from a scenario: test_run_scenario.py)")
def test_a_validating_admission_policy_denial_is_125_with_the_reason(
    squarepeg: Squarepeg, pinned_images_policy: str
) -> None:
    done = squarepeg("run", "alpine:latest", "true")
    assert done.code == 125
    assert done.has_line("error:", f"ValidatingAdmissionPolicy '{pinned_images_policy}'",
                         "images must be pinned"), done.lines
    assert done.has_line(f"admission policy {pinned_images_policy} refused"), done.lines
    assert done.stdout == b""
    pinned = squarepeg("run", "alpine:3.20", "true")
    assert pinned.code == 0, pinned.stderr


@pytest.mark.localkube_only("kubesim has no ValidatingAdmissionPolicy objects")
def test_a_policy_denial_in_job_mode_is_said_at_once(
    squarepeg: Squarepeg, pinned_images_policy: str
) -> None:
    # The Job is admitted; its controller's pod is refused (FailedCreate events), which
    # used to wait out --timeout (issue 33).
    done, seconds = timed_run(squarepeg, "job", "alpine:latest", "true")
    assert_refused_at_once(done, seconds, f"ValidatingAdmissionPolicy '{pinned_images_policy}'",
                           "images must be pinned")
    assert done.has_line(f"admission policy {pinned_images_policy} refused"), done.lines


@pytest.mark.smoke("--dry-run-server")
def test_dry_run_server_answers_with_what_the_api_server_added(
    squarepeg: Squarepeg, namespace: str
) -> None:
    done = squarepeg("run", "--dry-run-server", "--name", "planned", "alpine", "true")
    assert done.code == 0, done.stderr
    pod = yaml.safe_load(done.stdout)
    assert pod["metadata"]["name"] == "planned"
    assert pod["metadata"]["namespace"] == namespace
    assert pod["metadata"]["uid"] and pod["metadata"]["creationTimestamp"]
    spec = pod["spec"]
    assert spec["dnsPolicy"] == "ClusterFirst" and spec["schedulerName"] == "default-scheduler"
    assert {t["key"] for t in spec["tolerations"]} >= {"node.kubernetes.io/not-ready",
                                                        "node.kubernetes.io/unreachable"}
    assert spec["containers"][0]["terminationMessagePath"] == "/dev/termination-log"


@pytest.mark.localkube_only("kubesim has no ServiceAccount admission "
                            "(tests/kubesim/README.md, differences)")
def test_dry_run_server_shows_what_only_the_real_admission_adds(
    squarepeg: Squarepeg,
) -> None:
    done = squarepeg("run", "--dry-run-server", "--name", "planned", "alpine", "true")
    assert done.code == 0, done.stderr
    pod = yaml.safe_load(done.stdout)
    # The ServiceAccount admission plugin mounts a bound token, the cluster's CA and the
    # namespace as a projected volume.
    volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    token = [name for name in volumes if name.startswith("kube-api-access-")]
    assert token, pod["spec"]
    assert {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": token[0],
            "readOnly": True} in pod["spec"]["containers"][0]["volumeMounts"]
    sources = volumes[token[0]]["projected"]["sources"]
    assert {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}} in sources
    assert any(s.get("configMap", {}).get("name") == "kube-root-ca.crt" for s in sources)
