"""QC80x: known bad device combinations (issue 24 item 4), found only with `check --gpu`.

The combinations are data (`runtimes/comfyui_gpu.py KNOWN_ISSUES`, each with its threads);
these rules say what kind of report each is. Severity follows how sure the report is: a crash
or wrong output reported by users is a warning (not reproduced here), a slowdown or a size
limit is a note. None changes a target's status (the file is not wrong; the combination is):
each is listed under the GPU entries it concerns (`known_issues`) and counts as a warning or
note.
"""

from __future__ import annotations

from quantcheck.rules.levels import Severity
from quantcheck.rules.rule import Rule, effects

W, N = Severity.WARNING, Severity.INFO
GPU_DATA = "quantcheck runtimes/comfyui_gpu.py KNOWN_ISSUES (each entry names its threads)"

RULES = [
    Rule(
        "QC800",
        "gpu-known-crash",
        W,
        "format reported to crash ComfyUI on this GPU class",
        effects(),
        None,
        "With --gpu: no quantized format of the checkpoint is one users reported to crash "
        "ComfyUI + comfy-kitchen on the given GPU class (fatal access violation, an op that "
        "raises on the device).",
        "The runtimes' gates let the format run natively, but the kernel it reaches fails on "
        "that device. Nothing in the file is wrong; the combination is. The finding names the "
        "thread so the reader can see whether a newer comfy-kitchen fixed it.",
        "int8_tensorwise layers with --gpu rx7900xtx (comfy-kitchen #61)",
        "Use another format for that GPU (the needs line says which runs natively there), or "
        "update comfy-kitchen and check the thread.",
        f"{GPU_DATA}; threads: Comfy-Org/comfy-kitchen #61, #92; patientx-cfz/comfyui-rocm #92; "
        "Comfy-Org/ComfyUI #14777.",
    ),
    Rule(
        "QC801",
        "gpu-known-wrong-output",
        W,
        "format reported to give wrong output on this GPU class without an error",
        effects(),
        None,
        "With --gpu: no quantized format of the checkpoint is one users reported to give "
        "noise, blank or broken images on the given GPU class.",
        "Silent garbage is the costliest failure: the run finishes and the cause is far "
        "away. The reports name a device class and a format; the finding says which.",
        "int8_tensorwise layers with --gpu t4 (comfy-kitchen #55)",
        "Use another format on that GPU, or compare one step against a BF16 run.",
        f"{GPU_DATA}; threads: Comfy-Org/comfy-kitchen #55; BobJohnson24/ComfyUI-INT8-Fast #91; "
        "patientx-cfz/comfyui-rocm #95.",
    ),
    Rule(
        "QC802",
        "gpu-known-slow",
        N,
        "format reported slower than expected on this GPU class",
        effects(),
        None,
        "With --gpu: no quantized format of the checkpoint is one users reported to run "
        "slower than expected on the given GPU class although it runs natively.",
        "Native is not always fast: a kernel configuration or a missing specialised kernel "
        "can make a native format no faster (or slower) than BF16 on some classes.",
        "int8_tensorwise layers with --gpu a6000 (comfy-kitchen #98)",
        "Measure one step; another format may be faster on that GPU.",
        f"{GPU_DATA}; threads: Comfy-Org/comfy-kitchen #75, #98; Comfy-Org/ComfyUI #14909.",
    ),
    Rule(
        "QC803",
        "gpu-size-limit",
        N,
        "INT8 layer whose kernel faults above a token count",
        effects(),
        None,
        "With --gpu on an NVIDIA class where comfy-kitchen's INT8 kernels run: the largest "
        "INT8 layer's N keeps tokens x N below 2**31 at the token counts the user runs.",
        "comfy-kitchen's INT8 GEMM kernels index the output with 32-bit integers: once one "
        "call's M (tokens) x N reaches 2**31 the kernel reads out of bounds (illegal memory "
        "access). High resolutions and long videos reach it on wide layers. The finding gives "
        "the token count from which the widest INT8 layer faults.",
        "int8_tensorwise layer with N = 15360: faults from 139,811 tokens per call",
        "Keep tokens per call below the limit (tiling, fewer frames), or use a comfy-kitchen "
        "build with 64-bit indexing.",
        f"{GPU_DATA} SIZE_LIMIT; Comfy-Org/comfy-kitchen #136 (2026-08-24); "
        "Comfy-Org/ComfyUI #14756.",
    ),
]
