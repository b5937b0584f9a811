"""sglang's device requirements for ComfyUI-quantized layers, as data (issue 24). Read in the
0.5.23 wheel's `sglang/multimodal_gen/runtime/layers/quantization/` (the newest modelled
release; every modelled release is judged by them).

`RULES` is a list of rows, first match wins: a format (`*`: any), the backends it applies to
(None: any), an NVIDIA compute-capability range [cc_min, cc_below), the mode and the reason
with its evidence tag ([READ] the wheel's code, [ISSUE] a thread, [GUESS] inferred).
Standard library only.
"""

from __future__ import annotations

from quantcheck._record import record

Q = "multimodal_gen/runtime/layers/quantization"


@record
class Row:
    fmt: str
    backends: frozenset[str] | None
    cc_min: tuple[int, int] | None
    cc_below: tuple[int, int] | None
    mode: str
    reason: str


def _b(*names: str) -> frozenset[str]:
    return frozenset(names)


CUDA = _b("cuda")
#: sglang's platforms (multimodal_gen/runtime/platforms: cuda, rocm, mps, cpu, xpu, npu, musa)
NO_PLATFORM = _b("directml")
#: ROCm architectures whose FP8 is fnuz / gfx1250-capable in fp8.py [READ]
ROCM_FP8 = ("gfx942", "gfx950")

RULES: tuple[Row, ...] = (
    Row(
        "*",
        NO_PLATFORM,
        None,
        None,
        "refused",
        "[READ] sglang has no DirectML platform (multimodal_gen/runtime/platforms)",
    ),
    # NVFP4: ComfyNvfp4LinearMethod raises below 10.0 (the whole load stops)
    Row(
        "nvfp4",
        CUDA,
        (10, 0),
        None,
        "native",
        f"[READ] {Q}/comfy_nvfp4.py ComfyNvfp4LinearMethod: comfy-kitchen scaled_mm_nvfp4",
    ),
    Row(
        "nvfp4",
        None,
        None,
        None,
        "refused",
        f'[READ] {Q}/comfy_nvfp4.py ComfyNvfp4LinearMethod raises "Comfy NVFP4 matmul requires '
        'NVIDIA compute capability 10.0+", so the model does not load',
    ),
    # FP8: torch._scaled_mm / cutlass from sm_89, Marlin W8A16 on sm_80-sm_88
    Row(
        "float8_e4m3fn",
        CUDA,
        (8, 9),
        None,
        "native",
        f"[READ] {Q}/fp8.py Fp8LinearMethod: FP8 scaled matmul (cutlass / torch._scaled_mm)",
    ),
    Row(
        "float8_e4m3fn",
        CUDA,
        (8, 0),
        (8, 9),
        "native",
        f"[READ] {Q}/fp8.py: Marlin FP8 weight-only kernel (can_auto_enable_marlin_fp8; "
        "activations stay BF16)",
    ),
    Row(
        "float8_e4m3fn",
        CUDA,
        None,
        (8, 0),
        "refused",
        '[ISSUE] sglang #7715, #12887: "type fp8e4nv not supported in this architecture" '
        "below sm_80 (no Marlin either)",
    ),
    # W4A8 / W4A4: the kitchen configs refuse MPS and low capabilities at construction
    Row(
        "asym_w4a8_int8",
        _b("mps"),
        None,
        None,
        "refused",
        f'[READ] {Q}/configs/kitchen_w4a8_config.py: "Serialized W4A8 checkpoints are not '
        'supported on MPS"',
    ),
    Row(
        "asym_w4a8_int8",
        CUDA,
        None,
        (8, 0),
        "refused",
        f"[READ] {Q}/configs/kitchen_w4a8_config.py: W4A8 needs compute capability >= 8.0",
    ),
    Row(
        "asym_w4a8_int8",
        CUDA,
        None,
        None,
        "native",
        f"[READ] {Q}/kitchen_w4a8.py: comfy-kitchen W4A8 linear",
    ),
    Row(
        "convrot_w4a4",
        _b("mps"),
        None,
        None,
        "refused",
        f'[READ] {Q}/configs/kitchen_w4a4_config.py: "Serialized W4A4 checkpoints are not '
        'supported on MPS"',
    ),
    Row(
        "convrot_w4a4",
        CUDA,
        None,
        (7, 5),
        "refused",
        f"[READ] {Q}/configs/kitchen_w4a4_config.py: W4A4 needs compute capability >= 7.5",
    ),
    Row(
        "convrot_w4a4",
        CUDA,
        None,
        None,
        "native",
        f"[READ] {Q}/kitchen_w4a4.py: comfy-kitchen W4A4 linear",
    ),
    # INT8 ConvRot / tensorwise: comfy-kitchen's fused int8_linear on CUDA
    Row(
        "int8_tensorwise",
        CUDA,
        (7, 5),
        None,
        "native",
        f"[READ] {Q}/convrot_int8_comfy_kitchen.py, comfy_int8.py: comfy-kitchen int8_linear",
    ),
    Row(
        "int8_tensorwise",
        None,
        None,
        None,
        "native",
        "[GUESS] torch._int_mm (no comfy-kitchen INT8 kernel for this device)",
    ),
    # MXFP8
    Row(
        "mxfp8",
        _b("mps"),
        None,
        None,
        "refused",
        f'[READ] {Q}/mxfp8.py: "MXFP8 is not supported on MPS"',
    ),
    Row("mxfp8", CUDA, (10, 0), None, "native", f"[READ] {Q}/mxfp8.py: MXFP8 block-scaled matmul"),
    Row("mxfp8", None, None, None, "emulated", "[GUESS] no MXFP8 matmul below sm_100: dequantized"),
    # W4A8 / W4A4 off CUDA (not MPS): comfy-kitchen's eager fallback
    Row(
        "asym_w4a8_int8",
        None,
        None,
        None,
        "emulated",
        "[GUESS] comfy-kitchen's eager W4A8 path off CUDA",
    ),
    Row(
        "convrot_w4a4",
        None,
        None,
        None,
        "emulated",
        "[GUESS] comfy-kitchen's eager W4A4 path off CUDA (int4 codes turned into floats)",
    ),
    Row(
        "float8_e4m3fn",
        _b("rocm"),
        None,
        None,
        "native",
        f"[READ] {Q}/fp8.py: FP8 (fnuz) matmul on ROCm for {', '.join(ROCM_FP8)}",
    ),
    Row(
        "float8_e4m3fn",
        None,
        None,
        None,
        "refused",
        "[GUESS] no FP8 matmul for this device (see sglang #7715)",
    ),
)

