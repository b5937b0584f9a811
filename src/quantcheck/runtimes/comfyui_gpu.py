"""ComfyUI's device gates and comfy-kitchen's kernel requirements, as data (issue 24).

What decides whether a quantized layer runs natively on a device, in the order ComfyUI asks:
1. `comfy/ops.py get_disabled_quant_formats(device)` disables a format when its
   `comfy/model_management.py supports_*_compute` predicate is false (`GATES`, `FORMAT_GATE`);
   a disabled format's layers get `_full_precision_mm` and are dequantized on every forward
   (stored small, computed slow). `awq_w4a16` has no gate.
2. `comfy/quant_ops.py` switches comfy-kitchen's CUDA backend off when torch is built for
   CUDA < 13 (or not for CUDA); Triton only with `--enable-triton-backend` and without
   `--disable-triton-backend` (`--gpu ...,flags=enable-triton-backend`, `TRITON_OPS`).
3. comfy-kitchen 0.2.40 picks a backend per op (`registry`, priority cuda > triton > eager)
   within each backend's `FunctionConstraints` (min SM); the layout's op handler falls back to
   dequantizing where no kernel fits (`KERNELS`).
4. Per layer, inside a format that is native: shape fallbacks (`LAYER_FALLBACKS`).
5. The launch switches (`--gpu ...,flags=`, `gpus/spec.FLAGS`): `--supports-fp8-compute`
   opens the FP8 gate on any device (then torch's own `_scaled_mm` decides, `TORCH_FP8`);
   DynamicVRAM (`dynamic_vram`, main.py) decides whether F8_E8M0 scales load.

The decisions from these facts are made in `rules/gpu/kitchen.py`; the evidence tags say how
each fact was established: [READ] upstream code read, [RUN] ComfyUI's / comfy-kitchen's code
run on CPU with the device facts patched in (issue 24), [ISSUE] a thread, [GUESS] inferred.
Standard library only.
"""

from __future__ import annotations

from quantcheck._record import record

MM = "comfy/model_management.py"
OPS = "comfy/ops.py"
KITCHEN = "comfy-kitchen 0.2.40"


@record
class Gate:
    """One `supports_*_compute` predicate: what makes it true, and where it is read."""

    name: str
    #: NVIDIA: the lowest compute capability, and the lowest torch for it
    nvidia_cc: tuple[int, int] | None = None
    nvidia_torch: tuple[int, int] | None = None
    #: NVIDIA: from this major capability on, true whatever the torch (fp8: 9)
    nvidia_major_any_torch: int | None = None
    #: torch needed on Windows (fp8: 2.4)
    windows_torch: tuple[int, int] | None = None
    #: AMD architectures that set it, with the torch and ROCm they need
    amd_archs: tuple[str, ...] = ()
    amd_torch: tuple[int, int] | None = None
    amd_rocm: tuple[int, int] | None = None
    #: every backend not listed here passes (int8); None: only the vendors above pass
    refused_backends: tuple[str, ...] | None = None
    #: MPS passes only from this torch on (int8: 2.15)
    mps_torch: tuple[int, int] | None = None
    source: str = ""


GATES: dict[str, Gate] = {
    g.name: g
    for g in (
        Gate(
            "supports_fp8_compute",
            nvidia_cc=(8, 9),
            nvidia_torch=(2, 3),
            nvidia_major_any_torch=9,
            windows_torch=(2, 4),
            amd_archs=("gfx1200", "gfx1201", "gfx950"),
            amd_torch=(2, 7),
            amd_rocm=(6, 4),
            source=f"[READ] {MM} supports_fp8_compute and the SUPPORT_FP8_OPS block @783545f6",
        ),
        Gate(
            "supports_nvfp4_compute",
            nvidia_cc=(10, 0),
            source=f"[READ] {MM} supports_nvfp4_compute @783545f6",
        ),
        Gate(
            "supports_mxfp8_compute",
            nvidia_cc=(10, 0),
            nvidia_torch=(2, 10),
            source=f"[READ] {MM} supports_mxfp8_compute @783545f6",
        ),
        Gate(
            "supports_int8_compute",
            refused_backends=("xpu", "directml"),
            mps_torch=(2, 15),
            source=f"[READ] {MM} supports_int8_compute @02b2b388 (false on Intel XPU, DirectML "
            "and ixuca; MPS from torch 2.15)",
        ),
    )
}

