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


# --- the --comfyui-mode single-file loader --------------------------------------------------

COMFYUI = "sglang.multimodal_gen.runtime.loader.comfyui_checkpoints"
#: the DiT config classes the specs build (modules quantcheck's tests stub): a config whose
#: `arch_config` takes any field and has no name mapping of its own
CONFIG_CLASSES = {
    "sglang.multimodal_gen.configs.models.dits.flux": ("FluxConfig",),
    "sglang.multimodal_gen.configs.models.dits.minimax_h3": (
        "MiniMaxH3DiTConfig",
        "MiniMaxH3DiTArchConfig",
    ),
    "sglang.multimodal_gen.configs.models.dits.qwenimage": (
        "QwenImageDitConfig",
        "QwenImageArchConfig",
    ),
    "sglang.multimodal_gen.configs.models.dits.zimage": ("ZImageDitConfig",),
}


class _Arch:
    def __init__(self, **fields: Any) -> None:
        self.param_names_mapping: dict[str, Any] = {}
        self.__dict__.update(fields)


class _DitConfig:
    def __init__(self, arch_config: Any = None, **fields: Any) -> None:
        self.arch_config = arch_config if arch_config is not None else _Arch()


class _Registry:
    """`ModelRegistry` (the DiT model classes, not imported here): a class to name."""

    @staticmethod
    def resolve_model_cls(name: str) -> tuple[type, None]:
        return type(name, (), {"param_names_mapping": {}}), None


class _WeightLoad(Exception):
    """Raised where `load_comfyui_transformer` hands the model to the weight loader."""


def comfyui_outcome(pipeline: str, path: str) -> tuple[str, str]:
    """(outcome, why) of the release's `--comfyui-mode` loader (`load_comfyui_transformer`)
    reading `path` as `pipeline`, up to the weight load (`maybe_load_fsdp_model`, whose
    `init_params` carry the quantization config the loader chose): "none" (no spec for that
    pipeline), "refused" (it raises), "unquantized" (no quantization config: the weight loader
    casts the stored weights) or "quantized" (a config, by class name). Run after
    `load_release(root, stages=True)` of a release that has the loader (0.5.21+)."""
    for name, classes in CONFIG_CLASSES.items():
        mod = module(name)
        for cls in classes:
            setattr(mod, cls, _Arch if cls.endswith("ArchConfig") else _DitConfig)
    # the MiniMax-H3 inspector (a stage module, imported before) names its arch config too:
    # an identity name mapping
    module(H3).MiniMaxH3DiTArchConfig = _Arch  # type: ignore[attr-defined]
    module(COMFYUI)  # registers every spec
    spec = module(f"{COMFYUI}.spec")
    captured: dict[str, Any] = {}

    def weight_load(**kw: Any) -> None:
        captured.update(kw)
        raise _WeightLoad

    spec.ModelRegistry = _Registry  # type: ignore[attr-defined]
    spec.maybe_load_fsdp_model = weight_load  # type: ignore[attr-defined]
    server_args = types.SimpleNamespace(
        pipeline_config=types.SimpleNamespace(dit_config=_DitConfig()),
        model_path=path,
        model_paths={},
        model_variant=None,
        quantization=None,
        nunchaku_config=None,
        transformer_weights_path=None,
        hsdp_replicate_dim=1,
        hsdp_shard_dim=1,
        pin_cpu_memory=False,
        should_start_component_on_cpu=lambda component: False,
        should_use_fsdp_for_component=lambda component: False,
    )
    run = types.SimpleNamespace(pipeline_name=pipeline, model_path=path, get_module=lambda n: None)
    try:
        spec.load_comfyui_transformer(run, server_args)  # type: ignore[attr-defined]
    except _WeightLoad:
        config = captured["init_params"].get("quant_config")
        if config is None:
            return "unquantized", "no quantization config: the stored weights are cast"
        return "quantized", type(config).__name__
    except STOPS as exc:
        kind = "none" if "has no ComfyUI checkpoint spec" in str(exc) else "refused"
        return kind, f"{type(exc).__name__}: {exc}"
    return "refused", "load_comfyui_transformer returned before the weight load"


def node_pipelines(root: Path) -> dict[str, str]:
    """{ComfyUI model type: pipeline} of sglang's ComfyUI node (`apps/ComfyUI_SGLDiffusion/
    executors/*.py`, each adapter's `model_types` and `pipeline_class_name`), read as data:
    the node picks the pipeline, so the `--comfyui-mode` spec, from ComfyUI's detection."""
    import ast

    out: dict[str, str] = {}
    folder = root / "sglang/multimodal_gen/apps/ComfyUI_SGLDiffusion/executors"
    for py in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            values = {
                target.id: ast.literal_eval(stmt.value)
                for stmt in node.body
                if isinstance(stmt, ast.Assign)
                for target in stmt.targets
                if isinstance(target, ast.Name)
                and target.id in ("model_types", "pipeline_class_name")
            }
            if "pipeline_class_name" in values:
                for kind in values.get("model_types", ()):
                    out[kind] = values["pipeline_class_name"]
    return out
