"""Checks every kernel of a module, each specialisation of a generic kernel, and the device
functions they reach (in this module or another); then the module's device functions no kernel
reached (:mod:`.uncalled`)."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import re

from .. import ir
from ..errors import SourceSpan, TranspileError
from ..frontend import syntax as S
from ..frontend.parse import ModuleScan
from ..frontend.source import too_deep
from ..nodes import node
from .checker_base import CheckerBase
from .context import FunctionContext, KernelContext
from .expressions import WeakConst
from .passes import check_function
from .resolve import param_defaults
from .scope import ModuleLocator, Resolver, registry_entry
from .tuples import NOT_CONSTANT
from .uncalled import check_uncalled

MAX_SPECIALIZATIONS = 64
KERNEL_OPTIONS = ("bounds_check", "fastmath", "max_registers", "cooperative", "specializations")
_NO_VALUE = object()  # an option's value that is no constant (see Program._const)


@node(frozen=False)
class CheckedKernel:
    """A ``@gpu_kernel`` function and its checked specialisations (one unless generic)."""

    fn: S.FunctionDef
    ndim: int
    options: ir.KernelOptions
    typevars: tuple[str, ...]
    specializations: list[ir.Kernel]


def _c_ident(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", text)


def _check_device_decorator(fn: S.FunctionDef) -> None:
    """Refuse arguments to ``@gpu_device``: it takes none, and one ignored would read as a
    setting the function has (``@gpu_device(inline=True)``, ``@gpu_device(fastmath=True)``)."""
    dec = fn.decorator
    if isinstance(dec, S.Call) and (dec.args or dec.keywords):
        first = dec.args[0] if dec.args else dec.keywords[0]
        what = f"option '{first.name}'" if isinstance(first, S.Keyword) else "argument"
        raise TranspileError(f"gpu_device takes no arguments, but device function "
                             f"'{fn.name}' is given an {what}", first.span,
                             "write @gpu_device: a device function is compiled into each kernel "
                             "that calls it, with that kernel's options")


class Program:
    """The checker's entry point for one module."""

    def __init__(self, scan: ModuleScan, locator: ModuleLocator | None = None):
        self.scan = scan
        self.locator = locator or ModuleLocator()
        self.locator.add(scan)
        self.resolver = Resolver(scan, self.locator)
        # The device functions checked so far, by (path, name, binding): kernels check the ones
        # they call; the rest are checked on their own.
        self.checked_devices: set[tuple] = set()

    def check(self) -> list[CheckedKernel]:
        for fn in self.scan.functions:
            if fn.kind == "device":
                _check_device_decorator(fn)
        kernels = []
        for fn in self.scan.functions:
            if fn.kind == "kernel":
                with _no_recursion_error(fn):
                    kernels.append(self.check_kernel(fn))
        for fn in self.scan.functions:
            if fn.kind == "device":
                with _no_recursion_error(fn):
                    check_uncalled(self, fn, self.checked_devices)
        return kernels

    # ---- kernels ------------------------------------------------------------------------------

    def decorator_options(self, fn: S.FunctionDef) -> tuple[int, ir.KernelOptions, S.Expr | None]:
        dec = fn.decorator
        if not isinstance(dec, S.Call) or not dec.args:
            raise TranspileError("gpu_kernel needs the kernel's dimensionality",
                                 getattr(dec, "span", fn.span),
                                 "write @gpu_kernel(Kernel1D) (or Kernel2D, Kernel3D)")
        kind = self.resolver.dotted(dec.args[0])
        entry = registry_entry(kind)
        if entry is None or entry.form != "kernel kind":
            raise TranspileError("gpu_kernel's first argument must be Kernel1D, Kernel2D or "
                                 "Kernel3D", dec.args[0].span)
        if len(dec.args) > 1:
            raise TranspileError("gpu_kernel takes one positional argument; options are "
                                 "keywords, e.g. bounds_check=False", dec.args[1].span)
        ndim = entry.value
        flags: dict[str, bool] = {}
        max_registers: int | None = None
        specs = None
        for kw in dec.keywords:
            if kw.name not in KERNEL_OPTIONS:
                raise TranspileError(f"gpu_kernel has no option '{kw.name}' (options: "
                                     f"{', '.join(KERNEL_OPTIONS)})", kw.span)
            if kw.name == "specializations":
                specs = kw.value
                continue
            v = kw.value
            value = self._const(v)
            hint = None if value is not _NO_VALUE else \
                "an option's value is a literal or a module constant assigned once"
            if kw.name in ("bounds_check", "fastmath", "cooperative"):
                if not isinstance(value, bool):
                    raise TranspileError(f"{kw.name} must be True or False", v.span, hint)
                flags[kw.name] = value
            elif not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise TranspileError(f"{kw.name} must be a positive integer", v.span, hint)
            else:
                max_registers = value
        return ndim, ir.KernelOptions(**flags, max_registers=max_registers), specs

    def _const(self, e: S.Expr) -> object:
        """The value of a decorator option: a literal (a string too, which no option takes) or
        a module constant; ``_NO_VALUE`` for anything else."""
        if isinstance(e, (S.Num, S.Str)):
            return e.value
        if isinstance(e, S.Name):
            if e.id == "None":
                return None
            sym = self.resolver.name(e.id, e.span)
            if sym.kind == "const":
                return sym.value
        return _NO_VALUE

    def typevars_of(self, fn: S.FunctionDef) -> tuple[str, ...]:
        found: list[str] = []

        def walk(e):
            if isinstance(e, S.Name) and e.id in self.scan.typevars and e.id not in found:
                found.append(e.id)
            elif isinstance(e, S.Subscript):
                walk(e.value)
                for i in e.index:
                    walk(i)
            elif isinstance(e, S.Tuple):
                for i in e.elts:
                    walk(i)

        for p in fn.params:
            if p.annotation is not None:
                walk(p.annotation)
        return tuple(found)

    def bindings(self, fn: S.FunctionDef, typevars: tuple[str, ...], specs: S.Expr | None
                 ) -> list[dict[str, ir.ScalarType]]:
        if not typevars:
            if specs is not None:
                raise TranspileError("specializations= is only for generic kernels (with "
                                     "TypeVar parameters)", specs.span)
            return [{}]
        constraints = []
        for tv in typevars:
            names = self.scan.typevars[tv]
            if not names:
                raise TranspileError(f"TypeVar '{tv}' must be constrained to scalar types, "
                                     f"e.g. TypeVar('{tv}', f32, f64)", fn.span)
            for n in names:
                if n not in ir.SCALARS:
                    raise TranspileError(f"TypeVar '{tv}' may only list gpu_native scalar types "
                                         f"('{n}' is not one)", fn.span)
            constraints.append(names)
        if specs is None:
            combos = list(itertools.product(*constraints))
            if len(combos) > MAX_SPECIALIZATIONS:
                raise TranspileError(
                    f"kernel '{fn.name}' has {len(combos)} possible specialisations; list the "
                    "ones you need with specializations=[...]", fn.span)
        else:
            combos = self._declared(specs, typevars, constraints)
        return [{tv: ir.scalar(name) for tv, name in zip(typevars, combo)} for combo in combos]

    def _declared(self, specs: S.Expr, typevars, constraints) -> list[tuple[str, ...]]:
        if not isinstance(specs, S.Tuple):
            raise TranspileError("specializations= must be a list, e.g. [f32, f64] or "
                                 "[(f32, i32), (f64, i64)]", specs.span)
        if not specs.elts:
            raise TranspileError("specializations= must list at least one specialisation, e.g. "
                                 "[f32, f64] (or leave it out: every combination of the "
                                 "TypeVars' types)", specs.span)
        combos = []
        for item in specs.elts:
            elts = item.elts if isinstance(item, S.Tuple) else (item,)
            if len(elts) != len(typevars):
                raise TranspileError(f"each specialisation names {len(typevars)} type"
                                     f"{'s' if len(typevars) > 1 else ''} "
                                     f"({', '.join(typevars)})", item.span)
            combo = []
            for tv, cons, e in zip(typevars, constraints, elts):
                sym = self.resolver.dotted(e)
                if sym is None or sym.kind != "gn" or sym.name not in ir.SCALARS:
                    raise TranspileError("specialisations list scalar types such as f32",
                                         e.span)
                if sym.name not in cons:
                    raise TranspileError(f"{sym.name} is not one of {tv}'s types "
                                         f"({', '.join(cons)})", e.span)
                combo.append(sym.name)
            combos.append(tuple(combo))
        return combos

    def check_kernel(self, fn: S.FunctionDef) -> CheckedKernel:
        ndim, options, specs = self.decorator_options(fn)
        typevars = self.typevars_of(fn)
        kernels = []
        for binding in self.bindings(fn, typevars, specs):
            ctx = KernelContext(self, ndim, options)
            unit = check_function(FunctionContext(ctx, self.resolver.within(fn), binding), fn)
            checker, decl = unit.checker, unit.declarations
            assert checker is not None and decl is not None and unit.traits is not None
            suffix = "".join(f"_{binding[tv].name}" for tv in typevars)
            kernels.append(ir.Kernel(
                name=fn.name,
                module=self.scan.module_name,
                symbol=f"gn_{fn.name}{self.scan.variant}{suffix}",
                ndim=ndim,
                params=decl.params,
                locals=tuple(checker.locals),
                shared=tuple(checker.shared),
                local_arrays=tuple(checker.local_arrays),
                body=unit.body,
                sites=tuple(ctx.sites),
                options=options,
                traits=unit.traits,
                span=fn.span,
                device_functions=unit.device_functions,
                specialization=tuple((tv, binding[tv].name) for tv in typevars),
                launch_checks=tuple(ctx.launch_checks),
                consts=tuple(ctx.consts.values()),
            ))
            self.checked_devices.update(ctx.devices)
        return CheckedKernel(fn, ndim, options, typevars, kernels)

    # ---- device functions ---------------------------------------------------------------------

    def _resolver(self, scan: ModuleScan) -> Resolver:
        return self.resolver if scan is self.scan else Resolver(scan, self.locator)

    def defaults(self, scan: ModuleScan, fndef: S.FunctionDef) -> dict[str, object]:
        """The values of ``fndef``'s parameter defaults, evaluated in its module."""
        return param_defaults(self._resolver(scan), fndef)

    def call_device(self, caller: CheckerBase, scan: ModuleScan, fndef: S.FunctionDef,
                    args: list[ir.Expr], span: SourceSpan) -> ir.Expr:
        """A call of ``fndef`` with ``args`` (one per parameter, defaults filled in)."""
        resolver = self._resolver(scan)
        binding = self._bind_device(caller, resolver, scan, fndef, args, span)
        constants = self._constants(caller, resolver, fndef, args)
        kctx = caller.ctx.kernel
        cache_key = (scan.path, fndef.name, tuple(sorted((k, v.name) for k, v in binding.items())),
                     tuple((k, repr(v)) for k, v in constants.items()))
        if cache_key in kctx.stack:
            raise TranspileError(f"'{fndef.name}' calls itself (directly or through other "
                                 "device functions); recursion is not supported in kernels",
                                 span)
        function = kctx.devices.get(cache_key)
        if function is None:
            kctx.stack.append(cache_key)
            unit = check_function(FunctionContext(kctx, resolver.within(fndef), binding,
                                                  constants), fndef)
            kctx.stack.pop()
            checked, decl = unit.checker, unit.declarations
            assert checked is not None and decl is not None
            suffix = "".join(f"_{v.name}" for _, v in sorted(binding.items()))
            if constants:  # one specialisation per value of the Const parameters
                digest = hashlib.blake2b(repr(cache_key[3]).encode(), digest_size=4).hexdigest()
                suffix += f"_c{digest}"
            function = ir.DeviceFunction(
                name=fndef.name, module=scan.module_name,
                symbol=f"gn_dev_{_c_ident(scan.module_name)}_{fndef.name}{suffix}",
                params=decl.params, ret=decl.ret_type, locals=tuple(checked.locals),
                local_arrays=tuple(checked.local_arrays), body=unit.body, span=fndef.span,
                callees=tuple(checked.callees))
            kctx.devices[cache_key] = function
            kctx.checked[cache_key] = unit
        callee = kctx.checked[cache_key].checker
        assert callee is not None
        caller.merge_callee(callee.traits, function)
        converted: list[ir.Expr] = []
        runtime_args = [a for p, a in zip(fndef.params, args) if p.name not in constants]
        arrays = {p.name: a for p, a in zip(function.params, runtime_args)
                  if isinstance(p.ty, ir.ArrayType) and isinstance(a, ir.ArrayRef)}
        for param, arg in zip(function.params, runtime_args):
            what = f"argument '{param.name}' of {fndef.name}()"
            if isinstance(param.ty, ir.ArrayType):
                if not isinstance(arg, ir.ArrayRef):
                    raise TranspileError(f"{what} must be an array ({param.ty})", arg.span)
                pt, at = param.ty, arg.ty
                if pt.ndim != at.ndim or pt.elem != at.elem:
                    raise TranspileError(f"{what} must be {pt}, not {at}", arg.span)
                if pt.strided != at.strided:
                    raise TranspileError(
                        f"{what} is {pt}, but '{arg.var.name}' is {at}: a device function's "
                        "array parameter takes arrays of its own layout (annotate "
                        f"'{param.name}' {'with' if at.strided else 'without'} Strided)",
                        arg.span)
                if pt.mutable and not at.mutable:
                    raise TranspileError(f"{what} is writable (CUDASliceMut) but "
                                         f"'{arg.var.name}' is read-only", arg.span)
                converted.append(arg)
                continue
            # the others: arrays
            assert isinstance(param.ty, (ir.ScalarType, ir.VectorType, ir.TupleType,
                                         ir.StructType))
            value = caller.coerce(arg, param.ty, what)
            caller.unique.check_argument(callee.unique.unique_param_uses, param, value, what,
                                         arg.span, arrays)
            converted.append(value)
        return ir.Call(span, function.ret, function, tuple(converted))

    def _constants(self, caller: CheckerBase, resolver: Resolver, fndef: S.FunctionDef,
                   args: list[ir.Expr]) -> dict[str, object]:
        """The values passed for ``fndef``'s ``Const`` parameters, which must be constants."""
        out: dict[str, object] = {}
        for p, arg in zip(fndef.params, args):
            if not _is_annotation(resolver, p.annotation, "const type"):
                continue
            value = caller.constant_of(arg)
            if value is NOT_CONSTANT:
                raise TranspileError(
                    f"argument '{p.name}' of {fndef.name}() is a Const parameter: it needs a "
                    "compile-time constant (a number, a bool, a module constant or a tuple of "
                    "them)", arg.span, f"its signature is at {fndef.span}")
            out[p.name] = value
        return out

    def _bind_device(self, caller: CheckerBase, resolver: Resolver, scan: ModuleScan,
                     fndef: S.FunctionDef, args: list[ir.Expr], span: SourceSpan
                     ) -> dict[str, ir.ScalarType]:
        binding: dict[str, ir.ScalarType] = {}
        # Typed arguments bind first: a literal takes the type the others give its TypeVar
        # (softplus(x[i], 2.0) with x of f32 is softplus[f32]), as it takes an operand's.
        pairs = list(zip(fndef.params, args))
        pairs.sort(key=lambda pair: isinstance(pair[1], WeakConst))
        literals = {id(arg) for _, arg in pairs if isinstance(arg, WeakConst)}
        for p, arg in pairs:
            ann = p.annotation
            tv = None
            array = False
            if isinstance(ann, S.Subscript) and _is_annotation(resolver, ann.value, "tuple type"):
                self._bind_tuple(caller, scan, fndef, p, ann, arg, binding)
                continue
            if isinstance(ann, S.Name) and ann.id in scan.typevars:
                tv = ann.id
            elif isinstance(ann, S.Subscript) and len(ann.index) in (1, 2) and isinstance(
                    ann.index[0], S.Name) and ann.index[0].id in scan.typevars:
                tv, array = ann.index[0].id, True
            if tv is None:
                continue
            if array:
                if not isinstance(arg, ir.ArrayRef):
                    raise TranspileError(f"argument '{p.name}' of {fndef.name}() must be an "
                                         "array", arg.span)
                elem = arg.ty.elem
                if not isinstance(elem, ir.ScalarType):
                    raise TranspileError(f"argument '{p.name}' of {fndef.name}() is an array of "
                                         f"{elem}, but a TypeVar stands for a scalar type",
                                         arg.span)
                ty = elem
            else:
                if id(arg) in literals and tv in binding:
                    continue      # converted to the bound type where the call is checked
                ty = caller.scalar_of(caller.materialize(arg), f"argument '{p.name}'")
            self._bind_typevar(scan, fndef, p.name, tv, ty, arg, binding)
        return binding

    def _bind_tuple(self, caller: CheckerBase, scan: ModuleScan, fndef: S.FunctionDef,
                    p: S.Param, ann: S.Subscript, arg: ir.Expr,
                    binding: dict[str, ir.ScalarType]) -> None:
        """Bind the TypeVars of a ``tuple[T, ...]`` parameter from the argument's items."""
        tvs = [i.id if isinstance(i, S.Name) and i.id in scan.typevars else None
               for i in ann.index]
        if not any(tvs):
            return
        if not caller.is_tuple(arg) or caller.tuple_length(arg) != len(tvs):
            raise TranspileError(f"argument '{p.name}' of {fndef.name}() must be a tuple of "
                                 f"{len(tvs)} items", arg.span)
        value = caller.materialize(arg)
        assert isinstance(value.ty, ir.TupleType)  # (is_tuple above)
        for tv, ty in zip(tvs, value.ty.elems):
            if tv is not None:
                self._bind_typevar(scan, fndef, p.name, tv, ty, arg, binding)

    @staticmethod
    def _bind_typevar(scan: ModuleScan, fndef: S.FunctionDef, param: str, tv: str,
                      ty: ir.ScalarType, arg: ir.Expr, binding: dict[str, ir.ScalarType]) -> None:
        allowed = scan.typevars[tv]
        if allowed and ty.name not in allowed:
            raise TranspileError(f"argument '{param}' of {fndef.name}() is {ty}, which is "
                                 f"not one of {tv}'s types ({', '.join(allowed)})", arg.span)
        if tv in binding and binding[tv] != ty:
            raise TranspileError(f"{fndef.name}(): '{tv}' is {binding[tv]} from an earlier "
                                 f"argument but {ty} here", arg.span)
        binding[tv] = ty


def _is_annotation(resolver: Resolver, ann: S.Expr | None, form: str) -> bool:
    """Whether ``ann`` names the registry's annotation of ``form`` (``Const``, ``tuple``)."""
    if not isinstance(ann, (S.Name, S.Attribute)):
        return False
    entry = registry_entry(resolver.dotted(ann))
    return entry is not None and entry.form == form


@contextlib.contextmanager
def _no_recursion_error(fn: S.FunctionDef):
    """Report a RecursionError in checking ``fn`` as a TranspileError at ``fn``: the front end
    bounds each function's depth, but device functions calling each other nest the checker."""
    try:
        yield
    except RecursionError:
        raise too_deep(f"{fn.kind} function '{fn.name}'", fn.span) from None
