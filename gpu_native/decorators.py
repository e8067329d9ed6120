"""``@gpu_kernel`` and ``@gpu_device``.

In a module the import hook rewrote, ``@gpu_kernel(Kernel1D, _spec=...)`` receives the spec the
transpiler produced and the launcher factory that replaced the kernel's body.  Where no hook ran
(``python script.py``, a notebook cell, ``python -c``; see :mod:`gpu_native.sources` for where the
source is found), the decorator transpiles the function from its own source with the same
pipeline — :func:`gpu_native.rewrite.rewrite_module` on the text the function came from — and
builds the same kernel object.

It tells the transpiler what the names the source does not bind hold when the kernel is
defined, as Numba does: the constants, modules and device functions of a notebook's earlier
cells, a closure's cells, and the names its annotations and decorator read in the function or
class that defines it (``CUDASlice[T]`` in a factory of ``T``).  A kernel with a closure (defined in a function, using its
variables) is left by the hook to this decorator and transpiled alone, once per set of values.

This module sits above both the runtime and the transpiler (``docs/architecture.md``): the kernel
object is the runtime's, and the transpiler is imported only by the fallback, so neither
``import gpu_native`` nor a kernel module the hook rewrote loads it, and the runtime package itself
never imports the transpiler.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import re
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar, cast, overload

from . import log
from .errors import TranspileError
from .lang import constarrays as _constarrays
from .lang import structs as _structs
from .lang.layouts import Kernel1D, Kernel2D, Kernel3D
from .runtime.kernel import Kernel
from .sources import function_source, ran_other_code
from .tracebacks import boundary, strip

P = ParamSpec("P")
R = TypeVar("R")

_KINDS = (Kernel1D, Kernel2D, Kernel3D)
_rewrites: dict[tuple, Any] = {}  # oldest first
_MAX_REWRITES = 256
_rewrite_lock = threading.Lock()


def _misuse_told_by_source(decorator: Callable[P, R]) -> Callable[P, R]:
    """Let the transpiler report a call of ``decorator`` that its signature refuses
    (``@gpu_kernel(Kernel1D, bogus=1)``), as the import hook does: where no hook ran, the
    decorator returned transpiles the function from its source, whose decorator line the
    transpiler reads and refuses at the culprit, listing the options.  Only a call that is not
    in the source as written (``gpu_kernel(Kernel1D, **options)(f)``) keeps Python's
    ``TypeError``."""
    signature = inspect.signature(decorator)

    @functools.wraps(decorator)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            message = f"@gpu_kernel(...): {exc}"
            # (What @gpu_kernel(...) returns, refusing the function it is given.)
            return cast(R, _refused_call(message))
        return decorator(*args, **kwargs)

    return checked


def _refused_call(message: str) -> Callable[[Callable[..., object]], Kernel]:
    def decorate(fn: Callable[..., object]) -> Kernel:
        try:
            try:
                _kernel_from_source(fn, refused=message)
            except TranspileError as exc:
                if exc.span is not None:
                    raise
            raise TypeError(message)  # no source, or one that shows nothing wrong
        except Exception as exc:
            strip(exc)
            raise

    return decorate


@boundary
@_misuse_told_by_source
def gpu_kernel(kind: type[Kernel1D] | type[Kernel2D] | type[Kernel3D], *,
               bounds_check: bool = True, fastmath: bool = False,
               max_registers: int | None = None, cooperative: bool = False,
               specializations: Any = None,
               _spec: tuple | None = None) -> Callable[[Callable[P, object]], Kernel[P]]:
    """Mark a function as a GPU kernel: ``@gpu_kernel(Kernel1D)``.

    Parameters
    ----------
    kind
        ``Kernel1D``, ``Kernel2D`` or ``Kernel3D``: the dimensionality of its launches.
    bounds_check
        Check every index that cannot be proven in range (default).  ``False`` removes the checks
        for measured hot paths.
    fastmath
        Compile with ``--use_fast_math``.
    max_registers
        Cap registers per thread (``--maxrregcount``).
    cooperative
        Launch with ``cuLaunchCooperativeKernel``: every block of the grid is resident at once,
        so the kernel may call ``grid_sync()``, a barrier for every thread of the grid.  A grid
        larger than the device can hold at once is refused at launch (``LaunchError``).
    specializations
        For generic kernels (``TypeVar`` parameters): the specialisations to build, e.g.
        ``[f32, f64]``; by default every combination of the TypeVars' types.

    Returns
    -------
    Callable
        The decorator, which makes the function a :class:`~gpu_native.Kernel`; type checkers
        see a ``Kernel[P]`` with the function's parameters ``P``, so launches are checked.
    """
    if kind not in _KINDS:
        if inspect.isfunction(kind) or isinstance(kind, staticmethod):
            # A bare `@gpu_kernel`: the function came where its kind goes, and the decorator
            # returned would stand for the kernel.  Refused now, at its line in the source.
            return _refused_call("gpu_kernel needs the kernel's dimensionality: write "
                                 "@gpu_kernel(Kernel1D) (or Kernel2D, Kernel3D)")(kind)
        return _refused_call(f"@gpu_kernel takes Kernel1D, Kernel2D or Kernel3D, not {kind!r}")

    def decorate(fn: Callable[P, object]) -> Kernel[P]:
        if _spec is not None:
            return Kernel(_spec, fn)
        try:
            return _kernel_from_source(fn)
        except Exception as exc:  # a kernel outside the language: the user's line, not ours
            strip(exc)
            raise

    return decorate


def _kernel_from_source(fn: Callable[P, object], refused: str | None = None) -> Kernel[P]:
    """The kernel ``fn`` as its source defines it.  ``refused``: the message of the TypeError
    to raise where the source has no such kernel (a refused call that was no decorator)."""
    if isinstance(fn, staticmethod):  # @gpu_kernel above @staticmethod: the kernel is no method
        fn = fn.__func__
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError("@gpu_kernel decorates a plain function")
    filename = code.co_filename
    if code.co_name == "<lambda>":
        raise TypeError("a kernel is a function defined with def and decorated with "
                        "@gpu_kernel(Kernel1D) (a lambda has no annotations to type its "
                        "parameters with)")
    globals_ = getattr(fn, "__globals__", {})
    source = function_source(code, fn.__name__, globals_)
    if source is None:
        raise _no_source("kernel", fn.__name__, filename)
    if ran_other_code(source, code, globals_):
        raise _other_code("kernel", fn.__name__, filename, code.co_firstlineno)
    module_name = fn.__module__ or "__main__"
    if module_name in ("__main__", "__mp_main__") and filename.endswith(".py"):
        # A script's kernels get the names `gpu-native precompile script.py` gives them, so its
        # precompiled artifacts match (and a pickled kernel re-imports `script` in a worker).
        module_name = os.path.splitext(os.path.basename(filename))[0]
    # A kernel with a closure (defined in a function, using its variables) is transpiled alone,
    # with the values its cells hold now; the others share one transpilation of the module.
    only = code.co_firstlineno if code.co_freevars else None
    # A kernel in a function or a class body: what that scope held, where Python evaluated its
    # annotations and decorators.
    scope = _enclosing_scope(code) if "." in getattr(fn, "__qualname__", "") else None
    if scope:
        # Only the decorators and the signature are evaluated there: the body sees a function's
        # variables through its closure cells, and a class body's names not at all.
        scope = {name: scope[name] for name in _signature_names(source, code) & set(scope)}
    if scope:
        only = code.co_firstlineno
    capture = _Capture()
    hints = capture.hints(source, filename, globals_, fn if only is not None else None, scope)
    from .frontend.source import source_lines
    from .rewrite import find_kernel

    try:
        result = _rewrite(source, filename, module_name, hints, capture.provided)
    except TranspileError as exc:
        if hints.only is not None or not _elsewhere(exc, filename, source, code.co_firstlineno):
            raise
        # Another kernel of the script is outside the language: this one may be fine, and the
        # error belongs to that kernel's own decorator (the line Python shows), so transpile
        # this kernel alone; the other's error comes when Python decorates it.
        from .frontend.parse import ScanHints

        hints = ScanHints(outer=hints.outer, only=code.co_firstlineno)
        result = _rewrite(source, filename, module_name, hints, capture.provided)

    build = find_kernel(result, fn.__name__, code.co_firstlineno)
    if build is None:
        if refused is not None:
            raise TypeError(refused)
        raise _not_found(fn.__name__, filename, source, code.co_firstlineno)
    new_lines = source_lines(result.source)
    first = build.line
    last = _block_end(new_lines, first)
    block = "".join(new_lines[first - 1:last])
    # Run the rewritten lines of this one kernel exactly as the hook would have, on their
    # original line numbers: the decorator sees the spec and builds the Kernel.
    padded = "\n" * (first - 1) + _dedent_block(block)
    namespace: dict[str, Any] = {}
    exec(compile(padded, filename, "exec"), globals_, namespace)
    return namespace[fn.__name__]


def _elsewhere(exc: TranspileError, filename: str, source: str, first: int) -> bool:
    """Whether ``exc`` points into ``filename`` outside the definition that starts (with its
    first decorator) on line ``first``."""
    from .frontend.source import source_lines

    span = exc.span
    if span is None or span.file != filename:
        return False
    return not first <= span.line <= _block_end(source_lines(source), first)


def _enclosing_scope(code: types.CodeType) -> dict[str, Any]:
    """The local names of the function or class body that is defining the function of ``code``
    (its annotations and decorators were evaluated there), or none at module level.  The kernel
    takes those its lines name that are no variables of its own."""
    frame: types.FrameType | None = sys._getframe(1)
    for _ in range(16):  # the decorator's own frames, then the definer's
        frame = frame.f_back if frame is not None else None
        if frame is None:
            return {}
        if code in frame.f_code.co_consts:
            return dict(frame.f_locals) if frame.f_locals is not frame.f_globals else {}
    return {}


def _not_found(name: str, filename: str, source: str, line: int) -> TranspileError:
    """The error for a function the transpiler did not take for a kernel: its decorator does not
    name gpu_kernel as the scan reads names, or the call was no decorator at all."""
    from .errors import SourceSpan
    from .frontend.source import line_texts

    lines = line_texts(source)
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    col = len(text) - len(text.lstrip())
    return TranspileError(
        f"could not find kernel '{name}' in {filename}: gpu_native finds a kernel by a "
        "decorator that names gpu_native's gpu_kernel, and the source has none here",
        SourceSpan(filename, line, col, len(text.rstrip()) or None, text),
        "write @gpu_kernel(...) (from gpu_native import gpu_kernel) or @gn.gpu_kernel(...); "
        "another name for it is found only when assigned once at module level "
        "(kern = gn.gpu_kernel), not when imported from elsewhere or made at run time")


def _no_source(what: str, name: str, filename: str) -> TranspileError:
    return TranspileError(
        f"cannot find the source of {what} '{name}' (defined in {filename}): gpu_native "
        "transpiles kernels from their source, and code given to exec() as a string, piped to "
        "`python -` or typed at the interactive prompt keeps none",
        None, "compile the string under a name gn.register_source gives it: "
        "exec(compile(src, gn.register_source(src), 'exec'), namespace); or define the kernel "
        "in a .py file or a notebook cell, or ship precompiled kernels (gpu-native precompile) "
        "in an app without sources")


def _other_code(what: str, name: str, filename: str, line: int) -> TranspileError:
    from .errors import SourceSpan

    return TranspileError(
        f"the source of {what} '{name}' in {filename} is not the code Python ran: the file "
        "changed after Python read it, or the code was compiled from another text under this "
        "file's name; gpu_native transpiles the text, so it would build a kernel other than "
        "the one the program defines",
        SourceSpan(filename, line), "run the program again after editing the file; compile "
        "a modified text under a name of its own: exec(compile(src, gn.register_source(src), "
        "'exec'), namespace)")


def _block_end(lines: list[str], first: int) -> int:
    """The last line of the rewritten kernel block starting at ``first`` (decorator line)."""
    indent = len(lines[first - 1]) - len(lines[first - 1].lstrip())
    last = first + 1
    for i in range(first + 1, len(lines) + 1):
        text = lines[i - 1]
        stripped = text.strip()
        if not stripped:
            continue
        if len(text) - len(text.lstrip()) <= indent and i > first + 1:
            break
        last = i
    return last


def _dedent_block(block: str) -> str:
    lines = block.splitlines(keepends=True)
    indent = len(lines[0]) - len(lines[0].lstrip())
    return "".join(line[indent:] if line.strip() else line for line in lines)


_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_bound_cache: dict[str, frozenset[str]] = {}


def _bound_names(source: str, digest: str) -> frozenset[str]:
    """The names the source binds in its global scope, in any way (its own definitions win over
    what the namespace it runs in held before)."""
    names = _bound_cache.get(digest)
    if names is None:
        import ast

        from .frontend.bindings import module_bindings

        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = ast.Module(body=[], type_ignores=[])  # the transpiler reports it
        names = _bound_cache[digest] = frozenset(module_bindings(tree, "<source>", []))
    return names


def _signature_names(source: str, code: types.CodeType) -> set[str]:
    """The names the decorators, defaults and annotations of the function of ``code`` read:
    what Python evaluated in the scope that defines it."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()  # the transpiler reports it
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.name == code.co_name and \
                min([node.lineno, *(d.lineno for d in node.decorator_list)]) == \
                code.co_firstlineno:
            args = node.args
            read: list[ast.AST] = [*node.decorator_list, *args.defaults,
                                   *(d for d in args.kw_defaults if d is not None)]
            read += [a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs,
                                            args.vararg, args.kwarg)
                     if a is not None and a.annotation is not None]
            if node.returns is not None:
                read.append(node.returns)
            return {n.id for e in read for n in ast.walk(e) if isinstance(n, ast.Name)}
        stack.extend(ast.iter_child_nodes(node))
    return set()


