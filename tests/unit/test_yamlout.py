"""The YAML writer: block style in insertion order, safe quoting, `|` blocks, comments; every
output loads back (with PyYAML's safe loader) to exactly the data that was written."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kubectl_squarepeg.plan import yamlout

# fmt: off
TRICKY_STRINGS = [
    '', ' ', 'plain', 'on', 'Off', 'YES', 'y', 'N', 'null', 'Null', '~', 'true', 'False', '0',
    '1', '-1', '+1', '1.10', '1e3', '0x1F', '0o17', '0755', '1_000', '12:30', '1:20:30', '.5',
    '.inf', '-.inf', '.NaN', '2024-01-02', '2001-12-14t21:59:43.10-05:00', '500m', '1536Mi',
    '10Gi', '3Z', '1b', '0b101', '10.0.0.1', '1.2.3', '1.2.3e4', '-', '--', '-l', '- x', 'a: b',
    'a:', ':a', 'a:b', 'http://x/y', '#x', 'a #b', 'a#b', '!tag', '&anchor', '*alias', '@at',
    '`tick', '%pct', '|', '>', "'", '"', "it's", 'say "hi"', '[1]', '{a}', 'a,b', '?', '? x',
    '<<', '=', 'tab\there', 'trailing ', ' leading', 'unicodé ✓', 'emoji 🐳', 'nel\x85x',
    'ls\u2028x', 'bom\ufeff', 'bell\x07', 'del\x7f', 'cr\rx', 'back\\slash', '---', '...',
    'a\nb', 'a\nb\n', 'a\nb\n\n', '\nleading newline', '  indented\nsecond', 'x\n  indented\n',
    'trailing space \nline', '\n', '\n\n', 'only\n\n\nblank lines\n', 'tab\n\tline',
    '24817d9f-ced2-4de0-b6bb-4044bed57e0a', '12345678-1234-1234-1234-123456789012',
]
# fmt: on


@pytest.mark.parametrize("text", TRICKY_STRINGS)
def test_strings_round_trip_as_values_keys_and_list_items(text: str) -> None:
    doc = {"value": text, text: "key", "list": [text, {"name": text}], "nested": {"k": text}}
    assert yaml.safe_load(yamlout.dump(doc)) == doc


@pytest.mark.parametrize(
    "value",
    [0, 7, -3, 10**20, 1.5, -0.25, 1e-7, 1e20, True, False, None, [], {}, float("-inf")],
)
def test_other_scalars_round_trip(value: Any) -> None:
    assert yaml.safe_load(yamlout.dump({"v": value, "l": [value]})) == {"v": value, "l": [value]}


def test_a_manifest_looks_like_kubectl_writes_it() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "x", "labels": {"app.kubernetes.io/managed-by": "squarepeg"}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example.com:5000/foo/bar:tag",
                    "args": ["sh", "-c", "echo one\necho two\n"],
                    "env": [{"name": "A", "value": "on"}],
                    "resources": {
                        "limits": {"cpu": "500m", "memory": "512Mi", "nvidia.com/gpu": 1}
                    },
                }
            ],
            "restartPolicy": "Never",
            "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["db"]}],
            "nested": [["a", "b"], []],
        },
    }
    assert yamlout.dump(doc) == (
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        "  name: x\n"
        "  labels:\n"
        "    app.kubernetes.io/managed-by: squarepeg\n"
        "spec:\n"
        "  containers:\n"
        "  - name: main\n"
        "    image: registry.example.com:5000/foo/bar:tag\n"
        "    args:\n"
        "    - sh\n"
        "    - '-c'\n"
        "    - |\n"
        "      echo one\n"
        "      echo two\n"
        "    env:\n"
        "    - name: A\n"
        "      value: 'on'\n"
        "    resources:\n"
        "      limits:\n"
        "        cpu: 500m\n"
        "        memory: 512Mi\n"
        "        nvidia.com/gpu: 1\n"
        "  restartPolicy: Never\n"
        "  hostAliases:\n"
        "  - ip: 10.0.0.1\n"
        "    hostnames:\n"
        "    - db\n"
        "  nested:\n"
        "  - - a\n"
        "    - b\n"
        "  - []\n"
    )
    assert yaml.safe_load(yamlout.dump(doc)) == doc


def test_shared_objects_are_written_out_twice_not_aliased() -> None:
    shared = {"a": "b"}
    text = yamlout.dump({"x": shared, "y": shared})
    assert "&" not in text and "*" not in text
    assert yaml.safe_load(text) == {"x": {"a": "b"}, "y": {"a": "b"}}


@pytest.mark.parametrize(
    ("text", "header"),
    [("a\nb", "|-"), ("a\nb\n", "|"), ("a\nb\n\n", "|+"), ("  a\nb\n", "|2"), ("\na\n", "|2")],
)
def test_block_literal_headers(text: str, header: str) -> None:
    assert yamlout.dump({"k": text}).startswith(f"k: {header}\n")


def test_comments_end_each_value_line() -> None:
    doc = {"a": 1, "b": {"c": [1, {"name": "x", "v": "two\nlines"}]}, "d": []}
    seen: list[tuple[str, ...]] = []

    def comment(path: tuple[str, ...]) -> str:
        seen.append(path)
        return "/".join(path)

    text = yamlout.dump(doc, comment=comment, segment=lambda items, i: f"#{i}")
    assert text == (
        "a: 1  # a\n"
        "b:  # b\n"
        "  c:  # b/c\n"
        "  - 1  # b/c/#0\n"
        "  - name: x  # b/c/#1/name\n"
        "    v: |-  # b/c/#1/v\n"
        "      two\n"
        "      lines\n"
        "d: []  # d\n"
    )
    assert yaml.safe_load(text) == doc
