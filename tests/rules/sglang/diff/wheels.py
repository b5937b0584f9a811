"""The sglang wheels the differential tests run, pinned by SHA-256, fetched with pip.

`pip download --no-deps sglang==V` (CPython 3.11, manylinux x86_64) into a cache folder
(`QUANTCHECK_SGLANG_WHEELS`, default ~/.cache/quantcheck/sglang-wheels); a wheel whose hash
differs from the pin is refused. Only the few modules the tests execute are extracted.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from ...pinned_wheel import pinned_wheel

#: sha256 of sglang-V-cp311-cp311-manylinux_2_34_x86_64.whl as on PyPI (downloaded 2026-12-03).
PINNED = {
    "0.5.18": "e97b585dd2d5db2802599feba47c84cce972f5e1231a6816fef996200207b5cf",
    "0.5.19": "425e87377e725d03db8262382008f3fd9561a6cf5d82f485f8b9929f02ffe12b",
    "0.5.20": "1573527042f4f6b4ead838302818595fc77fdc611dbcc2e40cd150fbc8f8513c",
    "0.5.21": "96c029f75dec99baa33a5db3d41b1bebefdd6bcfba3a2f7c807fe1cf49a87c20",
    "0.5.22": "cc9a0f15bd8f877a0584fdb7a1702240177a1f1cc8d17c978715161717b9037b",
    "0.5.23": "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937",
}
#: what the tests execute of each wheel (the marker inspector, resolver and config classes;
#: the loaders, DiT linears, parameter classes and weight loader of the stage tests; the LoRA
#: linears and pipeline of the LoRA tests), and the ComfyUI node's executor table (read as
#: data: model type -> pipeline)
MEMBERS = (
    "sglang/multimodal_gen/runtime/utils/quantization_utils.py",
    "sglang/multimodal_gen/runtime/layers/quantization/",
    "sglang/multimodal_gen/runtime/layers/linear.py",
    "sglang/multimodal_gen/runtime/models/parameter.py",
    "sglang/multimodal_gen/runtime/utils/weight_attrs.py",
    "sglang/multimodal_gen/runtime/loader/",
    "sglang/srt/layers/quantization/fp8.py",
    "sglang/srt/layers/quantization/base_config.py",
    "sglang/srt/layers/parameter.py",
    "sglang/srt/model_loader/checkpoint_quantization.py",
    # the LoRA path on quantized layers (test_lora.py)
    "sglang/multimodal_gen/runtime/layers/lora/linear.py",
    "sglang/multimodal_gen/runtime/pipelines_core/lora/pipeline.py",
    # sglang's ComfyUI node: which pipeline (and so which --comfyui-mode spec) a model type gets
    "sglang/multimodal_gen/apps/ComfyUI_SGLDiffusion/executors/",
)


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "quantcheck" / "sglang-wheels"
    return Path(os.environ.get("QUANTCHECK_SGLANG_WHEELS", default))


def wheel(version: str, *, download: bool = True) -> Path | None:
    """The verified wheel of `version` (downloaded if missing and `download`), else None."""
    return pinned_wheel(
        cache_dir(),
        f"sglang-{version}-cp311-cp311-manylinux_2_34_x86_64.whl",
        PINNED[version],
        f"sglang=={version}",
        ("--python-version", "3.11", "--platform", "manylinux_2_34_x86_64"),
        download=download,
    )


def extract(version: str, into: Path, *, download: bool = True) -> Path | None:
    """The release's marker modules under `into/<version>/` (the tree root), or None."""
    whl = wheel(version, download=download)
    if whl is None:
        return None
    root = into / version
    if not (root / MEMBERS[0]).exists():
        with zipfile.ZipFile(whl) as z:
            for member in z.namelist():
                if member.startswith(MEMBERS) and member.endswith(".py"):
                    z.extract(member, root)
    return root
