"""kubectl's complaints (its stderr) as squarepeg's messages quote them.

Owns what is taken out of kubectl's stderr before a message quotes it: klog's diagnostic
lines (`E1203 15:30:01.123456   4242 memcache.go:265] ...`), which repeat what the last line
says in a form meant for kubectl's developers, and kubectl's advice about its own flags that
squarepeg does not have (`turn validation off with --validate=false`): following it is
impossible through squarepeg. Also owns telling a complaint of an API server that could not
be reached from one that answered (a refusal, a denial), so that a hint fits the failure,
and reading which verb on which resource RBAC denied (`denied`), so that a message can name
the `kubectl auth can-i` command that checks it (docs/permissions.md).
Pure: text in, text out.
"""

from __future__ import annotations

import re

_KLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\]\s]+:\d+\] ?")
_FOREIGN_ADVICE = re.compile(
    r";?\s*if you choose to ignore these errors, turn validation off with --validate=false",
    re.IGNORECASE,
)


def clean(lines: list[str]) -> str:
    """kubectl's stderr lines (stripped, none empty) as one line for a message.

    klog lines go when anything else is left; otherwise the last one is kept, without its
    prefix, since it is all there is to say."""
    plain = [line for line in lines if not _KLOG.match(line)]
    if not plain and lines:
        plain = [_KLOG.sub("", lines[-1])]
    # Once each: kubectl runs an exec credential plugin again on a retry, and the plugin's
    # own stderr (which kubectl passes on) then says the same thing twice.
    plain = list(dict.fromkeys(plain))
    text = " ".join(plain)
    return _FOREIGN_ADVICE.sub("", text).strip()


# What kubectl (and Go's net/http under it) say when no answer came from the API server.
_UNREACHABLE = (
    "connection refused",
    "was refused",
    "unable to connect",
    "no such host",
    "i/o timeout",
    "dial tcp",
    "couldn't get current server api group list",
    "did not answer within",
    "tls handshake timeout",
    "connection reset by peer",
    "serviceunavailable",  # kubectl's `Error from server (ServiceUnavailable)`: shutting down
)


def credential_plugin_failed(text: str) -> bool:
    """Whether kubectl says the kubeconfig's exec credential plugin failed (kubectl words it
    as `Unable to connect to the server: getting credentials: exec: ...`): no request was
    sent, so the hint is the plugin, not the network."""
    return "getting credentials" in text.lower()


def unreachable(text: str) -> bool:
    """Whether kubectl's complaint says the API server gave no answer at all."""
    lowered = text.lower()
    return any(word in lowered for word in _UNREACHABLE)


# The API server's RBAC denial: `User "U" cannot VERB resource "RES" in API group "G" ...`.
_DENIED = re.compile(r'cannot (\w+) resource "([^"]+)" in API group "([^"]*)"')


def denied(text: str) -> tuple[str, str] | None:
    """The verb and resource (`pods/log`, `jobs.batch`) an RBAC denial in `text` names, as
    `kubectl auth can-i` takes them; None if `text` is no such denial."""
    found = _DENIED.search(text)
    if found is None:
        return None
    verb, resource, group = found.groups()
    if group:
        plural, slash, sub = resource.partition("/")
        resource = f"{plural}.{group}{slash}{sub}"
    return verb, resource


_SERVER_WARNING = "Warning: "


def server_warnings(stderr: bytes) -> list[str]:
    """The warnings the API server sent with an answer (a `Warning` header, which kubectl
    prints as `Warning: TEXT`: Pod Security's `warn` mode, a deprecated field, a policy's
    warn action), each once, in order."""
    lines = (line.strip() for line in stderr.decode("utf-8", "replace").splitlines())
    return list(dict.fromkeys(line.removeprefix(_SERVER_WARNING) for line in lines
                              if line.startswith(_SERVER_WARNING)))
