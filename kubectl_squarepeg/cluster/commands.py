"""The kubectl commands squarepeg prints for the user to type: one builder for all of them.

Owns how a printed command points at the run's cluster: every one carries the run's
`--kubeconfig`, `--context` and namespace, so that it works in the user's shell as typed,
whatever their current context is. An in-cluster run's kubeconfig is a temporary file that
is gone once squarepeg exits, and has no context: its commands carry the namespace only
(kubectl in that pod finds the service account itself).

Also owns which commands keep working after the cleanup: events outlive the pod they are
about (an hour, by default), so a failure names `kubectl get events`, never a `describe` of
a pod that squarepeg has deleted. Pure: builds strings, runs nothing.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from kubectl_squarepeg.cluster.target import Target


@dataclass(frozen=True)
class Commands:
    """The printed kubectl commands of one run (or one `sweep`), for one target."""

    target: Target
    in_cluster: bool = False

    def kubectl(self, *args: str, namespaced: bool = True) -> str:
        """`kubectl ARGS --kubeconfig=... --context=... --namespace=...`, shell-quoted."""
        shown = self.target
        if self.in_cluster:
            shown = Target(namespace=self.target.namespace).impersonating(
                self.target.as_user, self.target.as_groups
            )
        return shlex.join(["kubectl", *args, *shown.global_args(namespaced=namespaced)])

    def permission_check(self, complaint: str) -> str:
        """For an RBAC denial, "; `kubectl auth can-i VERB RESOURCE ...` checks it" (the
        user's own command for the denied permission); "" for any other complaint."""
        from kubectl_squarepeg.cluster.complaints import denied

        found = denied(complaint)
        if found is None:
            return ""
        return f"; `{self.kubectl('auth', 'can-i', *found)}` checks that permission"

    def reachability_hint(self) -> str:
        """The fix for an API server that gave no answer at all."""
        info = self.kubectl("cluster-info", namespaced=False)
        return f"check that the cluster is reachable: `{info}`"

    @property
    def namespace(self) -> str:
        return self.target.namespace or "default"

    def events(self, name: str) -> str:
        """The events about one object: they outlive it, unlike `describe`."""
        return self.kubectl("get", "events", "--field-selector", f"involvedObject.name={name}")

    def describe(self, kind: str, name: str) -> str:
        return self.kubectl("describe", kind.lower(), name)

    def logs(self, kind: str, name: str, container: str = "main") -> str:
        ref = name if kind == "Pod" else f"{kind.lower()}/{name}"
        return self.kubectl("logs", ref, "-c", container)

    def delete(self, kind: str, name: str) -> str:
        extra = ("--cascade=background",) if kind == "Job" else ()
        return self.kubectl("delete", kind.lower(), name, *extra)

    def get(self, kind: str, name: str) -> str:
        return self.kubectl("get", kind.lower(), name)
