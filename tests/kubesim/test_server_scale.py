"""Scale facts, asserted as counts (timings are printed by scripts/bench-kubesim): 10,000
stored pods are listed through kubectl by label selector and page by page, and kubesim is
ready from a cold start with everything a client needs."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.conftest import Kubesim

STORED = 10_000


def test_ten_thousand_stored_pods_list_by_selector_and_by_page(
        kubesim_factory: Callable[[dict[str, Any] | None], Kubesim]) -> None:
    sim = kubesim_factory({"namespaces": ["scale"]})
    created = json.loads(sim.ctl("seed-pods", "scale", str(STORED), "--labels", "group=bulk"))
    assert created == {"created": STORED}
    sim.ctl("seed-pods", "scale", "3", "--labels", "group=needle,tier=x", "--prefix", "needle-")
    assert sim.stats()["objects"]["pods"] == STORED + 3
    needles = sim.kubectl("get", "pods", "-n", "scale", "-l", "group=needle,tier", "-o", "name")
    assert needles.returncode == 0, needles.stderr
    assert needles.stdout.decode().split() == [f"pod/needle-{i:05d}" for i in range(3)]
    # kubectl pages with limit=500 and follows `continue` to the end: every pod, once.
    listed = sim.kubectl("get", "pods", "-n", "scale", "-l", "group=bulk", "-o", "name",
                         timeout=120)
    names = listed.stdout.decode().split()
    assert len(names) == STORED and len(set(names)) == STORED
    pending = sim.kubectl("get", "pods", "-n", "scale", "--field-selector",
                          "status.phase=Pending", "-l", "group=needle", "-o", "name")
    assert len(pending.stdout.split()) == 3  # idle pods are never scheduled


def test_a_fresh_simulator_is_ready_and_served(
        kubesim_factory: Callable[[dict[str, Any] | None], Kubesim]) -> None:
    sim = kubesim_factory(None)
    assert sim.url.startswith("https://127.0.0.1:")
    nodes = sim.kubectl("get", "nodes", "-o", "name")
    assert nodes.stdout.decode().split() == ["node/kubesim-node"]
    namespaces = sim.kubectl("get", "namespaces", "-o", "name").stdout.decode().split()
    assert {"namespace/default", "namespace/kube-system", "namespace/kube-public"} <= \
        set(namespaces)
    config = sim.kubectl("config", "view", "--minify", "-o", "json")
    view = json.loads(config.stdout)
    assert view["current-context"] == "kubesim"
    assert view["contexts"][0]["context"]["namespace"] == "default"
