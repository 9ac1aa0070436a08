"""Kubernetes names: what a name, a label or an annotation key may look like.

Owns the RFC 1123 forms the API server checks (a label of at most 63 characters for pod,
namespace and host names; a subdomain of at most 253 for secrets, service accounts,
classes and the host names of `--add-host`), label and annotation keys and label values,
the labels squarepeg keeps for itself, and `--toleration`, whose key and value are a
label's.
"""

from __future__ import annotations

import re

from kubectl_squarepeg.plan.labels import MANAGED_BY_LABEL, SQUAREPEG_LABEL_PREFIX
from kubectl_squarepeg.plan.values import ValueProblem

MAX_LABEL = 63
MAX_SUBDOMAIN = 253

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"


def validate_name(text: str) -> str:
    """A lowercase RFC 1123 label (pod, namespace and host names): at most 63 characters."""
    if len(text) > MAX_LABEL:
        raise ValueProblem(f"use at most {MAX_LABEL} characters (this one has {len(text)})")
    if not re.fullmatch(_DNS_LABEL, text):
        raise ValueProblem(
            "use lowercase letters, digits and '-', starting and ending with a letter or "
            "digit, like my-run-1"
        )
    return text


def validate_hostname(text: str) -> str:
    """`-h/--hostname`: a pod's host name is one RFC 1123 label, where docker also takes a
    dotted name; the dotted case gets its own hint."""
    if "." in text:
        raise ValueProblem(
            "a pod's host name is one label, without dots; give the first part, and set "
            "`subdomain` under `kubernetes.spec` in a config file for the domain"
        )
    return validate_name(text)


def is_subdomain(text: str) -> bool:
    """Whether `text` is what the API server calls a DNS-1123 subdomain (IsDNS1123Subdomain):
    at most 253 characters of lowercase labels joined by '.', no trailing '.'. It does not
    limit a label to 63 characters, so neither does this."""
    return len(text) <= MAX_SUBDOMAIN and re.fullmatch(_DNS_SUBDOMAIN, text) is not None


def validate_subdomain(text: str) -> str:
    """A lowercase RFC 1123 subdomain (secret, service account, class names)."""
    if not is_subdomain(text):
        raise ValueProblem(
            "use lowercase letters, digits, '-' and '.', starting and ending with a letter "
            "or digit, like my-secret"
        )
    return text


def validate_label_key(key: str) -> str:
    """A label or annotation key: NAME or PREFIX/NAME, PREFIX a DNS subdomain."""
    prefix, slash, name = key.rpartition("/")
    if slash and not is_subdomain(prefix):
        raise ValueProblem(
            f"the prefix {prefix!r} must be a lowercase DNS subdomain, like example.com/NAME"
        )
    if len(name) > MAX_LABEL or not re.fullmatch(_LABEL_NAME, name):
        raise ValueProblem(
            "a key is NAME or PREFIX/NAME; NAME has at most 63 letters, digits, '-', '_' "
            "and '.', starting and ending with a letter or digit, like team or example.com/team"
        )
    return key


def validate_annotation_key(key: str) -> str:
    """Annotation keys follow the label key rules; their values are free text."""
    return validate_label_key(key)


def validate_label_value(value: str) -> str:
    """A label value: empty, or at most 63 letters, digits, '-', '_', '.', alphanumeric ends."""
    if value and (len(value) > MAX_LABEL or not re.fullmatch(_LABEL_NAME, value)):
        raise ValueProblem(
            "a label value has at most 63 letters, digits, '-', '_' and '.', starting and "
            "ending with a letter or digit (or is empty)"
        )
    return value


def is_reserved_label(key: str) -> bool:
    """Labels squarepeg sets itself; the orphan sweep depends on them."""
    return key == MANAGED_BY_LABEL or key.startswith(SQUAREPEG_LABEL_PREFIX)


RESERVED_LABEL_HINT = (
    f"{MANAGED_BY_LABEL} and {SQUAREPEG_LABEL_PREFIX}* are set by squarepeg itself (use "
    "--keep or `cleanup: false` for squarepeg.io/keep); pick another label key"
)


_TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def parse_toleration(text: str) -> dict[str, str]:
    """`KEY[=VALUE]:EFFECT`, the form of `kubectl taint`, as a toleration."""
    rest, colon, effect = text.rpartition(":")
    hint = "use KEY[=VALUE]:EFFECT, like gpu=true:NoSchedule or dedicated:NoExecute"
    if not colon or effect not in _TOLERATION_EFFECTS:
        raise ValueProblem(f"{hint}; EFFECT is one of {', '.join(_TOLERATION_EFFECTS)}")
    key, equals, value = rest.partition("=")
    try:
        validate_label_key(key)
        validate_label_value(value)
    except ValueProblem as problem:
        raise ValueProblem(f"{hint} ({problem})") from None
    if equals:
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}
