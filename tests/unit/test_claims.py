"""Claims: paths, named-list merge, passthrough and JSON patches that keep off claimed fields."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from kubectl_squarepeg.errors import ConfigError
from kubectl_squarepeg.plan import claims
from kubectl_squarepeg.plan.claims import Claims, Dropped


def pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "run-1",
            "namespace": "ns",
            "labels": {"app.kubernetes.io/managed-by": "squarepeg", "squarepeg.io/run-id": "r"},
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "alpine",
                    "env": [{"name": "FOO", "value": "cli"}, {"name": "BAR", "value": "b"}],
                }
            ],
            "restartPolicy": "Never",
        },
    }


def flag_claims() -> Claims:
    found = Claims.reserved()
    found.add("/spec/containers/[name=main]/env/[name=FOO]", "--env")
    found.add(("spec", "containers", "[name=main]", "image"), "IMAGE")
    return found


def no_origin(path: tuple[str, ...]) -> str:
    return "f.yaml:" + ".".join(path)


# --- paths ----------------------------------------------------------------------------------


def test_paths_round_trip_with_pointer_escapes() -> None:
    path = claims.parse_path("/metadata/labels/squarepeg.io~1keep/a~0b")
    assert path == ("metadata", "labels", "squarepeg.io/keep", "a~b")
    assert claims.format_path(path) == "/metadata/labels/squarepeg.io~1keep/a~0b"
    assert claims.parse_path("") == ()
    with pytest.raises(ValueError, match="starts with '/'"):
        claims.parse_path("spec")


@pytest.mark.parametrize(
    ("claim", "path", "related"),
    [
        ("/spec/hostname", "/spec/hostname", True),
        ("/spec/containers/[name=main]", "/spec/containers/[name=main]/image", True),  # inside
        ("/spec/containers/[name=main]/image", "/spec/containers", True),  # around it
        ("/spec/containers/[name=main]/image", "/spec/containers/[name=side]/image", False),
        ("/metadata/labels/squarepeg.io~1*", "/metadata/labels/squarepeg.io~1keep", True),
        ("/metadata/labels/squarepeg.io~1*", "/metadata/labels/team", False),
        ("/spec/hostname", "", True),  # the whole document
    ],
)
def test_related_means_one_contains_the_other(claim: str, path: str, related: bool) -> None:
    assert claims.related(claims.parse_path(claim), claims.parse_path(path)) is related


def test_named_lists_and_their_segments() -> None:
    named = [{"name": "a"}, {"name": "b", "value": 1}]
    assert claims.is_named_list(named)
    assert not claims.is_named_list([{"name": "a"}, {"value": 1}])
    assert not claims.is_named_list([])
    assert not claims.is_named_list(["a"])
    assert claims.item_segment(named, 1) == "[name=b]"
    assert claims.item_segment(["x", "y"], 1) == "1"


def test_reserved_claims_cover_what_the_sweep_needs() -> None:
    assert Claims.reserved().paths() == {
        "/metadata/name": claims.RESERVED,
        "/metadata/namespace": claims.RESERVED,
        "/metadata/labels/app.kubernetes.io~1managed-by": claims.RESERVED,
        "/metadata/labels/squarepeg.io~1*": claims.RESERVED,
        "/spec/containers/[name=main]/name": claims.RESERVED,
    }


def test_for_job_rehomes_the_pod_claims() -> None:
    found = Claims()
    found.add("/metadata/labels/team", "--label")
    found.add("/spec/hostname", "--hostname")
    assert found.for_job().paths() == {
        "/metadata/labels/team": "--label",
        "/spec/template/metadata/labels/team": "--label",
        "/spec/template/spec/hostname": "--hostname",
    }


def test_the_first_claim_of_a_path_is_kept() -> None:
    found = Claims()
    found.add("/spec/hostname", "--hostname")
    found.add("/spec/hostname", "--other")
    assert found.paths() == {"/spec/hostname": "--hostname"}


# --- deep merge -------------------------------------------------------------------------------


def test_deep_merge_mappings_named_lists_and_replaced_lists() -> None:
    base = {
        "containers": [{"name": "main", "env": [{"name": "A", "value": "1"}]}],
        "tolerations": [{"key": "a"}],
        "nodeSelector": {"x": "1"},
    }
    overlay = {
        "containers": [
            {"name": "main", "env": [{"name": "B", "value": "2"}]},
            {"name": "side", "image": "busybox"},
        ],
        "tolerations": [{"key": "b"}],
        "nodeSelector": {"y": "2", "x": None},
    }
    before = copy.deepcopy(base)
    merged = claims.deep_merge(base, overlay)
    assert merged == {
        "containers": [
            {"name": "main", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
            {"name": "side", "image": "busybox"},
        ],
        "tolerations": [{"key": "b"}],  # no names: replaced
        "nodeSelector": {"x": None, "y": "2"},  # the null is kept, to delete downstream
    }
    assert base == before


# --- passthrough --------------------------------------------------------------------------------


def test_passthrough_merges_what_no_flag_claimed() -> None:
    doc = pod()
    overlay = {
        "containers": [
            {
                "name": "main",
                "env": [{"name": "BAR", "value": "cfg"}, {"name": "NEW", "value": "n"}],
            },
            {"name": "side", "image": "busybox"},
        ],
        "hostname": "box",
        "restartPolicy": None,
    }
    dropped = claims.merge_passthrough(
        doc["spec"], overlay, at="/spec", claims=flag_claims(), origin_of=no_origin
    )
    assert dropped == []
    assert doc["spec"] == {
        "containers": [
            {
                "name": "main",
                "image": "alpine",
                "env": [
                    {"name": "FOO", "value": "cli"},
                    {"name": "BAR", "value": "cfg"},
                    {"name": "NEW", "value": "n"},
                ],
            },
            {"name": "side", "image": "busybox"},
        ],
        "hostname": "box",
    }


def test_passthrough_drops_what_a_flag_claimed_with_one_warning_each() -> None:
    doc = pod()
    overlay = {
        "containers": [
            {"name": "main", "image": "evil", "env": [{"name": "FOO", "value": "cfg"}]},
        ]
    }
    dropped = claims.merge_passthrough(
        doc["spec"],
        overlay,
        at="/spec",
        claims=flag_claims(),
        origin_of=no_origin,
        entry_root="kubernetes.spec",
    )
    assert doc == pod()
    assert [d.warning() for d in dropped] == [
        "ignored config kubernetes.spec.containers[name=main].image "
        "(f.yaml:containers.[name=main].image): it would change "
        "/spec/containers/[name=main]/image, which IMAGE set on the command line",
        "ignored config kubernetes.spec.containers[name=main].env[name=FOO].value "
        "(f.yaml:containers.[name=main].env.[name=FOO].value): it would change "
        "/spec/containers/[name=main]/env/[name=FOO]/value, which --env set on the command line",
    ]


def test_passthrough_value_equal_to_the_claimed_one_is_no_change() -> None:
    doc = pod()
    overlay = {"containers": [{"name": "main", "image": "alpine"}]}
    assert (
        claims.merge_passthrough(
            doc["spec"], overlay, at="/spec", claims=flag_claims(), origin_of=no_origin
        )
        == []
    )


def test_passthrough_cannot_touch_reserved_metadata() -> None:
    doc = pod()
    overlay = {"labels": {"squarepeg.io/keep": "true", "team": "a"}, "name": "other"}
    dropped = claims.merge_passthrough(
        doc["metadata"],
        overlay,
        at="/metadata",
        claims=flag_claims(),
        origin_of=no_origin,
        entry_root="kubernetes.metadata",
    )
    assert doc["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "squarepeg",
        "squarepeg.io/run-id": "r",
        "team": "a",
    }
    assert doc["metadata"]["name"] == "run-1"
    assert [(d.entry, d.path, d.claimant) for d in dropped] == [
        (
            'kubernetes.metadata.labels["squarepeg.io/keep"]',
            "/metadata/labels/squarepeg.io~1keep",
            claims.RESERVED,
        ),
        ("kubernetes.metadata.name", "/metadata/name", claims.RESERVED),
    ]
    assert dropped[1].warning().endswith("which squarepeg always sets itself")


def test_passthrough_replacing_a_subtree_around_a_claim_is_dropped() -> None:
    doc = pod()
    dropped = claims.merge_passthrough(
        doc["spec"], {"containers": "nope"}, at="/spec", claims=flag_claims(), origin_of=no_origin
    )
    assert doc == pod()
    # The first claim inside it is named: the main container's name.
    assert [(d.path, d.claimant) for d in dropped] == [
        ("/spec/containers/[name=main]/name", claims.RESERVED)
    ]


def test_passthrough_in_job_mode_uses_the_template_paths() -> None:
    template_spec = pod()["spec"]
    job_claims = flag_claims().for_job()
    dropped = claims.merge_passthrough(
        template_spec,
        {"containers": [{"name": "main", "image": "evil"}]},
        at="/spec/template/spec",
        claims=job_claims,
        origin_of=no_origin,
    )
    assert [d.path for d in dropped] == ["/spec/template/spec/containers/[name=main]/image"]


# --- patches --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    op: dict[str, Any]
    origin: str = "p.yaml:3"
    index: int = 0


@pytest.mark.parametrize(
    ("op", "touched"),
    [
        ({"op": "test", "path": "/spec/hostname", "value": 1}, []),
        (
            {"op": "remove", "path": "/spec/containers/0/image"},
            ["/spec/containers/[name=main]/image"],
        ),
        ({"op": "add", "path": "/spec/hostname", "value": "x"}, ["/spec/hostname"]),
        (
            {"op": "add", "path": "/spec/containers/0/env/0", "value": {"name": "FOO", "value": 1}},
            ["/spec/containers/[name=main]/env/[name=FOO]"],
        ),
        (
            {"op": "add", "path": "/spec/containers/0/env/-", "value": {"value": 1}},
            ["/spec/containers/[name=main]/env/-"],
        ),
        (
            {"op": "replace", "path": "/spec/containers/0/env/1", "value": {"name": "NEW"}},
            [
                "/spec/containers/[name=main]/env/[name=BAR]",
                "/spec/containers/[name=main]/env/[name=NEW]",
            ],
        ),
        (
            {"op": "move", "from": "/spec/containers/0/env/1", "path": "/spec/hostname"},
            ["/spec/hostname", "/spec/containers/[name=main]/env/[name=BAR]"],
        ),
        ({"op": "copy", "from": "/spec/restartPolicy", "path": "/spec/x"}, ["/spec/x"]),
        ({"op": "add", "path": "", "value": {}}, [""]),
        ({"op": "add", "path": "/spec/nothing/here", "value": 1}, ["/spec/nothing/here"]),
    ],
)
def test_touched_paths(op: dict[str, Any], touched: list[str]) -> None:
    assert [claims.format_path(p) for p in claims.touched_paths(pod(), op)] == touched


def test_patches_apply_in_order_and_claimed_ones_are_dropped() -> None:
    patches = [
        Op({"op": "add", "path": "/spec/hostname", "value": "box"}, index=0),
        Op({"op": "replace", "path": "/spec/containers/0/image", "value": "evil"}, index=1),
        Op(
            {"op": "add", "path": "/spec/containers/0/env/-", "value": {"name": "X", "value": "1"}},
            index=2,
        ),
        Op({"op": "remove", "path": "/metadata/labels/squarepeg.io~1run-id"}, "q.yaml:9", index=0),
    ]
    original = pod()
    doc, dropped = claims.apply_patches(original, patches, flag_claims())
    assert original == pod()  # applied to a copy
    assert doc["spec"]["hostname"] == "box"
    assert doc["spec"]["containers"][0]["image"] == "alpine"
    assert doc["spec"]["containers"][0]["env"][-1] == {"name": "X", "value": "1"}
    assert doc["metadata"]["labels"]["squarepeg.io/run-id"] == "r"
    assert [d.warning() for d in dropped] == [
        "ignored config kubernetes.patches[1] `replace /spec/containers/0/image` (p.yaml:3): it "
        "would change /spec/containers/[name=main]/image, which IMAGE set on the command line",
        "ignored config kubernetes.patches[0] `remove /metadata/labels/squarepeg.io~1run-id` "
        "(q.yaml:9): it would change /metadata/labels/squarepeg.io~1run-id, which squarepeg "
        "always sets itself",
    ]


@pytest.mark.parametrize(
    ("op", "reason"),
    [
        ({"op": "add", "path": "/spec/nothing/here", "value": 1}, "cannot be applied"),
        ({"op": "remove", "path": "/spec/volumes"}, "cannot be applied"),
        ({"op": "test", "path": "/spec/restartPolicy", "value": "Always"}, "not equal"),
        (
            {"op": "add", "path": "/spec/containers/0/volumeMounts/-", "value": {}},
            "cannot be applied",
        ),
    ],
)
def test_a_patch_that_cannot_apply_names_its_file_and_index(
    op: dict[str, Any], reason: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        claims.apply_patches(pod(), [Op(op, "p.yaml:7", index=2)], flag_claims())
    text = caught.value.one_line()
    assert text.startswith("kubernetes.patches[2] (p.yaml:7) cannot be applied: ")
    assert reason in text
    assert "fix its path or value" in text


def test_dropped_warning_wording() -> None:
    assert Dropped("kubernetes.spec.x", "a:1", "/spec/x", "--flag").warning() == (
        "ignored config kubernetes.spec.x (a:1): it would change /spec/x, which --flag set "
        "on the command line"
    )


def test_describe_config_entries() -> None:
    assert claims.describe("kubernetes.spec", ("containers", "[name=main]", "env", "0")) == (
        "kubernetes.spec.containers[name=main].env[0]"
    )
    assert claims.describe("kubernetes.metadata", ("labels", "a.io/b")) == (
        'kubernetes.metadata.labels["a.io/b"]'
    )
