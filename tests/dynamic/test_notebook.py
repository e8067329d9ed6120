"""Kernels in a real Jupyter kernel (ipykernel, driven by nbclient): names from earlier cells,
and a ``%%time`` cell, which IPython compiles a second time under ``<timed exec>``.

The kernel runs the Python that runs the tests, with this checkout first on its path, on the
simulator.  nbclient, nbformat and ipykernel come with the ``test`` extra.
"""

from __future__ import annotations

import json
import sys

import pytest

from tests.helpers import ROOT, child_env

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

CELLS = [
    "import numpy as np\n"
    "import gpu_native as gn\n"
    "from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut,\n"
    "                        FlatLayout1D, UniqueId, f32)\n"
    "a = gn.to_device(np.arange(4, dtype=np.float32))\n"
    "c = gn.empty(4, gn.f32)",
    # A constant and a tuple of constants, then a device function, each in a cell of its own.
    "SCALE = 3.0\nOFFSETS = (0.5, 1.0)",
    "@gpu_device\ndef twice(x: f32) -> f32:\n    return x * 2.0",
    "@gpu_kernel(Kernel1D)\n"
    "def affine(a: CUDASlice[f32], c: CUDASliceMut[f32]):\n"
    "    idx: UniqueId = FlatLayout1D.uid()\n"
    "    c[idx] = twice(a[idx]) * SCALE + OFFSETS[1]\n"
    "affine.forall(4)(a, c)\n"
    "print('AFFINE', c.to_host().tolist())",
    "%%time\n"
    "@gpu_kernel(Kernel1D)\n"
    "def timed(a: CUDASlice[f32], c: CUDASliceMut[f32]):\n"
    "    idx: UniqueId = FlatLayout1D.uid()\n"
    "    c[idx] = twice(a[idx]) + SCALE\n"
    "timed.forall(4)(a, c)\n"
    "print('TIMED', c.to_host().tolist())",
    # A device function that uses a device function of an earlier cell, and a closure.
    "@gpu_device\ndef quad(x: f32) -> f32:\n    return twice(twice(x))\n"
    "def make(shift):\n"
    "    @gpu_kernel(Kernel1D)\n"
    "    def shifted(a: CUDASlice[f32], c: CUDASliceMut[f32]):\n"
    "        idx: UniqueId = FlatLayout1D.uid()\n"
    "        c[idx] = quad(a[idx]) + shift\n"
    "    return shifted\n"
    "make(-1.0).forall(4)(a, c)\n"
    "print('SHIFTED', c.to_host().tolist())",
    # A host array from an earlier cell is refused at its use, in the cell's file.
    "@gpu_kernel(Kernel1D)\n"
    "def uses_host(x: CUDASlice[f32], out: CUDASliceMut[f32]):\n"
    "    idx: UniqueId = FlatLayout1D.uid()\n"
    "    out[idx] = x[idx] + a[0]",
]


@pytest.fixture
def kernel_name(tmp_path, monkeypatch):
    """A kernelspec of this Python, with this checkout on its path and the simulator chosen."""
    name = "gpu-native-test"
    spec_dir = tmp_path / "jupyter" / "kernels" / name
    spec_dir.mkdir(parents=True)
    env = child_env(tmp_path / "cache", GPU_NATIVE_BACKEND="sim")
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": name, "language": "python",
            "env": {"PYTHONPATH": env["PYTHONPATH"], "GPU_NATIVE_BACKEND": "sim",
                    "GPU_NATIVE_CACHE_DIR": env["GPU_NATIVE_CACHE_DIR"]}}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    return name


def _text(cell) -> str:
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
    return "".join(parts)


@pytest.mark.slow
def test_kernels_in_notebook_cells(kernel_name, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nb.cells[-1].metadata["tags"] = ["raises-exception"]
    client = nbclient.NotebookClient(nb, kernel_name=kernel_name, timeout=240,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    texts = [_text(cell) for cell in nb.cells]
    assert "AFFINE [1.0, 7.0, 13.0, 19.0]" in texts[3], texts[3]
    assert "TIMED [3.0, 5.0, 7.0, 9.0]" in texts[4], texts[4]
    assert "Wall time" in texts[4]
    assert "SHIFTED [-1.0, 3.0, 7.0, 11.0]" in texts[5], texts[5]
    error = texts[6]
    assert error.startswith("TranspileError"), error
    assert "'a' cannot be used in a kernel: 'a' is a host name" in error
    assert ".py:4:" in error and "out[idx] = x[idx] + a[0]" in error


def test_the_kernel_runs_this_checkout():
    # What the kernelspec above relies on: the kernel's Python finds this checkout first.
    assert str(ROOT) in child_env("unused")["PYTHONPATH"].split(":")[0]
