"""The API server driven by the real kubectl, in-process and without the cluster half: what
kubectl sends and prints for create, dry-run, get, list, watch, patch and delete, and each
documented error exactly as kubesim.md records it."""

from __future__ import annotations

import collections
import json
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.helpers import json_stream, kill_leftover, pod_manifest, wait_until
from tests.kubesim.inprocess import InProcess, running

SCENARIO: dict[str, Any] = {
    "namespaces": ["quota-ns", "policy-ns"],
    "tokens": {"alice-token": {"user": "alice", "rules": [
        {"verbs": ["get", "list", "watch"], "resources": ["pods"]}]}},
    "quotas": [{"namespace": "quota-ns", "name": "compute",
                "hard": {"pods": "1", "requests.cpu": "1"}}],
    "admission": [
        {"type": "deny", "name": "policy.example.com", "namespaces": ["policy-ns"],
         "image_pattern": "*:latest", "message": "images must be pinned"},
        {"type": "add-label", "name": "labeler.example.com", "namespaces": ["policy-ns"],
         "labels": {"team": "blue"}},
        {"type": "add-sidecar", "name": "sidecar.example.com", "namespaces": ["policy-ns"],
         "resources": ["pods", "jobs"],
         "container": {"name": "proxy", "image": "busybox:1.36", "command": ["sleep", "1d"]}},
    ],
}


@pytest.fixture(scope="module")
def k(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    with running(tmp_path_factory.mktemp("inproc"), SCENARIO) as sim:
        yield sim


def pod(name: str, image: str = "alpine:3.20", **spec: Any) -> dict[str, Any]:
    return pod_manifest(name, ["sh", "-c", "echo hi"], image=image, **spec)


def job(name: str, **meta: Any) -> dict[str, Any]:
    template = pod("unused")
    template.pop("apiVersion"), template.pop("kind")
    template["metadata"] = {"labels": {"app": name}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, **meta},
            "spec": {"template": template}}


def create(k: InProcess, obj: dict[str, Any], *args: str) -> subprocess.CompletedProcess[bytes]:
    return k.kubectl("create", "-f", "-", *args, input=json.dumps(obj).encode())


def ok(done: subprocess.CompletedProcess[bytes]) -> str:
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout.decode()


def err(done: subprocess.CompletedProcess[bytes]) -> str:
    assert done.returncode != 0, done.stdout.decode(errors="replace")
    return done.stderr.decode(errors="replace")


def set_running(k: InProcess, namespace: str, name: str, node: str = "kubesim-node") -> None:
    """Stand in for the scheduler and kubelet: bound and Running."""
    def mutate(obj: dict[str, Any]) -> None:
        obj["spec"]["nodeName"] = node
        obj["status"]["phase"] = "Running"
    assert k.sim.store.update("pods", namespace, name, mutate) is not None


# --- discovery and the wire ------------------------------------------------------------------


def test_version_discovery_and_openapi(k: InProcess) -> None:
    version = json.loads(ok(k.kubectl("version", "-o", "json")))
    assert version["serverVersion"]["minor"] == "32"
    status, headers, _ = k.request("GET", "/version?timeout=5s")
    assert status == 200 and headers["Cache-Control"] == "no-cache, private"
    listing = ok(k.kubectl("api-resources", "--no-headers"))
    rows = {line.split()[0]: line.split() for line in listing.splitlines()}
    assert rows["pods"][1:3] == ["po", "v1"] and rows["jobs"][1] == "batch/v1"
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    status, headers, body = k.request("GET", "/api", headers={
        "Accept": aggregated + ",application/json"})
    assert headers["Content-Type"] == aggregated
    pods = json.loads(body)["items"][0]["versions"][0]["resources"][0]
    assert pods["resource"] == "pods" and {"subresource": "log", "responseKind": {
        "group": "", "version": "v1", "kind": "Pod"}, "verbs": ["get"]} in pods["subresources"]
    status, _, body = k.request("GET", "/apis", headers={"Accept": "application/json"})
    assert status == 200 and json.loads(body)["kind"] == "APIGroupList"
    root = json.loads(k.request("GET", "/openapi/v3")[2])
    url = root["paths"]["apis/batch/v1"]["serverRelativeURL"]
    document = json.loads(k.request("GET", url)[2])
    patch_ops = [p["patch"] for p in document["paths"].values() if "patch" in p]
    assert any(op["x-kubernetes-group-version-kind"]["kind"] == "Job"
               and any(p["name"] == "fieldValidation" for p in op["parameters"])
               for op in patch_ops)


