"""--secret-env and secret_env_all in the plan (plan/secretenv.py, decision 0361), and the
selection of unowned run Secrets (run/secretsweep.py): pure, no processes."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta, timezone
from typing import Any

from kubectl_squarepeg.plan import secretenv
from kubectl_squarepeg.run import secretsweep
from tests.unit.test_manifest import RUN_ID, main_container, plan
from tests.unit.test_options import usage_error

SECRET = "squarepeg-alpine-a1b2c3-env-0b7c2a52"


def ref(key: str, secret: str = SECRET) -> dict[str, Any]:
    return {"name": key, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def test_secret_env_values_go_into_the_secret_and_the_spec_holds_references() -> None:
    p = plan(env=("A=plain", "T=shadowed"), secret_env=("T=s3cret", "LOCAL"))
    assert main_container(p)["env"] == [{"name": "A", "value": "plain"}, ref("T"), ref("LOCAL")]
    assert "s3cret" not in json.dumps(p.manifest) and "here" not in json.dumps(p.manifest)
    assert p.secret is not None
    meta = p.secret["metadata"]
    assert (meta["name"], meta["namespace"]) == (SECRET, "team-a")
    assert meta["labels"]["squarepeg.io/run-id"] == RUN_ID
    assert "ownerReferences" not in meta  # set once the Pod exists (run/envsecret.py)
    decoded = {k: base64.b64decode(v).decode() for k, v in p.secret["data"].items()}
    assert decoded == {"T": "s3cret", "LOCAL": "here"}
    assert any("the values of T, LOCAL go into Secret" in note for note in p.notes)


def test_secret_env_all_takes_every_env_value_and_job_mode_refers_in_the_template() -> None:
    p = plan("secret_env_all: true\nenv:\n  FROM_CONFIG: c\n", env=("A=1",), mode="job")
    assert main_container(p)["env"] == [ref("FROM_CONFIG"), ref("A")]
    assert p.secret is not None and sorted(p.secret["data"]) == ["A", "FROM_CONFIG"]


def test_a_kept_run_s_secret_has_no_keep_label_and_no_secret_means_none() -> None:
    kept = plan(secret_env=("T=x",), keep=True)
    assert kept.secret is not None and "squarepeg.io/keep" not in kept.secret["metadata"]["labels"]
    assert plan(env=("A=1",)).secret is None


def test_bad_secret_env_items_name_the_key_never_the_value() -> None:
    unset = usage_error(secret_env=("NOT_SET_HERE",))
    assert "NOT_SET_HERE is not set in your environment" in unset
    bad = usage_error(secret_env=("A B=hunter2",))
    assert "cannot be a Secret's key" in bad and "hunter2" not in bad
    assert "secret_env_all" in usage_error("secret_env_all: true\n", env=("A:B=hunter2",))


def test_the_owner_patch_names_the_pod_or_the_job() -> None:
    assert secretenv.owner_patch("Job", "j", "u-1") == {"metadata": {"ownerReferences": [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u-1"}]}}
    assert secretenv.owner_patch("Pod", "p", "u-2")["metadata"]["ownerReferences"][0][
        "apiVersion"] == "v1"


NOW = datetime(2026, 12, 7, 9, 0, tzinfo=timezone.utc)


def listed(name: str, age: float, *, owned: bool = False, user: str = "me",
           run_id: str | None = "r1") -> dict[str, Any]:
    labels = {"app.kubernetes.io/managed-by": "squarepeg", "squarepeg.io/created-by": user}
    if run_id:
        labels["squarepeg.io/run-id"] = run_id
    meta: dict[str, Any] = {
        "name": name, "labels": labels,
        "creationTimestamp": (NOW - timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    if owned:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "p", "uid": "u"}]
    return {"metadata": meta}


def test_only_old_unowned_secrets_of_the_user_with_a_run_id_are_candidates() -> None:
    items = [listed("old", 400), listed("young", 100), listed("owned", 400, owned=True),
             listed("other", 400, user="you"), listed("no-run", 400, run_id=None)]
    found = secretsweep.unowned(items, created_by="me", now=NOW, min_age=300)
    assert [(s.name, s.run_id, s.age_seconds) for s in found] == [("old", "r1", 400.0)]
    assert found[0].describe().startswith("secret/old (unowned:")
