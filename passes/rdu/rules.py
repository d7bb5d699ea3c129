"""-o1 fusion rule lists: loading (YAML, schema-checked) and matching on the operator graph.

A rule list is a YAML list of rules:

    - name: MHA              # the label sections matched by this rule carry
      priority: 10           # higher wins where rules overlap (then file order)
      pattern: [matmul, mul?, add?, softmax, dropout?, matmul]

A sequence `pattern` matches a chain of operators in data-flow order, each consuming the
previous one's result; view-like operators (reshape, permute, ...) between them join the
match. An element is an operator kind (lower-case torch name: linear, gelu, matmul,
softmax, layer_norm, embedding, add, ...), `kind?` (optional), `a|b` (either), or `(kind)`:
an anchor that must be there (possibly in another section) but is not part of the match.
The tree form matches branching patterns: a node names `op_type` (same syntax) and its
`child` trees (one mapping or a list), each matched by a distinct consumer:

    pattern:
      op_type: layer_norm
      child:
        - op_type: linear

Shipped lists live in `accel/targets/rdu/rules/<name>.yaml`; any other value is a path.
A malformed file is an `AccelError` "FILE:LINE: error: ..." at the offending node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from accel.diagnostics import AccelError

#: Shipped rule lists (accel/targets/rdu/rules/<name>.yaml).
SHIPPED = ("default", "nlp", "gpt2", "bloom", "gpt_neox_inference", "gpt_neox_training")
RULES_PACKAGE = "accel.targets.rdu"
_KIND = re.compile(r"[a-z_][a-z0-9_]*")
_RULE_KEYS = ("name", "priority", "pattern")
_TREE_KEYS = ("op_type", "child")


@dataclass(frozen=True)
class Element:
    """One pattern element: the kinds it accepts, optional, anchor (not matched into)."""

    kinds: tuple[str, ...]
    optional: bool = False
    anchor: bool = False

    def accepts(self, kind: str) -> bool:
        return kind in self.kinds


@dataclass(frozen=True)
class Tree:
    element: Element
    children: tuple[Tree, ...] = ()


@dataclass(frozen=True)
class Rule:
    name: str
    priority: int
    pattern: tuple[Element, ...] | Tree
    line: int = 0


def _fail(file: str, node: Any, message: str) -> AccelError:
    line = node.start_mark.line + 1 if node is not None else 1
    return AccelError(f"{file}:{line}: error: {message}")


def _element(file: str, node: Any, *, tree: bool = False) -> Element:
    import yaml

    if not isinstance(node, yaml.ScalarNode) or not isinstance(node.value, str) or \
            node.tag != "tag:yaml.org,2002:str":
        raise _fail(file, node, "a pattern element must be an operator kind (a string such "
                                "as linear, softmax, layer_norm)")
    text = node.value.strip()
    anchor = text.startswith("(") and text.endswith(")")
    text = text[1:-1] if anchor else text
    optional = text.endswith("?")
    text = text[:-1] if optional else text
    kinds = tuple(k.strip() for k in text.split("|"))
    bad = [k for k in kinds if not _KIND.fullmatch(k)]
    if bad:
        raise _fail(file, node, f"'{bad[0]}' is not an operator kind (lower-case torch "
                                "names: linear, gelu, matmul, softmax, layer_norm, ...)")
    if optional and (anchor or tree):
        raise _fail(file, node, "'?' (optional) is allowed only in sequence patterns, not "
                                "on anchors or tree nodes")
    return Element(kinds, optional, anchor)


def _tree(file: str, node: Any) -> Tree:
    import yaml

    if not isinstance(node, yaml.MappingNode):
        raise _fail(file, node, "a tree pattern node must be a mapping with op_type and an "
                                "optional child")
    fields = _mapping(file, node, _TREE_KEYS, required=("op_type",))
    children: list[Tree] = []
    child = fields.get("child")
    if child is not None:
        items = child.value if isinstance(child, yaml.SequenceNode) else [child]
        children = [_tree(file, c) for c in items]
    return Tree(_element(file, fields["op_type"], tree=True), tuple(children))


def _mapping(file: str, node: Any, allowed: tuple[str, ...], required: tuple[str, ...]
             ) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, value in node.value:
        if key.value not in allowed:
            raise _fail(file, key, f"unknown key '{key.value}' (allowed: {', '.join(allowed)})")
        if key.value in fields:
            raise _fail(file, key, f"duplicate key '{key.value}'")
        fields[key.value] = value
    missing = [k for k in required if k not in fields]
    if missing:
        raise _fail(file, node, f"missing key '{missing[0]}' (required: {', '.join(required)})")
    return fields


def _rule(file: str, node: Any) -> Rule:
    import yaml

    if not isinstance(node, yaml.MappingNode):
        raise _fail(file, node, "a rule must be a mapping with name, priority and pattern")
    fields = _mapping(file, node, _RULE_KEYS, required=_RULE_KEYS)
    name, priority, pattern = fields["name"], fields["priority"], fields["pattern"]
    if not isinstance(name, yaml.ScalarNode) or not re.fullmatch(r"[A-Za-z_][\w]*",
                                                                 str(name.value)):
        raise _fail(file, name, "name must be an identifier (letters, digits, _)")
    if not isinstance(priority, yaml.ScalarNode) or priority.tag != "tag:yaml.org,2002:int":
        raise _fail(file, priority, f"priority must be an integer, got '{priority.value}'"
                    if isinstance(priority, yaml.ScalarNode) else "priority must be an integer")
    if isinstance(pattern, yaml.SequenceNode):
        if not pattern.value:
            raise _fail(file, pattern, "pattern must not be empty")
        elements = tuple(_element(file, e) for e in pattern.value)
        if all(e.optional or e.anchor for e in elements):
            raise _fail(file, pattern, "pattern needs at least one required, non-anchor "
                                       "element")
        return Rule(name.value, int(priority.value), elements, node.start_mark.line + 1)
    if isinstance(pattern, yaml.MappingNode):
        tree = _tree(file, pattern)
        if tree.element.anchor:
            raise _fail(file, pattern, "the root of a tree pattern cannot be an anchor")
        return Rule(name.value, int(priority.value), tree, node.start_mark.line + 1)
    raise _fail(file, pattern, "pattern must be a list of operator kinds or a tree "
                               "(op_type, child)")


def parse_rules(text: str, file: str) -> list[Rule]:
    """Rules of a YAML rule list (`file` names it in errors)."""
    import yaml

    try:
        root = yaml.compose(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise AccelError(f"{file}:{line}: error: invalid YAML: {problem}") from None
    if root is None or not isinstance(root, yaml.SequenceNode):
        raise _fail(file, root, "a rule list must be a YAML list of rules (name, priority, "
                                "pattern)")
    rules = [_rule(file, item) for item in root.value]
    seen: dict[str, int] = {}
    for rule, item in zip(rules, root.value, strict=True):
        if rule.name in seen:
            raise _fail(file, item, f"rule '{rule.name}' is already defined at line "
                                    f"{seen[rule.name]}")
        seen[rule.name] = rule.line
    return rules


def load_rules(name_or_path: str) -> list[Rule]:
    """A shipped rule list by name, or a YAML file by path; `AccelError` otherwise."""
    if name_or_path in SHIPPED:
        text = resources.files(RULES_PACKAGE).joinpath(f"rules/{name_or_path}.yaml") \
            .read_text("utf-8")
        return parse_rules(text, f"rules/{name_or_path}.yaml")
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or "/" in name_or_path or path.is_file():
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise AccelError(f"o1_rule_list: cannot read '{name_or_path}': "
                             f"{err.strerror or err}") from None
        return parse_rules(text, str(path))
    raise AccelError(f"unknown o1 rule list '{name_or_path}' (shipped: {', '.join(SHIPPED)}; "
                     "or a path to a .yaml file)")
