"""What the kubectl on PATH can do that squarepeg depends on, by its client version, and the
one line that says which kubectl is needed when an old one meets what it cannot do.

The version is asked once per kubectl binary (`kubectl version --client -o json`) and
remembered in the view cache's file (viewcache.binary_key: path, size, mtime, inode), and
only when something failed: a run that works never pays for the question. A dispatcher
(gcloud's `kubectl`, which picks a kubectl per server version and says `v1.32.4-dispatcher`)
has no one version and is treated as unknown: no claim is made about it.

The two differences found (tests/e2e with `--kubectl 1.27`, issue 24):
- attach: kubectl 1.27 to 1.29 attach over SPDY/3.1 only (1.29 has WebSocket behind
  KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true); 1.30 and newer try WebSocket first. Every real API
  server takes both, but a proxy or gateway that passes only WebSocket upgrades (and kubesim)
  refuses SPDY: the fix is a newer kubectl, not the proxy advice attachment.py gives.
- `create --dry-run=server`: kubectl before 1.29 first reads the API server's OpenAPI v2
  document in protobuf, to learn that the server validates fields itself. A server that does
  not serve it answers 404, which kubectl prints as a bare NotFound.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time

from kubectl_squarepeg.cluster import viewcache
from kubectl_squarepeg.errors import ClusterError

# The first minor version that attaches over WebSocket unasked.
WEBSOCKET_ATTACH = 30
# The first minor version whose server-side dry run needs no OpenAPI v2 document (it reads
# OpenAPI v3 to learn of the server's field validation).
DRY_RUN_WITHOUT_OPENAPI_V2 = 29
VERSION_SECONDS = 15.0

_VERSION = re.compile(r"v?1\.(\d+)\.\d+$")


def client_minor(environ: dict[str, str] | None = None) -> int | None:
    """The minor version of the kubectl on PATH (27 for v1.27.16), None when unknown (no
    kubectl, a dispatcher, no answer). Asked once per binary, then read from the cache."""
    env = os.environ if environ is None else environ
    path = shutil.which("kubectl", path=env.get("PATH"))
    if path is None:
        return None
    path = os.path.realpath(path)
    key = viewcache.binary_key(path, now=time.time())
    cache = viewcache.cache_file(env)
    said = viewcache.lookup_text(key, cache) if key is not None else None
    if said is None:
        said = _ask_version()
        if key is not None and said:
            viewcache.store_text(key, said, cache)
    match = _VERSION.match(said or "")
    return int(match.group(1)) if match else None


def _ask_version() -> str:
    from kubectl_squarepeg.cluster import kubectl

    try:
        result = kubectl.run(["version", "--client", "-o", "json"], timeout=VERSION_SECONDS)
    except ClusterError:
        return ""
    if not result.ok:
        return ""
    try:
        return str(json.loads(result.stdout)["clientVersion"]["gitVersion"])
    except (ValueError, KeyError, TypeError):
        return ""


def _upgrade_refused(kubectl_says: str) -> bool:
    lowered = kubectl_says.lower()
    return "forbidden" not in lowered and any(
        word in lowered for word in ("upgrade", "spdy", "bad handshake"))


def attach_refusal(kubectl_says: str, pod: str, *, tty: bool) -> ClusterError | None:
    """For an attach whose connection upgrade was refused, by a kubectl that speaks SPDY
    only: the error naming the kubectl that attaches; None otherwise (attachment.py's)."""
    if not _upgrade_refused(kubectl_says):
        return None
    minor = client_minor()
    if minor is None or minor >= WEBSOCKET_ATTACH:
        return None
    flag = "-it" if tty else "-i"
    return ClusterError(
        f"cannot attach to pod {pod}: kubectl 1.{minor} attaches over SPDY/3.1 only, and "
        "the API server or a proxy on the way refused that upgrade",
        f"use kubectl 1.{WEBSOCKET_ATTACH} or newer, which attaches over WebSocket; or run "
        f"without {flag}",
    )


def dry_run_refusal(kubectl_says: str) -> ClusterError | None:
    """For a server-side dry run refused with a bare NotFound by a kubectl that reads OpenAPI
    v2 first: the error naming the kubectl needed; None otherwise (the runner's)."""
    if "could not find the requested resource" not in kubectl_says.lower():
        return None
    minor = client_minor()
    if minor is None or minor >= DRY_RUN_WITHOUT_OPENAPI_V2:
        return None
    return ClusterError(
        f"--dry-run-server: kubectl 1.{minor} reads the API server's OpenAPI v2 document "
        "before a server-side dry run, and this server does not serve it",
        f"use kubectl 1.{DRY_RUN_WITHOUT_OPENAPI_V2} or newer, which reads OpenAPI v3; or "
        "`--dry-run` to see the manifest without the server",
    )