def _is_constant(value: object) -> bool:
    """An int, float or bool, or a tuple of them (nested): what a kernel can take as a
    compile-time constant."""
    if type(value) in (int, float, bool):
        return True
    return isinstance(value, tuple) and type(value) is tuple and all(_is_constant(v) for v in value)


def _as_constant(value: object) -> object:
    """``value`` with each NumPy scalar of a bool, integer or real type (``np.float64(4.5)``
    from ``arr.max()``, ``np.float32(0.25)``) as the Python number it holds, exactly (an f32's
    value is a float's): what :func:`_is_constant` accepts.  Anything else is returned as it
    is."""
    if type(value) is tuple:
        return tuple(_as_constant(v) for v in value)
    numpy = sys.modules.get("numpy")  # a NumPy scalar exists only where NumPy is imported
    if numpy is not None and isinstance(value, numpy.generic) and value.dtype.kind in "biuf" \
            and value.dtype.isnative:
        return value.item()
    return value


def _numpy_scalar_type(value: object) -> str | None:
    """The name of the kernel type a NumPy scalar type stands for (``np.float32``: ``"f32"``),
    or None."""
    numpy = sys.modules.get("numpy")
    if numpy is None or not isinstance(value, type) or not issubclass(value, numpy.generic):
        return None
    from .lang.types import SCALARS

    dtype = numpy.dtype(value)
    return next((name for name, info in SCALARS.items() if info.numpy == dtype.name), None)


