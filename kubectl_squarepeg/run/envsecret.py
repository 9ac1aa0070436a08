"""The run's Secret of `--secret-env` values (decision 0361): created before the Pod or Job,
then owned by it, so that the cluster's garbage collector deletes it with it.

Owns the order and what each failure means. The Secret first: without the right to create
Secrets the run is refused with one line and exit 125 before anything exists, and never
falls back to plain env. Then the Pod or Job (run/create.py); if that create fails or is
interrupted, the Secret is deleted again. Then the merge patch that makes the Pod or Job the
Secret's owner; if it is refused, the Secret is deleted and the run ends as refused (the
run's cleanup deletes the Pod). A squarepeg killed between the Secret's create and the
patch leaves a Secret no one owns: run/sweep.py takes it once its run is gone.
The values travel only on kubectl's stdin; no line of squarepeg's names one.
"""

from __future__ import annotations

import json

from kubectl_squarepeg.cluster import kubectl, verbs
from kubectl_squarepeg.cluster.refusals import rejection
from kubectl_squarepeg.errors import ClusterError
from kubectl_squarepeg.plan import secretenv
from kubectl_squarepeg.run.state import RunState

NO_FALLBACK = "--secret-env keeps values in a Secret and never falls back to plain env"


def name(state: RunState) -> str:
    secret = state.plan.secret
    assert secret is not None
    return str(secret["metadata"]["name"])


def create(state: RunState) -> None:
    """The Secret created, or the run refused (nothing was created)."""
    secret = state.plan.secret
    assert secret is not None
    with state.shields.shield():
        result = kubectl.collect(verbs.start_create(
            state.target, json.dumps(secret).encode("utf-8"), "Secret", state.plan.namespace))
    if not result.ok:
        refused = rejection(result, "Secret", name(state), state.commands)
        hint = f"{refused.hint}; {NO_FALLBACK}" if refused.hint else NO_FALLBACK
        raise ClusterError(refused.message, hint)


def delete(state: RunState) -> None:
    """The Secret deleted, when no Pod or Job came to own it. A failure is said, not
    raised: the error that led here is the one to report, and the sweep takes it later."""
    result = verbs.delete(state.target, "Secret", name(state))
    if not result.ok:
        state.console.warn(
            f"could not delete Secret {name(state)}: {result.error_text.strip()}; "
            "a later run's orphan sweep deletes it")


def own(state: RunState) -> None:
    """The run's Pod or Job made the Secret's owner; refused, the Secret is deleted."""
    plan = state.plan
    if state.uid is None:
        found = verbs.get_object(state.target, plan.kind, plan.name)
        try:
            state.uid = str(json.loads(found.stdout)["metadata"]["uid"]) if found.ok else None
        except (ValueError, KeyError, TypeError):
            state.uid = None
    if state.uid is not None:
        patch = json.dumps(secretenv.owner_patch(plan.kind, plan.name, state.uid))
        result = verbs.merge_patch(state.target, "Secret", name(state), patch)
        if result.ok:
            return
        reason = result.error_text.strip()
    else:
        reason = f"the uid of {plan.kind.lower()}/{plan.name} could not be read"
    delete(state)
    raise ClusterError(
        f"could not make {plan.kind.lower()}/{plan.name} the owner of Secret {name(state)} "
        f"({reason})",
        "the run needs the right to patch secrets: "
        f"`{state.commands.kubectl('auth', 'can-i', 'patch', 'secrets')}` checks",
    )
