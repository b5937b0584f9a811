"""Rule cases for the QC4xx numeric deep checks (`check --deep`, codes need --read-weights).

Each entry is a `RuleCase` (see `_case.py`); `test_rule_table.py` requires one failing case here
for every registered QC4xx code. Failing files replace one tensor's bytes of a valid layer.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from quantcheck.io.build import RawTensor

from ._build import P, file, fp8, mxfp8, nvfp4, w4a4, w4a8
from ._case import RuleCase, eff

DEEP = {"deep": True}
WEIGHTS = {"deep": True, "read_weights": True}
DEG = eff("degraded", "degraded")
NONE = eff("none", "none")


def patched(
    make: Callable[[], list[RawTensor]], suffix: str, fill: Callable[[RawTensor], bytes]
) -> Callable[[], list[RawTensor]]:
    """`make()` with `<P>.<suffix>`'s bytes replaced by `fill(tensor)` (same size)."""

    def build() -> list[RawTensor]:
        out = []
        for t in make():
            if t.name == f"{P}.{suffix}":
                data = fill(t)
                assert len(data) == len(t.data)
                t = t._replace(data=data)
            out.append(t)
        return out

    return build


def f32(*values: float) -> Callable[[RawTensor], bytes]:
    """The tensor's F32 values, the first ones replaced by `values`."""

    def fill(t: RawTensor) -> bytes:
        n = len(t.data) // 4
        old = list(struct.unpack(f"<{n}f", t.data))
        old[: len(values)] = values
        return struct.pack(f"<{n}f", *old)

    return fill


def row_major_padded(rows: int, cols: int, pr: int, pc: int) -> Callable[[RawTensor], bytes]:
    """Block scales written as a plain row-major [rows, cols] matrix, zero-padded at the end
    of each row and after the last row: the unswizzled layout."""

    def fill(t: RawTensor) -> bytes:
        buf = bytearray(pr * pc)
        for r in range(rows):
            for c in range(cols):
                buf[r * pc + c] = 0x38
        return bytes(buf)

    return fill


def swizzled_clean(rows: int, cols: int, pc: int) -> Callable[[RawTensor], bytes]:
    """Block scales in the 128x4 swizzled layout (comfy-formats.md §2.3) with zero padding."""

    def fill(t: RawTensor) -> bytes:
        buf = bytearray(len(t.data))
        ncb = pc // 4
        for r in range(rows):
            for c in range(cols):
                off = ((r // 128) * ncb + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4
                buf[off + c % 4] = 0x38
        return bytes(buf)

    return fill


def sorted_codebook(t: RawTensor) -> bytes:
    return struct.pack("<16f", *[(i - 7.5) / 8 for i in range(16)])


def int4_codes(t: RawTensor) -> bytes:
    """Signed int4 nibbles in -7..7 (never -8, the code ConvRot quantizers do not write)."""
    return bytes(((i % 15) - 7) & 0xF | (((i * 7) % 15 - 7) & 0xF) << 4 for i in range(len(t.data)))


def swizzled_dirty_padding(pr: int, pc: int) -> Callable[[RawTensor], bytes]:
    """Every byte non-zero: padding is dirty under both readings."""
    return lambda t: bytes([0x38]) * (pr * pc)


def clean_w4a8() -> list[RawTensor]:
    return patched(w4a8, "weight_codebook", sorted_codebook)()


def clean_w4a4() -> list[RawTensor]:
    return patched(w4a4, "weight", int4_codes)()


def clean_nvfp4(n: int) -> Callable[[], list[RawTensor]]:
    return patched(lambda: nvfp4(n=n, k=32), "weight_scale", swizzled_clean(-(-n // 16) * 16, 2, 4))


CASES: list[RuleCase] = [
    RuleCase(
        "QC401",
        "fp8-nan-scale",
        file(patched(fp8, "weight_scale", f32(float("nan")))),
        DEG,
        file(fp8),
        message="NaN",
        check_kwargs=DEEP,
    ),
    RuleCase(
        "QC402",
        "w4a8-negative-channel-scale",
        file(patched(clean_w4a8, "weight_s_channel", f32(-0.5, -0.25))),
        DEG,
        file(clean_w4a8),
        message="negative",
        check_kwargs=DEEP,
    ),
    RuleCase(
        "QC403",
        "fp8-zero-scale",
        file(patched(fp8, "weight_scale", f32(0.0))),
        DEG,
        file(fp8),
        message="whole layer",
        check_kwargs=DEEP,
    ),
    RuleCase(
        "QC404",
        "mxfp8-e8m0-255",
        file(patched(mxfp8, "weight_scale", lambda t: b"\xff" + t.data[1:])),
        DEG,
        file(mxfp8),
        message="byte 255",
        check_kwargs=DEEP,
        twin_allows=("QC615",),  # sglang 0.5.23 fails MXFP8 at weight load
    ),
    RuleCase(
        "QC405",
        "nvfp4-dirty-padding",
        file(patched(lambda: nvfp4(n=128, k=32), "weight_scale", swizzled_dirty_padding(128, 4))),
        NONE,
        file(clean_nvfp4(128)),
        twin_allows=("QC308",),
        message="padding entries",
        check_kwargs=DEEP,
    ),
    RuleCase(
        "QC406",
        "nvfp4-row-major-scales",
        file(patched(lambda: nvfp4(n=100, k=32), "weight_scale", row_major_padded(112, 2, 128, 4))),
        DEG,
        file(clean_nvfp4(100)),
        twin_allows=("QC308",),
        message="row-major",
        check_kwargs=DEEP,
    ),
    RuleCase(
        "QC407",
        "fp8-nan-codes",
        file(patched(fp8, "weight", lambda t: b"\x7f" + t.data[1:])),
        DEG,
        file(fp8),
        message="NaN codes",
        check_kwargs=WEIGHTS,
    ),
    RuleCase(
        "QC408",
        "w4a4-all-zero-weight",
        file(patched(w4a4, "weight", lambda t: bytes(len(t.data)))),
        DEG,
        file(clean_w4a4),
        message="zero",
        check_kwargs=WEIGHTS,
    ),
    RuleCase(
        "QC409",
        "w4a8-nan-codebook",
        file(patched(clean_w4a8, "weight_codebook", f32(float("nan")))),
        DEG,
        file(clean_w4a8),
        message="NaN",
        check_kwargs=DEEP,
    ),
]