#: format -> the predicate `get_disabled_quant_formats` asks (None: never disabled)
FORMAT_GATE: dict[str, str | None] = {
    "float8_e4m3fn": "supports_fp8_compute",
    "float8_e5m2": "supports_fp8_compute",
    "nvfp4": "supports_nvfp4_compute",
    "mxfp8": "supports_mxfp8_compute",
    "int8_tensorwise": "supports_int8_compute",
    "convrot_w4a4": "supports_int8_compute",
    "asym_w4a8_int8": "supports_int8_compute",
    # not in the disabled set at 0271a469 (the format came later, PR #16483); the Forge port
    # gates it with the INT8 formats [READ index id 70520088885] -> [GUESS] the same in core
    "w6a8_int8": "supports_int8_compute",
    "awq_w4a16": None,
}
GATE_SOURCE = f"[READ] {OPS} get_disabled_quant_formats @0271a469"
#: backends where supports_int8_compute was only read (no ComfyUI file the oracle runs has it
#: with these branches): their gate reasons say [READ]
INT8_GATE_READ_BACKENDS = frozenset({"xpu", "directml", "mps"})
UNVERIFIED_GATES = {"w6a8_int8": "gate read in the Forge port, not in ComfyUI's own code"}

#: evidence tags of a decision's reason (`rules/gpu/plan.py` marks the summary by them)
READ = "[READ]"

#: ComfyUI keeps comfy-kitchen's CUDA backend only with torch built for CUDA >= this
KITCHEN_CUDA_MIN = (13, 0)
KITCHEN_CUDA_SOURCE = (
    "[READ] comfy/quant_ops.py @0271a469: torch.version.cuda < 13 -> ck.registry.disable('cuda') "
    '("You need pytorch with cu130 or higher to use optimized CUDA operations")'
)


@record
class Kernel:
    """How comfy-kitchen runs a format once ComfyUI's gate is open.

    `cuda_min`: the CUDA backend's min SM for the format's linear (None: no such kernel);
    `cuda_what`: what that kernel is; `eager`: what runs without it on NVIDIA (`native` through
    torch's own kernel named in `eager_what`, `emulated` when the eager path dequantizes);
    `other`: the same off NVIDIA (ROCm, CPU, MPS); `depends`: the CUDA kernel's path depends on
    the batch of tokens (`depends_on` says how); `hip_what`: comfy-kitchen's HIP kernel on the
    AMD architectures with matrix cores."""

    layout: str
    cuda_min: tuple[int, int] | None
    cuda_what: str
    eager: str
    eager_what: str
    other: str
    other_what: str
    depends_on: str = ""
    source: str = ""
    #: the HIP backend's kernel for the format on `HIP_WMMA_ARCHS` ("" for none)
    hip_what: str = ""
    #: the HIP kernel is not a GEMM the backend drops without matrix cores (`_WMMA_ONLY_OPS`):
    #: it runs on `HIP_ELEMENTWISE_ARCHS` (RDNA2) too
    hip_without_wmma: bool = False
    #: comfy-kitchen's Triton backend has the format's linear (`TRITON_OPS`): its op name
    triton_op: str = ""


#: both FP8 formats: torch's own scaled matmul, no comfy-kitchen kernel
_FP8 = Kernel(
    "TensorCoreFP8Layout",
    None,
    "",
    "native",
    "torch._scaled_mm (FP8 tensor cores)",
    "native",
    "torch._scaled_mm on ROCm",
    source=f"[READ] {KITCHEN} tensor/fp8.py _fp8_scaled_mm; [RUN] issue 24 (e4m3fn)",
)

