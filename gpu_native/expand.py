"""What ``gpu-native expand`` prints: the rewritten module laid out for people, the CUDA C++ with
the Python line beside each ``#line``, and the proofs the checker made.

``gpu-native expand --exact`` prints the module the import hook compiles
(:func:`gpu_native.rewrite.rewrite_module`), every line on its original line number and each
kernel's spec as one literal.  The default form here is the same module for reading: the user's
lines as they are, and in place of each kernel a summary of its spec (parameters, options, and
for each specialisation its symbol, traits, error sites and launch checks; not the CUDA or the
IR) followed by the launcher factory over as many lines as it needs, each generated line tagged
``# L<n>`` with the line the imported module has it on (the launcher a launch calls runs on the
kernel's decorator line instead: see :func:`gpu_native.tracebacks.launcher_code`).  Apart from
the spec literal (shown as ``_spec=...``) it is the same code: tests compare the two forms'
syntax trees.
"""

from __future__ import annotations

import os
import re

from . import ir
from .emit.host import (
    READABLE_WIDTH,
    build_launcher,
    decorator_parts,
    exact_line_of,
    param_trees,
)
from .launchexpr import AddressOf, subtrees, tree_text
from .nodes import node
from .rewrite import TranspiledModule, display_file, transpile_module
from .spec import IndexFits, KernelSpec, LaunchAssert, ParamCheck, ShapeAssert
from .tracebacks import boundary

__all__ = ["Expansion"]

_LINE_DIRECTIVE = re.compile(r'^\s*#line (\d+) "((?:[^"\\]|\\.)*)"\s*$')
_SITE_WORDS = {"index": ("bounds check", "bounds checks"), "assert": ("assert", "asserts"),
               "zerodiv": ("division check", "division checks")}
# How each store was proven race-free (ir.Store.unique), by the memory it writes.
_STORE_RULES = {
    ("uid", "global"): "unique index: no two threads of the grid that run it write one element",
    ("uid", "shared"): "block-unique index: no two threads of a block that run it write one "
                       "element",
    ("uid", "local"): "a per-thread array",
    ("single", "global"): "one thread: the conditions around it leave one thread of the grid",
    ("single", "shared"): "one thread: the conditions around it leave one thread of the block",
    ("unsafe", "global"): "inside `with unsafe():` (yours to prove; the simulator watches it)",
    ("unsafe", "shared"): "inside `with unsafe():` (yours to prove; the simulator watches it)",
}


