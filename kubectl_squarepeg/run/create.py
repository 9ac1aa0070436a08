"""The create phase: the run's resource created, its volumes filled, its container started.

Owns the create and what may follow it (lifecycle spec, steps 4 and 5): the create and the
pod watch started together (their kubectl start-ups overlap; the watch tolerates a pod that
does not exist yet); a create refused before anything was sent tried again for
CREATE_RETRY_SECONDS (nothing was sent, so nothing is created twice); a name held by an
earlier run of the user's waited for, then created (run/earlier.py, decisions 0340 and
0350); any other refusal said as cluster/refusals.py words it; the upload of
`-v` files before `main` starts (run/files.py); the wait for the container's start, with
its scheduling events and --timeout (run/watch.py).

The create is shielded: a first Ctrl-C while it is in flight waits for it, so a created
resource is always known (`state.created`, recorded in the same shield) and deleted, never
left behind by a create that finished after we stopped looking.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from kubectl_squarepeg.cluster import complaints, kubectl, podstate, verbs
from kubectl_squarepeg.cluster.refusals import (
    BEING_DELETED,
    refused_before_sending,
    rejection,
    terminating_refusal,
)
from kubectl_squarepeg.run import earlier, envsecret, podevents, watch
from kubectl_squarepeg.run.heartbeat import Heartbeat
from kubectl_squarepeg.run.state import RunState

if TYPE_CHECKING:
    from kubectl_squarepeg.plan.manifest import Plan

CREATE_RETRY_SECONDS = 30.0
CREATE_RETRY_FIRST_PAUSE, CREATE_RETRY_MAX_PAUSE = 0.5, 4.0


def manifest_bytes_of(plan: Plan) -> bytes:
    """The manifest as `kubectl create -f -` reads it."""
    return json.dumps(plan.manifest).encode("utf-8")


def start(state: RunState) -> tuple[watch.Event, str]:
    """Create the resource, fill its volumes, and wait until its container has started
    (or has ended, or its pod is gone): that event and the pod's name."""
    create(state)
    # Until the cleanup (or a detached run's release) stops it: run/heartbeat.py.
    state.heartbeat = Heartbeat(state.target, state.plan.kind, state.plan.name).start()
    assert state.watch is not None
    if state.files is not None:
        # The upload helper first: main starts on the filled volumes (run/files.py).
        helper_pod = state.files.wait_for_helper(state.watch, state.plan.options.timeout)
        if helper_pod is not None:
            state.files.upload(helper_pod)
        state.main_held = False
    reporter = podevents.EventReporter(state.console, state.events)
    if state.phases is not None:
        reporter.on_pulling = state.phases.pulling
    started = watch.wait_for_start(
        state.watch,
        timeout=state.plan.options.timeout,
        reporter=reporter,
        commands=state.commands,
        progress=state.console.progress,
    )
    state.console.end_progress()
    return started, state.watch.pod_name or state.plan.name


def create(state: RunState) -> None:
    """The create; with --secret-env, the run's Secret before it and its owner after it
    (run/envsecret.py)."""
    if state.plan.secret is None:
        _create(state)
        return
    envsecret.create(state)
    try:
        _create(state)
    except BaseException:
        if not state.created:
            envsecret.delete(state)
        raise
    envsecret.own(state)


def _create(state: RunState) -> None:
    """The create, tried again while the API server refuses the connection, and once after
    an earlier holder of the name of the user's own has gone (run/earlier.py)."""
    with state.shields.shield():
        result = kubectl.collect(_start_create_and_watch(state))
        holder = _judge(state, result, may_wait=True)
    if holder is not None:
        # Nothing was created: a Ctrl-C while waiting ends the run at once.
        earlier.wait_until_free(state, result, holder)
        assert state.watch is not None
        state.watch.close()  # it may have seen the earlier pod: a new one for ours
        with state.shields.shield():
            result = kubectl.collect(_start_create_and_watch(state))
            _judge(state, result, may_wait=False)
    waited, pause = 0.0, CREATE_RETRY_FIRST_PAUSE
    while not result.ok:
        # The API server refused the connection (it is restarting, say): nothing was
        # sent, so trying again cannot create twice. The pause is outside the shield:
        # a Ctrl-C meanwhile ends the run at once, and nothing exists yet.
        if waited >= CREATE_RETRY_SECONDS:
            raise rejection(result, state.plan.kind, state.plan.name, state.commands)
        time.sleep(pause)
        waited, pause = waited + pause, min(pause * 2, CREATE_RETRY_MAX_PAUSE)
        with state.shields.shield():
            result = kubectl.collect(_start_create(state, manifest_bytes_of(state.plan)))
            _judge(state, result, may_wait=False)


def _judge(state: RunState, result: kubectl.Result, *, may_wait: bool) -> dict[str, Any] | None:
    """What a create's answer means: created (noted), to try again (None, and not ok), or
    a refusal (raised, as cluster/refusals.py words it). With `may_wait`, a name held by
    an earlier run of the user's returns that holder, to be waited for (run/earlier.py)."""
    if result.ok:
        _note_created(state, result)
        return None
    if refused_before_sending(result):
        return None
    plan = state.plan
    holder = earlier.holder_to_wait_for(state, result) if may_wait else None
    if holder is not None:
        return holder
    if BEING_DELETED not in result.error_text:
        raise rejection(result, plan.kind, plan.name, state.commands)
    found = verbs.get_object(state.target, plan.kind, plan.name)
    raise terminating_refusal(plan.kind, plan.name, state.commands, found)


def _note_created(state: RunState, result: kubectl.Result) -> None:
    if not result.ok:
        return
    state.created = state.progress.created = True
    for warning in complaints.server_warnings(result.stderr):
        state.console.warn(f"the API server says: {warning}")
    try:
        state.uid = podstate.uid(json.loads(result.stdout)) or None
    except ValueError:
        state.uid = None
    if state.plan.kind == "Job" and state.watch is not None:
        state.watch.job_uid = state.uid
    plan = state.plan
    state.sink.emit("created", kind=plan.kind, namespace=state.namespace, name=plan.name,
                    uid=state.uid)


def _start_create(state: RunState, manifest: bytes) -> kubectl.Child:
    plan = state.plan
    return verbs.start_create(state.target, manifest, plan.kind, plan.namespace)


def _start_create_and_watch(state: RunState) -> kubectl.Child:
    """The create first (it is what the run waits for), then the watch, which tolerates
    a pod that does not exist yet, so that their start-ups overlap."""
    plan = state.plan
    if plan.kind == "Job":
        pod_watch = watch.PodWatch(state.target, job=plan.name, commands=state.commands)
    else:
        pod_watch = watch.PodWatch(state.target, pod=plan.name, commands=state.commands)
    if state.phases is not None:
        pod_watch.observe = state.phases.observe
    state.watch = pod_watch
    creating = _start_create(state, manifest_bytes_of(state.plan))
    pod_watch.start(early=True)
    return creating
