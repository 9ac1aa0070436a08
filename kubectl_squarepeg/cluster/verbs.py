"""The kubectl verbs: one function per kubectl command squarepeg sends, each building its
arguments (and, for the requests sent through `kubectl create --raw` and `kubectl get --raw`,
the API path) and handing them to the door, cluster/kubectl.py, which starts the child.

Owns what each verb asks of the cluster: the create, the watch of the run's pods, the log
request, events, the deletes (the prepared one and its reference), the look-ups of runs and
objects, labels, attach, exec and port-forward. Forks nothing itself and never imports sh
(every child is the door's); what a verb's failure means to the user is its caller's to say.

The run's create, its first watch and its log stream send their request through
`kubectl create --raw` and `kubectl get --raw` (`create_request`, `watch_request`,
`log_request`): the request `kubectl create`, `kubectl get -w` or `kubectl logs -f` would
send, without the round trips, the discovery cache and (for logs) the line-at-a-time
output of those (docs/decisions/0023 and 0024).

Imports the door at module level: only `run/` (a run's lifecycle), tests and scripts
import this module, never the dry-run path, which the start-up rule keeps off the door
(tests/e2e/test_lazy_sh.py). The door is called through its module (`kubectl.start`,
`kubectl.run`), so a test that patches the door's function patches what the verbs call.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Sequence

from kubectl_squarepeg.cluster import kubectl
from kubectl_squarepeg.cluster.target import DEFAULT_NAMESPACE, Target

# --- verbs of a run ---------------------------------------------------------------------


def create_dry_run(target: Target, manifest: bytes) -> kubectl.Result:
    """`kubectl create -f - --dry-run=server -o yaml`: what the API server would make of the
    manifest, as YAML in kubectl's own words."""
    return kubectl.run(
        ["create", "-f", "-", "--dry-run=server", "-o", "yaml"], target, stdin=manifest
    )


def start_create(target: Target, manifest: bytes, kind: str, namespace: str) -> kubectl.Child:
    """The run's create started, to be `kubectl.collect`ed (the run starts its watch while it
    is in flight): the manifest POSTed by `kubectl create --raw`, whose stdout is the API
    server's answer, the created object as JSON.

    `create`, not `apply`: an object of the same name must be an AlreadyExists error, not
    silently merged into. Strict field validation is asked for in the request itself:
    `kubectl create -f -` asks for the same, but only after fetching the OpenAPI document
    to learn that the server offers it (two round trips) and mapping the kind through its
    discovery cache (docs/decisions/0023).
    """
    request = create_request(kind, namespace)
    return kubectl.start(
        ["create", "--raw", request, "-f", "-"], target, stdin=manifest, namespaced=False
    )


def _collection(namespace: str, plural: str, root: str = "/api/v1") -> str:
    """The path of a namespaced collection (`/api/v1/namespaces/NS/pods`), names escaped."""
    return f"{root}/namespaces/{urllib.parse.quote(namespace, safe='')}/{plural}"


def create_request(kind: str, namespace: str) -> str:
    """The collection a Pod or Job of `namespace` is POSTed to, with strict field
    validation: an unknown field is an error, never dropped without a word."""
    root = "/apis/batch/v1" if kind.lower() == "job" else "/api/v1"
    return _collection(namespace, kind.lower() + "s", root) + "?fieldValidation=Strict"


def watch_pods(
    target: Target,
    *,
    name: str | None = None,
    selector: str | None = None,
    field_selector: str | None = None,
    on_stdout: Callable[[bytes], None],
) -> kubectl.Child:
    """Watch events of one pod by name, or of the pods that selectors match, as JSON
    (`{"type": ..., "object": ...}`), so that a deletion is seen as DELETED.

    By name, `kubectl get pod NAME -w --output-watch-events -o json`: kubectl first GETs the
    pod, so a pod that is gone ends it with a 404. By selector, the pod need not exist yet:
    `kubectl get --raw` of the watch itself, which begins with the pods that exist (as
    ADDED) and needs neither the list nor the discovery cache that `kubectl get -w` reads
    first (docs/decisions/0023).
    """
    if name is not None:
        return kubectl.start(
            ["get", "pod", name, "--watch", "--output-watch-events", "-o", "json"],
            target,
            on_stdout=on_stdout,
        )
    namespace = target.namespace or DEFAULT_NAMESPACE
    request = watch_request(namespace, selector=selector, field_selector=field_selector)
    return kubectl.start(["get", "--raw", request], target, on_stdout=on_stdout, namespaced=False)


