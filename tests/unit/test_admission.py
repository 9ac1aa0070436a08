"""cluster/admission.py: each kind of admission refusal told apart from RBAC, with its fix.

The texts are the API server's own (kube-apiserver 1.34 on localkube, and the job
controller's FailedCreate wording)."""

from __future__ import annotations

import pytest

from kubectl_squarepeg.cluster import admission

POD_SECURITY = (
    'pods "sq-x" is forbidden: violates PodSecurity "restricted:latest": '
    "allowPrivilegeEscalation != false (container \"main\" must set "
    "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "
    '"main" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod '
    'or container "main" must set securityContext.runAsNonRoot=true), seccompProfile (pod or '
    'container "main" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
    '"Localhost")'
)
NEEDS_LIMITS = (
    'pods "sq-x" is forbidden: failed quota: team: must specify limits.cpu for: main; '
    "limits.memory for: main"
)
EXHAUSTED = (
    'pods "sq-x" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=0, '
    "limited: pods=0"
)
LIMIT_RANGE = (
    'pods "sq-x" is forbidden: [maximum cpu usage per Container is 500m, but limit is 2, '
    "maximum memory usage per Container is 256Mi, but limit is 1Gi]"
)
POLICY = (
    "pods \"sq-x\" is forbidden: ValidatingAdmissionPolicy 'pinned' with binding 'pinned' "
    "denied request: images must be pinned"
)
WEBHOOK_DENIED = 'admission webhook "policy.example.com" denied the request: no root'
WEBHOOK_UNREACHABLE = (
    'Internal error occurred: failed calling webhook "inject.example.com": failed to call '
    'webhook: Post "https://127.0.0.1:9443/mutate?timeout=10s": dial tcp 127.0.0.1:9443: '
    "connect: connection refused"
)
RBAC = (
    'pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the '
    'namespace "team"'
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (POD_SECURITY, "pod-security"),
        (NEEDS_LIMITS, "quota-needs-limits"),
        (EXHAUSTED, "quota-exceeded"),
        (LIMIT_RANGE, "limit-range"),
        (POLICY, "policy"),
        (WEBHOOK_DENIED, "webhook-denied"),
        (WEBHOOK_UNREACHABLE, "webhook-unreachable"),
    ],
)
def test_each_refusal_is_told_by_its_kind(text: str, kind: str) -> None:
    refused = admission.classify(text)
    assert refused is not None and refused.kind == kind
    # The job controller's event says the same after its own words.
    from_event = admission.classify(admission.JOB_PREFIX + text)
    assert from_event is not None and from_event.kind == kind


@pytest.mark.parametrize(
    "text",
    [RBAC, 'namespaces "nope" not found', 'pods "x" already exists', "connection refused"],
)
def test_what_is_no_admission_refusal_is_left_to_the_caller(text: str) -> None:
    assert admission.classify(text) is None


def test_the_reason_loses_the_controllers_and_the_apis_words_in_front() -> None:
    assert admission.reason_of(admission.JOB_PREFIX + EXHAUSTED) == (
        "exceeded quota: compute, requested: pods=1, used: pods=0, limited: pods=0"
    )
    assert admission.reason_of(WEBHOOK_DENIED) == WEBHOOK_DENIED


def test_pod_security_names_the_flags_that_satisfy_each_violation() -> None:
    refused = admission.classify(POD_SECURITY)
    assert refused is not None
    assert 'Pod Security "restricted:latest"' in refused.fix
    assert "--cap-drop ALL" in refused.fix
    assert "--user UID with a UID other than 0" in refused.fix
    assert "--security-opt no-new-privileges" in refused.fix
    assert "no --security-opt seccomp=unconfined" in refused.fix
    assert "permission" not in refused.fix


def _describe(kind: str) -> str:
    return f"kubectl describe {kind} -n team"


def test_quota_and_limit_range_name_docker_flags() -> None:
    for text in (NEEDS_LIMITS, EXHAUSTED, LIMIT_RANGE):
        refused = admission.classify(text, describe=_describe)
        assert refused is not None and "--cpus" in refused.fix, text
    exhausted = admission.classify(EXHAUSTED, describe=_describe)
    assert exhausted is not None
    assert "`kubectl describe resourcequota -n team`" in exhausted.fix


def test_an_unreachable_webhook_is_not_the_runs_to_fix() -> None:
    refused = admission.classify(WEBHOOK_UNREACHABLE)
    assert refused is not None and not refused.fixable
    assert "inject.example.com" in refused.fix and "admins" in refused.fix
    denied = admission.classify(WEBHOOK_DENIED)
    assert denied is not None and denied.fixable and "policy.example.com" in denied.fix
