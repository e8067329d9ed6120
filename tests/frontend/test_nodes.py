"""The record classes of the syntax tree and the IR (gpu_native.nodes) behave as frozen dataclasses."""

from __future__ import annotations

import pytest

from gpu_native import ir
from gpu_native.errors import SourceSpan
from gpu_native.nodes import Factory, FrozenNodeError, fields, is_node, node, replace


@node
class Base:
    span: int


@node
class Pair(Base):
    left: object
    right: object = 0


@node(eq=False)
class Ident:
    name: str


@node(eq=False, frozen=False)
class Bag:
    items: list = Factory(list)


@node
class Shown:
    value: int

    def __repr__(self) -> str:
        return f"<{self.value}>"


def test_fields_come_bases_first_and_construction_takes_positions_keywords_and_defaults():
    assert fields(Pair) == ("span", "left", "right")
    assert vars(Pair(1, "a", "b")) == {"span": 1, "left": "a", "right": "b"}
    assert vars(Pair(1, left="a")) == {"span": 1, "left": "a", "right": 0}
    assert vars(Pair(right=3, left=2, span=1)) == {"span": 1, "left": 2, "right": 3}


@pytest.mark.parametrize("call, message", [
    (lambda: Pair(1), "missing required argument 'left'"),
    (lambda: Pair(1, 2, 3, 4), "takes 3 positional arguments but 4 were given"),
    (lambda: Pair(1, 2, lft=3), "unexpected keyword argument 'lft'"),
    (lambda: Pair(1, 2, span=3), "multiple values for argument 'span'"),
])
def test_a_wrong_call_is_a_type_error_naming_the_field(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_frozen_nodes_refuse_assignment_and_deletion():
    p = Pair(1, 2)
    with pytest.raises(FrozenNodeError):
        p.left = 5
    with pytest.raises(FrozenNodeError):
        del p.left
    assert p.left == 2


def test_equality_and_hash_are_by_value_and_by_exact_class():
    assert Pair(1, 2) == Pair(1, 2) and hash(Pair(1, 2)) == hash(Pair(1, 2))
    assert Pair(1, 2) != Pair(1, 3)
    assert Pair(1, 2) != Base(1)
    assert {Pair(1, (2, 3)): "x"}[Pair(1, (2, 3))] == "x"


def test_eq_false_keeps_identity():
    a, b = Ident("x"), Ident("x")
    assert a != b and a == a and len({a, b}) == 2


def test_mutable_nodes_get_fresh_factory_defaults_and_no_hash():
    a, b = Bag(), Bag()
    a.items.append(1)
    assert b.items == [] and a.items == [1]
    a.items = [2]
    assert a.items == [2]


def test_repr_lists_fields_unless_the_class_writes_its_own():
    assert repr(Pair(1, "a")) == "Pair(span=1, left='a', right=0)"
    assert repr(Shown(3)) == "<3>"


def test_replace_copies_with_changes_and_refuses_unknown_fields():
    p = Pair(1, 2, 3)
    q = replace(p, right=4)
    assert (p.right, q.right, q.left, type(q)) == (3, 4, 2, Pair)
    with pytest.raises(TypeError, match="Pair has no field 'rigth'"):
        replace(p, rigth=4)


def test_a_field_without_default_after_one_with_is_refused():
    with pytest.raises(TypeError, match="non-default field 'b' follows default field 'a'"):
        @node
        class Bad:
            a: int = 0
            b: int


def test_ir_nodes_are_nodes_and_keep_their_semantics():
    span = SourceSpan("k.py", 3, 4)
    one = ir.Const(span, ir.I32, 1)
    assert is_node(one) and is_node(span) and not is_node(ir.Const) and not is_node(1)
    assert ir.BinOp(span, ir.I32, "+", one, one) == ir.BinOp(span, ir.I32, "+", one, one)
    assert ir.BinOp(span, ir.I32, "+", one, one).zero_check is None
    assert ir.ScalarType(ir.I32.info) == ir.I32 and hash(ir.VOID) == hash(ir.VoidType())
    v = ir.Var("x", ir.I32, span)
    assert v != ir.Var("x", ir.I32, span) and repr(v) == "Var(x: i32)"


def test_nodes_survive_pickle_and_copy():
    import copy
    import pickle

    span = SourceSpan("k.py", 3, 4, 6, "x = y")
    for value in (span, ir.Const(span, ir.F32, 1.5), Pair(1, (2, 3))):
        for clone in (pickle.loads(pickle.dumps(value)), copy.copy(value), copy.deepcopy(value)):
            assert clone == value and type(clone) is type(value)
    bag = Bag([1])
    assert copy.deepcopy(bag).items == [1] and copy.deepcopy(bag).items is not bag.items


@pytest.mark.slow
def test_the_package_imports_without_typing_dataclass_transform():
    # Python 3.10's typing has no dataclass_transform (3.11+): gpu_native must not need it at
    # run time.  Removing it from this interpreter's typing stands in for a 3.10 interpreter
    # (on 3.10 itself there is nothing to remove).
    import subprocess
    import sys

    probe = ("import typing\n"
             "vars(typing).pop('dataclass_transform', None)\n"
             "import gpu_native, gpu_native.ir, gpu_native.rewrite, gpu_native.runtime.kernel\n"
             "print(gpu_native.ir.Const.__node_fields__)\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "('span', 'ty', 'value')"
