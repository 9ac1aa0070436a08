"""The kubelet's `/logs/` endpoint, reached through the API server's node proxy:
`GET /api/v1/nodes/NODE/proxy/logs/PATH`.

The real kubelet serves the node's /var/log there with Go's `http.FileServer`; of that
directory kubesim has only the pods' logs, `logs/pods/NS_POD_UID/CONTAINER/FILE`, whose
files and their contents are the log book's (logbook.py: `node_files`, `node_file`).

Owns the route, its RBAC check (verb `get` on `nodes/proxy`, cluster-scoped, named after
the node: the API server's 403), the API server's 404 for a node that does not exist, and
FileServer's answers as the kubelet gives them: a directory listing (`text/html`, entries
sorted by name, a directory's with its `/`), a file's bytes (gzip bytes for a `.gz`), the
301 to a directory's path with its slash (or to a file's without one), and
`404 page not found` for anything that is not there: another path, a pod that is gone or
has another uid or runs on another node, a container that never started, a file deleted
by rotation. Methods other than GET get the kubelet's 405.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any

from tests.kubesim import apierrors
from tests.kubesim.admission import authorize
from tests.kubesim.logbook import LogBook
from tests.kubesim.store import Store
from tests.kubesim.transport import Reply, Request

Obj = dict[str, Any]

_PREFIX = "/api/v1/nodes/"
_PLAIN = "text/plain; charset=utf-8"
# What Go's http.Error (FileServer's answer for a missing file) and the kubelet's router
# send, headers included.
_NOT_FOUND = Reply(404, b"404 page not found\n", _PLAIN, {"X-Content-Type-Options": "nosniff"})
_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
          "DELETE": "delete"}
# Go's htmlReplacer, which FileServer's listing applies to each name it shows.
_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;"})


def match(path: str) -> tuple[str, str] | None:
    """(node, the path the kubelet is asked for) of a node proxy path, else None."""
    if not path.startswith(_PREFIX):
        return None
    node, slash, rest = path[len(_PREFIX):].partition("/")
    if not node or not slash:
        return None
    if rest == "proxy":
        return node, ""
    if rest.startswith("proxy/"):
        return node, rest[len("proxy/"):]
    return None


def serve(store: Store, logbook: LogBook, req: Request, node: str, path: str) -> Reply:
    """The answer to a node proxy request (see the module docstring)."""
    authorize(req.user, _VERBS.get(req.method, req.method.lower()), "nodes", "proxy", "",
              None, node)
    if store.get_raw("nodes", None, node) is None:
        raise apierrors.not_found("nodes", "", node)
    if req.method != "GET":
        return Reply(405, b"405: Method Not Allowed", _PLAIN)
    parts = path.split("/")
    is_dir_path = path.endswith("/")
    if is_dir_path:
        parts.pop()
    if not parts or parts[:2] != ["logs", "pods"] or any(p in ("", ".", "..") for p in parts):
        return _NOT_FOUND
    entry = _Lookup(store, logbook, node).find(parts[2:])
    if entry is None:
        return _NOT_FOUND
    children, data = entry
    query = f"?{urllib.parse.urlencode(req.query, doseq=True)}" if req.query else ""
    if children is not None:
        if not is_dir_path:
            return _redirect(parts[-1] + "/" + query)
        return Reply(200, _listing(children), "text/html; charset=utf-8")
    if is_dir_path:
        return _redirect("../" + parts[-1] + query)
    content_type = "application/x-gzip" if parts[-1].endswith(".gz") else _PLAIN
    return Reply(200, data or b"", content_type)


class _Lookup:
    """What a path under logs/pods/ names on one node: a directory's entries (a
    subdirectory's name ends with `/`), or a file's bytes."""

    def __init__(self, store: Store, logbook: LogBook, node: str):
        self.store = store
        self.logbook = logbook
        self.node = node

    def find(self, parts: list[str]) -> tuple[list[str] | None, bytes | None] | None:
        """(entries, None) for a directory, (None, bytes) for a file, None if absent."""
        if not parts:
            return self._pod_directories(), None
        pod = self._pod(parts[0])
        if pod is None:
            return None
        if len(parts) == 1:
            return [name + "/" for name in self._containers(pod)], None
        if parts[1] not in self._containers(pod) or len(parts) > 3:
            return None
        files, read = self._files(pod, parts[1])
        if len(parts) == 2:
            return files, None
        if parts[2] not in files:
            return None
        data = read(parts[2])
        return None if data is None else (None, data)

    def _pods(self) -> list[Obj]:
        pods, _ = self.store.list_raw("pods", None)
        return [pod for pod in pods if (pod.get("spec") or {}).get("nodeName") == self.node]

    def _pod_directories(self) -> list[str]:
        return [_directory(pod) + "/" for pod in self._pods()]

    def _pod(self, directory: str) -> Obj | None:
        # Namespace and pod names cannot hold `_`: the directory splits in three.
        namespace, _, rest = directory.partition("_")
        name, _, uid = rest.partition("_")
        pod = self.store.get_raw("pods", namespace, name)
        if pod is None or not uid or _directory(pod) != directory or \
                (pod.get("spec") or {}).get("nodeName") != self.node:
            return None
        return pod

    def _containers(self, pod: Obj) -> list[str]:
        """The containers whose directory the kubelet made: those it started."""
        meta, spec = pod["metadata"], pod.get("spec") or {}
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        started = {str(s.get("name")) for s in _statuses(pod) if s.get("containerID")}
        names = [str(c.get("name")) for key in ("initContainers", "containers")
                 for c in spec.get(key) or []]
        return [c for c in names
                if c in started or self.logbook.node_files(namespace, name, c) is not None]

    def _files(self, pod: Obj, container: str
               ) -> tuple[list[str], Callable[[str], bytes | None]]:
        """The container's file names and how to read one of them."""
        meta = pod["metadata"]
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        files = self.logbook.node_files(namespace, name, container)
        if files is not None:
            return files, lambda file: self.logbook.node_file(namespace, name, container, file)
        # Started, but nothing written, read or ended yet: an empty current file.
        status = next((s for s in _statuses(pod) if s.get("name") == container), {})
        return [f"{int(status.get('restartCount') or 0)}.log"], lambda file: b""


def _statuses(pod: Obj) -> list[Obj]:
    status = pod.get("status") or {}
    return list(status.get("initContainerStatuses") or []) + \
        list(status.get("containerStatuses") or [])


def _directory(pod: Obj) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace', '')}_{meta.get('name', '')}_{meta.get('uid', '')}"


def _redirect(location: str) -> Reply:
    """Go's localRedirect: a relative Location, no body."""
    return Reply(301, b"", _PLAIN, {"Location": location})


def _listing(entries: list[str]) -> bytes:
    """A directory as Go's FileServer lists it (net/http's dirList)."""
    lines = ["<!doctype html>", '<meta name="viewport" content="width=device-width">', "<pre>"]
    for name in sorted(entries, key=lambda entry: entry.rstrip("/")):
        href = urllib.parse.quote(name, safe="$&+,/:;=@")
        if ":" in href.split("/", 1)[0]:
            href = "./" + href  # url.URL.String(): a colon there would read as a scheme
        lines.append(f'<a href="{href}">{name.translate(_HTML)}</a>')
    lines.append("</pre>")
    return ("\n".join(lines) + "\n").encode()