@node(frozen=False)
class Expansion:
    """One file's kernels, transpiled once, for each form ``expand`` prints."""

    source: str
    path: str
    module: TranspiledModule

    @classmethod
    @boundary
    def of(cls, source: str, path: str, module_name: str | None = None) -> Expansion:
        return cls(source, path, transpile_module(source, path, module_name))

    @property
    def kernel_names(self) -> list[str]:
        return [k.name for k in self.module.kernels]

    def _selected(self, kernel: str | None):
        pairs = sorted(zip(self.module.checked, self.module.kernels),
                       key=lambda pair: pair[0].fn.first_line)
        return [(ck, spec) for ck, spec in pairs if kernel is None or spec.name == kernel]

    # ---- the module ---------------------------------------------------------------------------

    def readable(self, kernel: str | None = None) -> str:
        """The rewritten module for reading (only ``kernel``'s block when given)."""
        lines = self.source.splitlines()
        out: list[str] = []
        cursor = 1
        for ck, spec in self._selected(kernel):
            fn = ck.fn
            if kernel is None:
                out += lines[cursor - 1:fn.first_line - 1]
            first = lines[fn.first_line - 1]
            indent = first[:len(first) - len(first.lstrip(" \t"))]
            out += [indent + text for text in _summary(spec, fn.last_line)]
            out += _tagged(self._kernel_lines(ck, spec, indent))
            cursor = fn.last_line + 1
            if kernel is not None:
                out.append("")
        if kernel is None:
            out += lines[cursor - 1:]
        return "\n".join(out) + "\n"

    def _kernel_lines(self, ck, spec: KernelSpec, indent: str) -> list[tuple[str, int | None]]:
        fn = ck.fn
        first, count = fn.first_line, fn.last_line - fn.first_line + 1
        callee, kind = decorator_parts(fn)
        launcher = build_launcher(fn.name, spec.params, bool(spec.typevars), param_trees(spec))
        out = [(f"{indent}@{callee}({kind}, _spec=...)", first)]
        out += [(text, exact_line_of(role, first, count))
                for text, role in launcher.readable(indent)]
        return out

    # ---- the CUDA C++ -------------------------------------------------------------------------

    def cuda(self, kernel: str | None = None) -> str:
        """Every specialisation's translation unit, each ``#line`` directive followed on its
        line by ``// file.py:LINE  <the Python line>`` (a comment: the directive still works)."""
        sources = self._sources()
        out = []
        for _, spec in self._selected(kernel):
            for variant in spec.variants:
                out.append(annotate_cuda(variant.cuda, sources))
        return "".join(out)

    def _sources(self) -> dict[str, list[str]]:
        """The lines of each file the ``#line`` directives may name, by the name they use."""
        shown = display_file(self.module.scan.module_name, self.path)
        sources = {shown: self.source.splitlines()}
        for path in self.module.dependencies:
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                continue
            sources[os.path.abspath(path)] = text.splitlines()
        return sources

    # ---- proofs -------------------------------------------------------------------------------

    def proofs(self, kernel: str | None = None) -> str:
        """For each kernel, the bounds checks left in it, and how each store and atomic was
        shown to be race-free, as the checker recorded them in the IR."""
        out: list[str] = []
        for ck, spec in self._selected(kernel):
            reports = [(k, _proofs_of(k)) for k in ck.specializations]
            first_text = reports[0][1]
            same = all(text == first_text for _, text in reports)
            for k, text in reports[:1] if same else reports:
                label = spec.name + ("" if not k.specialization else "[" + ", ".join(
                    f"{var}={ty}" for var, ty in k.specialization) + "]")
                note = " (every specialisation)" if same and len(reports) > 1 else ""
                out.append(f"kernel {label} ({spec.file}:{spec.line}){note}")
                out += text
                out.append("")
        return "\n".join(out)


def _tagged(lines: list[tuple[str, int | None]]) -> list[str]:
    """Code lines with ``# L<n>`` after them, aligned over each run of lines of one ``n``;
    comment lines as they are."""
    widths: dict[int, int] = {}
    run = 0
    previous = None
    for text, line in lines:
        if line is None:
            continue
        if line != previous:
            run += 1
            previous = line
        widths[run] = max(widths.get(run, 0), min(len(text), READABLE_WIDTH))
    out = []
    run = 0
    previous = None
    for text, line in lines:
        if line is None:
            out.append(text)
            continue
        if line != previous:
            run += 1
            previous = line
        out.append(f"{text.ljust(widths[run])}  # L{line}")
    return out


