"""RDU -o1 fusion rule lists: the shipped lists, the YAML schema and its FILE:LINE errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from accel.diagnostics import AccelError
from accel.passes.rdu.rules import SHIPPED, Tree, load_rules, parse_rules


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_list_loads(name: str) -> None:
    rules = load_rules(name)
    assert rules and all(r.priority >= 0 for r in rules)


def test_gpt2_list_has_sambaflow_rules() -> None:
    names = {r.name for r in load_rules("gpt2")}
    assert {"Embedding", "MHA", "QKV", "FFN0", "FFN1", "ProjGemm", "AttentionMask",
            "CrossEntropy", "Classification"} <= names
    assert [r.name for r in load_rules("default")] == ["MHA"]


def test_sequence_elements_optional_alternatives_anchors() -> None:
    (rule,) = parse_rules('- {name: R, priority: 3, pattern: ["(gelu)", "mul|div?", add]}\n',
                          "r.yaml")
    anchor, either, add = rule.pattern
    assert anchor.anchor and anchor.kinds == ("gelu",)
    assert either.optional and either.kinds == ("mul", "div")
    assert add.kinds == ("add",) and not add.optional


def test_tree_form() -> None:
    text = "- name: T\n  priority: 1\n  pattern:\n    op_type: layer_norm\n    child:\n" \
           "      op_type: linear\n"
    (rule,) = parse_rules(text, "t.yaml")
    assert isinstance(rule.pattern, Tree)
    assert rule.pattern.children[0].element.kinds == ("linear",)


def test_a_file_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("- {name: Mine, priority: 1, pattern: [linear, gelu]}\n")
    assert [r.name for r in load_rules(str(path))] == ["Mine"]


@pytest.mark.parametrize(("text", "line", "message"), [
    ("- name: A\n  priority: high\n  pattern: [linear]\n", 2, "priority must be an integer"),
    ("- name: A\n  priority: 1\n", 1, "missing key 'pattern'"),
    ("- name: A\n  priority: 1\n  pattern: [linear]\n  colour: red\n", 4,
     "unknown key 'colour'"),
    ("- name: A\n  priority: 1\n  pattern: [Linear]\n", 3, "'Linear' is not an operator kind"),
    ("- name: A\n  priority: 1\n  pattern: []\n", 3, "pattern must not be empty"),
    ("- name: A\n  priority: 1\n  pattern: [\"(gelu)\"]\n", 3, "at least one required"),
    ("- name: A\n  priority: 1\n  pattern: [linear\n", 4, "invalid YAML"),
    ("name: A\n", 1, "a rule list must be a YAML list"),
    ("- {name: A, priority: 1, pattern: [linear]}\n- {name: A, priority: 2, pattern: [gelu]}\n",
     2, "rule 'A' is already defined at line 1"),
    ("- name: A\n  priority: 1\n  pattern:\n    child: {op_type: gelu}\n", 4,
     "missing key 'op_type'"),
])
def test_schema_errors_name_file_and_line(text: str, line: int, message: str) -> None:
    with pytest.raises(AccelError) as err:
        parse_rules(text, "bad.yaml")
    first = str(err.value).splitlines()[0]
    assert first.startswith(f"bad.yaml:{line}: error: "), first
    assert message in first


def test_unknown_list_names_the_shipped_ones() -> None:
    with pytest.raises(AccelError, match="unknown o1 rule list 'gtp2' .shipped: default, nlp, "
                                         "gpt2, bloom, gpt_neox_inference, gpt_neox_training"):
        load_rules("gtp2")


def test_unreadable_file_is_one_line() -> None:
    with pytest.raises(AccelError, match="cannot read 'missing/rules.yaml'"):
        load_rules("missing/rules.yaml")
