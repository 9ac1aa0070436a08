"""The API requests a run sends through `kubectl create --raw` and `kubectl get --raw`: the
create and the first watch (docs/decisions/0023; the log stream's is in test_logs.py). Pure."""

from __future__ import annotations

from kubectl_squarepeg.cluster.verbs import create_request, watch_request


def test_a_pod_and_a_job_are_posted_to_their_collections_with_strict_validation() -> None:
    assert create_request("Pod", "ns") == "/api/v1/namespaces/ns/pods?fieldValidation=Strict"
    assert create_request("Job", "ns") == (
        "/apis/batch/v1/namespaces/ns/jobs?fieldValidation=Strict"
    )


def test_the_first_watch_is_by_field_or_label_selector_as_kubectl_get_w_sends_it() -> None:
    # kubesim.md: .../pods?fieldSelector=metadata.name%3DNAME&...&watch=true
    assert watch_request("ns", field_selector="metadata.name=p") == (
        "/api/v1/namespaces/ns/pods?watch=true&fieldSelector=metadata.name%3Dp"
    )
    assert watch_request("ns", selector="job-name=j") == (
        "/api/v1/namespaces/ns/pods?watch=true&labelSelector=job-name%3Dj"
    )


def test_names_are_escaped_in_the_path() -> None:
    # Kubernetes names cannot hold these, but a request must never be cut by one.
    assert create_request("Pod", "a/b").startswith("/api/v1/namespaces/a%2Fb/pods?")
    assert watch_request("a?b", field_selector="x").startswith("/api/v1/namespaces/a%3Fb/pods?")
