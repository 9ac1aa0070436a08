"""refusals.rejection: a failed `kubectl create` as one line with kubectl's reason and a fix."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from kubectl_squarepeg.cluster import kubectl
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.cluster.refusals import rejection, terminating_refusal

COMMANDS = Commands(kubectl.Target(context="prod", kubeconfig="/k", namespace="ns"))
WHERE = "--kubeconfig=/k --context=prod"


def failed(stderr: str) -> kubectl.Result:
    return kubectl.Result(("create", "-f", "-"), 1, b"", stderr.encode())


@pytest.mark.parametrize(
    ("stderr", "hint"),
    [
        (
            'Error from server (Forbidden): error when creating "STDIN": pods "p" is forbidden: '
            "exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2",
            "the namespace's quota is used up: ask for less (--cpus, -m) or wait for other pods "
            f"to finish; `kubectl describe resourcequota {WHERE} --namespace=ns` shows what is "
            "used (`--dry-run-server` checks a change without creating anything)",
        ),
        (
            'Error from server (Forbidden): error when creating "STDIN": admission webhook '
            '"policy.example.com" denied the request: images must be pinned',
            "the cluster's admission webhook policy.example.com refused the pod: change what "
            "its message names (`--dry-run-server` checks a change without creating anything)",
        ),
        (
            'Error from server (Forbidden): error when creating "STDIN": pods "p" is forbidden: '
            "ValidatingAdmissionPolicy 'pinned' with binding 'pinned' denied request: images "
            "must be pinned",
            "the cluster's admission policy pinned refused the pod: change what its message "
            "names (`--dry-run-server` checks a change without creating anything)",
        ),
        (
            'Error from server (Forbidden): error when creating "STDIN": pods is forbidden: '
            'User "alice" cannot create resource "pods" in API group "" in the namespace "ns"',
            f"you lack permission: `kubectl auth can-i create pods {WHERE} --namespace=ns` checks, "
            "and a cluster admin can grant it",
        ),
        (
            'Error from server (AlreadyExists): error when creating "STDIN": pods "p" already '
            "exists",
            "choose another --name, or delete the old one: "
            f"`kubectl delete pod p {WHERE} --namespace=ns`",
        ),
        (
            'The Pod "p" is invalid: * spec.containers[0].image: Required value',
            "fix the field named above in the flags or config; `--dry-run` shows the manifest",
        ),
        (
            "The connection to the server 127.0.0.1:1 was refused - did you specify the right "
            "host or port?",
            f"check that the cluster is reachable: `kubectl cluster-info {WHERE}`",
        ),
        (
            "error: You must be logged in to the server (Unauthorized)",
            f"log in to the cluster again; `kubectl auth whoami {WHERE}` shows who you are",
        ),
    ],
)
def test_rejections_keep_kubectls_reason_and_say_what_to_do(stderr: str, hint: str) -> None:
    error = rejection(failed(stderr + "\n"), "Pod", "p", COMMANDS)
    reason = stderr.removeprefix("error: ").removeprefix("Error from server ")
    assert error.message == f"cannot create pod/p in namespace ns: {reason}"
    assert error.hint == hint
    assert error.exit_code == 125


def test_a_job_rejection_names_the_job() -> None:
    error = rejection(failed('jobs.batch "j" already exists'), "Job", "j", COMMANDS)
    assert error.one_line() == (
        'cannot create job/j in namespace ns: jobs.batch "j" already exists; '
        "choose another --name, or delete the old one: "
        f"`kubectl delete job j --cascade=background {WHERE} --namespace=ns`"
    )


def test_a_missing_namespace_is_named_with_the_command_that_creates_it() -> None:
    error = rejection(
        failed('Error from server (NotFound): error when creating "STDIN": namespaces "nons" '
               "not found"),
        "Pod", "p", COMMANDS,
    )
    assert error.one_line() == (
        "namespace nons does not exist (creating pod/p); create it with "
        f"`kubectl create namespace nons {WHERE}`, or choose another with -n"
    )


def test_a_dry_run_server_rejection_does_not_suggest_dry_run_server() -> None:
    error = rejection(
        failed('admission webhook "p.example.com" denied the request: no'),
        "Pod", "p", COMMANDS, dry_run_server=True,
    )
    assert error.hint is not None and "--dry-run-server" not in error.hint


def test_a_name_whose_old_pod_is_terminating_says_how_long_at_most_and_how_to_wait() -> None:
    found = kubectl.Result(
        ("get",), 0, b'{"metadata": {"name": "p", "deletionTimestamp": "2026-12-04T16:45:12Z"}}',
        b"",
    )
    now = datetime(2026, 12, 4, 16, 44, 45, tzinfo=timezone.utc).timestamp()
    error = terminating_refusal("Pod", "p", COMMANDS, found, now=now)
    assert error.one_line() == (
        "cannot create pod/p in namespace ns: an earlier pod/p is still terminating; its "
        "grace period ends in 27s at most (16:45:12 UTC), when it is killed if it has not "
        "exited; wait for it with "
        f"`kubectl wait --for=delete pod/p --timeout=32s {WHERE} --namespace=ns` and run "
        "again, or choose another --name"
    )
    assert "kubectl delete" not in error.one_line()


def test_a_terminating_name_that_is_gone_by_the_time_we_look_says_run_again() -> None:
    gone = kubectl.Result(("get",), 1, b"", b'Error from server (NotFound): pods "p" not found')
    error = terminating_refusal("Pod", "p", COMMANDS, gone)
    assert error.one_line() == (
        "cannot create pod/p in namespace ns: an earlier pod/p was still terminating; it is "
        "gone now, or within its grace period (--stop-timeout, 30 s by default): run again, "
        "or choose another --name"
    )