class _Capture:
    """What the names a source does not bind held at decoration time, as the transpiler's
    :class:`~gpu_native.frontend.parse.ScanHints`; and the scans of the sources of device
    functions defined in other dynamic code (earlier notebook cells), in :attr:`provided`."""

    def __init__(self) -> None:
        self.provided: list[Any] = []  # ModuleScan, for the transpiler's ModuleLocator
        self._modules: dict[str, str] = {}  # file name -> the module name it is provided as

    def hints(self, source: str, filename: str, globals_: dict,
              closure_of: Callable[..., Any] | None = None, scope: dict | None = None):
        from .frontend.parse import ScanHints

        digest = hashlib.sha256(source.encode()).hexdigest()
        used = set(_WORD.findall(source))
        bound = _bound_names(source, digest)
        outer = {}
        for name in sorted(used - bound):
            if name.startswith("__") or name not in globals_:
                continue
            found = self._outer(name, globals_[name], filename, False)
            if found is not None:
                outer[name] = found
        if closure_of is None:
            return ScanHints(outer=outer)
        code = closure_of.__code__
        captured = {}
        # What the annotations and decorators read around the kernel (`CUDASlice[T]`).
        for name in sorted(scope or ()):
            found = self._outer(name, (scope or {})[name], filename, True)
            if found is not None:
                captured[name] = found
        for name, cell in self._cells(closure_of, filename):
            try:
                value = cell.cell_contents
            except ValueError:  # assigned after the kernel is defined
                captured[name] = self._host(name, "has no value yet where the kernel is "
                                            "defined", True)
                continue
            found = self._outer(name, value, filename, True)
            if found is not None:
                captured[name] = found
        variant = ""
        if captured:
            text = repr(sorted((k, v.kind, repr(v.value)) for k, v in captured.items()))
            variant = "_c" + hashlib.blake2b(text.encode(), digest_size=4).hexdigest()
        return ScanHints(outer=outer, captured=captured, only=code.co_firstlineno,
                         variant=variant)

    @staticmethod
    def _cells(fn: Callable[..., Any], filename: str) -> list[tuple[str, Any]]:
        """The closure cells of ``fn`` and of the device functions it closes over that are
        defined beside it (their variables are the same function's): a name once, ``fn``'s
        first."""
        cells: dict[str, Any] = {}
        todo = [fn]
        while todo:
            function = todo.pop(0)
            for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
                if name in cells:
                    continue
                cells[name] = cell
                try:
                    value = cell.cell_contents
                except ValueError:
                    continue
                if isinstance(value, DeviceFunction) and \
                        value.__wrapped__.__code__.co_filename == filename:
                    todo.append(value.__wrapped__)
        return list(cells.items())

    def _outer(self, name: str, value: object, filename: str, closure: bool):
        import gpu_native

        from .frontend.parse import OuterName

        if isinstance(value, types.ModuleType):
            return OuterName("import", (value.__name__, None))
        value = _as_constant(value)
        if _is_constant(value):
            return OuterName("const", value)
        if isinstance(value, DeviceFunction):
            return self._device(value, filename)
        if value is None:  # before the search below, where a missing name reads as None
            return self._host(name, "holds None", closure)
        # `make(float)` for `CUDASliceMut[T]` and `T(x)`: the kernel type the builtin stands
        # for in an annotation, whose conversion is the builtin's (`float(x)` is `f64(x)`).
        builtin = {float: "f64", int: "i64", bool: "bool_"}.get(value) if isinstance(
            value, type) else None
        scalar = builtin or _numpy_scalar_type(value)
        if scalar is not None:  # `make(np.float32)`: gpu_native's f32
            return OuterName("import", ("gpu_native", scalar))
        if getattr(gpu_native, name, None) is value:
            return OuterName("import", ("gpu_native", name))
        for attr in getattr(gpu_native, "__all__", ()):  # imported under another name
            if getattr(gpu_native, attr, None) is value:
                return OuterName("import", ("gpu_native", attr))
        if isinstance(value, Kernel):
            return self._host(name, "is a kernel; kernels cannot launch kernels", closure)
        kind = type(value)
        what = "a class" if isinstance(value, type) else "a function" if isinstance(
            value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)) else \
            f"a {kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else \
            f"a {kind.__qualname__}"
        return self._host(name, f"holds {what}", closure)

    @staticmethod
    def _host(name: str, what: str, closure: bool):
        from .frontend.parse import OuterName

        where = "a variable of the function that defines the kernel" if closure else \
            "a host name"
        return OuterName("host", f"'{name}' is {where}, and {what}: kernels take constants "
                         "(int, float, bool and tuples of them) and @gpu_device functions from "
                         "around them; pass arrays and other values as parameters")

    def _device(self, device: DeviceFunction, filename: str):
        from .frontend.parse import OuterName

        fn = device.__wrapped__
        code = fn.__code__
        if code.co_filename == filename:
            return None  # the source defines it: the scan finds it there
        module = fn.__module__
        loaded = sys.modules.get(module or "")
        if module not in (None, "__main__", "__mp_main__") and \
                getattr(loaded, "__file__", None) == code.co_filename:
            return OuterName("import", (module, fn.__name__))  # found on sys.path, by its file
        provided = self._modules.get(code.co_filename)
        if provided is None:
            provided = self._provide(fn)
        return OuterName("import", (provided, fn.__name__))

    def _provide(self, fn: Callable[..., Any]) -> str:
        """Scan the source of a device function defined in dynamic code (an earlier notebook
        cell) as a module of its own, named after its file."""
        from .frontend.parse import ScanHints, scan_module

        code = fn.__code__
        filename = code.co_filename
        source = function_source(code, fn.__name__, fn.__globals__)
        if source is None:
            raise _no_source("device function", fn.__name__, filename)
        if ran_other_code(source, code, fn.__globals__):
            raise _other_code("device function", fn.__name__, filename, code.co_firstlineno)
        digest = hashlib.blake2b(filename.encode(), digest_size=4).hexdigest()
        module = f"{fn.__module__ or '__main__'}@{digest}"
        self._modules[filename] = module  # before its own names: device functions may recurse
        outer = self.hints(source, filename, fn.__globals__).outer
        # only=0: none of its kernels, which the kernel being transpiled cannot call anyway.
        self.provided.append(scan_module(source, filename, module, ScanHints(outer=outer,
                                                                              only=0)))
        return module


