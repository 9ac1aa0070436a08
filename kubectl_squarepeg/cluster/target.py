"""Where kubectl talks to: the user's kubeconfig file, context and namespace.

Owns the flags that point one kubectl call at the run's cluster (`global_args`), used
alike by the calls squarepeg makes (kubectl.py) and the commands it prints for the user
(commands.py). Pure.
"""

from __future__ import annotations

from typing import NamedTuple

DEFAULT_NAMESPACE = "default"


class Target(NamedTuple):
    """Where kubectl talks to: the user's context, kubeconfig file and namespace."""

    context: str | None = None
    kubeconfig: str | None = None
    namespace: str | None = None

    @classmethod
    def of_context(
        cls,
        context: str,
        context_namespace: str | None,
        *,
        kubeconfig: str | None,
        namespace: str | None,
    ) -> Target:
        """The target for a kubeconfig context: a namespace the user gave (-n, or config)
        wins over the context's own, then "default" (connect.py has the whole order)."""
        chosen = namespace or context_namespace or DEFAULT_NAMESPACE
        return cls(context=context, kubeconfig=kubeconfig, namespace=chosen)

    def global_args(self, *, namespaced: bool = True) -> list[str]:
        args: list[str] = []
        if self.kubeconfig:
            args.append(f"--kubeconfig={self.kubeconfig}")
        if self.context:
            args.append(f"--context={self.context}")
        if namespaced and self.namespace:
            args.append(f"--namespace={self.namespace}")
        return args