KERNELS: dict[str, Kernel] = {
    "float8_e4m3fn": _FP8,
    "float8_e5m2": _FP8,
    "nvfp4": Kernel(
        "TensorCoreNVFP4Layout",
        (10, 0),
        "comfy-kitchen CUDA scaled_mm_nvfp4 (cuBLASLt)",
        "native",
        "torch._scaled_mm with FP4 operands (comfy-kitchen's eager scaled_mm_nvfp4)",
        "emulated",
        "",
        source=f"[READ] {KITCHEN} backends/cuda FunctionConstraints scaled_mm_nvfp4 (10,0); "
        "[RUN] issue 24 (eager native on sm_120 with CUDA 12.8)",
    ),
    "mxfp8": Kernel(
        "TensorCoreMXFP8Layout",
        None,
        "",
        "native",
        "torch._scaled_mm with MXFP8 block scales (comfy-kitchen has no MXFP8 matmul)",
        "emulated",
        "",
        source=f"[READ] {KITCHEN} tensor/mxfp8.py _mxfp8_scaled_mm; [RUN] issue 24",
    ),
    "int8_tensorwise": Kernel(
        "TensorWiseINT8Layout",
        (7, 5),
        "comfy-kitchen CUDA int8_linear",
        "native",
        "torch._int_mm (comfy-kitchen's eager int8_linear)",
        "native",
        "torch._int_mm (comfy-kitchen's eager int8_linear)",
        hip_what="comfy-kitchen HIP int8_linear",
        triton_op="int8_linear",
        source=f"[READ] {KITCHEN} tensor/int8.py, backends/eager/quantization.py int8_linear; "
        "[RUN] issue 24",
    ),
    "convrot_w4a4": Kernel(
        "ConvRotW4A4Layout",
        (7, 5),
        "comfy-kitchen CUDA convrot_w4a4_linear",
        "emulated",
        "comfy-kitchen's eager fallback turns the int4 codes into floats (ComfyUI's log "
        "still says Native)",
        "emulated",
        "comfy-kitchen's eager fallback turns the int4 codes into floats",
        hip_what="comfy-kitchen HIP convrot_w4a4_linear",
        source=f"[READ] {KITCHEN} backends/eager/convrot_w4a4.py; [RUN] issue 24",
    ),
    "asym_w4a8_int8": Kernel(
        "W4A8INT8Layout",
        (8, 0),
        "comfy-kitchen CUDA w4a8_int8_linear",
        "native",
        "torch._int_mm on the unpacked codes (comfy-kitchen's eager w4a8_int8_linear)",
        "native",
        "torch._int_mm on the unpacked codes [GUESS off NVIDIA]",
        hip_what="comfy-kitchen HIP w4a8_int8_linear",
        triton_op="w4a8_int8_linear",
        source=f"[READ] {KITCHEN} backends/eager/w4a8_int8.py; [RUN] issue 24",
    ),
    "w6a8_int8": Kernel(
        "W4A8INT8Layout",
        (8, 0),
        "comfy-kitchen CUDA w4a8_int8_linear (6-bit codes)",
        "native",
        "torch._int_mm on the unpacked codes (comfy-kitchen's eager w4a8_int8_linear)",
        "native",
        "torch._int_mm on the unpacked codes [GUESS off NVIDIA]",
        hip_what="comfy-kitchen HIP w4a8_int8_linear (6-bit codes)",
        triton_op="w4a8_int8_linear",
        source=f"[READ] {KITCHEN} tensor/w4a8_int8.py (bits=6) [GUESS: as asym_w4a8_int8]",
    ),
    "awq_w4a16": Kernel(
        "TensorCoreAWQW4A16Layout",
        (8, 0),
        "comfy-kitchen CUDA gemv_awq_w4a16",
        "emulated",
        "comfy-kitchen dequantizes the weight itself (no kernel; ComfyUI's log says Native)",
        "emulated",
        "comfy-kitchen dequantizes the weight itself (no kernel; ComfyUI's log says Native)",
        depends_on="native for M <= 256 tokens per call, dequantized above",
        hip_what="comfy-kitchen HIP gemv_awq_w4a16 (any batch)",
        hip_without_wmma=True,
        source=f"[READ] {KITCHEN} backends/cuda gemv_awq_w4a16 (8,0); [RUN] issue 24",
    ),
}