def _summary(spec: KernelSpec, last_line: int) -> list[str]:
    """The spec, in the words a person reads (comment lines without the ``#``'s indent)."""
    params = ", ".join(f"{p.name}: {p.annotation()}" for p in spec.params)
    head = f"{spec.name}({params})"
    out = [*_wrap(f"# gpu_native: kernel {spec.name}, lines {spec.line}-{last_line} of "
                  f"{spec.file}, became the launcher factory below (`gpu-native expand --exact` "
                  "prints the module as imported, with the full spec).", "# "),
           *_wrap(f"#   Kernel{spec.ndim}D {head}", "#       "),
           f"#   options: bounds_check={spec.options.bounds_check}, "
           f"fastmath={spec.options.fastmath}, max_registers={spec.options.max_registers}"
           + (", cooperative=True" if spec.options.cooperative else "")]
    if spec.typevars:
        out.append(f"#   TypeVars: {', '.join(spec.typevars)}")
    for v in spec.variants:
        types = "[" + ", ".join(f"{a}={b}" for a, b in v.types) + "] " if v.types else ""
        out.append(f"#   variant {types}{v.symbol} (kernel id {v.kernel_id:#018x})")
        out.append(f"#     traits: {', '.join(v.traits.names()) or 'none'}")
        if v.min_arch:
            out.append(f"#     GPUs: sm_{v.min_arch} and newer (it uses {v.arch_use})")
        if v.tensor_maps:
            maps = ", ".join(f"{spec.params[t.param].name} in {t.box_rows} x {t.box_cols} boxes"
                             for t in v.tensor_maps)
            out.extend(_wrap(f"#     tensor maps (hidden parameters the launcher encodes): "
                             f"{maps}", "#       "))
        counts: dict[str, int] = {}
        for site in v.sites:
            counts[site.kind] = counts.get(site.kind, 0) + 1
        sites = ", ".join(f"{n} {_SITE_WORDS.get(kind, (kind, kind))[n != 1]}"
                          for kind, n in counts.items())
        out.append(f"#     error sites: {sites or 'none'} (`expand --proofs` lists them)")
        if not v.launch_checks:
            out.append("#     launch checks: none")
        for check in v.launch_checks:
            if isinstance(check, LaunchAssert):
                line = v.sites[check.site].line if check.site < len(v.sites) else "?"
                text = f"assert {tree_text(check.tree)} (line {line}), once per launch shape"
            elif isinstance(check, IndexFits):
                where = f"{spec.file_at(check.file)}:" if check.file else "line "
                text = (f"{tree_text(check.tree)} stays within {check.type} "
                        f"({where}{check.line}), or the launch is refused")
            elif isinstance(check, ParamCheck):
                names = tuple(p.name for p in spec.params)
                counter = check.counter
                needs = (f"the while loop's counter '{counter}' at line {check.line} does not "
                         "wrap around" if counter else
                         f"the writes to {check.array} at line {check.line} are race-free")
                text = (f"{tree_text(check.tree, 0, names)}, at every launch ({needs} only "
                        "then; a call that fails it raises ValueError)")
            elif isinstance(check, ShapeAssert):
                names = tuple(p.name for p in spec.params)
                line = v.sites[check.site].line if check.site < len(v.sites) else "?"
                text = (f"assert {tree_text(check.tree, 0, names)} (line {line}), at every "
                        "launch")
            else:  # pragma: no cover - every kind is listed above
                text = repr(check)
            out += _wrap(f"#     launch check: {text}", "#       ")
        out.append(f"#     CUDA C++: {len(v.cuda):,} characters (`expand --cuda`); "
                   f"simulator IR: {len(v.ir):,} bytes")
    return out


