"""attachment.refusal: kubectl attach's complaint as one line naming the cause and the fix,
for the texts kubectl 1.32 prints (recorded against kubesim's refusals); the words of the
status line a run shows while it waits for its pod, and when the console shows it."""

from __future__ import annotations

import io

import pytest

from kubectl_squarepeg.cluster.attachment import refusal
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.cluster.kubectl import Target
from kubectl_squarepeg.run.podevents import image_being_pulled
from kubectl_squarepeg.run.watch import startup_status
from kubectl_squarepeg.terminal.console import Console

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
    # No pod yet (a Job's not created by its controller) is not said as Pending (issue 33).
    assert startup_status(None, 0.2) == "waiting for the pod to be created (0s)"
    creating = {"status": {"phase": "Pending", "containerStatuses": [
        {"name": "sidecar", "state": {"waiting": {"reason": "Other"}}},
        {"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}}]}}
    assert startup_status(creating, 3.6) == \
        "waiting for the pod: Pending, ContainerCreating (4s)"
    unscheduled = {"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}
    assert startup_status(unscheduled, 12) == "waiting for the pod: Pending, Unschedulable (12s)"
    pulling = 'Pulling image "python:3.12"'
    assert startup_status(creating, 5, pulling) == \
        'waiting for the pod: Pending, Pulling image "python:3.12" (5s)'
    # A reason that says more than "still creating" is kept.
    assert startup_status(unscheduled, 5, pulling).endswith("Unschedulable (5s)")


def event(reason: str, message: str) -> dict[str, str]:
    return {"type": "Normal", "reason": reason, "message": message}


def test_the_image_being_pulled_is_the_one_no_later_event_says_is_done() -> None:
    pulling = event("Pulling", 'Pulling image "big:1"')
    assert image_being_pulled([event("Scheduled", "assigned"), pulling]) == \
        'Pulling image "big:1"'
    assert image_being_pulled([pulling, event(
        "Pulled", 'Successfully pulled image "big:1" in 3.1s (3.1s including waiting)')]) is None
    assert image_being_pulled([pulling, {"type": "Warning", "reason": "Failed", "message":
                                         'Failed to pull image "big:1": not found'}]) is None
    # An init container's image was pulled; main's is still on its way.
    assert image_being_pulled([event("Pulling", 'Pulling image "init:1"'),
                               event("Pulled", 'Container image "init:1" already present'),
                               pulling]) == 'Pulling image "big:1"'
    assert image_being_pulled([]) is None


class TerminalStream(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_status_line_only_on_a_terminal_and_not_quiet() -> None:
    shown = TerminalStream()
    console = Console(shown)
    console.progress("waiting for the pod: Pending (0s)")
    console.progress("waiting for the pod: Pending (1s)")
    console.end_progress()
    assert shown.getvalue() == ("\r\x1b[Ksquarepeg: waiting for the pod: Pending (0s)"
                                "\r\x1b[Ksquarepeg: waiting for the pod: Pending (1s)\r\x1b[K")
    quiet_terminal, pipe = TerminalStream(), io.StringIO()
    for console in (Console(quiet_terminal, quiet=True), Console(pipe)):
        console.progress("waiting for the pod: Pending (0s)")
        console.end_progress()
    assert quiet_terminal.getvalue() == pipe.getvalue() == ""
