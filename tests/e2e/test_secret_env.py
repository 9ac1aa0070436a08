"""`--secret-env` and `secret_env_all` (decision 0361): the values go into one Secret the run
creates and its Pod or Job owns; the pod spec, the dry runs and squarepeg's lines hold none.

The runs are on localkube only: kubesim serves no Secrets API (its kubelet resolves
`secretKeyRef` from the scenario's names, tests/kubesim/containerconfig.py) and has no
garbage collector for Secrets. The dry runs are on both.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Squarepeg, names, wait_until
from tests.permissions_doc import documented_role

REAL_SECRETS = pytest.mark.localkube_only(
    "needs the Secrets API and the garbage collector of the real control plane; kubesim "
    "serves no Secrets (its secretKeyRef reads the scenario's) and collects only Jobs' pods")
MANAGED = "app.kubernetes.io/managed-by=squarepeg"
RUN_ID = "squarepeg.io/run-id"


def a_value() -> str:
    return "tok-" + secrets.token_hex(12)


def run_secrets(cluster: Any, namespace: str) -> list[str]:
    done = cluster.kubectl("get", "secrets", "-n", namespace, "-l", MANAGED, "-o", "name")
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().split()


def no_secret_left(cluster: Any, namespace: str) -> None:
    # The garbage collector deletes it once its owner is gone: asynchronously.
    wait_until(lambda: run_secrets(cluster, namespace) == [], 90, "the run's Secret to go")


@REAL_SECRETS
@pytest.mark.parametrize("mode", ["pod", "job"])
def test_a_secret_env_reaches_the_container_and_nothing_of_the_run_is_left(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str
) -> None:
    value = a_value()
    done = squarepeg("run", "--mode", mode, "--secret-env", "TOKEN", "alpine", "sh", "-c",
                     'echo "$TOKEN"', env={"TOKEN": value})
    assert done.code == 0, done.stderr
    assert done.stdout == f"{value}\n".encode()
    assert value not in done.stderr
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the run's resource to go")
    no_secret_left(kubesim, namespace)


@REAL_SECRETS
@pytest.mark.parametrize("mode", ["pod", "job"])
def test_the_pod_spec_of_a_running_run_holds_no_value(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str
) -> None:
    value = a_value()
    process = squarepeg.start(
        "run", "--mode", mode, "--name", "sec-live", "--secret-env", f"TOKEN={value}",
        "alpine", "sh", "-c", 'echo "$TOKEN"; sleep 6')

    def running() -> bool:
        got = kubesim.kubectl("get", "pods", "-n", namespace, "-o", "json")
        pods = json.loads(got.stdout)["items"] if got.returncode == 0 else []
        return any(p["status"].get("phase") == "Running" for p in pods)

    wait_until(running, 90, "the run's pod to run")
    seen = kubesim.kubectl("get", "pods,jobs", "-n", namespace, "-o", "yaml")
    assert seen.returncode == 0, seen.stderr
    assert b"secretKeyRef" in seen.stdout
    assert value.encode() not in seen.stdout
    done = squarepeg.finish(process)
    assert done.code == 0, done.stderr
    assert done.stdout == f"{value}\n".encode()
    assert value not in done.stderr
    no_secret_left(kubesim, namespace)


@REAL_SECRETS
def test_secret_env_all_sends_every_env_value_through_the_secret(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    value = a_value()
    config = tmp_path / "secret.yaml"
    config.write_text("secret_env_all: true\n")
    env_file = tmp_path / "env"
    env_file.write_text(f"FROM_FILE={value}-file\n")
    done = squarepeg("run", "--config", str(config), "--keep", "-e", f"DB_URL={value}",
                     "--env-file", str(env_file), "--name", "sec-all", "alpine", "sh", "-c",
                     'echo "$DB_URL $FROM_FILE"')
    assert done.code == 0, done.stderr
    assert done.stdout == f"{value} {value}-file\n".encode()
    # Kept: the pod and its Secret stay, the Secret owned by the pod.
    pod = json.loads(kubesim.kubectl("get", "pod", "sec-all", "-n", namespace, "-o",
                                     "json").stdout)
    assert value not in json.dumps(pod["spec"])
    [secret_ref] = run_secrets(kubesim, namespace)
    secret = json.loads(kubesim.kubectl("get", secret_ref, "-n", namespace, "-o",
                                        "json").stdout)
    [owner] = secret["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("Pod", pod["metadata"]["uid"])
    assert sorted(secret["data"]) == ["DB_URL", "FROM_FILE"]
    assert kubesim.kubectl("delete", "pod", "sec-all", "-n", namespace,
                           "--grace-period=1").returncode == 0
    no_secret_left(kubesim, namespace)


@REAL_SECRETS
def test_without_the_right_to_create_secrets_the_run_is_refused_and_nothing_created(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    # The documented Role, which has no Secrets, bound to a group the admin acts in.
    from tests.e2e.test_logins import grant

    grant(kubesim, namespace, documented_role(), {"kind": "Group", "name": "sec-testers"})
    value = a_value()
    done = squarepeg("run", "--as", "alice", "--as-group", "sec-testers", "--secret-env",
                     f"TOKEN={value}", "alpine", "sh", "-c", 'echo "$TOKEN"')
    assert done.code == 125, done.lines
    assert done.stdout == b""
    [line] = [line for line in done.lines if "error:" in line]
    assert 'cannot create resource "secrets"' in line, done.lines
    assert "never falls back to plain env" in line, line
    assert "Traceback" not in done.stderr and value not in done.stderr
    assert names(kubesim, namespace) == []
    assert run_secrets(kubesim, namespace) == []


@pytest.mark.parametrize("dry", ["--dry-run", "--dry-run-server"])
def test_the_dry_runs_show_references_never_values(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path, dry: str
) -> None:
    value = a_value()
    config = tmp_path / "secret.yaml"
    config.write_text("secret_env_all: true\n")
    done = squarepeg("run", dry, "--config", str(config), "--secret-env", "TOKEN",
                     "-e", f"DB_URL=postgres://u:{value}@db/x", "alpine", "true",
                     env={"TOKEN": value})
    assert done.code == 0, done.stderr
    assert value not in done.stdout.decode() and value not in done.stderr
    assert done.stdout.count(b"secretKeyRef") == 2
    if dry == "--dry-run":
        assert done.has_line("the values of DB_URL, TOKEN go into Secret"), done.lines
    assert names(kubesim, namespace) == []


def test_a_bare_secret_env_that_is_not_set_is_refused(squarepeg: Squarepeg, kubesim: Any,
                                                      namespace: str) -> None:
    done = squarepeg("run", "--secret-env", "UNSET_TOKEN", "alpine", "true")
    assert done.code == 125
    [line] = done.lines
    assert line.startswith("squarepeg: error:") and "UNSET_TOKEN is not set" in line, line
    assert names(kubesim, namespace) == []


@REAL_SECRETS
def test_a_secret_runs_sweep_takes_a_secret_a_killed_run_left_unowned(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    """What a squarepeg killed between its Secret's create and the owner patch leaves: a
    labelled Secret without an owner. The next run with a Secret takes it, once no Pod or
    Job of its run id is left."""
    dry = squarepeg("run", "--dry-run", "alpine", "true")
    labels = yaml.safe_load(dry.stdout)["metadata"]["labels"]

    def left_secret(name: str, run_id: str) -> None:
        doc = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": name, "labels": {**labels, RUN_ID: run_id}},
               "stringData": {"TOKEN": a_value()}}
        made = kubesim.kubectl("create", "-n", namespace, "-f", "-",
                               input=json.dumps(doc).encode())
        assert made.returncode == 0, made.stderr

    left_secret("dead-env-1", "dead-run")
    left_secret("live-env-1", "live-run")
    # A pod of the second run still exists (not squarepeg's to sweep: no managed-by label).
    holder = {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "holder", "labels": {RUN_ID: "live-run"}},
              "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                       "containers": [{"name": "c", "image": "alpine",
                                       "command": ["sleep", "300"]}]}}
    made = kubesim.kubectl("create", "-n", namespace, "-f", "-",
                           input=json.dumps(holder).encode())
    assert made.returncode == 0, made.stderr
    config = tmp_path / "now.yaml"
    config.write_text("orphan_sweep_min_age: 0\n")
    try:
        plain = squarepeg("run", "--config", str(config), "alpine", "sh", "-c", "sleep 2")
        assert plain.code == 0, plain.stderr
        assert "secret/" not in plain.stderr  # a run without a Secret lists none
        # Long enough for the background sweep to finish before the run's end.
        done = squarepeg("run", "--config", str(config), "--secret-env", "T=x",
                         "alpine", "sh", "-c", "sleep 4")
        assert done.code == 0, done.stderr
        assert done.has_line("orphan sweep: deleted secret/dead-env-1 (unowned:"), done.lines
        assert "live-env-1" not in done.stderr
        wait_until(lambda: run_secrets(kubesim, namespace) == ["secret/live-env-1"], 90,
                   "the unowned Secret, and the run's own, to go")
    finally:
        kubesim.kubectl("delete", "pod", "holder", "-n", namespace, "--grace-period=0",
                        "--force")
        kubesim.kubectl("delete", "secret", "live-env-1", "-n", namespace)


@REAL_SECRETS
def test_a_detached_runs_secret_goes_with_its_rm(squarepeg: Squarepeg, kubesim: Any,
                                                 namespace: str) -> None:
    value = a_value()
    started = squarepeg("run", "-d", "--name", "sec-det", "--secret-env", f"TOKEN={value}",
                        "alpine", "sh", "-c", 'echo "$TOKEN"')
    assert started.code == 0, started.stderr
    waited = squarepeg("wait", "sec-det")
    assert (waited.code, waited.stdout) == (0, b"0\n"), waited.stderr
    assert squarepeg("logs", "sec-det").stdout == f"{value}\n".encode()
    assert len(run_secrets(kubesim, namespace)) == 1  # owned by the pod, which stays
    assert squarepeg("rm", "sec-det").code == 0
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the detached pod to go")
    no_secret_left(kubesim, namespace)
