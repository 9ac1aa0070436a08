"""The pod's network settings: `--dns`, `--dns-search`, `--dns-option` and `--add-host`.

Owns IP addresses, search domains, resolv.conf options and host aliases, accepted as the
API server accepts them (pkg/apis/core/validation, validatePodDNSConfig and
ValidateHostAliases), so that a value squarepeg takes is one the pod can have.
"""

from __future__ import annotations

import re

from kubectl_squarepeg.plan.names import MAX_SUBDOMAIN, is_subdomain
from kubectl_squarepeg.plan.values import ValueProblem, quoted


def _ip_address(text: str) -> str:
    import ipaddress  # only for the few flags that take an address

    try:
        return str(ipaddress.ip_address(text.strip().removeprefix("[").removesuffix("]")))
    except ValueError:
        raise ValueProblem(f"{text!r} is not an IP address; give one like 10.0.0.2") from None


def parse_dns_ip(text: str) -> str:
    """A nameserver for `--dns`: an IPv4 or IPv6 address."""
    return _ip_address(text)


# A search domain as the API server takes it (validatePodDNSConfig) since
# RelaxedDNSSearchValidation (beta in 1.33, GA and locked on in 1.34): "." alone, or a name
# of at most 253 characters once ONE trailing '.' is dropped, whose labels are a DNS-1123
# subdomain's that may also hold '_' and start with one (_sip._tcp.example.com). Older API
# servers refuse '_' and "." themselves, and squarepeg shows their answer.
_SEARCH_LABEL = r"_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SEARCH_DOMAIN = rf"{_SEARCH_LABEL}(\.{_SEARCH_LABEL})*"


def parse_dns_search(text: str) -> str:
    """A search domain for `--dns-search`, like example.com or example.com. (kept as given)."""
    if text == ".":
        return text  # the root domain
    name = text.removesuffix(".")
    if len(name) > MAX_SUBDOMAIN:
        raise ValueProblem(
            f"a search domain has at most {MAX_SUBDOMAIN} characters besides a trailing '.' "
            f"(this one has {len(name)}); give a domain name like example.com"
        )
    if not re.fullmatch(_SEARCH_DOMAIN, name):
        if re.fullmatch(_SEARCH_DOMAIN, name.lower()):
            raise ValueProblem(
                f"Kubernetes takes a search domain in lowercase only; use {text.lower()}"
            )
        raise ValueProblem(
            "give a domain name like example.com: lowercase letters, digits, '-' and '_' in "
            "parts joined by '.' (no port, no address)"
        )
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
    if not is_subdomain(host):
        raise ValueProblem(_host_alias_problem(host, address))
    return host, _ip_address(address)


def _host_alias_problem(host: str, address: str) -> str:
    """Why the API server refuses `host` as one of a host alias's hostnames (ValidateHostAliases:
    a DNS-1123 subdomain, which has no trailing '.', no '_' and no uppercase)."""
    fixed = host.lower().removesuffix(".")
    if is_subdomain(fixed):
        case = "in lowercase" if host != host.lower() else ""
        dot = "without the trailing '.'" if host.endswith(".") else ""
        why = " and ".join(filter(None, (case, dot)))
        return f"Kubernetes takes a host alias's name {why}; use {fixed}:{address}"
    if len(host) > MAX_SUBDOMAIN:
        return (
            f"a host name has at most {MAX_SUBDOMAIN} characters (this one has {len(host)}); "
            "use HOST:IP, like db.local:10.0.0.5"
        )
    return (
        f"{quoted(host)} is not a host name (lowercase letters, digits, '-' and '.'); use "
        "HOST:IP, like db.local:10.0.0.5"
    )
