"""The launcher's side of tensor copies, without a GPU: where the tensor maps' pointers go in
the argument buffer, the checks of a source array, and the cache of encoded maps
(gpu_native/runtime/tensormaps.py; tests/language/test_tma.py launches them)."""

from __future__ import annotations

import ctypes
import struct

import pytest

from gpu_native.runtime import tensormaps
from gpu_native.runtime.launch import ArgumentBuffer, first_slots, make_submit
from gpu_native.spec import Param, TensorMap


def _pointers(address: int, count: int) -> list[int]:
    return list((ctypes.c_size_t * count).from_address(address))


def test_the_maps_pointers_sit_between_the_values_and_the_trailing_slots():
    buf = ArgumentBuffer(3, (("Q", 77),), maps=2)
    ptrs = _pointers(buf.address, 6)
    base = ctypes.addressof(buf.data)
    assert ptrs[:3] == [base, base + 8, base + 16]
    assert ptrs[3:5] == [0, 0]
    assert ptrs[5] == base + 24   # the trailing slot keeps its place in the data
    assert struct.unpack_from("<Q", buf.data, 24)[0] == 77


class _Backend:
    success = 0

    def error_for(self, err):  # pragma: no cover - the fake never fails
        raise AssertionError(err)


def test_submit_with_maps_sets_their_addresses_and_packs_the_values():
    seen = []

    def launch(fn, gx, gy, gz, bx, by, bz, smem, stream, address, extra):
        ptrs = _pointers(address, 5)
        values = [struct.unpack("<q", ctypes.string_at(p, 8))[0] for p in ptrs[:2]]
        seen.append((values, ptrs[2:4], struct.unpack("<Q", ctypes.string_at(ptrs[4], 8))[0]))
        return (0,)

    submit = make_submit(_Backend(), "fn", (1, 1, 1), (32, 1, 1), 0, 0, (("Q", 5),),
                         ["q", "q"], "k", launch, maps=2)
    submit([0x1000, 0x2040], 7, -3)
    submit([0x3000, 0x4040], 8, 9)
    assert seen == [([7, -3], [0x1000, 0x2040], 5), ([8, 9], [0x3000, 0x4040], 5)]


def test_first_slots_count_arrays_and_scalars():
    params = (Param("a", "f16", 2), Param("n", "i32"), Param("b", "f32", 3, strided=True),
              Param("v", "vec3f"), Param("c", "f16", 1))
    assert first_slots(params, {}) == [0, 3, 4, 11, 14]


@pytest.mark.parametrize("ptr, shape, match", [
    (0x1008, (64, 64), "16-byte boundary"),
    (0x1000, (64, 68), "multiple of 16 bytes"),
    (0x1000, (2**31, 64), "1 to 2147483647 rows"),
])
def test_a_source_the_copy_engine_cannot_read_is_refused(ptr, shape, match):
    with pytest.raises(ValueError, match=match) as info:
        tensormaps.check_source("argument 'a' of k", ptr, shape, 2)
    assert str(info.value).startswith("argument 'a' of k: ")


def test_maps_are_encoded_once_per_array_and_box(monkeypatch):
    made = []

    class Encoded:
        def __init__(self, address):
            self.address = address

        def getPtr(self):
            return self.address

    def encode(tm, ptr, shape, itemsize):
        made.append((ptr, shape, tm.box_rows))
        return Encoded(0x9000 + 128 * len(made))

    tensormaps.forget()
    monkeypatch.setattr(tensormaps, "_encode", encode)
    monkeypatch.setattr(tensormaps, "CACHE_SIZE", 2)
    tm = TensorMap(0, "f16", 64, 64)
    tall = TensorMap(0, "f16", 128, 64)
    first = tensormaps.encoded("a", tm, 0x1000, (256, 256))
    assert tensormaps.encoded("a", tm, 0x1000, (256, 256)) == first
    assert tensormaps.encoded("a", tall, 0x1000, (256, 256)) != first   # another box
    assert tensormaps.encoded("a", tm, 0x1000, (128, 256)) != first     # another shape
    assert made == [(0x1000, (256, 256), 64), (0x1000, (256, 256), 128), (0x1000, (128, 256), 64)]
    # Bounded: the least recently used map went when the third came, and is encoded again.
    tensormaps.encoded("a", tm, 0x1000, (256, 256))
    assert len(made) == 4
    with pytest.raises(ValueError, match="16-byte boundary"):
        tensormaps.encoded("a", tm, 0x1001, (256, 256))
    tensormaps.forget()
