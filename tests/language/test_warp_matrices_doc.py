"""The docs/language.md section "Warp matrices": its snippet (one warp's 16 x 16 x 8 f16
``mma_sync`` into a poisoned output, against NumPy float64) runs on the simulator and, gpu-marked,
on the GPU; and the lane layout the section states is the simulator's."""

from __future__ import annotations

import importlib
import re

import numpy as np

from tests.helpers import ROOT


def _section() -> str:
    text = (ROOT / "docs" / "language.md").read_text()
    return text[text.index("\n## Warp matrices (`mma_sync`)"):
                text.index("\n## Warpgroup matrices (Hopper)\n")]


def test_the_docs_snippet_runs(backend, tmp_path, monkeypatch, capsys):
    (snippet,) = re.findall(r"```python\n(.*?)```", _section(), re.S)
    name = f"warp_matrices_doc_snippet_{backend}"
    (tmp_path / f"{name}.py").write_text(snippet)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module(name)
    assert capsys.readouterr().out.splitlines()[-1] == "ok"


def test_the_stated_lane_layout_is_the_simulator_s():
    from gpu_native.simulator import matrices as M

    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    a_rows = [g, g, g + 8, g + 8] * 2
    a_cols = [2 * t, 2 * t + 1] * 2 + [2 * t + 8, 2 * t + 9] * 2
    np.testing.assert_array_equal(M._A_ROW, np.stack(a_rows, axis=1))
    np.testing.assert_array_equal(M._A_COL, np.stack(a_cols, axis=1))
    np.testing.assert_array_equal(M._B_ROW, np.stack([2 * t, 2 * t + 1, 2 * t + 8, 2 * t + 9],
                                                     axis=1))
    np.testing.assert_array_equal(M._B_COL, np.stack([g] * 4, axis=1))
    np.testing.assert_array_equal(M._C_ROW, np.stack([g, g, g + 8, g + 8], axis=1))
    np.testing.assert_array_equal(M._C_COL, np.stack([2 * t, 2 * t + 1] * 2, axis=1))
    np.testing.assert_array_equal(M._TF32_A_ROW, np.stack([g, g + 8, g, g + 8], axis=1))
    np.testing.assert_array_equal(M._TF32_A_COL, np.stack([t, t, t + 4, t + 4], axis=1))
    np.testing.assert_array_equal(M._TF32_B_ROW, np.stack([t, t + 4], axis=1))
