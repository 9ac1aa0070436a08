"""The pod's network settings (plan/network.py): nameservers, search domains, resolv.conf
options, host aliases."""

from __future__ import annotations

from typing import Any

from kubectl_squarepeg.plan import network
from tests.unit.parser_tables import Parser, table_tests

# The API server limits a DNS-1123 subdomain to 253 characters, not its labels to 63.
NAME_253 = ".".join(["a" * 63] * 3) + "." + "a" * 61
NAME_254 = NAME_253 + "a"
assert (len(NAME_253), len(NAME_254)) == (253, 254)

GOOD: list[tuple[Parser, str, Any]] = [
    (network.parse_dns_ip, "10.0.0.2", "10.0.0.2"),
    (network.parse_dns_ip, "2001:db8::1", "2001:db8::1"),
    (network.parse_dns_search, "example.com", "example.com"),
    # What validatePodDNSConfig takes (Kubernetes 1.34): one trailing '.' dropped before the
    # check, '_' in a label (RelaxedDNSSearchValidation), "." alone; kept as given.
    (network.parse_dns_search, "example.com.", "example.com."),
    (network.parse_dns_search, "a_b.local", "a_b.local"),
    (network.parse_dns_search, "_sip._tcp.example.com", "_sip._tcp.example.com"),
    (network.parse_dns_search, ".", "."),
    (network.parse_dns_search, NAME_253, NAME_253),
    (network.parse_dns_search, NAME_253 + ".", NAME_253 + "."),
    (network.parse_add_host, "db.local:10.0.0.5", ("db.local", "10.0.0.5")),
    (network.parse_add_host, "db=10.0.0.5", ("db", "10.0.0.5")),
    (network.parse_add_host, "v6:[2001:db8::1]", ("v6", "2001:db8::1")),
    (network.parse_add_host, "v6:2001:db8::1", ("v6", "2001:db8::1")),
    (network.parse_add_host, f"{NAME_253}:10.0.0.1", (NAME_253, "10.0.0.1")),
]
BAD: list[tuple[Parser, str, str]] = [
    (network.parse_dns_ip, "dns.google", "'dns.google' is not an IP address"),
    (network.parse_dns_search, "bad domain", "give a domain name like example.com"),
    # A registry's HOST[:PORT] once passed here (values.py's second `_DOMAIN`); the API
    # server refuses a port, an address in brackets, 254 characters, uppercase, two dots.
    (network.parse_dns_search, "example.com:8080", "lowercase letters, digits, '-' and '_'"),
    (network.parse_dns_search, "[::1]", "(no port, no address)"),
    (network.parse_dns_search, NAME_254, "at most 253 characters besides a trailing '.' (this"),
    (network.parse_dns_search, "Example.COM", "in lowercase only; use example.com"),
    (network.parse_dns_search, "example.com..", "give a domain name like example.com"),
    (network.parse_dns_search, "", "give a domain name like example.com"),
    (network.parse_dns_search, "a_.local", "give a domain name like example.com"),
    (network.parse_add_host, "db", "use HOST:IP"),
    (network.parse_add_host, "db:host-gateway", "host-gateway means the docker host"),
    (network.parse_add_host, "db:999.1.1.1", "'999.1.1.1' is not an IP address"),
    (network.parse_add_host, "bad host:10.0.0.1", "'bad host' is not a host name"),
    # ValidateHostAliases: a DNS-1123 subdomain, without the search domain's relaxations.
    (network.parse_add_host, "db.local.:10.0.0.1", "without the trailing '.'; use db.local:10"),
    (network.parse_add_host, "DB.local:10.0.0.1", "name in lowercase; use db.local:10.0.0.1"),
    (network.parse_add_host, "DB.local.:10.0.0.1", "in lowercase and without the trailing '.'"),
    (network.parse_add_host, "a_b.local:10.0.0.1", "'a_b.local' is not a host name"),
    (network.parse_add_host, f"{NAME_254}:10.0.0.1", "at most 253 characters (this one has 254)"),
    (network.parse_add_host, "[::1]:10.0.0.1", "'[' is not a host name"),
    (network.parse_add_host, "example.com:8080:10.0.0.1", "'8080:10.0.0.1' is not an IP"),
]
test_accepted_forms, test_refused_forms_say_the_accepted_form = table_tests(GOOD, BAD)
