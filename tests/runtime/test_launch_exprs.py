"""The expressions of launch checks (gpu_native.launchexpr): one typed node per kind, what each
evaluates to, how each reads (in messages and in the generated launcher), and the compact
tagged-tuple literal that rewritten modules embed, read back with the same clear errors."""

from __future__ import annotations

import pytest

from gpu_native.launchexpr import (
    AddressOf,
    AllOf,
    AnyOf,
    Arith,
    Compare,
    Const,
    LaunchIndex,
    Not,
    ParamValue,
    ShapeOf,
    evaluate,
    from_literal,
    largest_value,
    launcher_text,
    subtrees,
    to_literal,
    tree_text,
)

BLOCK_X = LaunchIndex("block_dim", 0)
NAMES = ("n", "a")


class _Array:
    """What the evaluator reads of an array argument: its shape and its address."""

    shape = (5, 6)
    ptr = 4096


ARGS = (7, _Array())
LAUNCH = {("block_dim", 0): 64, ("grid_dim", 1): 3, ("shared_mem_bytes", 0): 1024}

# Each kind of node: the node, its literal, its text, the launcher's spelling, its value on
# LAUNCH and ARGS.
KINDS = [
    (Const(5), ("c", 5), "5", "5", 5),
    (BLOCK_X, ("sp", "block_dim", 0), "block_dim.x", "_gn_block_dim_x", 64),
    (LaunchIndex("grid_dim", 1), ("sp", "grid_dim", 1), "grid_dim.y", "_gn_grid_dim_y", 3),
    (ParamValue(0), ("param", 0), "n", "n", 7),
    (ShapeOf(1, 1), ("shape", 1, 1), "a.shape[1]", "a.shape[1]", 6),
    (AddressOf(1), ("ptr", 1), "address(a)", "a.launch_ptr", 4096),
    (Arith("+", BLOCK_X, Const(1), "i32"), ("+", ("sp", "block_dim", 0), ("c", 1), "i32"),
     "block_dim.x + 1", "(_gn_block_dim_x + 1)", 65),
    (Arith("*", ParamValue(0), Const(3)), ("*", ("param", 0), ("c", 3)), "n * 3", "(n * 3)",
     21),
    (Compare("<=", ShapeOf(1, 0), Const(5)), ("<=", ("shape", 1, 0), ("c", 5)),
     "a.shape[0] <= 5", "(a.shape[0] <= 5)", 1),
    (AllOf((Const(1), Compare(">", ParamValue(0), Const(9)))),
     ("and", (("c", 1), (">", ("param", 0), ("c", 9)))), "1 and n > 9", "(1 and (n > 9))", 0),
    (AnyOf((Const(0), Const(2))), ("or", (("c", 0), ("c", 2))), "0 or 2", "(0 or 2)", 1),
    (Not(Const(0)), ("not", ("c", 0)), "not 0", "(not 0)", 1),
]
IDS = [f"{type(k[0]).__name__}-{i}" for i, k in enumerate(KINDS)]


def _launch(name: str, axis: int) -> int:
    return LAUNCH[(name, axis)]


