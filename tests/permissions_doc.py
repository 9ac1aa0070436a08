"""docs/permissions.md's "What it needs" section as the tests read it: its table of resources
and verbs, and the Role manifest printed under it (the one users apply, so the one tested)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

PAGE = Path(__file__).resolve().parents[1] / "docs" / "permissions.md"
SECTION = "## What it needs"


def section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    begin = text.index(SECTION)
    end = text.find("\n## ", begin + len(SECTION))
    return text[begin:end if end >= 0 else len(text)]


def documented_role() -> dict[str, Any]:
    """The Role manifest of the section (its first YAML block)."""
    found = re.search(r"```yaml\n(.*?)```", section(), re.DOTALL)
    assert found, f"{PAGE}: no YAML block under {SECTION!r}"
    role: dict[str, Any] = yaml.safe_load(found.group(1))
    assert role["kind"] == "Role", role
    return role


def role_grants(role: dict[str, Any]) -> set[tuple[str, str]]:
    """(resource, verb) pairs a Role grants, a resource of a named API group written
    `jobs.batch` as kubectl writes it."""
    grants = set()
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                name = f"{resource}.{group}" if group else resource
                grants.update((name, verb) for verb in rule["verbs"])
    return grants


def table_grants() -> set[tuple[str, str]]:
    """(resource, verb) pairs the section's table lists: every backquoted resource of a
    row's first column with every backquoted verb of its second."""
    grants = set()
    for line in section().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        resources = re.findall(r"`([a-z./]+)`", cells[0])
        verbs = re.findall(r"`([a-z]+)`", cells[1])
        grants.update((resource, verb) for resource in resources for verb in verbs)
    return grants


def readme_summary() -> set[str]:
    """Every backquoted word of the README's "Permissions it needs", the short version of
    the page's table."""
    readme = PAGE.parents[1] / "README.md"
    text = readme.read_text(encoding="utf-8")
    begin = text.index("## Permissions it needs")
    end = text.find("\n## ", begin + 1)
    return set(re.findall(r"`([a-z./]+)`", text[begin:end if end >= 0 else len(text)]))
