"""Where kubectl talks to, and as whom: the user's kubeconfig file, context, namespace, and
the identity the user impersonates.

Owns the flags that point one kubectl call at the run's cluster (`global_args`), used
alike by the calls squarepeg makes (kubectl.py) and the commands it prints for the user
(commands.py). Impersonation (`--as USER`, `--as-group GROUP`) is part of the target: it is
passed to every kubectl call of the run, as `--context` is, and printed in every command
squarepeg suggests, so that each acts with the same permissions as the run did
(docs/decisions/0250-impersonation-is-part-of-the-target.md). Pure.
"""

from __future__ import annotations

from typing import NamedTuple

DEFAULT_NAMESPACE = "default"


class Target(NamedTuple):
    """Where kubectl talks to: the user's context, kubeconfig file and namespace."""

    context: str | None = None
    kubeconfig: str | None = None
    namespace: str | None = None
    # kubectl's --as and --as-group: the user (and groups) every request is made as.
    as_user: str | None = None
    as_groups: tuple[str, ...] = ()

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
        if self.as_user:
            args.append(f"--as={self.as_user}")
            args.extend(f"--as-group={group}" for group in self.as_groups)
        return args

    def impersonating(self, as_user: str | None, as_groups: tuple[str, ...]) -> Target:
        """This target, with every request made as `as_user` in `as_groups`."""
        return self._replace(as_user=as_user, as_groups=as_groups if as_user else ())

    def as_whom(self) -> str:
        """The banner's words for the impersonated identity ("" when there is none)."""
        if not self.as_user:
            return ""
        groups = f" (groups {', '.join(self.as_groups)})" if self.as_groups else ""
        return f", as {self.as_user}{groups}"