#: comfy-kitchen 0.2.40's HIP backend (backends/hip, registered on ROCm; ComfyUI's
#: quant_ops.py switches only "cuda" and "triton" off) advertises its GEMM kernels only where
#: every device has matrix cores (WMMA): RDNA3/3.5 and RDNA4 (backends/hip/architectures.json
#: wmma_gfx11, wmma_gfx12). RDNA2 is elementwise only; CDNA (gfx90a, gfx942, gfx950) is not in
#: the manifest, so the backend does not register there and the eager path runs [READ].
HIP_WMMA_ARCHS = frozenset(
    {
        "gfx1100",
        "gfx1101",
        "gfx1102",
        "gfx1103",
        "gfx1150",
        "gfx1151",
        "gfx1152",
        "gfx1153",
        "gfx1200",
        "gfx1201",
    }
)
#: RDNA2: the HIP backend registers "elementwise only" (architectures.json elementwise_only) and
#: drops the `_WMMA_ONLY_OPS` GEMMs; gemv_awq_w4a16 is not one of them, so the registry picks
#: hip for the AWQ matmul there [READ: backends/hip/__init__.py _build_constraints; the
#: extension itself is not loaded on CPU]
HIP_ELEMENTWISE_ARCHS = frozenset(
    {"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"}
)
HIP_SOURCE = (
    f"[READ] {KITCHEN} backends/hip/__init__.py _register, _build_constraints, architectures.json"
)

#: comfy-kitchen 0.2.40's Triton backend (backends/triton/__init__.py _build_constraints,
#: `_register`; priority cuda > triton > eager, on ROCm hip first): the linears it has, each
#: with `min_compute_capability` (8, 0) and devices cuda / xpu. The registry's capability is
#: None off CUDA/ROCm, so the minimum refuses XPU. Its int8_linear takes a weight_scale of any
#: float dtype (the CUDA backend's wants F32); its w4a8_int8_linear an F32 s_channel, like
#: every backend. No Triton NVFP4, MXFP8, ConvRot W4A4 or AWQ linear. [RUN: the oracle
#: registers it under the device's facts and asks the registry]
TRITON_MIN = (8, 0)
TRITON_OPS = frozenset({"int8_linear", "w4a8_int8_linear"})
TRITON_SOURCE = f"{KITCHEN} backends/triton/__init__.py _build_constraints"
#: a Triton backend the switch turns on still needs `import triton` to work (quant_ops.py);
#: torch's Linux wheels for CUDA / ROCm / XPU depend on a triton package, its Windows wheels
#: do not [GUESS: triton-windows installed by whoever passes the switch on Windows]
TRITON_WINDOWS = "[GUESS: the triton-windows package installed]"

#: torch's own `_scaled_mm` with FP8 operands, the devices it runs on (torch 2.13
#: torch/testing/_internal/common_cuda.py evaluate_platform_supports_fp8, run by the oracle
#: under each device's facts): NVIDIA sm_89 and from sm_90; ROCm gfx94x, gfx120x from ROCm
#: 6.3, gfx95x from ROCm 6.5; XPU; the CPU. Elsewhere (or below) its RuntimeError sends the
#: FP8 layer to comfy-kitchen's dequantize fallback (tensor/fp8.py, a warning every call).
TORCH_FP8_NVIDIA = ((8, 9), 9)  # (exact capability, from this major on)
TORCH_FP8_ROCM = (("gfx94", None), ("gfx120", (6, 3)), ("gfx95", (6, 5)))
TORCH_FP8_BACKENDS = frozenset({"xpu", "cpu"})
TORCH_FP8_SOURCE = "torch 2.13 testing/_internal/common_cuda.py evaluate_platform_supports_fp8"

#: ComfyUI @783545f6 main.py: DynamicVRAM is on with `--enable-dynamic-vram`, or when
#: cli_args.enables_dynamic_vram() (none of `DYNAMIC_VRAM_OFF`, not `--cpu`) and
#: dynamic_vram_supported() (NVIDIA; AMD with ROCm >= 7.14) - then not before torch 2.8.
#: [RUN: the oracle evaluates main.py's own condition]
DYNAMIC_VRAM_OFF = frozenset({"disable-dynamic-vram", "highvram", "gpu-only", "novram"})
DYNAMIC_VRAM_ROCM = (7, 14)
DYNAMIC_VRAM_TORCH = (2, 8)

