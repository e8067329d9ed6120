"""Imports flow one way, as the table in ``docs/architecture.md`` says.

The static test reads every ``import`` and ``from ... import`` in ``gpu_native/`` (module-level,
inside functions, under ``if TYPE_CHECKING:``) with :mod:`ast` and checks each edge between two
of its modules or subpackages against that table, which is the one place the layering is written
down.  What a process really loads is checked in fresh interpreters: here for ``import
gpu_native``; for a warm import of a kernel module and a launch on the simulator, in
``tests/importhook/test_importhook.py``, where the import hook's other warm-import checks are.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import ROOT

TABLE = ROOT / "docs" / "architecture.md"
PACKAGE = "gpu_native"
# Third-party modules whose imports the table governs: the parser, and the CUDA libraries.
WATCHED = ("libcst", "cuda")

# What no plain `import gpu_native` may load.
TRANSPILER = ("gpu_native.frontend", "gpu_native.check", "gpu_native.emit", "gpu_native.rewrite",
              "gpu_native.expand", "gpu_native.precompile", "libcst")
NVRTC = ("gpu_native.compiler", "cuda.bindings.nvrtc", "cuda.pathfinder")


@dataclass(frozen=True)
class Rule:
    """One row of the table: what ``unit`` may import, and which of it only lazily."""

    unit: str
    row: int
    allowed: frozenset[str]
    lazy: frozenset[str]


@dataclass(frozen=True)
class Edge:
    """One import statement's target, as a unit of the package or a watched module."""

    path: Path
    line: int
    source: str
    target: str
    is_lazy: bool  # inside a function, or under `if TYPE_CHECKING:`


