"""Kernels defined inside functions and classes: closures over constants (captured when the
kernel is defined, as Numba and Warp capture them), the clear error for a closure over anything
else, and ``@staticmethod`` kernels in a class body.

Each case runs twice: from this file (which pytest imports, so no import hook runs and the
decorator transpiles the kernel) and from a module the import hook rewrites, which leaves a
closure's kernel to its decorator.
"""

from __future__ import annotations

import importlib
import sys
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native import (
    CUDASlice,
    CUDASliceMut,
    FlatLayout1D,
    Kernel1D,
    UniqueId,
    f32,
    gpu_device,
    gpu_kernel,
)
from gpu_native.errors import TranspileError


def make_affine(scale, offsets):
    shift = offsets[1]

    @gpu_device
    def twice(x: f32) -> f32:
        return x * 2.0

    @gpu_kernel(Kernel1D)
    def affine(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = twice(a[idx]) * scale + shift + offsets[0]

    return affine


def make_from(table):
    @gpu_kernel(Kernel1D)
    def reads_table(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + table[0]

    return reads_table


def make_generic(T, check):
    # T and check are read by the annotations and the decorator, in make_generic's scope.
    @gpu_kernel(Kernel1D, bounds_check=check)
    def plus_half(a: CUDASlice[T], c: CUDASliceMut[T]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + 0.5

    return plus_half


class Ops:
    @staticmethod
    @gpu_kernel(Kernel1D)
    def inc(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + 1.0

    @gpu_kernel(Kernel1D)
    @staticmethod
    def dec(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] - 1.0


def _launch(kernel, values):
    a = gn.to_device(np.asarray(values, dtype=np.float32))
    c = gn.empty(len(values), gn.f32)
    kernel.forall(len(values))(a, c)
    return c.to_host().tolist()


class TestClosures:
    def test_each_call_captures_its_own_constants(self, backend):
        three = make_affine(3, (0.5, 1.0))
        five = make_affine(5.0, (0.0, -1.0))
        assert _launch(three, [0, 1, 2]) == [1.5, 7.5, 13.5]
        assert _launch(five, [0, 1, 2]) == [-1.0, 9.0, 19.0]
        # Told apart in the error records (by kernel id) and in profilers (by symbol).
        ids = {k.spec.variants[0].kernel_id for k in (three, five)}
        symbols = {k.spec.variants[0].symbol for k in (three, five)}
        assert len(ids) == 2 and len(symbols) == 2
        assert _launch(make_affine(3, (0.5, 1.0)), [1]) == [7.5]

    def test_annotations_and_options_read_in_the_factory(self, backend):
        for T, dtype in ((gn.f32, np.float32), (gn.f64, np.float64)):
            kernel = make_generic(T, False)
            assert kernel.options.bounds_check is False
            a = gn.to_device(np.arange(3, dtype=dtype))
            c = gn.empty(3, T)
            kernel.forall(3)(a, c)
            out = c.to_host()
            assert out.dtype == dtype and out.tolist() == [0.5, 1.5, 2.5]

    def test_python_and_numpy_scalar_types_name_the_kernel_type(self, backend):
        # `make(float)`, `make(np.float32)`: the type an annotation of that builtin or NumPy
        # type means ("'T' is not a kernel type" before).
        for T, dtype in ((float, np.float64), (np.float32, np.float32),
                         (np.float64, np.float64)):
            kernel = make_generic(T, True)
            a = gn.to_device(np.arange(3, dtype=dtype))
            c = gn.empty(3, dtype)
            kernel.forall(3)(a, c)
            out = c.to_host()
            assert out.dtype == dtype and out.tolist() == [0.5, 1.5, 2.5]

    def test_numpy_scalars_are_the_numbers_they_hold(self, backend):
        # What arr.max() and np.mean() return: np.float64 is a float, np.float32 is not, and a
        # tuple may mix them; np.longdouble has no exact Python number and stays refused.
        three = make_affine(np.float32(3.0), (np.float64(0.5), np.int64(1)))
        assert _launch(three, [0, 1, 2]) == [1.5, 7.5, 13.5]
        assert _launch(make_affine(np.int32(-2), (np.bool_(True), 0.25)), [1]) == [-2.75]
        quarter = make_from((np.float32(0.1),))
        assert _launch(quarter, [1]) == [np.float32(1) + np.float32(0.1)]
        with pytest.raises(TranspileError, match=r"holds a numpy\.longdouble"):
            make_from(np.longdouble(1))

    @pytest.mark.parametrize("value, shown", [(np.ones(3, np.float32), "numpy.ndarray"),
                                              ([1.0, 2.0], "holds a list"),
                                              (None, "and holds None: kernels take constants "
                                                     "(int, float, bool and tuples of them)")])
    def test_a_closure_over_a_host_value_is_an_error_at_the_use(self, value, shown):
        with pytest.raises(TranspileError) as info:
            make_from(value)
        message = str(info.value)
        line = make_from.__code__.co_firstlineno + 4
        assert f"test_closures.py:{line}:" in message
        assert "'table' is a variable of the function that defines the kernel" in message
        assert shown in message and "pass arrays and other values as parameters" in message
        assert "c[idx] = a[idx] + table[0]" in message and "^^^^^" in message


def test_a_lambda_is_told_a_kernel_is_a_def():
    # It was "cannot find the source of kernel '<lambda>'", in a file or in `python -c`.
    with pytest.raises(TypeError, match="a kernel is a function defined with def"):
        gpu_kernel(Kernel1D)(lambda a: None)


class TestStaticmethod:
    def test_both_orders(self, backend):
        assert _launch(Ops.inc, [1, 2]) == [2.0, 3.0]
        assert _launch(Ops().inc, [1, 2]) == [2.0, 3.0]
        assert _launch(Ops.dec, [1, 2]) == [0.0, 1.0]
        assert isinstance(Ops.dec, gn.Kernel) and isinstance(Ops().inc, gn.Kernel)

    def test_other_decorators_are_still_refused(self):
        source = textwrap.dedent('''
            import functools
            from gpu_native import gpu_kernel, Kernel1D, CUDASlice, f32

            class Ops:
                @functools.lru_cache
                @gpu_kernel(Kernel1D)
                def k(a: CUDASlice[f32]):
                    pass
        ''')
        with pytest.raises(TranspileError, match="other decorators besides @gpu_kernel"):
            exec(compile(source, gn.register_source(source), "exec"), {"__name__": "m"})

    CLASS_BODY_NAME = textwrap.dedent('''
        from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32
        SHIFT = 1.0

        class Shifted:
            SHIFT = 5.0

            @staticmethod
            @gpu_kernel(Kernel1D)
            def add(a: CUDASlice[f32], c: CUDASliceMut[f32]):
                i = FlatLayout1D.uid()
                c[i] = a[i] + SHIFT
    ''')

    def test_the_body_does_not_see_the_class_body_names(self, backend):
        # As in Python (and the import hook), a function body skips the class's namespace.
        namespace = {"__name__": "shifted"}
        exec(compile(self.CLASS_BODY_NAME, gn.register_source(self.CLASS_BODY_NAME), "exec"),
             namespace)
        assert _launch(namespace["Shifted"].add, [1, 2]) == [2.0, 3.0]

    def test_a_name_of_the_class_body_alone_is_not_defined_in_the_kernel(self):
        source = self.CLASS_BODY_NAME.replace("SHIFT = 1.0\n", "")
        with pytest.raises(TranspileError, match="name 'SHIFT' is not defined"):
            exec(compile(source, gn.register_source(source), "exec"), {"__name__": "shifted"})


MODULE = textwrap.dedent('''
    from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut,
                            FlatLayout1D, UniqueId, f32)

    def make(scale):
        @gpu_kernel(Kernel1D)
        def scaled(a: CUDASlice[f32], c: CUDASliceMut[f32]):
            idx: UniqueId = FlatLayout1D.uid()
            c[idx] = a[idx] * scale
        return scaled

    def helper_only():
        @gpu_device
        def twice(x: f32) -> f32:
            return x * 2.0

        @gpu_kernel(Kernel1D)
        def doubled(a: CUDASlice[f32], c: CUDASliceMut[f32]):
            idx: UniqueId = FlatLayout1D.uid()
            c[idx] = twice(a[idx])
        return doubled

    class Ops:
        @staticmethod
        @gpu_kernel(Kernel1D)
        def inc(a: CUDASlice[f32], c: CUDASliceMut[f32]):
            idx: UniqueId = FlatLayout1D.uid()
            c[idx] = a[idx] + 1.0

    def generic(T):
        @gpu_kernel(Kernel1D)
        def copy(a: CUDASlice[T], c: CUDASliceMut[T]):
            idx: UniqueId = FlatLayout1D.uid()
            c[idx] = a[idx]
        return copy

    def through_device(scale):
        @gpu_device
        def scaled_by(x: f32) -> f32:
            return x * scale

        @gpu_kernel(Kernel1D)
        def via_device(a: CUDASlice[f32], c: CUDASliceMut[f32]):
            idx: UniqueId = FlatLayout1D.uid()
            c[idx] = scaled_by(a[idx])
        return via_device
''')


@pytest.fixture
def hooked(tmp_path, monkeypatch):
    """``MODULE`` imported through the import hook."""
    (tmp_path / "factory_kernels.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("factory_kernels", None)
    module = importlib.import_module("factory_kernels")
    yield module
    sys.modules.pop("factory_kernels", None)


class TestInAModuleTheHookRewrites:
    def test_the_hook_leaves_a_closure_to_its_decorator(self, hooked, backend):
        assert _launch(hooked.make(2.0), [1, 2]) == [2.0, 4.0]
        assert _launch(hooked.make(-1), [1, 2]) == [-1.0, -2.0]
        assert _launch(hooked.helper_only(), [1, 2]) == [2.0, 4.0]
        assert _launch(hooked.Ops.inc, [1, 2]) == [2.0, 3.0]
        assert _launch(hooked.generic(gn.f32), [1, 2]) == [1.0, 2.0]
        # A device function beside the kernel that uses the factory's variable.
        assert _launch(hooked.through_device(3.0), [1, 2]) == [3.0, 6.0]
        assert _launch(hooked.through_device(-2), [1, 2]) == [-2.0, -4.0]

    def test_what_the_rewrite_transpiles_ahead(self):
        from gpu_native.frontend.parse import scan_module
        from gpu_native.rewrite import rewrite_module

        result = rewrite_module(MODULE, "factory_kernels.py", "factory_kernels")
        # The closure over `scale` waits for its decorator; a kernel whose only free name is a
        # device function beside it, and the staticmethod, are transpiled with the module.
        assert sorted(k.name for k in result.kernels) == ["doubled", "inc"]
        assert [name for name, _ in scan_module(MODULE, "factory_kernels.py").deferred] == [
            "scaled", "copy", "via_device"]
        lines = result.source.splitlines()
        assert lines[5].strip() == "@gpu_kernel(Kernel1D)"  # left as written
