"""kubesim driven by a client nobody here wrote: the official `kubernetes` Python client
(create, list with selectors, watch, read logs, delete, and its errors)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.conftest import Kubesim
from tests.helpers import wait_until


@pytest.fixture(scope="module")
def api(kubesim: Kubesim) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(kubesim.kubeconfig))
    try:
        yield api_client
    finally:
        api_client.close()


def _pod(name: str, command: str, labels: dict[str, str] | None = None) -> client.V1Pod:
    return client.V1Pod(
        api_version="v1", kind="Pod",
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(restart_policy="Never", termination_grace_period_seconds=3,
                              containers=[client.V1Container(
                                  name="main", image="alpine", command=["sh", "-c", command])]))


def test_create_list_watch_logs_delete_a_pod(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    created = core.create_namespaced_pod(namespace, _pod("hello", "echo hello; echo world",
                                                         {"app": "demo", "run": "1"}))
    assert created.metadata.uid and created.spec.dns_policy == "ClusterFirst"
    core.create_namespaced_pod(namespace, _pod("other", "true", {"app": "other"}))
    listed = core.list_namespaced_pod(namespace, label_selector="app=demo,run in (1,2)")
    assert [p.metadata.name for p in listed.items] == ["hello"]
    by_field = core.list_namespaced_pod(namespace, field_selector="metadata.name=other")
    assert [p.metadata.name for p in by_field.items] == ["other"]

    # From the create's resourceVersion: every change after it, however fast the pod ran.
    phases = []
    stream = watch.Watch().stream(core.list_namespaced_pod, namespace,
                                  field_selector="metadata.name=hello", timeout_seconds=30,
                                  resource_version=created.metadata.resource_version)
    for event in stream:
        phases.append((event["type"], event["object"].status.phase))
        if event["object"].status.phase == "Succeeded":
            break
    assert phases[-1] == ("MODIFIED", "Succeeded")
    # In order, never back: a real kubelet may write no `Running` for a quick container
    # (Pending straight to Succeeded: tests/kubesim/README.md, differences); kubesim does.
    order = ["Pending", "Running", "Succeeded"]
    seen = [order.index(phase) for _, phase in phases]
    assert seen == sorted(seen), phases
    # Without one, the watch starts with the synthetic ADDED of the current state.
    first = next(iter(watch.Watch().stream(core.list_namespaced_pod, namespace,
                                           label_selector="app=demo", timeout_seconds=5)))
    assert first["type"] == "ADDED" and first["object"].status.phase == "Succeeded"

    assert core.read_namespaced_pod_log("hello", namespace, container="main") == \
        "hello\nworld\n"
    assert core.read_namespaced_pod_log("hello", namespace, tail_lines=1) == "world\n"

    for name in ("hello", "other"):
        core.delete_namespaced_pod(name, namespace, body=client.V1DeleteOptions(
            propagation_policy="Background"))
    wait_until(lambda: not core.list_namespaced_pod(namespace).items, 30, "the pods to go")
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("hello", namespace)
    assert missing.value.status == 404


def test_watch_timeout_and_resource_version(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    listed = core.list_namespaced_pod(namespace)
    seen: list[Any] = []
    # timeoutSeconds ends the stream cleanly: the generator simply finishes.
    for event in watch.Watch().stream(core.list_namespaced_pod, namespace, timeout_seconds=1,
                                      resource_version=listed.metadata.resource_version):
        seen.append(event)
    assert seen == []


def test_job_runs_and_is_deleted_with_its_pod(api: client.ApiClient, namespace: str) -> None:
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    job = client.V1Job(
        api_version="batch/v1", kind="Job", metadata=client.V1ObjectMeta(name="counted"),
        spec=client.V1JobSpec(backoff_limit=0, template=client.V1PodTemplateSpec(
            spec=client.V1PodSpec(restart_policy="Never", containers=[client.V1Container(
                name="main", image="alpine", command=["sh", "-c", "exit 3"])]))))
    created = batch.create_namespaced_job(namespace, job)
    selector = ",".join(f"{k}={v}" for k, v in created.spec.selector.match_labels.items())
    assert created.spec.backoff_limit == 0 and created.spec.completion_mode == "NonIndexed"
    failed = wait_until(lambda: any(c.type == "Failed" and c.status == "True" for c in (
        batch.read_namespaced_job_status("counted", namespace).status.conditions or [])),
        60, "the Job to fail")
    assert failed
    pods = core.list_namespaced_pod(namespace, label_selector=selector).items
    assert len(pods) == 1
    terminated = pods[0].status.container_statuses[0].state.terminated
    assert terminated.exit_code == 3 and terminated.reason == "Error"
    with pytest.raises(ApiException) as denied:
        batch.create_namespaced_job(namespace, job)
    assert denied.value.status == 409
    batch.delete_namespaced_job("counted", namespace, propagation_policy="Background")
    wait_until(lambda: not core.list_namespaced_pod(namespace, label_selector=selector).items,
               30, "the GC to delete the Job's pod")


def test_errors_carry_the_status(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    bad = _pod("Not_Valid", "true")
    with pytest.raises(ApiException) as invalid:
        core.create_namespaced_pod(namespace, bad)
    assert invalid.value.status == 422 and "metadata.name: Invalid value" in invalid.value.body
    with pytest.raises(ApiException) as no_namespace:
        core.create_namespaced_pod("no-such-namespace", _pod("lost", "true"))
    assert no_namespace.value.status == 404
    assert 'namespaces \\"no-such-namespace\\" not found' in no_namespace.value.body