def _rewrite(source: str, filename: str, module_name: str, hints, provided: list):
    from .cache import prefetch

    prefetch.start()  # as the import hook does: the kernels are compiled ahead
    from .check.scope import ModuleLocator
    from .rewrite import rewrite_module

    key = (filename, hashlib.sha256(source.encode()).hexdigest(), repr(hints),
           tuple((p.module_name, hashlib.sha256(p.source.encode()).hexdigest()) for p in provided))
    with _rewrite_lock:
        result = _rewrites.get(key)
        if result is None:
            started = time.perf_counter()
            locator = ModuleLocator()
            for scan in provided:
                locator.provide(scan)
            result = rewrite_module(source, filename, module_name, locator, hints=hints)
            _rewrites[key] = result
            while len(_rewrites) > _MAX_REWRITES:  # a factory called with many values
                del _rewrites[next(iter(_rewrites))]
            log.debug("module %s (%s): transpiled %d kernel%s in %.1f ms (no import hook ran)",
                      module_name, filename, len(result.kernels),
                      "s" * (len(result.kernels) != 1), (time.perf_counter() - started) * 1e3)
    return result


class DeviceFunction(Generic[P, R]):
    """A ``@gpu_device`` function: callable from kernels and other device functions only.

    For type checkers it keeps the function's parameters ``P`` and result ``R``, so calls in
    kernel bodies are checked as calls of the function.
    """

    def __init__(self, fn: Callable[P, R]):
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        raise TypeError(f"{self.__name__} is a @gpu_device function: call it from a kernel or "
                        "another device function, not from the host")

    def __repr__(self) -> str:
        return f"<gpu_native device function {self.__module__}.{self.__qualname__}>"

    def __reduce__(self):
        from .runtime.kernel import _import_kernel

        return (_import_kernel, (self.__module__, self.__qualname__))


