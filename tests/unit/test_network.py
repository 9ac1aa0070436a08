"""The pod's network settings (plan/network.py): nameservers, search domains, resolv.conf
options, host aliases."""

from __future__ import annotations

from typing import Any

from kubectl_squarepeg.plan import network
from tests.unit.parser_tables import Parser, table_tests

GOOD: list[tuple[Parser, str, Any]] = [
    (network.parse_dns_ip, "10.0.0.2", "10.0.0.2"),
    (network.parse_dns_ip, "2001:db8::1", "2001:db8::1"),
    (network.parse_dns_search, "example.com", "example.com"),
    (network.parse_add_host, "db.local:10.0.0.5", ("db.local", "10.0.0.5")),
    (network.parse_add_host, "db=10.0.0.5", ("db", "10.0.0.5")),
    (network.parse_add_host, "v6:[2001:db8::1]", ("v6", "2001:db8::1")),
    (network.parse_add_host, "v6:2001:db8::1", ("v6", "2001:db8::1")),
]
BAD: list[tuple[Parser, str, str]] = [
    (network.parse_dns_ip, "dns.google", "'dns.google' is not an IP address"),
    (network.parse_dns_search, "bad domain", "give a domain name like example.com"),
    (network.parse_add_host, "db", "use HOST:IP"),
    (network.parse_add_host, "db:host-gateway", "host-gateway means the docker host"),
    (network.parse_add_host, "db:999.1.1.1", "'999.1.1.1' is not an IP address"),
    (network.parse_add_host, "bad host:10.0.0.1", "'bad host' is not a host name"),
]
test_accepted_forms, test_refused_forms_say_the_accepted_form = table_tests(GOOD, BAD)