#: ConvRot W4A4 with the CUDA backend: native int4 math only on sm_8x; from sm_90 on the layer
#: takes comfy-kitchen's INT8 route (still native) [RUN issue 24]
CONVROT_INT4_MAJORS = (7, 8)

#: Formats with a per-layer fallback inside a native format: FP8/NVFP4 `scaled_mm` needs N and
#: K multiples of 16 ([READ] tensor/fp8.py "FP8 _scaled_mm failed: ... falling back to
#: dequantization", tensor/nvfp4.py; [RUN] issue 24)
SHAPE_MULTIPLE = 16
SHAPE_FORMATS = frozenset({"float8_e4m3fn", "float8_e5m2", "nvfp4"})
#: INT8 with an F16 `weight_scale`: comfy-kitchen's CUDA backend refuses it, torch._int_mm
#: runs it [RUN issue 24]
INT8_F16_SCALE = "int8_tensorwise"
#: W4A8 / W6A8 with a `weight_s_channel` other than F32: every comfy-kitchen 0.2.40 backend's
#: w4a8_int8_linear (eager, CUDA, HIP) constrains s_channel to float32, so the registry finds
#: none and the first forward raises NoCapableBackendError (tensor/w4a8_int8.py
#: registry.get_implementation); the dequantize path (format disabled) runs it [RUN issue 24
#: oracle, helper gpudiff: examples/broken_seeds.safetensors]
W4A8_FORMATS = frozenset({"asym_w4a8_int8", "w6a8_int8"})
W4A8_S_CHANNEL = "F32"
W4A8_S_CHANNEL_SOURCE = (
    f"[RUN] {KITCHEN} tensor/w4a8_int8.py registry.get_implementation; backends/eager, cuda, "
    "w4a8_int8_linear ParamConstraint s_channel float32"
)
#: the same constraint in the HIP backend, read only (it needs ROCm to load)
W4A8_S_CHANNEL_HIP = f"[READ] {KITCHEN} backends/hip w4a8_int8_linear s_channel float32"

#: Findings that fail on ComfyUI but that the GPU decisions model per device (so they do not
#: refuse the layer on every GPU, `rules/gpu/refusals.py`): (formats, companion suffix,
#: codes). A W4A8 s_channel other than F32 (companion-dtype) fails only where the format runs
#: natively; an F8_E8M0 MXFP8 scale (companion-dtype, e8m0-unloadable) only with the NVIDIA
#: default loader (`E8M0_REFUSED_VENDORS`) [RUN issue 24 oracle].
DEVICE_FINDINGS: tuple[tuple[frozenset[str], str, frozenset[str]], ...] = (
    (W4A8_FORMATS, "weight_s_channel", frozenset({"QC305"})),
    (frozenset({"mxfp8"}), "weight_scale", frozenset({"QC305", "QC605"})),
)

#: MXFP8 with F8_E8M0 scales: ComfyUI's DynamicVRAM loader (its default on NVIDIA, and on
#: AMD with ROCm >= 7.14; comfy/utils.py load_safetensors `_TYPES`) has no F8_E8M0 -> the file
#: does not load; without DynamicVRAM (safetensors.safe_open) it does [RUN comfyui-cpu, QC605]

#: The dtype ComfyUI holds unquantized weights in, by class ([GUESS] from
#: model_management.should_use_bf16 / should_use_fp16: BF16 from sm_80, FP16 on Volta/Turing,
#: FP32 where FP16 is slow or absent). Bytes per element.
COMPUTE_BYTES_NVIDIA = (((8, 0), 2, "BF16"), ((7, 0), 2, "F16"), ((0, 0), 4, "F32"))
COMPUTE_BYTES_OTHER = {
    "rocm": (2, "BF16"),
    "xpu": (2, "BF16"),
    "mps": (2, "F16"),
    "directml": (2, "F16"),
    "cpu": (4, "F32"),
}