def watch_request(
    namespace: str, *, selector: str | None = None, field_selector: str | None = None
) -> str:
    """The watch of the pods of `namespace` that the selectors match, from now, beginning
    with those that exist (a watch without a resourceVersion)."""
    query = {"watch": "true"}
    if selector is not None:
        query["labelSelector"] = selector
    if field_selector is not None:
        query["fieldSelector"] = field_selector
    return f"{_collection(namespace, 'pods')}?{urllib.parse.urlencode(query)}"


def log_request(
    namespace: str,
    pod: str,
    container: str,
    since: str | None,
    *,
    follow: bool = True,
    tail: int | None = None,
) -> str:
    """The log endpoint's request for a follow stream with timestamps, from `since` (RFC
    3339, whole seconds) when given: what `kubectl logs -f --timestamps [--since-time]`
    sends, for `kubectl get --raw`. `follow=False`: what is in the log now, then the end.

    Why not `kubectl logs` itself: it writes its stdout a line at a time (a write call per
    line), so a chatty container's output crawls through it (100 MB of 64-byte lines: about
    50 MB/s with timestamps, against over 300 MB/s through `get --raw`, which copies whatever
    has arrived), and it first GETs the pod, a round trip before the first byte.
    docs/decisions/0024.
    """
    query = {"container": container, "follow": "true" if follow else "false", "timestamps": "true"}
    if since is not None:
        query["sinceTime"] = since
    if tail is not None:
        query["tailLines"] = str(tail)
    pod_path = urllib.parse.quote(pod, safe="")
    return f"{_collection(namespace, 'pods')}/{pod_path}/log?{urllib.parse.urlencode(query)}"


def events_for(target: Target, name: str) -> kubectl.Result:
    """The events about the object `name` (a pod), as a JSON list."""
    return kubectl.run(
        ["get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json"],
        target,
    )


def _delete_args(kind: str) -> list[str]:
    cascade = ["--cascade=background"] if kind.lower() == "job" else []
    return ["--wait=false", "--ignore-not-found", *cascade]


def prepare_delete(
    target: Target, kind: str, grace_seconds: int | None = None
) -> tuple[kubectl.Child, kubectl.HeldStdin]:
    """`kubectl delete -f -` started now, deleting nothing until its stdin is released with
    the object's reference (`reference`): the delete at a run's end then costs a request,
    not a kubectl start-up. Ended unreleased, it deletes nothing. The object's own grace
    period unless `grace_seconds` is given."""
    held = kubectl.HeldStdin()
    grace = [] if grace_seconds is None else [f"--grace-period={grace_seconds}"]
    argv = ["delete", "-f", "-", *_delete_args(kind), *grace]
    return kubectl.start(argv, target, stdin=held), held


def reference(kind: str, name: str, namespace: str) -> bytes:
    """The manifest `kubectl delete -f -` needs to find one Pod or Job."""
    api_version = "batch/v1" if kind.lower() == "job" else "v1"
    doc = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
    }
    return json.dumps(doc).encode("utf-8")


def delete(
    target: Target, kind: str, name: str, grace_seconds: int | None = None,
    *, force: bool = False,
) -> kubectl.Result:
    """Delete without waiting and without minding a 404; a Job takes its pods with it. The
    object's own grace period unless `grace_seconds` is given; `force` removes the object
    at once, without its kubelet's word (a pod on a node that stopped answering)."""
    grace = [] if grace_seconds is None else [f"--grace-period={grace_seconds}"]
    if force:
        grace = ["--grace-period=0", "--force"]
    return kubectl.run(["delete", kind.lower(), name, *_delete_args(kind), *grace], target)


def get_node(target: Target, name: str) -> kubectl.Result:
    """One Node as JSON (what the cluster knows of a run's node that stopped answering)."""
    return kubectl.run(["get", "node", name, "-o", "json"], target)


