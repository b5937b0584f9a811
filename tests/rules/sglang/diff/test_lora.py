"""Differential tests of sglang's LoRA path on quantized DiT layers (`make diff-sglang`):
sglang 0.5.23's own code against quantcheck's `runtimes/sglang_lora.py` outcome.

Per format, the DiT linear is built with the config the release resolves for a generated file
(`stages.py`'s way: `ColumnParallelLinear` with that config's quant method); sglang's
`wrap_with_lora_layer` wraps it (runtime/layers/lora/linear.py, the real file) and
`LoRAPipeline._should_merge_lora_for_layers` (pipelines_core/lora/pipeline.py, the real file,
its own imports stubbed by the loader) decides per merge mode. Compared: `auto` (the default)
keeps a quantized layer unmerged (dynamic: quantcheck's "side-branch"), `merge` raises
ValueError, a BF16 layer merges; and `set_lora_weights(..., merge_weights=False)` leaves the
stored weight's bytes untouched. Skipped unless QUANTCHECK_DIFF_SGLANG=1.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.rules.lora.analyse import analyse

from ..._build import INT8_CONVROT, P, file, fp8, int8, mxfp8, nvfp4, w4a4, w4a8
from ...lora.pairs import write_lora
from .loader import REAL, load_release
from .stages import LINEAR
from .test_diff_sglang import trees  # noqa: F401 (the fixture)
from .test_stages import _config, _tensors

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_SGLANG") != "1",
    reason="set QUANTCHECK_DIFF_SGLANG=1 (make diff-sglang)",
)

VERSION = "0.5.23"
LORA_LINEAR = "sglang.multimodal_gen.runtime.layers.lora.linear"
PIPELINE = "sglang.multimodal_gen.runtime.pipelines_core.lora.pipeline"
QUANT = "sglang.multimodal_gen.runtime.layers.quantization"
#: the quant methods these layers select, beyond the stage modules (the real files)
METHODS = (
    f"{QUANT}.convrot_int8_comfy_kitchen",
    f"{QUANT}.modelopt_quant",
    f"{QUANT}.kitchen_w4a4",
)
#: name -> (build, logical [N, K] of P)
CASES = {
    "float8_e4m3fn": (file(fp8), (64, 64)),
    "int8-convrot": (file(lambda: int8(mark=INT8_CONVROT)), (64, 64)),
    "nvfp4": (file(nvfp4), (128, 64)),
    "asym_w4a8_int8": (file(w4a8), (32, 64)),
    "convrot_w4a4": (file(w4a4), (32, 64)),
    "mxfp8": (file(mxfp8), (128, 128)),
}


def _real(name: str, root: Path) -> types.ModuleType:
    """Module `name` executed from the release's own file (its imports through the loader)."""
    if name in sys.modules and getattr(sys.modules[name], "__file__", None):
        return sys.modules[name]
    path = root / (name.replace(".", "/") + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    parent, _, child = name.rpartition(".")
    setattr(importlib.import_module(parent), child, mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def sglang(trees: dict[str, Path]) -> dict[str, Any]:  # noqa: F811
    root = trees[VERSION]
    mod = load_release(root, stages=True)
    for name in (LORA_LINEAR, PIPELINE, *METHODS):
        sys.modules.pop(name, None)
    for name in METHODS:
        _real(name, root)
    # the modules that bound those names while they were stubs: comfy_nvfp4 (its method
    # subclasses modelopt_quant's), the W4A4 config, and the resolver over them
    for name in (f"{QUANT}.comfy_nvfp4", f"{QUANT}.configs.kitchen_w4a4_config", REAL[0]):
        sys.modules.pop(name, None)
        importlib.import_module(name)
    mod = sys.modules[REAL[0]]
    linear = _real(LORA_LINEAR, root)
    pipeline = _real(PIPELINE, root)
    return {"mod": mod, "linear": linear, "pipeline": pipeline}


class _Blackwell:
    """What comfy_nvfp4's matmul method reads of the platform: a CUDA device of compute
    capability 10.0 (its constructor refuses anything else; the layer is only built here)."""

    def is_cuda(self) -> bool:
        return True

    def get_device_capability(self) -> Any:
        return types.SimpleNamespace(to_int=lambda: 100)


def _layer(sg: dict[str, Any], config: Any, n: int, k: int, monkeypatch: Any = None) -> Any:
    import torch

    if monkeypatch is not None:
        monkeypatch.setattr(
            importlib.import_module(f"{QUANT}.comfy_nvfp4"), "current_platform", _Blackwell()
        )
    lin = importlib.import_module(LINEAR)
    return lin.ColumnParallelLinear(
        k, n, bias=False, quant_config=config, prefix=P, params_dtype=torch.bfloat16
    )


def _decide(sg: dict[str, Any], layer: Any, mode: str) -> tuple[str, str]:
    """("merge" | "dynamic" | "raises", why) of the pipeline's own decision for `layer`."""
    cls = sg["pipeline"].LoRAPipeline
    me = types.SimpleNamespace(_uses_dtensor_weights=cls._uses_dtensor_weights)
    try:
        merge = cls._should_merge_lora_for_layers(me, "transformer", {P: layer}, mode)
    except ValueError as exc:
        return "raises", str(exc)
    return ("merge" if merge else "dynamic"), ""


def _ours(path: Path, tmp: Path, n: int, k: int) -> str:
    lora = tmp / "lora.safetensors"
    write_lora(lora, [P], n=n, k=k, convention="comfyui")
    with load_checkpoint([str(path)]) as b, load_checkpoint([str(lora)], read_markers=False) as lo:
        a = analyse(b, [lo], runtimes=("sglang",))
    (r,) = a.layers
    return r.runtimes["sglang"]["outcome"] if r.quantized else "unquantized"


@pytest.mark.parametrize("name", sorted(CASES))
def test_quantized_layers_keep_the_lora_beside(
    sglang, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    import torch

    build, (n, k) = CASES[name]
    paths = [str(p) for p in build(tmp_path)]
    config = _config(sglang["mod"], paths, "markers")
    base = _layer(sglang, config, n, k, monkeypatch)
    assert base.weight.numel() > 1, type(base.quant_method).__name__
    wrapped = sglang["linear"].wrap_with_lora_layer(base, lora_rank=8, lora_alpha=8)
    assert wrapped is not None
    assert wrapped.can_merge_base_weight is False, type(base.quant_method).__name__
    assert _decide(sglang, wrapped, "auto") == ("dynamic", "")
    mode, why = _decide(sglang, wrapped, "merge")
    assert mode == "raises" and "cannot be updated in place" in why
    assert _decide(sglang, wrapped, "dynamic")[0] == "dynamic"
    before = wrapped.weight.detach().clone()
    a = torch.randn(8, k, dtype=torch.bfloat16)
    b = torch.randn(n, 8, dtype=torch.bfloat16)
    wrapped.set_lora_weights(a, b, merge_weights=False)
    assert not wrapped.merged and wrapped.lora_active
    after = wrapped.weight.detach()
    assert before.dtype == after.dtype and torch.equal(
        before.reshape(-1).view(torch.uint8), after.reshape(-1).view(torch.uint8)
    )
    assert _ours(Path(paths[0]), tmp_path, n, k) == "side-branch"
    assert _tensors(paths)  # the file loads (its tensors read)


def test_bf16_layer_merges(sglang, tmp_path: Path) -> None:
    """The unquantized control: sglang merges it (`auto`), and quantcheck has no quantized
    layer to judge there."""
    wrapped = sglang["linear"].wrap_with_lora_layer(_layer(sglang, None, 64, 64), 8, 8)
    assert wrapped.can_merge_base_weight is True
    assert _decide(sglang, wrapped, "auto") == ("merge", "")
    assert _decide(sglang, wrapped, "merge") == ("merge", "")
