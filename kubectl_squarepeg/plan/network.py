"""The pod's network settings: `--dns`, `--dns-search`, `--dns-option` and `--add-host`.

Owns IP addresses, search domains, resolv.conf options and host aliases, accepted as the
API server accepts them (pkg/apis/core/validation, validatePodDNSConfig and
ValidateHostAliases), so that a value squarepeg takes is one the pod can have.
"""

from __future__ import annotations

import re

from kubectl_squarepeg.plan.images import REGISTRY_HOST
from kubectl_squarepeg.plan.names import MAX_SUBDOMAIN
from kubectl_squarepeg.plan.values import ValueProblem


def _ip_address(text: str) -> str:
    import ipaddress  # only for the few flags that take an address

    try:
        return str(ipaddress.ip_address(text.strip().removeprefix("[").removesuffix("]")))
    except ValueError:
        raise ValueProblem(f"{text!r} is not an IP address; give one like 10.0.0.2") from None


def parse_dns_ip(text: str) -> str:
    """A nameserver for `--dns`: an IPv4 or IPv6 address."""
    return _ip_address(text)


# What these checks used in values.py, where a second `_DOMAIN` (the image registry's
# HOST[:PORT]) replaced the DNS name pattern meant for them: kept as it was in this move.
_DOMAIN = REGISTRY_HOST


def parse_dns_search(text: str) -> str:
    """A search domain for `--dns-search`, like example.com."""
    if len(text) > MAX_SUBDOMAIN or not re.fullmatch(_DOMAIN, text):
        raise ValueProblem("give a domain name like example.com")
    return text


_DNS_OPTION_NAME = r"[A-Za-z0-9][-A-Za-z0-9_.]*"


def parse_dns_option(text: str) -> tuple[str, str | None]:
    """A resolv.conf option for `--dns-option`: `NAME` or `NAME:VALUE` (ndots:2, rotate)."""
    name, colon, value = text.strip().partition(":")
    if not re.fullmatch(_DNS_OPTION_NAME, name) or (colon and not value.strip()):
        raise ValueProblem("give a resolv.conf option like ndots:2, timeout:1 or rotate")
    return name, value.strip() if colon else None


def parse_add_host(text: str) -> tuple[str, str]:
    """docker's `HOST:IP` (or `HOST=IP`) for `spec.hostAliases`."""
    separator = min((i for i in (text.find(":"), text.find("=")) if i >= 0), default=-1)
    if separator <= 0:
        raise ValueProblem("use HOST:IP, like db.local:10.0.0.5")
    host, address = text[:separator], text[separator + 1 :]
    if address == "host-gateway":
        raise ValueProblem(
            "host-gateway means the docker host, which a pod does not have; give an IP "
            "address, like db.local:10.0.0.5"
        )
    if len(host) > MAX_SUBDOMAIN or not re.fullmatch(_DOMAIN, host):
        raise ValueProblem(f"{host!r} is not a host name; use HOST:IP, like db.local:10.0.0.5")
    return host, _ip_address(address)