def list_runs(
    target: Target, selector: str, *, timeout: float | None = None, all_namespaces: bool = False
) -> kubectl.Result:
    """The Pods and Jobs that `selector` matches, as one JSON list: `ps` (in every namespace
    with `all_namespaces`, `ps -A`), and the look-up of a run by name for logs, wait and rm
    (run/detached.py)."""
    args = ["get", "pods,jobs", "-l", selector, "-o", "json"]
    if all_namespaces:
        return kubectl.run([*args, "--all-namespaces"], target, timeout=timeout, namespaced=False)
    return kubectl.run(args, target, timeout=timeout)


def get_object(target: Target, kind: str, name: str) -> kubectl.Result:
    """One Pod or Job as JSON (what a refused create's name belongs to)."""
    return kubectl.run(["get", kind.lower(), name, "-o", "json"], target)


def logs(target: Target, pod: str, container: str) -> kubectl.Result:
    """The whole log of a container, at once."""
    return kubectl.run(["logs", pod, "-c", container], target)


def label(target: Target, kind: str, name: str, assignment: str) -> kubectl.Result:
    """`kubectl label KIND NAME KEY=VALUE --overwrite`."""
    return kubectl.run(["label", kind.lower(), name, assignment, "--overwrite"], target)


def merge_patch(target: Target, kind: str, name: str, patch: str) -> kubectl.Result:
    """`kubectl patch KIND NAME --type merge -p PATCH`. The patch is in the arguments, which
    any user of the machine may list: never one that holds a value of the user's."""
    return kubectl.run(["patch", kind.lower(), name, "--type", "merge", "-p", patch], target)


def list_secrets(target: Target, selector: str) -> kubectl.Result:
    """The Secrets `selector` matches, as one JSON list (the sweep's unowned run Secrets)."""
    return kubectl.run(["get", "secrets", "-l", selector, "-o", "json"], target)


def annotate(target: Target, kind: str, name: str, assignment: str) -> kubectl.Result:
    """`kubectl annotate KIND NAME KEY=VALUE --overwrite`."""
    return kubectl.run(["annotate", kind.lower(), name, assignment, "--overwrite"], target)


# --- attach: the interactive runs (-i, -it) --------------------------------------------------


def _discard(_chunk: bytes) -> None:
    pass


def attach_stdin(
    target: Target,
    pod: str,
    container: str,
    *,
    stdin_fd: int,
    on_stdout: Callable[[bytes], None] = _discard,
    on_stderr: Callable[[bytes], None] | None = None,
) -> kubectl.Child:
    """`kubectl attach -i`, reading the descriptor `stdin_fd` (squarepeg's own stdin) itself:
    raw bytes, nothing decoded or held here; their end closes the container's stdin (it is
    `stdinOnce`). The output of such a run is the log stream, complete from the first byte,
    where an attach sees only what comes after it connected: what the attach prints goes to
    `on_stdout` and `on_stderr` (the container's two streams, kubectl's own words on the
    second), which only put back the `\r`s the log dropped (run/exactout.py). `--quiet`
    keeps "If you don't see a command prompt ..." off stderr, which is kept for the
    refusal message."""
    return kubectl.start(
        ["attach", "-i", "--quiet", pod, "-c", container],
        target,
        stdin=stdin_fd,
        on_stdout=on_stdout,
        on_stderr=on_stderr,
    )


def attach_streams(
    target: Target, pod: str, container: str, *, stdin_fd: int | None, stdout_fd: int
) -> kubectl.Child:
    """`kubectl attach [-i]` for `kubectl squarepeg attach` to a run without a terminal:
    it reads `stdin_fd` (when the run has -i) and writes the container's stdout to
    `stdout_fd` itself, raw; its stderr is kept for the refusal message."""
    args = ["attach", *(["-i"] if stdin_fd is not None else []), "--quiet", pod, "-c", container]
    if stdin_fd is None:
        return kubectl.start(args, target, stdout_fd=stdout_fd)
    return kubectl.start(args, target, stdin=stdin_fd, stdout_fd=stdout_fd)