def read_table(text: str) -> dict[str, Rule]:
    """The rows of the ``## Layers`` table: ``| `unit` | what | `a`, `b` (lazily) |``."""
    found = re.search(r"^## Layers\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    section = found.group(1) if found else ""
    rules: dict[str, Rule] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not re.fullmatch(r"`[\w.]+`", cells[0]):
            continue
        unit = cells[0].strip("`")
        entries = re.findall(r"`([\w.]+)`( \(lazily\))?", cells[2])
        rules[unit] = Rule(unit, len(rules), frozenset(name for name, _ in entries),
                           frozenset(name for name, lazy in entries if lazy))
    return rules


def units_of(package_dir: Path) -> set[str]:
    """The package itself, its top-level modules and its subpackages."""
    units = {PACKAGE}
    for child in package_dir.iterdir():
        if child.suffix == ".py" and child.name != "__init__.py":
            units.add(child.stem)
        elif child.is_dir() and (child / "__init__.py").exists():
            units.add(child.name)
    return units


def _unit_of_target(dotted: str, units: set[str]) -> str:
    """``gpu_native.cache.lookup`` → ``cache``; a name of the package itself → ``gpu_native``."""
    parts = dotted.split(".")
    if len(parts) > 1 and parts[1] in units and parts[1] != PACKAGE:
        return parts[1]
    return PACKAGE


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool):
        self.package = module if is_package else module.rpartition(".")[0]
        self.depth = 0  # functions and TYPE_CHECKING blocks around the current node
        self.found: list[tuple[int, str, bool]] = []

    def _nested(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _nested

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            self.depth += 1
            for child in node.body:
                self.visit(child)
            self.depth -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((node.lineno, alias.name, self.depth > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            base = base[:len(base) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        # `from gpu_native import cache` and `from cuda.bindings import nvrtc` name the module
        # after `import`; `from gpu_native.cache import lookup` is an edge to `cache` either way.
        for alias in node.names:
            self.found.append((node.lineno, f"{module}.{alias.name}", self.depth > 0))


def edges(package_dir: Path) -> list[Edge]:
    """Every import in ``package_dir`` that leaves its unit: to another unit or a watched module."""
    units = units_of(package_dir)
    out = []
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir.parent).with_suffix("").parts
        is_package = relative[-1] == "__init__"
        module = ".".join(relative[:-1] if is_package else relative)
        source = _unit_of_target(module, units)
        visitor = _Imports(module, is_package)
        visitor.visit(ast.parse(path.read_bytes(), str(path)))
        seen = set()
        for line, target, is_lazy in visitor.found:
            top = target.split(".")[0]
            if top == PACKAGE:
                target = _unit_of_target(target, units)
                if target == source:
                    continue
            elif top not in WATCHED:
                continue
            if (line, target) not in seen:  # `from ..cache import a, b`: one edge
                seen.add((line, target))
                out.append(Edge(path, line, source, target, is_lazy))
    return out


def _matches(target: str, names) -> str | None:
    for name in names:
        if target == name or target.startswith(name + "."):
            return name
    return None


def violations(package_dir: Path, rules: dict[str, Rule]) -> list[str]:
    """Each import the table does not allow, as ``file:line: source -> target (why)``."""
    found = []
    for edge in edges(package_dir):
        where = f"{edge.path.relative_to(package_dir.parent)}:{edge.line}"
        rule = rules.get(edge.source)
        if rule is None:
            found.append(f"{where}: {edge.source} has no row in {TABLE.name}")
            continue
        allowed = _matches(edge.target, rule.allowed)
        if allowed is None:
            found.append(f"{where}: {edge.source} -> {edge.target} goes against the layering "
                         f"({edge.source} may import {', '.join(sorted(rule.allowed)) or 'nothing'})")
        elif allowed in rule.lazy and not edge.is_lazy:
            found.append(f"{where}: {edge.source} -> {edge.target} must be imported lazily "
                         "(inside the function that needs it)")
    return found


def table_violations(rules: dict[str, Rule], units: set[str]) -> list[str]:
    """Rows for units that do not exist, units without a row, and edges up the table."""
    found = [f"{unit} has no row" for unit in sorted(units - set(rules))]
    found += [f"row {unit} names no module of {PACKAGE}" for unit in sorted(set(rules) - units)]
    for rule in rules.values():
        for target in sorted(rule.allowed):
            if target.split(".")[0] in WATCHED:
                continue
            below = rules.get(target)
            if below is None:
                found.append(f"{rule.unit} may import {target}, which has no row")
            elif below.row <= rule.row and not (target == PACKAGE and target in rule.lazy):
                found.append(f"{rule.unit} may import {target}, a row above it: only a lazy "
                             f"read of {PACKAGE}'s public names may go up the table")
    return found


@pytest.fixture(scope="module")
def rules() -> dict[str, Rule]:
    return read_table(TABLE.read_text())


def test_the_table_flows_one_way_and_covers_the_package(rules):
    assert len(rules) > 20, f"the table in {TABLE} was not found"
    assert not table_violations(rules, units_of(ROOT / PACKAGE))


@pytest.mark.slow
def test_every_import_in_gpu_native_follows_the_layering(rules):
    found = violations(ROOT / PACKAGE, rules)
    assert not found, "\n".join(found)


def test_the_table_keeps_the_runtime_off_the_transpiler_and_nvrtc(rules):
    # The design's rule, read from the table, so that it cannot be silenced by adding a row's
    # way out: the runtime side names no transpiler package, and reaches NVRTC only through the
    # cache, lazily, to compile.
    transpiler = {"frontend", "check", "emit", "rewrite", "expand", "precompile", "importhook",
                  "decorators", "libcst"}
    for unit in ("runtime", "simulator", "cache", "compiler", "build", "ir", "ircodec", "spec",
                 "lang", "nodes", "errors", "abi", "headers"):
        assert not rules[unit].allowed & transpiler, unit
    assert [u for u, r in rules.items() if "libcst" in r.allowed] == ["importhook", "frontend"]
    assert [u for u, r in rules.items() if "cuda.bindings.nvrtc" in r.allowed] == ["compiler"]
    assert [u for u, r in rules.items() if "compiler" in r.allowed] == [
        "commands", "precompile", "cache"]
    assert "compiler" in rules["cache"].lazy and "cache" not in rules["compiler"].allowed


class TestTheCheckerFindsBackEdges:
    """The walker itself, on a small made-up package: an unchecked walker would pass anything."""

    RULES = textwrap.dedent("""\
        ## Layers

        | Module or package | What | May import |
        |---|---|---|
        | `gpu_native` | root | `runtime`, `rewrite` |
        | `rewrite` | transpiler | `nodes` |
        | `runtime` | runtime | `cache` (lazily), `nodes`, `gpu_native` (lazily) |
        | `cache` | cache | `compiler` (lazily), `nodes` |
        | `compiler` | NVRTC | `nodes`, `cuda.bindings.nvrtc` |
        | `nodes` | records | |
        """)

    def make(self, tmp_path: Path, files: dict[str, str]) -> Path:
        package = tmp_path / PACKAGE
        for name in ("__init__.py", "rewrite.py", "nodes.py", "runtime/__init__.py",
                     "cache/__init__.py", "compiler/__init__.py", *files):
            (package / name).parent.mkdir(parents=True, exist_ok=True)
            (package / name).write_text(files.get(name, ""))
        return package

    def test_a_lazy_import_of_the_transpiler_in_the_runtime(self, tmp_path):
        package = self.make(tmp_path, {"runtime/decorators.py": textwrap.dedent("""\
            from ..nodes import node

            def fallback():
                from ..rewrite import rewrite_module
                from gpu_native import rewrite
            """)})
        assert violations(package, read_table(self.RULES)) == [
            "gpu_native/runtime/decorators.py:4: runtime -> rewrite goes against the layering "
            "(runtime may import cache, gpu_native, nodes)",
            "gpu_native/runtime/decorators.py:5: runtime -> rewrite goes against the layering "
            "(runtime may import cache, gpu_native, nodes)"]

    def test_a_cycle_through_a_type_only_import(self, tmp_path):
        package = self.make(tmp_path, {"compiler/nvrtc.py": textwrap.dedent("""\
            from typing import TYPE_CHECKING
            from cuda.bindings import nvrtc
            if TYPE_CHECKING:
                from ..cache.lookup import BuildRequest
            """)})
        assert violations(package, read_table(self.RULES)) == [
            "gpu_native/compiler/nvrtc.py:4: compiler -> cache goes against the layering "
            "(compiler may import cuda.bindings.nvrtc, nodes)"]

    def test_an_eager_import_where_the_table_asks_for_a_lazy_one(self, tmp_path):
        package = self.make(tmp_path, {"cache/lookup.py": textwrap.dedent("""\
            import gpu_native.compiler.nvrtc

            def compile_it():
                from ..compiler import nvrtc
            """), "runtime/kernel.py": "from gpu_native import __all__\nimport libcst\n"})
        assert violations(package, read_table(self.RULES)) == [
            "gpu_native/cache/lookup.py:1: cache -> compiler must be imported lazily (inside "
            "the function that needs it)",
            "gpu_native/runtime/kernel.py:1: runtime -> gpu_native must be imported lazily "
            "(inside the function that needs it)",
            "gpu_native/runtime/kernel.py:2: runtime -> libcst goes against the layering "
            "(runtime may import cache, gpu_native, nodes)"]

    def test_a_table_that_goes_up_or_misses_a_package(self, tmp_path):
        rules = read_table(self.RULES.replace("| `nodes` | records | |",
                                              "| `nodes` | records | `cache` |"))
        assert table_violations(rules, units_of(self.make(tmp_path, {"expand.py": ""}))) == [
            "expand has no row",
            "nodes may import cache, a row above it: only a lazy read of gpu_native's public "
            "names may go up the table"]


def _loaded_after(code: str, tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_NATIVE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["GPU_NATIVE_CACHE_DIR"] = str(tmp_path / "cache")
    probe = code + textwrap.dedent("""
        import json, sys
        print(json.dumps(sorted(sys.modules)))
        """)
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def _within(modules, prefixes) -> list[str]:
    return [m for m in modules if _matches(m, prefixes)]


def test_import_gpu_native_loads_no_nvrtc_and_no_transpiler(tmp_path):
    loaded = _loaded_after("import gpu_native", tmp_path)
    assert "gpu_native.decorators" in loaded and "gpu_native.runtime.kernel" in loaded
    assert _within(loaded, NVRTC + TRANSPILER) == []
    # Nor the CUDA driver, nor the cache: both wait for the first launch.
    assert _within(loaded, ("cuda", "gpu_native.cache")) == []