class TestLiteral:
    @pytest.mark.parametrize("tree, literal", [k[:2] for k in KINDS], ids=IDS)
    def test_each_kind_writes_its_tagged_tuple_and_reads_back_as_itself(self, tree, literal):
        assert to_literal(tree) == literal
        assert from_literal(literal, params=True) == tree
        assert from_literal(to_literal(tree), params=True) == tree

    def test_a_deep_tree_round_trips(self):
        tree = Not(AnyOf((AllOf((Compare("==", Arith("%", Arith("*", BLOCK_X, Const(4), "i64"),
                                                           Const(3), "i64"), Const(0)),)),
                          Compare("!=", Arith("-", ShapeOf(0, 1), ParamValue(2)), Const(1)))))
        assert from_literal(to_literal(tree), params=True) == tree

    def test_typed_and_exact_arithmetic_stay_apart(self):
        # The type is the literal's fourth element; exact arithmetic has three.
        assert to_literal(Arith("+", Const(1), Const(2))) == ("+", ("c", 1), ("c", 2))
        assert from_literal(("+", ("c", 1), ("c", 2), "i32")) != from_literal(
            ("+", ("c", 1), ("c", 2)))

    @pytest.mark.parametrize("literal", [("param", 0), ("shape", 0, 1), ("ptr", 0),
                                         ("==", ("param", 0), ("c", 1))])
    def test_leaves_that_read_arguments_only_where_the_check_has_them(self, literal):
        assert from_literal(literal, params=True) is not None
        with pytest.raises(ValueError, match="unknown launch-check node"):
            from_literal(literal)

    @pytest.mark.parametrize("literal", [[("c", 1)], (), "c", None])
    def test_a_tree_that_is_no_tuple(self, literal):
        with pytest.raises(TypeError, match="a launch-check tree is not a tuple"):
            from_literal(literal)

    @pytest.mark.parametrize("literal", [
        ("c", True), ("c", "1"), ("c", 1, 2), ("sp", "block_dim"), ("sp", "block_dim", 0.0),
        ("sp", 0, 0), ("param", -1), ("param", True), ("shape", 0), ("ptr", "a"),
        ("+", ("c", 1)), ("+", ("c", 1), ("c", 2), ""), ("+", ("c", 1), ("c", 2), 32),
        ("==", ("c", 1), ("c", 2), "i32"), ("**", ("c", 1), ("c", 2)), ("and", [("c", 1)]),
        ("or",), ("not", ("c", 1), ("c", 2)), ("and", (("c", 1), ("sp",))),
        ("not", ("<", ("c", 1), ("shape", -1, 0))),
    ])
    def test_a_malformed_node_is_named(self, literal):
        with pytest.raises(ValueError, match=r"unknown launch-check node \("):
            from_literal(literal, params=True)


class TestEvaluate:
    @pytest.mark.parametrize("tree, value", [(k[0], k[4]) for k in KINDS], ids=IDS)
    def test_each_kind(self, tree, value):
        assert evaluate(tree, _launch, ARGS) == value

    def test_typed_arithmetic_wraps_as_the_device_and_exact_does_not(self):
        big = Arith("*", BLOCK_X, Const(2**25), "i32")  # 2**31: the i32 minimum
        assert evaluate(big, _launch) == -2**31
        assert evaluate(Arith("*", BLOCK_X, Const(2**25)), _launch) == 2**31
        assert evaluate(Arith("+", Const(255), Const(1), "u8"), _launch) == 0
        assert evaluate(Arith("-", Const(0), Const(1), "u32"), _launch) == 2**32 - 1

    def test_floor_division_and_modulo_are_pythons(self):
        assert evaluate(Arith("//", Const(-7), Const(2), "i32"), _launch) == -4
        assert evaluate(Arith("%", Const(-7), Const(2), "i32"), _launch) == 1
        assert evaluate(Arith("%", Const(-7), Const(2)), _launch) == 1
        with pytest.raises(ZeroDivisionError):
            evaluate(Arith("//", Const(1), Const(0), "i32"), _launch)

    def test_and_or_stop_at_the_first_part_that_decides(self):
        # The second part would divide by zero: it is never evaluated.
        zero = Arith("//", Const(1), Const(0))
        assert evaluate(AllOf((Const(0), zero)), _launch) == 0
        assert evaluate(AnyOf((Const(3), zero)), _launch) == 1

    def test_the_launch_gives_shared_memory(self):
        need = Compare(">=", LaunchIndex("shared_mem_bytes", 0), Const(1024))
        assert evaluate(need, _launch) == 1
        assert tree_text(need) == "shared_mem_bytes >= 1024"


