"""FORMATS: one literal table of every known format — tensors, dtypes, shapes, marker keys,
quantizer options with their defaults, the layout `quantize` writes and the codec module.

Shapes are written as functions of `Dims` (the layer's logical and stored sizes). Rules read this
table; they contain no per-format branches of their own. Codecs (numpy) register against it
(`quantcheck.formats.codecs`); this module stays standard-library only.
"""

from __future__ import annotations

from collections.abc import Callable

from quantcheck._record import record

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

Shape = tuple[int, ...]


def ceil_to(x: int, m: int) -> int:
    """x rounded up to a multiple of m."""
    return -(-x // m) * m


@record
class Dims:
    """Sizes of one layer: N rows, K logical columns, group sizes, and the stored weight shape."""

    N: int
    K: int
    weight_shape: Shape
    g: int = 0  # quantization group along K (W4A8, AWQ)
    cg: int = 0  # rotation group (ConvRot)
    bits: int = 4  # W4A8 code width
    k_exact: bool = True  # False when K is only known up to padding
    n_exact: bool = True


@record
class Companion:
    """A tensor `<layer>.<suffix>` a format stores next to its weight.

    `comfyui_dtypes` / `sglang_dtypes`: dtypes each runtime accepts (None: not checked / any).
    `shapes` / `sglang_shapes`: accepted shapes (ComfyUI's layout; sglang's validator when it
    differs). `required`: per target, whether the layer fails without it.
    """

    suffix: str
    comfyui_dtypes: frozenset[str] | None
    sglang_dtypes: frozenset[str] | None
    shapes: Callable[[Dims], list[Shape]] | None
    sglang_shapes: Callable[[Dims], list[Shape]] | None = None
    required_comfyui: bool = False
    required_sglang: bool = False
    comfyui_loads: bool = True  # False: ComfyUI never reads this tensor (silently ignored)
    note: str = ""


@record
class MarkerKey:
    """A marker key a format reads: accepted JSON types, default, and allowed values."""

    name: str
    types: tuple[type, ...]
    default: Any
    allowed: tuple[Any, ...] | None = None
    doc: str = ""


@record
class Option:
    """A `quantize` option of one format: default, allowed values (None: any), and the value
    used when re-quantizing a layer whose marker does not say (`requantize`, if set)."""

    name: str
    default: Any
    allowed: tuple[Any, ...] | None = None
    doc: str = ""
    requantize: Any = None


def option(key: MarkerKey) -> Option:
    """A marker key `quantize` also takes as an option (same default and allowed values)."""
    return Option(key.name, key.default, key.allowed, key.doc)


Layout = dict[str, tuple[str, Shape]]


@record
class FormatSpec:
    """Everything the rules know about one marker format.

    `codec`: the module implementing it (registers with `quantcheck.formats.codecs`); "" for
    formats quantcheck only recognises. `options`: what `quantize` takes. `written(n, k, opts,
    in_dtype)`: the tensors (suffix -> dtype, shape) and marker `quantize` writes for an [n, k]
    weight; None when there is no quantizer.
    """

    name: str
    title: str
    weight_dtypes: frozenset[str]
    packing: str  # "none", "e2m1_hi" (NVFP4), "int4_lo" (W4A8/W4A4/AWQ)
    pad: int = 0  # NVFP4 16, MXFP8 32: weights zero-padded to this multiple
    companions: tuple[Companion, ...] = ()
    keys: tuple[MarkerKey, ...] = ()
    #: In some modelled ComfyUI release's QUANT_ALGOS; which release first loads it is release
    #: data (`quantcheck.runtimes.comfyui_releases.FORMAT_SINCE`), not a field here.
    comfyui: bool = True
    #: A format the same tensors load as where this one is unknown (a lossless relabel).
    loads_as: str = ""
    sglang: str = "validated"  # "validated", "unchecked", "unsupported"
    third_party: bool = False
    note: str = ""
    constraints: tuple[tuple[str, Callable[[Dims], bool], str], ...] = ()
    codec: str = ""
    options: tuple[Option, ...] = ()
    written: Callable[[int, int, dict[str, Any], str], tuple[Layout, dict[str, Any]]] | None = None
    #: Extra conditions on what `quantize` writes (beside `constraints`), on the options' Dims.
    quantize_constraints: tuple[tuple[str, Callable[[Dims], bool], str], ...] = ()
    #: Code widths the packed weight may hold; with several, the width is read from the count
    #: of group scales (`weight_s_rel` columns x group_size = K).
    code_bits: tuple[int, ...] = (4,)

    def companion(self, suffix: str) -> Companion | None:
        for c in self.companions:
            if c.suffix == suffix:
                return c
        return None

    def key(self, name: str) -> MarkerKey | None:
        return next((k for k in self.keys if k.name == name), None)

    @property
    def quantizable(self) -> bool:
        return self.written is not None

    @property
    def required(self) -> tuple[str, ...]:
        """The tensors a layer of this format cannot be decoded without."""
        return ("weight", *(c.suffix for c in self.companions if c.required_comfyui))

    def with_defaults(self, options: dict[str, Any]) -> dict[str, Any]:
        """`options` over the format's option defaults; ValueError for an unknown option."""
        defaults = {o.name: o.default for o in self.options}
        unknown = set(options) - set(defaults)
        if unknown:
            raise ValueError(
                f"{self.name}: unknown option(s) {sorted(unknown)}; allowed: {sorted(defaults)}"
            )
        return {**defaults, **options}

    def options_from_marker(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Quantizer options a marker implies (to re-quantize a layer its marker describes)."""
        raw = fields.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        out: dict[str, Any] = {}
        for o in self.options:
            if self.key(o.name) is None:
                if o.requantize is not None:
                    out[o.name] = o.requantize
                continue
            value: Any = fields.get(o.name, params.get(o.name, o.default))
            if isinstance(o.default, bool):
                value = value is True
            elif isinstance(o.default, int):
                value = int(value)
            elif o.allowed is not None and value not in o.allowed:
                continue
            if value is not None:
                out[o.name] = value
        return out


F32 = frozenset({"F32"})
FLOATS = frozenset({"F32", "F16", "BF16", "F64"})
HALF = frozenset({"BF16", "F16"})
SCALAR: Callable[[Dims], list[Shape]] = lambda d: [(), (1,)]  # noqa: E731
FP8_SCALE = Companion(
    "weight_scale", FLOATS, None, SCALAR, required_comfyui=True, required_sglang=True
)
FP8_INPUT = Companion("input_scale", FLOATS, None, SCALAR)
FULL_PRECISION = MarkerKey(
    "full_precision_matrix_mult", (bool,), False, doc="dequantize for a normal matmul"
)
#: Rotation groups ConvRot formats accept (powers of 4); the default is ComfyUI's.
ROTATION_GROUPS = (16, 64, 256)
CONVROT_GS = MarkerKey(
    "convrot_groupsize",
    (int,),
    256,
    ROTATION_GROUPS,
    doc="Hadamard rotation group along K (a power of 4)",
)
CONVROT = MarkerKey("convrot", (bool,), False, doc="weight stored Hadamard-rotated")
W4A8_GROUP = MarkerKey("group_size", (int,), 16, doc="quantization group along K")


def swizzled(rows: int, cols: int) -> Shape:
    """Shape of a 128x4-tile swizzled block-scale matrix of logical shape [rows, cols]."""
    return (ceil_to(rows, 128), ceil_to(cols, 4))


def _fp8_written(
    wd: str,
) -> Callable[[int, int, dict[str, Any], str], tuple[Layout, dict[str, Any]]]:
    def written(n: int, k: int, o: dict[str, Any], in_dtype: str) -> tuple[Layout, dict[str, Any]]:
        return {"weight": (wd, (n, k)), "weight_scale": ("F32", ())}, {}

    return written


def _int8_written(
    n: int, k: int, o: dict[str, Any], in_dtype: str
) -> tuple[Layout, dict[str, Any]]:
    row = bool(o["per_row"]) or bool(o["convrot"])
    marker = (
        {"convrot": True, "convrot_groupsize": int(o["convrot_groupsize"])} if o["convrot"] else {}
    )
    return {"weight": ("I8", (n, k)), "weight_scale": ("F32", (n, 1) if row else ())}, marker


def _padded(pad: int, n: int, k: int) -> tuple[int, int, dict[str, Any]]:
    """Padded sizes, and the marker's orig_shape when padding changes them."""
    np_, kp = ceil_to(n, pad), ceil_to(k, pad)
    return np_, kp, ({"orig_shape": [n, k]} if (np_, kp) != (n, k) else {})


def _nvfp4_written(
    n: int, k: int, o: dict[str, Any], in_dtype: str
) -> tuple[Layout, dict[str, Any]]:
    n16, k16, marker = _padded(16, n, k)
    return {
        "weight": ("U8", (n16, k16 // 2)),
        "weight_scale": ("F8_E4M3", swizzled(n16, k16 // 16)),
        "weight_scale_2": ("F32", ()),
    }, marker


def _mxfp8_written(
    n: int, k: int, o: dict[str, Any], in_dtype: str
) -> tuple[Layout, dict[str, Any]]:
    n32, k32, marker = _padded(32, n, k)
    return {
        "weight": ("F8_E4M3", (n32, k32)),
        "weight_scale": ("U8", swizzled(n32, k32 // 32)),
    }, marker


def _w4a8_written(
    n: int, k: int, o: dict[str, Any], in_dtype: str
) -> tuple[Layout, dict[str, Any]]:
    g, cg, bits, sym = (
        int(o["group_size"]),
        int(o["convrot_groupsize"]),
        int(o["bits"]),
        bool(o["symmetric"]),
    )
    sd = "F32" if str(o["scale_dtype"]).lower() in ("float32", "f32") else "F8_E4M3"
    out: Layout = {
        "weight": ("I8", (n, k // 2 if bits == 4 else 3 * k // 4)),
        "weight_s_rel": (sd, (n, k // g)),
        "weight_s_channel": ("F32", (n,)),
    }
    if sym and bits == 4 and o["codebook"]:
        out["weight_codebook"] = ("F32", (16,))
    if not sym:
        out["weight_correction"] = (
            in_dtype if in_dtype in FLOATS - {"F64"} else "F32",
            (k // g, n),
        )
    return out, {"group_size": g, "convrot_groupsize": cg, "convrot": True}


def _w6a8_written(
    n: int, k: int, o: dict[str, Any], in_dtype: str
) -> tuple[Layout, dict[str, Any]]:
    g, cg = int(o["group_size"]), int(o["convrot_groupsize"])
    sd = "F32" if str(o["scale_dtype"]).lower() in ("float32", "f32") else "F8_E4M3"
    return (
        {
            "weight": ("I8", (n, 3 * k // 4)),
            "weight_s_rel": (sd, (n, k // g)),
            "weight_s_channel": ("F32", (n,)),
        },
        {"group_size": g, "convrot_groupsize": cg, "convrot": True},
    )


def _w4a4_written(
    n: int, k: int, o: dict[str, Any], in_dtype: str
) -> tuple[Layout, dict[str, Any]]:
    marker: dict[str, Any] = {"convrot_groupsize": int(o["convrot_groupsize"])}
    if o["linear_dtype"] is not None:
        marker["linear_dtype"] = o["linear_dtype"]
    return {"weight": ("I8", (n, k // 2)), "weight_scale": ("F32", (n,))}, marker


def _w4a8_ok(d: Dims) -> bool:
    g, cg, k = d.g, d.cg, d.K
    return (
        g >= 4
        and (16 % g == 0 or g % 16 == 0)
        and k % 16 == 0
        and k % g == 0
        and cg > 0
        and k % cg == 0
    )


def _six_bit_ok(d: Dims) -> bool:
    return d.K % 32 == 0 and d.g >= 16 and d.g % 16 == 0


W4A8_LAYOUT = (
    "group-layout",
    _w4a8_ok,
    "group_size >= 4 dividing 16 or a multiple of 16; K a multiple of 16, "
    "group_size and convrot_groupsize",
)
SIX_BIT = (
    "six-bit",
    lambda d: d.bits != 6 or _six_bit_ok(d),
    "with 6-bit codes, K a multiple of 32 and group_size a multiple of 16",
)
SCALE_DTYPE = Option(
    "scale_dtype", "float8_e4m3fn", ("float8_e4m3fn", "float32"), "weight_s_rel dtype"
)


FORMATS: dict[str, FormatSpec] = {
    f.name: f
    for f in (
        FormatSpec(
            "float8_e4m3fn",
            "FP8 E4M3, per-tensor scale",
            frozenset({"F8_E4M3"}),
            "none",
            companions=(FP8_SCALE, FP8_INPUT),
            keys=(FULL_PRECISION,),
            codec="quantcheck.numeric.fp8",
            written=_fp8_written("F8_E4M3"),
        ),
        FormatSpec(
            "float8_e5m2",
            "FP8 E5M2, per-tensor scale",
            frozenset({"F8_E5M2"}),
            "none",
            companions=(FP8_SCALE, FP8_INPUT),
            keys=(FULL_PRECISION,),
            sglang="unsupported",
            codec="quantcheck.numeric.fp8",
            written=_fp8_written("F8_E5M2"),
        ),
        FormatSpec(
            "int8_tensorwise",
            "INT8, scalar or per-row scale, optional ConvRot",
            frozenset({"I8"}),
            "none",
            companions=(
                Companion(
                    "weight_scale",
                    FLOATS,
                    F32,
                    lambda d: [(), (1,), (d.N, 1)],
                    lambda d: [(), (d.N, 1)],
                    required_comfyui=True,
                    required_sglang=True,
                ),
            ),
            keys=(CONVROT, CONVROT_GS, FULL_PRECISION),
            codec="quantcheck.numeric.int8",
            options=(
                Option(
                    "per_row",
                    False,
                    (True, False),
                    "one F32 scale per row (else one scalar)",
                    requantize=True,
                ),
                option(CONVROT),
                option(CONVROT_GS),
            ),
            written=_int8_written,
            quantize_constraints=(
                (
                    "rotation-groups",
                    lambda d: d.cg == 0 or d.K % d.cg == 0,
                    "with convrot, K a multiple of convrot_groupsize",
                ),
            ),
        ),
        FormatSpec(
            "nvfp4",
            "NVFP4: E2M1 codes, FP8 block-16 scales (swizzled), global scale",
            frozenset({"U8"}),
            "e2m1_hi",
            pad=16,
            companions=(
                Companion(
                    "weight_scale",
                    frozenset({"F8_E4M3", "U8"}),
                    frozenset({"F8_E4M3"}),
                    lambda d: [swizzled(ceil_to(d.N, 16), ceil_to(d.K, 16) // 16)],
                    lambda d: [(d.N, d.K // 16)],
                    required_comfyui=True,
                    required_sglang=True,
                ),
                Companion(
                    "weight_scale_2",
                    FLOATS,
                    F32,
                    SCALAR,
                    required_comfyui=True,
                    required_sglang=True,
                ),
                Companion("input_scale", FLOATS, None, SCALAR),
                Companion(
                    "pre_quant_scale", FLOATS - {"F64"}, FLOATS - {"F64"}, lambda d: [(d.K,)]
                ),
            ),
            keys=(FULL_PRECISION,),
            codec="quantcheck.numeric.nvfp4",
            written=_nvfp4_written,
        ),
        FormatSpec(
            "mxfp8",
            "MXFP8: FP8 E4M3 codes, E8M0 block-32 scales (swizzled)",
            frozenset({"F8_E4M3"}),
            "none",
            pad=32,
            companions=(
                Companion(
                    "weight_scale",
                    frozenset({"U8"}),
                    frozenset({"U8"}),
                    lambda d: [swizzled(ceil_to(d.N, 32), ceil_to(d.K, 32) // 32)],
                    lambda d: [(d.N, d.K // 32)],
                    required_comfyui=True,
                    required_sglang=True,
                ),
                Companion("input_scale", FLOATS, None, SCALAR),
            ),
            keys=(FULL_PRECISION,),
            sglang="unchecked",
            codec="quantcheck.numeric.mxfp8",
            written=_mxfp8_written,
        ),
        FormatSpec(
            "asym_w4a8_int8",
            "W4A8: 4/6-bit codes on an int8 grid, ConvRot",
            frozenset({"I8"}),
            "int4_lo",
            companions=(
                Companion(
                    "weight_s_rel",
                    frozenset({"F8_E4M3", "U8", "F32"}),
                    frozenset({"F8_E4M3"}),
                    lambda d: [(d.N, d.K // d.g)] if d.g else [],
                    lambda d: [(d.N, (2 * d.weight_shape[1]) // d.g)] if d.g else [],
                    required_comfyui=True,
                    required_sglang=True,
                ),
                Companion(
                    "weight_s_channel",
                    F32,
                    F32,
                    lambda d: [(d.N,)],
                    required_comfyui=True,
                    required_sglang=True,
                ),
                Companion("weight_codebook", F32, F32, lambda d: [(16,)]),
                Companion(
                    "weight_correction",
                    FLOATS,
                    F32,
                    lambda d: [(d.K // d.g, d.N)] if d.g else [],
                    comfyui_loads=False,
                ),
            ),
            keys=(
                W4A8_GROUP,
                CONVROT_GS,
                MarkerKey(
                    "convrot",
                    (bool,),
                    None,
                    doc="sglang requires true; ComfyUI always rotates W4A8",
                ),
            ),
            constraints=(W4A8_LAYOUT,),
            codec="quantcheck.numeric.w4a8",
            options=(
                option(W4A8_GROUP),
                option(CONVROT_GS),
                Option("codebook", True, (True, False), "fitted 16-level codebook (4-bit)"),
                Option(
                    "symmetric",
                    True,
                    (True, False),
                    "symmetric groups (else min/max with a correction tensor)",
                ),
                Option("bits", 4, (4, 6), "code width"),
                SCALE_DTYPE,
            ),
            written=_w4a8_written,
            code_bits=(4, 6),
            quantize_constraints=(SIX_BIT,),
        ),
        FormatSpec(
            "w6a8_int8",
            "W6A8: uniform 6-bit codes on an int8 grid, ConvRot",
            frozenset({"I8"}),
            "int4_lo",
            companions=(
                Companion(
                    "weight_s_rel",
                    frozenset({"F8_E4M3", "U8", "F32"}),
                    None,
                    lambda d: [(d.N, d.K // d.g)] if d.g else [],
                    required_comfyui=True,
                ),
                # comfy-kitchen's w4a8_int8_linear takes only F32 channel scales (it raises on
                # BF16/F16 at the first forward): the same kernel runs W6A8.
                Companion("weight_s_channel", F32, None, lambda d: [(d.N,)], required_comfyui=True),
            ),
            keys=(
                W4A8_GROUP,
                CONVROT_GS,
                MarkerKey(
                    "convrot",
                    (bool,),
                    None,
                    doc="producers write true; ComfyUI always rotates W6A8",
                ),
            ),
            loads_as="asym_w4a8_int8",
            sglang="unsupported",
            note="asym_w4a8_int8's 6-bit layout under its own name; ComfyUI @0271a469 loads the "
            "same tensors marked asym_w4a8_int8. [GUESS] ComfyUI's own table entry (its "
            "default group_size) was read only through Forge Neo's port and third-party "
            "probes",
            constraints=(W4A8_LAYOUT, SIX_BIT),
            codec="quantcheck.numeric.w6a8",
            options=(option(W4A8_GROUP), option(CONVROT_GS), SCALE_DTYPE),
            written=_w6a8_written,
            code_bits=(6,),
        ),
        FormatSpec(
            "convrot_w4a4",
            "W4A4: signed int4 codes, per-row scale, ConvRot",
            frozenset({"I8"}),
            "int4_lo",
            companions=(
                Companion(
                    "weight_scale",
                    F32,
                    F32,
                    lambda d: [(d.N,)],
                    required_comfyui=True,
                    required_sglang=True,
                ),
            ),
            keys=(
                CONVROT_GS,
                MarkerKey(
                    "linear_dtype",
                    (str,),
                    "int4",
                    ("int4", "int8"),
                    doc="activation GEMM precision",
                ),
            ),
            constraints=(
                (
                    "rotation-groups",
                    lambda d: d.cg > 0 and d.K % d.cg == 0,
                    "K a multiple of convrot_groupsize",
                ),
                (
                    "cuda-k-multiple",
                    lambda d: d.K % 64 == 0,
                    "K a multiple of 64 (the CUDA kernel)",
                ),
            ),
            codec="quantcheck.numeric.w4a4",
            options=(
                option(CONVROT_GS),
                Option(
                    "linear_dtype",
                    None,
                    (None, "int4", "int8"),
                    "activation GEMM precision to record (None: leave it to the runtime)",
                ),
            ),
            written=_w4a4_written,
        ),
        FormatSpec(
            "awq_w4a16",
            "AWQ W4A16: unsigned int4 codes, per-group scale and zero",
            frozenset({"I8"}),
            "int4_lo",
            companions=(
                Companion(
                    "weight_scale",
                    HALF,
                    None,
                    lambda d: [(d.K // d.g, d.N)] if d.g else [],
                    required_comfyui=True,
                ),
                Companion(
                    "weight_zeros",
                    HALF,
                    None,
                    lambda d: [(d.K // d.g, d.N)] if d.g else [],
                    required_comfyui=True,
                ),
            ),
            keys=(MarkerKey("group_size", (int,), 64, doc="quantization group along K"),),
            sglang="unsupported",
            codec="quantcheck.numeric.awq",
        ),
        # Third-party formats seen in the wild: recognised and explained, loaded by neither runtime.
        FormatSpec(
            "int8_blockwise",
            "INT8 with 128x128 block scales (forks only)",
            frozenset({"I8"}),
            "none",
            companions=(
                Companion(
                    "weight_scale",
                    F32,
                    F32,
                    lambda d: [(ceil_to(d.N, 128) // 128, ceil_to(d.K, 128) // 128)],
                ),
            ),
            keys=(MarkerKey("group_size", (int,), 128),),
            comfyui=False,
            sglang="unsupported",
            third_party=True,
            note="appears in an old ComfyUI QUANTIZATION.md and in forks; upstream ComfyUI raises "
            "KeyError",
        ),
        FormatSpec(
            "float8_e4m3fn_rowwise",
            "FP8 E4M3 with per-row scales (forks only)",
            frozenset({"F8_E4M3"}),
            "none",
            companions=(Companion("weight_scale", F32, F32, lambda d: [(d.N,), (d.N, 1)]),),
            comfyui=False,
            sglang="unsupported",
            third_party=True,
            note="third-party fork format; not in upstream ComfyUI",
        ),
        FormatSpec(
            "float8_e4m3fn_blockwise",
            "FP8 E4M3 with 2-D block scales (forks only)",
            frozenset({"F8_E4M3"}),
            "none",
            companions=(Companion("weight_scale", F32, F32, None),),
            comfyui=False,
            sglang="unsupported",
            third_party=True,
            note="third-party fork format; not in upstream ComfyUI",
        ),
    )
}

#: Formats some modelled ComfyUI release's QUANT_ALGOS holds (the newest holds them all).
COMFYUI_FORMATS = frozenset(n for n, f in FORMATS.items() if f.comfyui)
#: Formats sglang 0.5.23's inspector validates (mxfp8 is resolved but explicit markers unchecked).
SGLANG_VALIDATED = frozenset(n for n, f in FORMATS.items() if f.sglang == "validated")
#: Every suffix a format may store beside its weight (plus bias and marker).
COMPANION_SUFFIXES = frozenset(c.suffix for f in FORMATS.values() for c in f.companions)


def quantize_refusal(fmt: str, n: int, k: int, options: dict[str, Any]) -> str | None:
    """Why `fmt` with `options` cannot take an [n, k] weight (its table constraints); None if
    it can. Options the format does not take are ignored; missing ones take their defaults."""
    spec = FORMATS[fmt]
    o = {x.name: options.get(x.name, x.default) for x in spec.options}
    cg = int(o.get("convrot_groupsize", 0)) if o.get("convrot", True) else 0
    d = Dims(n, k, (), g=int(o.get("group_size", 0)), cg=cg, bits=int(o.get("bits", 4)))
    failed = [text for _, ok, text in (*spec.constraints, *spec.quantize_constraints) if not ok(d)]
    if not failed:
        return None
    sizes = ", ".join(f"{x} {o[x]}" for x in ("group_size", "convrot_groupsize", "bits") if x in o)
    return f"K={k} does not fit {fmt}{f' ({sizes})' if sizes else ''}: {'; '.join(failed)}"


def marker_int_text(value: Any) -> int | None:
    """A size written as decimal text, as Python's int() reads it (ComfyUI int()s its size
    keys, comfy/ops.py _load_quantized_module); None if it is not such text."""
    if not isinstance(value, str):
        return None
    try:
        return int(value)
    except ValueError:
        return None


#: Marker size keys ComfyUI @0271a469 reads with int() (comfy/ops.py _load_quantized_module
#: ~L1232-1275), so decimal text works there; sglang compares them by type.
COMFYUI_INT_KEYS: dict[str, frozenset[str]] = {
    "int8_tensorwise": frozenset({"convrot_groupsize"}),
    "convrot_w4a4": frozenset({"convrot_groupsize"}),
    "asym_w4a8_int8": frozenset({"group_size", "convrot_groupsize"}),
    "awq_w4a16": frozenset({"group_size"}),
}


def marker_int(value: Any, default: int, present: bool = True) -> int | None:
    """A marker size as runtimes read it: a JSON integer (or integral float); None if invalid.

    The default applies only when the key is absent; an explicit null is invalid.
    """
    if not present:
        return default
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


#: Header-only formats: names a runtime reads from `__metadata__._quantization_metadata`
#: `layers` but that are no comfy_quant marker format (no entry in FORMATS, no codec). sglang
#: 0.5.23's rowwise FP8 path (`layers/quantization/rowwise_fp8.py`) reads these two, with
#: `format_version` "1.1" and `quant_configs["rowwise-float8_e4m3fn"].scale_recipe` "rowwise";
#: ComfyUI looks them up in QUANT_ALGOS like any marker and stops.
ROWWISE_FP8 = "rowwise-float8_e4m3fn"
ROWWISE_BF16 = "bf16"
HEADER_FORMATS: dict[str, str] = {
    ROWWISE_FP8: "a row-wise FP8 layer: F8_E4M3 [N, K] weight, F32 [N] weight_scale, "
    "optional F32 [1] input_scale",
    ROWWISE_BF16: "a layer the row-wise FP8 file keeps unquantized",
}
#: `format_version` values sglang 0.5.23's rowwise path accepts (SUPPORTED_FORMAT_VERSIONS).
ROWWISE_FORMAT_VERSIONS = ("1.1",)