@record
class KnownIssue:
    """A device combination users reported going wrong with ComfyUI + comfy-kitchen: the rule
    code (QC800 crash, QC801 wrong output, QC802 slow, QC803 size limit), the formats, which
    devices (compute capabilities, AMD architectures or backends; any one matches), whether
    only ConvRot layers are concerned, what happens and the threads that report it."""

    code: str
    formats: frozenset[str]
    what: str
    threads: str
    ccs: tuple[tuple[int, int], ...] = ()
    archs: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()
    convrot_only: bool = False


INT8_FORMATS = frozenset({"int8_tensorwise", "convrot_w4a4", "asym_w4a8_int8", "w6a8_int8"})
RDNA3 = ("gfx1100", "gfx1101", "gfx1102")

KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue(
        "QC800",
        frozenset({"int8_tensorwise"}),
        "INT8 crashes reported on RDNA3 (fatal access violation in int8_tensorwise)",
        "Comfy-Org/comfy-kitchen #61 (ROCm on Windows, gfx1101); Comfy-Org/ComfyUI #14777 "
        '("Should INT8 work on RDNA3?")',
        archs=RDNA3,
    ),
    KnownIssue(
        "QC800",
        frozenset({"int8_tensorwise"}),
        'INT8 ConvRot fails on ROCm ("Only Tensors of floating point and complex dtype can '
        'require gradients")',
        "patientx-cfz/comfyui-rocm #92",
        backends=("rocm",),
        convrot_only=True,
    ),
    KnownIssue(
        "QC800",
        INT8_FORMATS,
        "comfy-kitchen's eager int8_linear is advertised on MPS, but torch._int_mm there is "
        "CUDA-only: the INT8 matmul raises",
        "Comfy-Org/comfy-kitchen #92 (listed in Comfy-Org/ComfyUI #15419)",
        backends=("mps",),
    ),
    KnownIssue(
        "QC801",
        frozenset({"int8_tensorwise"}),
        "INT8 models reported to give broken output on Turing (T4, RTX 20xx) with no error",
        'Comfy-Org/comfy-kitchen #55 ("INT8 Krea2 models broken on Tesla T4 (SM75)"); '
        "BobJohnson24/ComfyUI-INT8-Fast #91 (noise output on RTX 20xx)",
        ccs=((7, 5),),
    ),
    KnownIssue(
        "QC801",
        frozenset({"int8_tensorwise"}),
        "INT8 ConvRot reported to give blank or noisy images on ROCm",
        "patientx-cfz/comfyui-rocm #95",
        backends=("rocm",),
        convrot_only=True,
    ),
    KnownIssue(
        "QC802",
        frozenset({"int8_tensorwise"}),
        "comfy-kitchen's CUTLASS INT8 picks a poor configuration on sm_86 (A6000): slower "
        "than expected",
        "Comfy-Org/comfy-kitchen #98 (listed in Comfy-Org/ComfyUI #15419)",
        ccs=((8, 6),),
    ),
    KnownIssue(
        "QC802",
        frozenset({"int8_tensorwise", "convrot_w4a4"}),
        "INT8 reported ~3x slower on Turing after comfy-kitchen 0.2.19, and int4 ConvRot no "
        'faster than INT8 there ("20 series needs different kernels")',
        "Comfy-Org/comfy-kitchen #75 (GTX 1660 Super); Comfy-Org/ComfyUI #14909 (RTX 2080 Ti)",
        ccs=((7, 5),),
    ),
)

#: comfy-kitchen #136: its INT8 GEMM kernels index the output in int32, an illegal memory
#: access once tokens x N >= 2**31 (one call's M x N)
SIZE_LIMIT = 2**31
SIZE_THREAD = (
    "Comfy-Org/comfy-kitchen #136 (2026-08-24: INT8 GEMM kernels index the output in int32, "
    "illegal memory access once m*n >= 2**31); Comfy-Org/ComfyUI #14756 (int8convrot OOM / "
    "illegal memory access where fp16 finishes)"
)
