"""attachment.refusal: kubectl attach's complaint as one line naming the cause and the fix,
for the texts kubectl 1.32 prints (recorded against kubesim's refusals)."""

from __future__ import annotations

import pytest

from kubectl_squarepeg.attachment import refusal
from kubectl_squarepeg.commands import Commands
from kubectl_squarepeg.kubectl import Target
from kubectl_squarepeg.watch import startup_status

COMMANDS = Commands(Target(kubeconfig="/k/config", context="prod", namespace="ns"))
WHERE = "--kubeconfig=/k/config --context=prod --namespace=ns"
EVENTS = f"`kubectl get events --field-selector involvedObject.name=p {WHERE}`"

FORBIDDEN = ('Error from server (Forbidden): pods "p" is forbidden: User "bob" cannot create '
             'resource "pods/attach" in API group "" in the namespace "ns"')


@pytest.mark.parametrize(("says", "cause", "fix"), [
    (FORBIDDEN, "you may not attach to pods", f"`kubectl auth can-i create pods/attach {WHERE}`"),
    ("Error from server (BadRequest): Upgrade request required", "upgrade", "proxy"),
    ('error: unable to upgrade connection: container not found ("main")', "was gone", EVENTS),
    ("error: cannot attach a container in a completed pod; current phase is Succeeded",
     "was gone", EVENTS),
    ("error: something new", "kubectl attach failed", f"run without -i; {EVENTS}"),
])
def test_each_refusal_names_its_cause_and_fix(says: str, cause: str, fix: str) -> None:
    error = refusal(says + "\n", "p", COMMANDS, tty=False)
    assert error.exit_code == 125
    assert error.message.startswith("cannot attach to pod p: ") and cause in error.message
    assert says in error.message and fix in (error.hint or "")
    assert "\n" not in error.one_line()
    # The pod is deleted by the cleanup that follows: nothing may describe it.
    assert "describe" not in error.one_line()


def test_the_flag_named_is_the_one_used() -> None:
    assert "run without -it" in (refusal(FORBIDDEN, "p", COMMANDS, tty=True).hint or "")


def test_startup_status_says_phase_reason_and_seconds() -> None:
    assert startup_status(None, 0.2) == "waiting for the pod: Pending (0s)"
    creating = {"status": {"phase": "Pending", "containerStatuses": [
        {"name": "sidecar", "state": {"waiting": {"reason": "Other"}}},
        {"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}}]}}
    assert startup_status(creating, 3.6) == \
        "waiting for the pod: Pending, ContainerCreating (4s)"
    unscheduled = {"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}
    assert startup_status(unscheduled, 12) == "waiting for the pod: Pending, Unschedulable (12s)"
