"""A run's head start: its create and its watch, started in the first milliseconds of the
process, before click and the config files have loaded.

A kubectl call costs about 0.1 s here, nearly all of it kubectl's own start-up (the
dispatcher's version check, the Go runtime, the kubeconfig, discovery), and squarepeg's
start-up costs about twice that. So when the argv prescan (cli.py) finds a real run and an
earlier run left the kubeconfig's answer in the view cache, two kubectl processes start at
once:

- the create, `kubectl create -f - -o json`, whose stdin squarepeg holds: it starts up and
  then waits; it creates nothing until the finished manifest is written to it, and if
  squarepeg ends first, its stdin closes empty and it creates nothing at all;
- the watch, selecting the run's pod by the run id label (the only thing known before the
  manifest exists, which is why the run id is chosen here), so it needs no name and may
  start before the pod exists.

Imports nothing heavy (no dataclasses, pathlib or click): it runs before them, and every
millisecond it waits is one less of kubectl's start-up hidden behind squarepeg's.

Owns the run id, the guess of the target, and the one rule of use: the head start serves
the run only if the target the run resolved is the one guessed (context, kubeconfig and
namespace; a config file's `namespace` or `context`, say, makes them differ) and the
finished manifest still labels the pod with this run id. Otherwise it is discarded (both
children ended, nothing created) and the run starts its own: a wrong guess costs time,
never correctness.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from kubectl_squarepeg import kubectl, viewcache
from kubectl_squarepeg.kubectl import Target

RUN_ID_LABEL = "squarepeg.io/run-id"  # manifest.RUN_ID_LABEL, without importing manifest


def new_run_id() -> str:
    """A random (version 4) UUID, as uuid.uuid4() makes it, without importing uuid (which
    imports platform and costs a dry run a few milliseconds)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def pod_labels(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    """The labels the run's pod will carry: a Pod's own, or a Job's pod template's."""
    metadata: Any = manifest.get("metadata")
    if manifest.get("kind") == "Job":
        template: Any = (manifest.get("spec") or {}).get("template") or {}
        metadata = template.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def watch_args(run_id: str) -> list[str]:
    return [
        "get",
        "pods",
        "-l",
        f"{RUN_ID_LABEL}={run_id}",
        "--watch",
        "--output-watch-events",
        "-o",
        "json",
    ]


class HeadStart(NamedTuple):
    """The two children started ahead of the run, for one guessed target and run id."""

    target: Target
    run_id: str
    create: kubectl.Child
    held: kubectl.HeldStdin
    watch: kubectl.Child

    def fits(self, target: Target, manifest: Mapping[str, Any]) -> bool:
        """Whether these children can serve a run of `manifest` on `target`."""
        return (
            target == self.target
            and pod_labels(manifest).get(RUN_ID_LABEL) == self.run_id
            and self.create.is_alive()
            and self.watch.is_alive()
        )

    def discard(self) -> None:
        """End both children; the create has been given nothing, so it created nothing."""
        self.held.close()
        self.create.terminate()
        self.watch.terminate()


def start_if_remembered(
    context: str | None,
    kubeconfig: str | None,
    namespace: str | None,
    environ: Mapping[str, str] | None = None,
) -> HeadStart | None:
    """Start the head start if the view cache knows the context kubectl would use (else
    None): `context` and `kubeconfig` as given on the command line, `namespace` as -n."""
    environ = os.environ if environ is None else environ
    key = viewcache.key_for(context, kubeconfig, environ, now=time.time())
    known = viewcache.lookup(key, viewcache.cache_file(environ)) if key else None
    if known is None:
        return None
    name, context_namespace = known
    target = Target.of_context(name, context_namespace, kubeconfig=kubeconfig, namespace=namespace)
    return start(target, new_run_id())


def start(target: Target, run_id: str) -> HeadStart:
    """Start the held create and the run id's watch on `target`."""
    held = kubectl.HeldStdin()
    creating = kubectl.start(["create", "-f", "-", "-o", "json"], target, stdin=held)
    try:
        watching = kubectl.start(watch_args(run_id), target, stdout_later=True)
    except BaseException:
        held.close()
        creating.terminate()
        raise
    return HeadStart(target, run_id, creating, held, watching)
