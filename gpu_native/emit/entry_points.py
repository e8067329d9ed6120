"""The error-reporting helpers each entry point of a kernel calls.

A kernel specialisation has up to three entry points: the main one, ``<symbol>_i32`` (its index
arithmetic in 32 bits, :mod:`.index32`) and ``<symbol>_uids`` (its logical uids run several per
thread, :mod:`.uid_stride`).  They report the same errors through different helpers of the
prelude (``gpu_native/include/gpu_native/prelude.cuh``): the ``_uids`` entry point names the
logical thread (``__gn_uid``, ``__gn_block``) rather than the physical one, and ``_i32`` checks
``int`` indices.  Each emitter takes its helpers from :data:`ENTRY_POINTS` by name.
"""

from __future__ import annotations

from ..nodes import node


@node
class ErrorHelpers:
    """The prelude helpers one entry point reports errors through.

    ``check``: one index against its extent; ``check2``: both indices of a 2-D element in one
    branch; ``assert_``: a device assert; ``divide``: the suffix of ``gn_floordiv`` and
    ``gn_mod`` with a zero-divisor check; ``origin``: the arguments after the site that name the
    thread to report; ``check32`` and ``check2_32``: the ``int`` forms of the checks, where the
    entry point has them.
    """

    check: str
    check2: str
    assert_: str
    divide: str
    origin: str = ""
    check32: str = ""
    check2_32: str = ""


ENTRY_POINTS: dict[str, ErrorHelpers] = {
    "main": ErrorHelpers(check="gn_chk", check2="gn_at2", assert_="gn_assert", divide="_chk"),
    "i32": ErrorHelpers(check="gn_chk", check2="gn_at2", assert_="gn_assert", divide="_chk",
                        check32="gn_chk32", check2_32="gn_at2_32"),
    "uids": ErrorHelpers(check="gn_chk_at", check2="gn_at2_at", assert_="gn_assert_at",
                         divide="_chk_at", origin=", __gn_uid, __gn_block"),
}