#: formats sglang's ComfyUI path does not load at all (its verdict's findings say why)
UNLOADED = "sglang does not load this format (see the findings)"
#: a marker with full_precision_matrix_mult: NVFP4 takes the dequantizing method [READ]
FPMM_NVFP4 = (
    f"[READ] {Q}/comfy_nvfp4.py: the marker sets full_precision_matrix_mult, so "
    "ComfyFullPrecisionNvfp4LinearMethod dequantizes the layer"
)

#: sglang's file-level codes that stop its load (`GpuRules.blocking`, rules/gpu/refusals.py;
#: "*": every quantized layer, since an exception in the loader ends the whole load): QC615
#: (MXFP8 layers' weight_loader_v2 TypeError, 0.5.19-0.5.21, 0.5.23), QC631/QC632 (the
#: --transformer-weights-path loader's ValueError before any weight), QC634 (the inferred
#: NVFP4 config's shape assertion), QC636 (--comfyui-mode's shape assertion), QC637 (a
#: marker-reading spec's ValueError), QC638 (the marker readers' NotImplementedError). Each
#: counts only where it fails on the release and belongs to the loader that decides the
#: verdict (checking.py passes the GPU dimension only those: rules/sglang/loaders.py); a
#: finding of another loader path refuses nothing here.
_WHOLE_LOAD = frozenset({"*"})
LOAD_BLOCKING: dict[str, frozenset[str]] = dict.fromkeys(
    ("QC615", "QC631", "QC632", "QC634", "QC636", "QC637", "QC638"), _WHOLE_LOAD
)