class TestText:
    @pytest.mark.parametrize("tree, text", [(k[0], k[2]) for k in KINDS], ids=IDS)
    def test_each_kind_reads_as_python(self, tree, text):
        assert tree_text(tree, 0, NAMES) == text

    def test_an_unnamed_parameter_is_numbered(self):
        assert tree_text(Compare(">=", ParamValue(3), ShapeOf(2, 0))) == \
            "parameter 3 >= parameter 2.shape[0]"
        assert tree_text(AddressOf(0)) == "address(parameter 0)"

    def test_parentheses_where_precedence_needs_them(self):
        assert tree_text(Arith("*", Arith("+", BLOCK_X, Const(1), "i32"), Const(2), "i32")) == \
            "(block_dim.x + 1) * 2"
        assert tree_text(Arith("-", Const(8), Arith("-", BLOCK_X, Const(1), "i32"), "i32")) == \
            "8 - (block_dim.x - 1)"
        assert tree_text(Arith("-", Arith("-", Const(8), BLOCK_X), Const(1))) == \
            "8 - block_dim.x - 1"
        assert tree_text(Not(AllOf((Compare("==", BLOCK_X, Const(1)), Const(1))))) == \
            "not (block_dim.x == 1 and 1)"
        assert tree_text(AllOf((AnyOf((Const(0), Const(1))), Not(Const(0))))) == \
            "(0 or 1) and not 0"

    @pytest.mark.parametrize("tree, text", [(k[0], k[3]) for k in KINDS], ids=IDS)
    def test_each_kind_as_the_launcher_spells_it(self, tree, text):
        used: set[str] = set()
        assert launcher_text(tree, NAMES, "_gn_", used) == text
        assert used == {t.name for t in subtrees(tree) if isinstance(t, LaunchIndex)}

    def test_the_launcher_spelling_computes_the_value(self):
        # The generated launcher evaluates the spelling in exact integers: the same value.
        tree = AllOf((Compare(">=", Arith("+", ParamValue(0), Arith("*", ShapeOf(1, 0),
                                                                     BLOCK_X)), Const(327)),
                      Not(Compare("==", Arith("%", AddressOf(1), Const(16)), Const(1)))))
        scope = {"n": ARGS[0], "a": type("A", (), {"shape": (5, 6), "launch_ptr": 4096}),
                 "_gn_block_dim_x": 64}
        assert eval(launcher_text(tree, NAMES, "_gn_", set()), scope) == \
            evaluate(tree, _launch, ARGS) == 1


class TestLargestValue:
    @staticmethod
    def extent(name: str, axis: int) -> tuple[int, int]:
        return {"thread_idx": (0, 127), "block_idx": (0, 9), "block_dim": (128, 128),
                "grid_dim": (10, 10)}[name]

    def test_sums_and_products_take_the_largest_operands(self):
        uid = Arith("+", Arith("*", LaunchIndex("block_idx", 0), LaunchIndex("block_dim", 0),
                               "i32"), LaunchIndex("thread_idx", 0), "i32")
        assert largest_value(uid, self.extent) == 9 * 128 + 127
        assert largest_value(Const(7), self.extent) == 7

    def test_a_quotient_divides_by_the_least_divisor_and_a_remainder_is_below_it(self):
        tid = LaunchIndex("thread_idx", 0)
        assert largest_value(Arith("//", tid, Const(32), "i32"), self.extent) == 3
        assert largest_value(Arith("//", tid, LaunchIndex("grid_dim", 0), "i32"),
                             self.extent) == 12
        assert largest_value(Arith("%", tid, Const(32), "i32"), self.extent) == 31
        assert largest_value(Arith("%", Const(5), Const(32), "i32"), self.extent) == 5

    @pytest.mark.parametrize("tree", [Compare("<", BLOCK_X, Const(1)), ParamValue(0),
                                      Arith("-", BLOCK_X, Const(1), "i32")])
    def test_a_tree_with_no_bound_is_refused(self, tree):
        with pytest.raises(ValueError, match="no largest value"):
            largest_value(tree, self.extent)


def test_subtrees_lists_every_node_parents_first():
    tree = AllOf((Not(ParamValue(0)), Compare("<", BLOCK_X, Const(2))))
    assert list(subtrees(tree)) == [tree, tree.parts[0], ParamValue(0), tree.parts[1], BLOCK_X,
                                    Const(2)]


def test_nodes_are_immutable_values():
    assert Arith("+", Const(1), Const(2)) == Arith("+", Const(1), Const(2), "")
    assert len({Const(1), Const(1), LaunchIndex("block_dim", 0), BLOCK_X}) == 2
    with pytest.raises(AttributeError):
        BLOCK_X.axis = 1  # type: ignore[misc]
