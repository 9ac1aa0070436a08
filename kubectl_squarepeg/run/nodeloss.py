"""A run whose node stopped answering: when the wait for the container's end gives up on it.

Owns the node-loss clock of the wait for completion (watch.wait_for_finish): the pod's
status says its node was found silent (podstate.lost_node: the node controller's mark,
made once the node's lease is older than the controller manager's grace, 50 s by
default); from then on the run waits BOUND_SECONDS more for the node to come back (its
kubelet then writes the pod Ready again, and the run goes on as if nothing happened), and
after that ends with `NodeLost` (exit 125): the node named, with what the Node object says
when the user may read nodes, and what is known of the container. What happens to the pod
then is the cleanup's (run/cleanup.py: a force delete, unless --keep;
docs/decisions/0410-a-lost-node-ends-the-run.md).

The log stream of a pod whose kubelet is gone hangs or fails; the follower never takes
that for the end of the output (run/logs.py): this clock is what ends such a run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from kubectl_squarepeg.cluster import kubectl, podstate, verbs
from kubectl_squarepeg.errors import ClusterError
from kubectl_squarepeg.terminal.console import Console

# How long a run waits, once the API says its node is lost, for the node to come back: a
# kubelet restarted, a network blip healed. On localkube's kubelet nodes a kubelet down 16 s
# at a grace of 8 s (the pod marked after about 10 s) was back, and had written the pod
# Ready again, well within it (tests/e2e/test_node_loss.py).
BOUND_SECONDS = 30.0


class NodeLost(ClusterError):
    """The run's node stopped answering and did not come back within BOUND_SECONDS."""

    def __init__(self, message: str, hint: str, *, pod: str, node: str) -> None:
        super().__init__(message, hint)
        self.pod = pod
        self.node = node


NodeFacts = Callable[[str], str | None]


def node_facts(target: kubectl.Target) -> NodeFacts:
    """What the Node object says of a silent node (its Ready condition, its unreachable
    taint), or None when it cannot be read (the user may not read nodes)."""

    def facts(node: str) -> str | None:
        result = verbs.get_node(target, node)
        if not result.ok:
            return None
        try:
            return describe_node(json.loads(result.stdout))
        except (ValueError, AttributeError, TypeError):
            return None

    return facts


def describe_node(node: Mapping[str, Any]) -> str | None:
    """`Ready Unknown (NodeStatusUnknown: Kubelet stopped posting node status.), tainted
    node.kubernetes.io/unreachable`, from a Node's JSON; None when it says nothing."""
    words: list[str] = []
    status = node.get("status") or {}
    for cond in status.get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            said = ": ".join(str(cond.get(k)) for k in ("reason", "message") if cond.get(k))
            words.append(f"Ready {cond.get('status')}" + (f" ({said})" if said else ""))
    taints = [
        str(t.get("key"))
        for t in (node.get("spec") or {}).get("taints") or []
        if isinstance(t, Mapping) and str(t.get("key") or "").startswith("node.kubernetes.io/")
    ]
    if taints:
        words.append("tainted " + ", ".join(sorted(set(taints))))
    return ", ".join(words) or None


class NodeClock:
    """Follows the pod's events for the node-loss mark; `check()` raises NodeLost once the
    mark has lasted BOUND_SECONDS."""

    def __init__(
        self,
        console: Console | None = None,
        facts: NodeFacts | None = None,
        *,
        bound: float = BOUND_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[str | None], None] = lambda node: None,
    ) -> None:
        self._console = console
        self._on_change = on_change  # the node lost, or None: back (the log follower's)
        self._facts = facts
        self._bound = bound
        self._clock = clock
        self._lost_at: float | None = None
        self._node = ""
        self._pod: Mapping[str, Any] = {}

    def see(self, pod: Mapping[str, Any]) -> None:
        """An event about the pod: the mark set, or lifted (the node came back)."""
        node = podstate.lost_node(pod)
        if node is not None and self._lost_at is None:
            self._lost_at, self._node, self._pod = self._clock(), node, pod
            self._say(
                f"node {node} of pod {podstate.name(pod)} stopped answering (the node "
                f"controller marked the pod not ready); waiting up to {self._bound:g}s for "
                "it to come back"
            )
            self._on_change(node)
        elif node is None and self._lost_at is not None and _ready(pod):
            self._say(f"node {self._node} answers again; the run goes on")
            self._lost_at = None
            self._on_change(None)

    def check(self) -> None:
        """Raise NodeLost once the node has been lost for the bound."""
        if self._lost_at is None or self._clock() - self._lost_at < self._bound:
            return
        raise lost(self._pod, self._node, self._bound,
                   self._facts(self._node) if self._facts is not None else None)

    def _say(self, text: str) -> None:
        if self._console is not None:
            self._console.warn(text)


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions
    )


def lost(pod: Mapping[str, Any], node: str, bound: float, facts: str | None) -> NodeLost:
    """The error of a run whose node did not come back: the node, what the cluster knows of
    it, and what is known of the container."""
    name = podstate.name(pod)
    known = f" ({facts})" if facts else ""
    since = podstate.running_since(pod)
    started = f", running since {_stamp(since)}" if since is not None else ""
    return NodeLost(
        f"node {node} of pod {name} stopped answering and did not come back within "
        f"{bound:g}s{known}: container {podstate.MAIN} was last seen running{started}; its "
        "exit code and any output not shown are unknown",
        f"the conditions and events of node {node} say what the cluster knows of it",
        pod=name,
        node=node,
    )


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
