"""The Role docs/permissions.md prints grants exactly what its permissions table lists: a user who
applies it can run everything the table names, and is given nothing it does not."""

from __future__ import annotations

from tests.permissions_doc import documented_role, readme_summary, role_grants, table_grants


def test_the_documented_role_grants_what_its_table_lists_and_no_more() -> None:
    table = table_grants()
    assert ("pods", "create") in table and ("pods/portforward", "create") in table, table
    assert role_grants(documented_role()) == table


def test_the_documented_role_is_namespaced_and_asks_for_nothing_cluster_wide() -> None:
    role = documented_role()
    assert role["kind"] == "Role" and role["metadata"]["namespace"]
    assert all("*" not in rule["verbs"] + rule["resources"] for rule in role["rules"])


def test_the_readme_names_every_resource_and_verb_of_the_table() -> None:
    named = readme_summary()
    missing = {word for grant in table_grants() for word in grant} - named
    assert not missing, (f"README.md's 'Permissions it needs' does not name {sorted(missing)}, "
                         "which docs/permissions.md's table lists: add them to its summary")