@overload
def gpu_device(fn: Callable[P, R]) -> DeviceFunction[P, R]: ...
@overload
def gpu_device() -> Callable[[Callable[P, R]], DeviceFunction[P, R]]: ...
@boundary
def gpu_device(fn: Callable[P, R] | None = None, *args: object, **options: object) -> Any:
    """Mark a function as a device function (``@gpu_device``): typed like a kernel, callable from
    kernels and other device functions, compiled into every kernel that calls it.  It takes no
    options: a device function is compiled with the options of each kernel that calls it."""
    if args or options or (fn is not None and not callable(fn)):
        given = f"option '{next(iter(options))}'" if options else "argument"
        raise TypeError(f"gpu_device takes no arguments, but is given an {given}: write "
                        "@gpu_device (a device function is compiled with the options of each "
                        "kernel that calls it)")
    if fn is None:
        return lambda f: DeviceFunction(f)
    return DeviceFunction(fn)


# Entry points like the two above: a refused class shows the user's decorator line, and a refused
# table the user's const_array(...) line, not ours (lang may not import tracebacks, so they are
# wrapped here).  The launch dimensions (GridDim1D ...) are not: they are built on the launch
# path, where a wrapper would cost every launch a call.
gpu_struct = boundary(_structs.gpu_struct)
const_array = boundary(_constarrays.const_array)