def test_every_request_needs_the_token(k: InProcess) -> None:
    status, _, body = k.request("GET", "/api/v1/pods", token="wrong")
    assert status == 401
    assert json.loads(body) == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Failure", "message": "Unauthorized",
                                "reason": "Unauthorized", "code": 401}
    # With discovery cached, kubectl meets the 401 on the list itself.
    text = err(k.kubectl("--token", "wrong", "get", "pods"))
    assert text.splitlines()[-1] == "error: You must be logged in to the server (Unauthorized)"


# --- create, defaults, dry-run -------------------------------------------------------------


def test_create_fills_in_what_an_apiserver_does(k: InProcess) -> None:
    assert ok(create(k, pod("defaults", image="alpine"))) == "pod/defaults created\n"
    got = json.loads(ok(k.kubectl("get", "pod", "defaults", "-o", "json")))
    meta, spec = got["metadata"], got["spec"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0 and meta["namespace"] == "default"
    assert spec["dnsPolicy"] == "ClusterFirst" and spec["schedulerName"] == "default-scheduler"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["serviceAccountName"] == "default" and spec["securityContext"] == {}
    assert spec["enableServiceLinks"] is True and spec["priority"] == 0
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": 300} in spec["tolerations"]
    main = spec["containers"][0]
    assert main["imagePullPolicy"] == "Always"  # no tag means latest
    assert main["terminationMessagePath"] == "/dev/termination-log"
    assert main["terminationMessagePolicy"] == "File"
    assert got["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    pinned = json.loads(ok(create(k, pod("pinned"), "-o", "json")))
    assert pinned["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    k.sim.store.delete("pods", "default", "defaults")
    k.sim.store.delete("pods", "default", "pinned")


def test_job_defaults_selector_and_labels(k: InProcess) -> None:
    created = json.loads(ok(create(k, job("defaults-job"), "-o", "json")))
    uid = created["metadata"]["uid"]
    spec = created["spec"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = spec["template"]["metadata"]["labels"]
    assert labels == {"app": "defaults-job", "batch.kubernetes.io/controller-uid": uid,
                      "batch.kubernetes.io/job-name": "defaults-job", "controller-uid": uid,
                      "job-name": "defaults-job"}
    assert created["metadata"]["labels"] == labels  # the Go map aliasing, reproduced
    assert spec["backoffLimit"] == 6 and spec["completionMode"] == "NonIndexed"
    assert spec["completions"] == 1 and spec["parallelism"] == 1 and spec["suspend"] is False
    assert "manualSelector" not in spec
    own = json.loads(ok(create(k, job("labelled-job", labels={"mine": "yes"}), "-o", "json")))
    assert own["metadata"]["labels"] == {"mine": "yes"}
    for name in ("defaults-job", "labelled-job"):
        k.sim.store.delete("jobs", "default", name)


def test_dry_run_server_runs_everything_but_stores_nothing(k: InProcess) -> None:
    shown = json.loads(ok(create(k, pod("dry"), "--dry-run=server", "-o", "json")))
    assert shown["metadata"]["uid"] and "resourceVersion" not in shown["metadata"]
    assert shown["spec"]["dnsPolicy"] == "ClusterFirst"
    assert "NotFound" in err(k.kubectl("get", "pod", "dry"))


def test_admission_runs_under_dry_run_too(k: InProcess) -> None:
    denied = err(k.kubectl("create", "-n", "policy-ns", "-f", "-", "--dry-run=server",
                           input=json.dumps(pod("dry", image="alpine:latest")).encode()))
    assert 'admission webhook "policy.example.com" denied the request' in denied
    forbidden = err(k.kubectl("--token", "alice-token", "create", "-f", "-",
                              "--dry-run=server", input=json.dumps(pod("dry")).encode()))
    assert 'User "alice" cannot create resource "pods"' in forbidden
    first = pod("holder")
    first["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    ok(create(k, first, "-n", "quota-ns"))
    try:
        second = pod("dry")
        second["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
        over = err(create(k, second, "-n", "quota-ns", "--dry-run=server"))
        assert "exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1" \
            in over
        mutated = json.loads(ok(k.kubectl("create", "-n", "policy-ns", "-f", "-", "-o", "json",
                                          "--dry-run=server",
                                          input=json.dumps(pod("dry")).encode())))
        assert mutated["metadata"]["labels"] == {"team": "blue"}
        assert [c["name"] for c in mutated["spec"]["containers"]] == ["main", "proxy"]
    finally:
        k.sim.store.delete("pods", "quota-ns", "holder")


def test_generate_name(k: InProcess) -> None:
    manifest = pod("")
    manifest["metadata"] = {"generateName": "gen-"}
    name = ok(create(k, manifest, "-o", "name")).strip()
    assert name.startswith("pod/gen-") and len(name) == len("pod/gen-") + 5
    k.sim.store.delete("pods", "default", name.split("/", 1)[1])


# --- errors as kubectl prints them -----------------------------------------------------------

ERRORS = [
    ("403 create", ["--token", "alice-token"], pod("forbidden"), [],
     'Error from server (Forbidden): error when creating "STDIN": pods is forbidden: User '
     '"alice" cannot create resource "pods" in API group "" in the namespace "default"'),
    ("409", [], pod("taken"), [],
     'Error from server (AlreadyExists): error when creating "STDIN": pods "taken" already '
     "exists"),
    ("422 one cause", [], pod("noimage", image=""), [],
     'The Pod "noimage" is invalid: spec.containers[0].image: Required value'),
    ("422 causes", [], {**pod("Bad_Name"), "spec": {"containers": [{"name": "main"}],
                                                   "restartPolicy": "Sometimes"}}, [],
     'The Pod "Bad_Name" is invalid: \n'
     "* metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must "
     "consist of lower case alphanumeric characters, '-' or '.', and must start and end with "
     "an alphanumeric character (e.g. 'example.com', regex used for validation is "
     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')\n"
     "* spec.containers[0].image: Required value\n"
     '* spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
     '"OnFailure", "Never"'),
    ("400 strict", [], {**pod("strict"), "spec": {**pod("strict")["spec"], "foo": 1}}, [],
     'Error from server (BadRequest): error when creating "STDIN": Pod in version "v1" cannot '
     'be handled as a Pod: strict decoding error: unknown field "spec.foo"'),
    ("400 strict nested", [], {**pod("strict2"), "spec": {"containers": [
        {"name": "main", "image": "alpine", "imagePullPolice": "Never"}]}}, [],
     'Error from server (BadRequest): error when creating "STDIN": Pod in version "v1" cannot '
     'be handled as a Pod: strict decoding error: unknown field '
     '"spec.containers[0].imagePullPolice"'),
    ("quota", ["-n", "quota-ns"], pod("over", image="alpine:3"), ["quota-first"],
     'Error from server (Forbidden): error when creating "STDIN": pods "over" is forbidden: '
     "exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1"),
    ("webhook", ["-n", "policy-ns"], pod("latest", image="alpine:latest"), [],
     'Error from server: error when creating "STDIN": admission webhook "policy.example.com" '
     "denied the request: images must be pinned"),
    ("namespace", ["-n", "no-such-ns"], pod("lost"), [],
     'Error from server (NotFound): error when creating "STDIN": namespaces "no-such-ns" not '
     "found"),
]


@pytest.mark.parametrize(("flags", "manifest", "setup", "expected"),
                         [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_render_exactly(k: InProcess, flags: list[str], manifest: dict[str, Any],
                               setup: list[str], expected: str) -> None:
    made: list[tuple[str, str]] = []
    if manifest["metadata"]["name"] == "taken":
        ok(create(k, pod("taken")))
        made.append(("default", "taken"))
    if "quota-first" in setup:
        first = pod("first", image="alpine:3")
        first["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
        ok(k.kubectl("create", "-n", "quota-ns", "-f", "-", input=json.dumps(first).encode()))
        made.append(("quota-ns", "first"))
        manifest["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    try:
        text = err(k.kubectl(*flags, "create", "-f", "-", input=json.dumps(manifest).encode()))
        assert text.rstrip("\n") == expected
    finally:
        for namespace, name in made:
            k.sim.store.delete("pods", namespace, name)


def test_forbidden_forms_for_named_and_cluster_scoped_requests(k: InProcess) -> None:
    assert err(k.kubectl("--token", "alice-token", "delete", "pod", "p")).strip() == (
        'Error from server (Forbidden): pods "p" is forbidden: User "alice" cannot delete '
        'resource "pods" in API group "" in the namespace "default"')
    assert err(k.kubectl("--token", "alice-token", "get", "namespaces")).strip() == (
        'Error from server (Forbidden): namespaces is forbidden: User "alice" cannot list '
        'resource "namespaces" in API group "" at the cluster scope')
    assert err(k.kubectl("--token", "alice-token", "get", "jobs")).strip() == (
        'Error from server (Forbidden): jobs.batch is forbidden: User "alice" cannot list '
        'resource "jobs" in API group "batch" in the namespace "default"')
    assert ok(k.kubectl("--token", "alice-token", "get", "pods", "-o", "name")) == ""


def test_quota_needs_declared_requests_and_mutations_apply(k: InProcess) -> None:
    text = err(create(k, pod("bare", image="alpine:3"), "-n", "quota-ns"))
    assert text.strip().endswith('pods "bare" is forbidden: failed quota: compute: must '
                                 "specify requests.cpu for: main")
    made = json.loads(ok(k.kubectl("create", "-n", "policy-ns", "-f", "-", "-o", "json",
                                   input=json.dumps(pod("mutated")).encode())))
    assert made["metadata"]["labels"] == {"team": "blue"}
    names = [c["name"] for c in made["spec"]["containers"]]
    assert names == ["main", "proxy"]
    assert made["spec"]["containers"][1]["imagePullPolicy"] == "IfNotPresent"
    k.sim.store.delete("pods", "policy-ns", "mutated")


# --- watch --------------------------------------------------------------------------------


def watch_output(k: InProcess, args: list[str], changes: Callable[[], None]) -> str:
    """Run `kubectl ARGS` (a watch), make the changes, then drop the watch once every event
    was sent: kubectl must end with 0. Its stdout."""
    watcher = k.start_kubectl(*args)
    try:
        wait_until(lambda: k.sim.api.open_watches(), 10, "kubectl to open its watch")
        changes()
        wait_until(lambda: k.sim.api.pending_events() == 0, 10, "every event to be sent")
        k.sim.api.drop_watches()
        out, errors = watcher.communicate(timeout=20)
    finally:
        kill_leftover(watcher)
    assert watcher.returncode == 0, errors
    return out.decode()


def test_watch_by_name_sends_the_synthetic_added_then_each_change(k: InProcess) -> None:
    ok(create(k, pod("watched")))

    def changes() -> None:
        ok(k.kubectl("label", "pod", "watched", "step=one"))
        ok(k.kubectl("label", "pod", "watched", "step=two", "--overwrite"))
        k.sim.store.delete("pods", "default", "watched")

    objects = json_stream(watch_output(k, ["get", "pod", "watched", "-w", "-o", "json"],
                                       changes))
    # The GET's object, then one per event after the swallowed synthetic ADDED.
    steps = [o["metadata"].get("labels", {}).get("step") for o in objects]
    assert steps == [None, "one", "two", "two"]
    assert all(o["kind"] == "Pod" for o in objects)


def test_watch_of_a_missing_pod_ends_with_not_found(k: InProcess) -> None:
    done = k.kubectl("get", "pod", "never-there", "-w", "-o", "json")
    assert done.returncode == 1
    assert done.stderr.decode().strip() == 'Error from server (NotFound): pods "never-there" ' \
                                           "not found"


def test_label_selector_watch_sees_objects_enter_and_leave(k: InProcess) -> None:
    def changes() -> None:
        ok(create(k, {**pod("enter"), "metadata": {"name": "enter", "labels": {"tier": "web"}}}))
        ok(create(k, {**pod("other"), "metadata": {"name": "other", "labels": {"tier": "db"}}}))
        ok(k.kubectl("label", "pod", "enter", "tier=db", "--overwrite"))

    try:
        out = watch_output(k, ["get", "pods", "-l", "tier=web", "-w", "--output-watch-events",
                               "-o", "json"], changes)
    finally:
        for name in ("enter", "other"):
            k.sim.store.delete("pods", "default", name)
    events = [json.loads(line) for line in out.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "enter"), ("DELETED", "enter")]


def test_human_watch_prints_table_rows(k: InProcess) -> None:
    ok(create(k, pod("rows")))
    try:
        out = watch_output(k, ["get", "pods", "rows", "-w"],
                           lambda: ok(k.kubectl("label", "pod", "rows", "x=y")))
    finally:
        k.sim.store.delete("pods", "default", "rows")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert [line.split()[:3] for line in lines[1:]] == [["rows", "0/1", "Pending"]] * 2


def test_watch_timeout_ends_the_stream_cleanly(k: InProcess) -> None:
    rv = json.loads(k.request("GET", "/api/v1/namespaces/default/pods")[2])[
        "metadata"]["resourceVersion"]
    status, headers, body = k.request(
        "GET", f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}"
               "&timeoutSeconds=1&allowWatchBookmarks=true")
    assert status == 200 and headers["Transfer-Encoding"] == "chunked" and body == b""


def test_watch_from_a_too_old_resource_version_is_410(k: InProcess) -> None:
    store = k.sim.store
    kept = store._history
    store._history = collections.deque(kept, maxlen=3)  # a short memory, for this test only
    try:
        for i in range(5):
            ok(create(k, pod(f"churn-{i}")))
        for i in range(5):
            store.delete("pods", "default", f"churn-{i}")
        status, _, body = k.request("GET", "/api/v1/namespaces/default/pods?watch=true"
                                           "&resourceVersion=2")
    finally:
        store._history = collections.deque(store._history, maxlen=kept.maxlen)
    event = json.loads(body)
    assert status == 200 and event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
    assert event["object"]["message"].startswith("too old resource version: 2")


# --- lists ----------------------------------------------------------------------------------


def test_get_pods_and_jobs_by_label_selector(k: InProcess) -> None:
    ok(k.kubectl("create", "namespace", "lists"))
    docs = [
        {**pod("a1"), "metadata": {"name": "a1", "labels": {"a": "b"}}},
        {**pod("a2"), "metadata": {"name": "a2", "labels": {"a": "b", "c": "x"}}},
        {**pod("a3"), "metadata": {"name": "a3", "labels": {"a": "z"}}},
        job("j1", labels={"a": "b"}),
        job("j2", labels={"a": "b", "c": "y"}),
    ]
    for doc in docs:
        ok(k.kubectl("create", "-n", "lists", "-f", "-", input=json.dumps(doc).encode()))
    listed = json.loads(ok(k.kubectl("get", "pods,jobs", "-n", "lists", "-l", "a=b,!c",
                                     "-o", "json")))
    assert sorted(i["metadata"]["name"] for i in listed["items"]) == ["a1", "j1"]
    assert listed["kind"] == "List"
    by_set = ok(k.kubectl("get", "pods", "-n", "lists", "-l", "a in (b,z),c notin (x)",
                          "-o", "name"))
    assert by_set.split() == ["pod/a1", "pod/a3"]
    chunked = ok(k.kubectl("get", "pods", "-n", "lists", "--chunk-size=1", "-o", "name"))
    assert chunked.split() == ["pod/a1", "pod/a2", "pod/a3"]
    table = ok(k.kubectl("get", "pods", "-n", "lists"))
    assert table.splitlines()[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    ok(k.kubectl("delete", "namespace", "lists", "--wait=false"))
    wait_until(lambda: k.sim.store.get_raw("namespaces", None, "lists") is None, 10,
               "the namespace to go with its pods and jobs")
    assert k.sim.store.list_raw("pods", "lists")[0] == []


def test_list_pages_and_field_selectors(k: InProcess) -> None:
    ok(k.kubectl("create", "namespace", "pages"))
    for i in range(7):
        ok(k.kubectl("create", "-n", "pages", "-f", "-", input=json.dumps(pod(f"p{i}")).encode()))
    set_running(k, "pages", "p3")
    names, token = [], ""
    while True:
        path = "/api/v1/namespaces/pages/pods?limit=3" + (f"&continue={token}" if token else "")
        page = json.loads(k.request("GET", path)[2])
        names += [i["metadata"]["name"] for i in page["items"]]
        assert all("kind" not in i for i in page["items"])
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert names == [f"p{i}" for i in range(7)]
    running_pods = ok(k.kubectl("get", "pods", "-n", "pages", "--field-selector",
                                "status.phase=Running", "-o", "name"))
    assert running_pods.split() == ["pod/p3"]
    bad = err(k.kubectl("get", "pods", "-n", "pages", "--field-selector", "spec.foo=1"))
    assert "field label not supported: spec.foo" in bad
    for i in range(7):
        k.sim.store.delete("pods", "pages", f"p{i}")


def test_get_events_by_involved_object(k: InProcess) -> None:
    event = {"apiVersion": "v1", "kind": "Event",
             "metadata": {"name": "target.1"}, "type": "Warning", "reason": "FailedScheduling",
             "message": "0/1 nodes are available: 1 Insufficient cpu.",
             "involvedObject": {"kind": "Pod", "name": "target", "namespace": "default"},
             "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
             "count": 1, "source": {"component": "default-scheduler"}}
    ok(create(k, event))
    ok(create(k, {**event, "metadata": {"name": "other.1"},
                  "involvedObject": {"kind": "Pod", "name": "other"}}))
    listed = json.loads(ok(k.kubectl("get", "events", "--field-selector",
                                      "involvedObject.name=target", "-o", "json")))
    assert [e["reason"] for e in listed["items"]] == ["FailedScheduling"]
    table = ok(k.kubectl("get", "events", "--field-selector", "involvedObject.name=target"))
    header, row = table.splitlines()
    assert header.split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "Warning" in row and "pod/target" in row and "0/1 nodes are available" in row


# --- update and patch -----------------------------------------------------------------------


def test_patch_in_each_format_and_immutability(k: InProcess) -> None:
    ok(create(k, pod("patched")))
    ok(k.kubectl("patch", "pod", "patched", "--type=merge", "-p",
                 '{"metadata":{"labels":{"m":"1"}}}'))
    ok(k.kubectl("patch", "pod", "patched", "-p",
                 '{"spec":{"containers":[{"name":"main","image":"alpine:3.21"}]}}'))
    ok(k.kubectl("patch", "pod", "patched", "--type=json", "-p",
                 '[{"op":"add","path":"/metadata/annotations","value":{"j":"2"}}]'))
    got = json.loads(ok(k.kubectl("get", "pod", "patched", "-o", "json")))
    assert got["metadata"]["labels"] == {"m": "1"} and got["metadata"]["annotations"] == {"j": "2"}
    assert got["spec"]["containers"][0]["image"] == "alpine:3.21"
    assert got["spec"]["containers"][0]["command"] == ["sh", "-c", "echo hi"]  # merged by name
    refused = err(k.kubectl("patch", "pod", "patched", "--type=merge", "-p",
                            '{"spec":{"restartPolicy":"Always"}}'))
    assert 'The Pod "patched" is invalid: spec: Forbidden: pod updates may not change fields' \
        in refused
    k.sim.store.delete("pods", "default", "patched")


def test_apply_client_side_and_server_side(k: InProcess) -> None:
    for mode, name in (("--server-side", "ssa"), ("--server-side=false", "csa")):
        manifest = pod(name)
        manifest["metadata"]["labels"] = {"v": "1"}
        assert ok(k.kubectl("apply", mode, "-f", "-", input=json.dumps(manifest).encode())) \
            in (f"pod/{name} created\n", f"pod/{name} serverside-applied\n")
        manifest["metadata"]["labels"] = {"v": "2"}
        ok(k.kubectl("apply", mode, "-f", "-", input=json.dumps(manifest).encode()))
        labels = json.loads(ok(k.kubectl("get", "pod", name, "-o", "json")))["metadata"][
            "labels"]
        assert labels == {"v": "2"}
        k.sim.store.delete("pods", "default", name)


# --- delete ---------------------------------------------------------------------------------


def test_delete_pod_graceful_when_running_immediate_otherwise(k: InProcess) -> None:
    ok(create(k, pod("pending")))
    assert ok(k.kubectl("delete", "pod", "pending", "--wait=false")) == 'pod "pending" deleted\n'
    assert k.sim.store.get_raw("pods", "default", "pending") is None
    ok(create(k, pod("bound")))
    set_running(k, "default", "bound")
    ok(k.kubectl("delete", "pod", "bound", "--wait=false", "--grace-period=7"))
    meta = k.sim.store.get_raw("pods", "default", "bound")["metadata"]  # type: ignore[index]
    assert meta["deletionGracePeriodSeconds"] == 7 and meta["deletionTimestamp"]
    ok(k.kubectl("delete", "pod", "bound", "--wait=false", "--grace-period=3"))
    meta = k.sim.store.get_raw("pods", "default", "bound")["metadata"]  # type: ignore[index]
    assert meta["deletionGracePeriodSeconds"] == 3  # a shorter grace period wins
    ok(k.kubectl("delete", "pod", "bound", "--force", "--grace-period=0", "--wait=false"))
    assert k.sim.store.get_raw("pods", "default", "bound") is None
    quiet = k.kubectl("delete", "pod", "bound", "--ignore-not-found", "--wait=false")
    assert quiet.returncode == 0 and quiet.stdout == b"" and quiet.stderr == b""
    assert err(k.kubectl("delete", "pod", "bound")).strip() == \
        'Error from server (NotFound): pods "bound" not found'


def test_delete_pod_and_wait_follows_it_until_it_is_gone(k: InProcess) -> None:
    ok(create(k, pod("waited")))
    set_running(k, "default", "waited")
    deleter = k.start_kubectl("delete", "pod", "waited", "--timeout=30s")
    try:
        wait_until(lambda: (k.sim.store.get_raw("pods", "default", "waited") or {}).get(
            "metadata", {}).get("deletionTimestamp"), 10, "the deletion mark")
        wait_until(lambda: k.sim.api.open_watches(), 10, "kubectl delete to watch")
        k.sim.store.delete("pods", "default", "waited")  # what the kubelet does at the end
        out, errors = deleter.communicate(timeout=20)
    finally:
        kill_leftover(deleter)
    assert deleter.returncode == 0, errors
    assert out == b'pod "waited" deleted\n'


def _job_with_pod(k: InProcess, name: str) -> tuple[str, str]:
    made = json.loads(ok(create(k, job(name), "-o", "json")))
    uid = made["metadata"]["uid"]
    child = pod(f"{name}-abcde")
    child["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job",
                                             "name": name, "uid": uid, "controller": True,
                                             "blockOwnerDeletion": True}]
    ok(create(k, child))
    return uid, f"{name}-abcde"


@pytest.mark.parametrize("cascade", ["orphan", "background", "foreground", "api-default"])
def test_delete_job_with_each_cascade(k: InProcess, cascade: str) -> None:
    name = f"cascade-{cascade}"
    uid, child = _job_with_pod(k, name)
    if cascade == "api-default":
        status, _, _ = k.request("DELETE", f"/apis/batch/v1/namespaces/default/jobs/{name}")
        assert status == 200
    else:
        out = ok(k.kubectl("delete", "job", name, f"--cascade={cascade}", "--wait=false"))
        assert out == f'job.batch "{name}" deleted\n'
    stored_job = k.sim.store.get_raw("jobs", "default", name)
    refs = k.sim.store.get_raw("pods", "default", child)["metadata"].get(  # type: ignore[index]
        "ownerReferences")
    if cascade in ("orphan", "api-default"):
        assert stored_job is None and refs is None  # the pod stays, owned by no one
    elif cascade == "background":
        assert stored_job is None and refs[0]["uid"] == uid  # the GC's work to do
    else:
        assert stored_job is not None
        assert stored_job["metadata"]["finalizers"] == ["foregroundDeletion"]
        assert stored_job["metadata"]["deletionTimestamp"]
        k.sim.store.delete("jobs", "default", name)
    k.sim.store.delete("pods", "default", child)


# --- logs (records written straight into the log book) ---------------------------------------


def test_logs_bytes_timestamps_since_and_waiting(k: InProcess) -> None:
    ok(create(k, pod("logger")))
    unscheduled = k.kubectl("logs", "logger", "-c", "main")
    assert unscheduled.returncode == 0 and unscheduled.stdout == b""  # no node, no log yet
    set_running(k, "default", "logger")

    def waiting(obj: dict[str, Any]) -> None:
        obj["status"]["containerStatuses"] = [{"name": "main", "ready": False, "restartCount": 0,
                                               "state": {"waiting": {
                                                   "reason": "ContainerCreating"}}}]
    k.sim.store.update("pods", "default", "logger", waiting)
    assert err(k.kubectl("logs", "logger", "-c", "main")).strip() == (
        'Error from server (BadRequest): container "main" in pod "logger" is waiting to start: '
        "ContainerCreating")
    book = k.sim.logbook
    long_line = b"x" * (16 * 1024) + b"y" * 100 + b"\n"
    records = [("2026-01-01T00:00:01.000000001Z", b"\x00\x01\xff binary\n"),
               ("2026-01-01T00:00:02.000000002Z", b"\x1b[31mred\x1b[0m 50%\r100%\n"),
               ("2026-01-01T00:00:03.000000003Z", long_line[:16 * 1024]),
               ("2026-01-01T00:00:03.100000003Z", long_line[16 * 1024:]),
               ("2026-01-01T00:00:04.000000004Z", b"no newline at the end")]
    for stamp, data in records:
        book.append("default", "logger", "main", data, timestamp=stamp)
    whole = b"".join(d for _, d in records)
    assert k.kubectl("logs", "logger", "-c", "main").stdout == whole
    stamped = k.kubectl("logs", "logger", "-c", "main", "--timestamps").stdout
    assert stamped.startswith(b"2026-01-01T00:00:01.000000001Z \x00\x01\xff binary\n")
    assert b"2026-01-01T00:00:03.000000003Z " + b"x" * 10 in stamped
    assert b"2026-01-01T00:00:03.1" not in stamped  # a continuation has no prefix of its own
    since = k.kubectl("logs", "logger", "-c", "main", "--since-time=2026-01-01T00:00:02Z")
    assert since.stdout == whole[len(records[0][1]):]
    assert k.kubectl("logs", "logger", "-c", "main", "--tail=1").stdout == \
        b"no newline at the end"
    assert k.kubectl("logs", "logger", "-c", "main", "--since=10s").stdout == b""
    k.sim.store.delete("pods", "default", "logger")
    book.remove("default", "logger")


def test_follow_ends_cleanly_at_exit_and_with_eof_when_dropped(k: InProcess) -> None:
    book = k.sim.logbook
    for name in ("clean", "cut"):
        ok(create(k, pod(name)))
        set_running(k, "default", name)
        book.append("default", name, "main", b"first\n", timestamp="2026-01-01T00:00:00.500000000Z")
    clean = k.start_kubectl("logs", "-f", "clean", "-c", "main")
    cut = k.start_kubectl("logs", "-f", "--timestamps", "cut", "-c", "main")
    try:
        wait_until(lambda: book.follower_count() == 2, 10, "two followers")
        book.append("default", "clean", "main", b"last", timestamp="2026-01-01T00:00:01Z")
        book.end("default", "clean", "main")
        out, errors = clean.communicate(timeout=20)
        assert clean.returncode == 0, errors
        assert out == b"first\nlast"
        book.drop_followers()
        out, errors = cut.communicate(timeout=20)
        assert cut.returncode == 1
        assert errors.decode().strip() == "error: unexpected EOF"
        assert out == b"2026-01-01T00:00:00.500000000Z first\n"
    finally:
        for process in (clean, cut):
            kill_leftover(process)
        for name in ("clean", "cut"):
            k.sim.store.delete("pods", "default", name)
            book.remove("default", name)