def attach_terminal(
    target: Target, pod: str, container: str, *, stdin_fd: int, stdout_fd: int
) -> kubectl.Child:
    """`kubectl attach -it` on a terminal: it reads the terminal `stdin_fd` in raw mode (so
    Ctrl-C is a byte for the container) and writes to `stdout_fd`, a terminal whose size
    it sends, and sends again on SIGWINCH (terminal/session.py relays both)."""
    return kubectl.start(
        ["attach", "-i", "-t", "--quiet", pod, "-c", container],
        target,
        stdin=stdin_fd,
        stdout_fd=stdout_fd,
    )


def exec_reading(
    target: Target, pod: str, container: str, command: Sequence[str], *, stdin_fd: int
) -> kubectl.Child:
    """`kubectl exec -i POD -c CONTAINER -- COMMAND`, reading the descriptor `stdin_fd` itself
    (a pipe whose other end squarepeg writes as it produces the bytes: nothing is held here).
    Its end closes the command's stdin (the v5 channel protocol's close). Its stdout is
    discarded; stderr is kept for the failure message. The caller closes its own copy of
    `stdin_fd` once this returns."""
    return kubectl.start(
        ["exec", "-i", pod, "-c", container, "--", *command],
        target,
        stdin=stdin_fd,
        on_stdout=_discard,
    )


def exec_writing(
    target: Target, pod: str, container: str, command: Sequence[str], *, stdout_fd: int
) -> kubectl.Child:
    """`kubectl exec POD -c CONTAINER -- COMMAND` writing its stdout to `stdout_fd` (a pipe
    squarepeg reads as a stream); the caller closes its own copy of it once this returns, so
    that kubectl's end is the reader's end of file."""
    return kubectl.start(
        ["exec", pod, "-c", container, "--", *command], target, stdout_fd=stdout_fd
    )


def exec_in(
    target: Target,
    pod: str,
    container: str,
    command: Sequence[str],
    *,
    stdin_fd: int | None,
    tty: bool,
    stdout_fd: int,
    stderr_fd: int,
) -> kubectl.Child:
    """`kubectl exec [-i] [-t] POD -c CONTAINER -- COMMAND` (squarepeg's `exec`): it reads
    `stdin_fd` itself (none: no -i), writes the command's output to `stdout_fd` and its
    stderr, and its own messages, to `stderr_fd`. With `tty` (and a terminal as `stdin_fd`
    and `stdout_fd`) it sends the terminal's size, again on each SIGWINCH it is given."""
    flags = (["-i"] if stdin_fd is not None else []) + (["-t"] if tty else [])
    return kubectl.start(
        ["exec", *flags, pod, "-c", container, "--", *command],
        target,
        stdin=stdin_fd if stdin_fd is not None else b"",
        stdout_fd=stdout_fd,
        stderr_fd=stderr_fd,
    )


def set_active_deadline(target: Target, pod: str, seconds: int) -> kubectl.Result:
    """`kubectl patch pod POD` setting spec.activeDeadlineSeconds (`stop`): one of the few
    fields a running pod's spec lets change (set, or lowered)."""
    patch = json.dumps({"spec": {"activeDeadlineSeconds": seconds}})
    return kubectl.run(["patch", "pod", pod, "--type=merge", "-p", patch], target)


# --- -p: port-forward ------------------------------------------------------------------


def port_forward(
    target: Target,
    pod: str,
    address: str,
    ports: Sequence[tuple[int, int]],
    *,
    on_stdout: Callable[[bytes], None],
) -> kubectl.Child:
    """`kubectl port-forward pod/POD --address ADDRESS LOCAL:REMOTE...`: it listens on
    ADDRESS and carries each connection to the pod through the API server; it prints
    `Forwarding from ADDRESS:LOCAL -> REMOTE` once its listeners are up (run/ports.py).
    Start it from the thread that waits for it (the parent-death signal: cluster/kubectl.py's
    `_child_hook`)."""
    mappings = [f"{local}:{remote}" for local, remote in ports]
    return kubectl.start(
        ["port-forward", f"pod/{pod}", "--address", address, *mappings],
        target,
        on_stdout=on_stdout,
        out_bufsize=4096,
    )
