"""The stages after sglang's marker inspector, run from one release's own code on CPU.

- layer build: the DiT linear (`ColumnParallelLinear`, tensor-parallel size 1) is built with
  the config the release resolves for the file, so the config's `get_quant_method` and the
  method's `create_weights` register the parameters the release would;
- weight load: the file's tensors of that layer go through the release's
  `fsdp_load.load_model_from_full_model_state_dict` (its `.to(dtype=target_dtype)` cast,
  then each parameter's `weight_loader`); an exception there stops the load;
- the `--transformer-weights-path` resolution (`transformer_load_utils._resolve_quant_config`
  -> `_resolve_weight_override_quantization`) and the MiniMax-H3 resolver
  (`resolve_minimax_h3_checkpoint_quantization`) on the file.

Nothing of sglang's logic is replaced: only what its code reads from the host (parallel state,
environment flags, the platform) and modules that are absent here are stubbed (`loader.py`).
"""

from __future__ import annotations

import importlib
import types
from pathlib import Path
from typing import Any

from .real import REFUSALS

LINEAR = "sglang.multimodal_gen.runtime.layers.linear"
FSDP = "sglang.multimodal_gen.runtime.loader.fsdp_load"
TLU = "sglang.multimodal_gen.runtime.loader.transformer_load_utils"
H3 = "sglang.multimodal_gen.runtime.loader.minimax_h3_weights"
STOPS = (*REFUSALS, AssertionError, RuntimeError, AttributeError)
#: quant methods whose first forward runs on the CPU (comfy-kitchen's eager kernels); the
#: others' kernels need a GPU, so their forward is not run
CPU_FORWARD = ("KitchenW4A8LinearMethod",)


def module(name: str) -> types.ModuleType:
    return importlib.import_module(name)


def load_layer(
    config: Any, prefix: str, n: int, k: int, tensors: dict[str, Any]
) -> tuple[str, str]:
    """("fails" | "degraded" | "ok", what happened) for one [n, k] DiT linear named `prefix`
    built with `config` and loaded from `tensors` (the file's tensors of that layer, by
    suffix): fails where the layer build or the weight load raises; degraded where a loaded
    parameter's bytes differ from the file's tensor (a value cast); else ok."""
    import torch

    lin = module(LINEAR)
    fsdp = module(FSDP)

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = lin.ColumnParallelLinear(
                k, n, bias=False, quant_config=config, prefix=prefix, params_dtype=torch.bfloat16
            )

    try:
        model = Model()
    except STOPS as exc:
        return "fails", f"layer build: {type(exc).__name__}: {exc}"
    params = dict(model.layer.named_parameters())
    names = {s: s for s in tensors}
    if "weight_scale_inv" in params and "weight_scale" in tensors:
        names["weight_scale"] = "weight_scale_inv"  # the MXFP8 parameter's name
    sd = {f"layer.{names[s]}": t for s, t in tensors.items() if names[s] in params}
    try:
        fsdp.load_model_from_full_model_state_dict(
            model,
            iter(sd.items()),
            torch.device("cpu"),
            None,
            param_names_mapping=lambda name: (name, None, None),
        )
    except STOPS as exc:
        return "fails", f"weight load: {type(exc).__name__}: {str(exc)[:200]}"
    changed = []
    params = dict(model.layer.named_parameters())  # the loader replaces the parameters
    for key, t in sd.items():
        p = params[key.removeprefix("layer.")].data
        same = (
            p.dtype == t.dtype
            and p.numel() == t.numel()
            and torch.equal(p.reshape(-1).view(torch.uint8), t.reshape(-1).view(torch.uint8))
        )
        if not same:
            changed.append(f"{key} {t.dtype}{list(t.shape)} -> {p.dtype}{list(p.shape)}")
    if changed:
        return "degraded", "weight load changed values: " + "; ".join(changed)
    method = type(model.layer.quant_method).__name__
    if method in CPU_FORWARD:
        try:
            model.layer.quant_method.apply(model.layer, torch.randn(2, k, dtype=torch.bfloat16))
        except STOPS as exc:
            return "fails", f"first forward: {type(exc).__name__}: {str(exc)[:200]}"
        return "ok", f"{method}: loaded byte-exact, first forward ran"
    return "ok", f"{method}: loaded byte-exact"


def override_outcome(paths: list[str], folder: Path) -> tuple[bool, str]:
    """(loads, why) of `--transformer-weights-path` with `paths` for a DiT without its own
    inspector: the release's `_resolve_quant_config` (server args: the override set, no
    --quantization, no Nunchaku; an empty config.json-less component folder)."""
    tlu = module(TLU)
    server_args = types.SimpleNamespace(
        transformer_weights_path=paths[0], quantization=None, nunchaku_config=None
    )
    arch = types.SimpleNamespace(
        param_names_mapping={}, reverse_param_names_mapping={}, quant_ignore_remap={}
    )
    try:
        config = tlu._resolve_quant_config(
            hf_config={},
            server_args=server_args,
            safetensors_list=paths,
            component_model_path=str(folder),
            arch_config=arch,
        )
    except STOPS as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return True, type(config).__name__


def h3_outcome(mod: types.ModuleType, paths: list[str]) -> tuple[bool, str]:
    """(loads at the config stage, why) of the MiniMax-H3 loader: the inspector (names as
    stored) and `resolve_minimax_h3_checkpoint_quantization` with the files."""
    h3 = module(H3)
    try:
        markers = mod.inspect_comfy_quant_markers(paths)
        config = h3.resolve_minimax_h3_checkpoint_quantization(markers, paths, {}, {})
    except STOPS as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return True, type(config).__name__