def _wrap(text: str, rest: str, width: int = READABLE_WIDTH) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width``, continued with ``rest``."""
    out: list[str] = []
    while len(text) > width:
        cut = text.rfind(" ", len(rest) + 1, width + 1)
        if cut <= len(rest):
            break
        out.append(text[:cut])
        text = rest + text[cut + 1:]
    out.append(text)
    return out


def annotate_cuda(cuda: str, sources: dict[str, list[str]]) -> str:
    """``cuda`` with ``// file:LINE  <source line>`` after each ``#line`` directive whose file is
    in ``sources`` (by the name the directive uses, or a path that ends with it)."""
    out = []
    for line in cuda.splitlines(keepends=True):
        match = _LINE_DIRECTIVE.match(line)
        if match:
            number, name = int(match.group(1)), match.group(2)
            lines = _lines_of(name, sources)
            text = lines[number - 1].strip() if lines and 0 < number <= len(lines) else ""
            # A line comment ending in a backslash would splice the next line (the statement
            # the directive is about) into the comment.
            text = text.rstrip("\\ \t")
            end = line[len(line.rstrip("\r\n")):]
            line = f"{line.rstrip()}  // {name}:{number}" + (f"  {text}" if text else "") + end
        out.append(line)
    return "".join(out)


def _lines_of(name: str, sources: dict[str, list[str]]) -> list[str] | None:
    lines = sources.get(name)
    if lines is None:
        tail = os.sep + name.replace("/", os.sep)
        for path, text in sources.items():
            if path.endswith(tail):
                return text
    return lines


# ---- proofs ------------------------------------------------------------------------------------


def _proofs_of(kernel: ir.Kernel) -> list[str]:
    """The proof report of one specialisation: its remaining error sites, then its writes."""
    file = kernel.span.file
    out: list[str] = []
    checks = [s for s in kernel.sites if s.kind in ("index", "vector")]
    proven = sum(c is None for n in _nodes(kernel)
                 if isinstance(n, (ir.Load, ir.Store, ir.Atomic)) for c in n.checks)
    if not kernel.options.bounds_check:
        out.append("  bounds checks: off (bounds_check=False): no index is checked")
    else:
        out.append(f"  bounds checks left: {len(checks) or 'none'} "
                   f"({proven} more proven in range, not checked)")
    for s in sorted(checks, key=lambda s: (s.span.file != file, s.span.line, s.span.col)):
        axis = f", axis {s.axis}" if s.ndim > 1 else ""
        four = ", 4 elements" if s.kind == "vector" else ""
        out.append(f"    {_where(s.span, file)}  ({s.array}{axis}{four})")
    at_launch = {n.site for n in _nodes(kernel) if isinstance(n, ir.Assert) and n.at_launch}
    shaped = {c.site: "an argument's address"
              if any(isinstance(t, AddressOf) for t in subtrees(c.tree)) else "array shapes"
              for c in kernel.launch_checks if isinstance(c, ShapeAssert)}
    for kind, title in (("assert", "asserts"), ("zerodiv", "division checks"),
                        ("align", "alignment checks (load_vec4)")):
        sites = [s for s in kernel.sites if s.kind == kind]
        if sites:
            out.append(f"  {title}: {len(sites)}")
            for s in sites:
                out.append(f"    {_where(s.span, file)}")
                if s.id in shaped:
                    out.append(f"        checked by the launcher, at every launch "
                               f"({shaped[s.id]})")
                elif s.id in at_launch:
                    out.append("        checked by the launcher, once per launch shape")
    for tail in (n for n in _nodes(kernel) if isinstance(n, ir.TailExit)):
        names = ", ".join(ref.var.name for ref, _ in tail.extents)
        out.append(f"  grid tail: a thread whose uid is past the end of {names} does nothing")
    writes = []
    for owner, n in _owned_nodes(kernel):
        if isinstance(n, ir.Store):
            space = n.array.ty.space
            rule = n.proof or _STORE_RULES.get((n.unique, space), f"{n.unique} ({space})")
            writes.append((n.span, owner, rule))
        elif isinstance(n, ir.Atomic) and n.op != "load":
            writes.append((n.span, owner, f"atomic {n.op}"))
        elif isinstance(n, ir.MatrixOp) and n.op in ("store_matrix", "cp_async", "warpgroup_store",
                                                      "tma_load"):
            space = n.operands[0].array.ty.space
            rule = n.proof or _STORE_RULES.get((n.unique, space), f"{n.unique} ({space})")
            writes.append((n.span, owner, rule))
    out.append(f"  writes: {len(writes) or 'none'}")
    for span, owner, rule in sorted(writes, key=lambda w: (w[0].file, w[0].line, w[0].col)):
        where = f" (in {owner})" if owner else ""
        out.append(f"    {_where(span, file)}{where}")
        out.append(f"        {rule}")
    return out


def _where(span, file: str) -> str:
    """``L12  <the spanned code>`` (``other.py:12  ...`` for a line of another file)."""
    line = span.source_line or ""
    text = line[span.col:span.end_col].strip() if span.end_col else ""
    text = text or line.strip()
    code = text if len(text) <= 80 else text[:77] + "..."
    place = f"L{span.line}" if span.file == file else f"{span.file}:{span.line}"
    return f"{place}  {code}".rstrip()


def _nodes(kernel: ir.Kernel):
    for _, n in _owned_nodes(kernel):
        yield n


def _owned_nodes(kernel: ir.Kernel):
    """Every IR node of the kernel and of the device functions it reaches, with the name of the
    device function it is in ("" for the kernel)."""
    for n in ir.walk(kernel.body):
        yield "", n
    for fn in kernel.device_functions:
        for n in ir.walk(fn.body):
            yield fn.name, n
