"""Import one sglang release's marker code with every heavy dependency stubbed.

The real, unmodified files of the wheel are executed for: the header path, marker inspector and
resolver (`utils/quantization_utils.py`), the Comfy config classes (`layers/quantization/
comfy_*.py`, `configs/kitchen_*_config.py`, `configs/convrot_int8_config.py`) and 0.5.23's
rowwise FP8 config (`layers/quantization/rowwise_fp8.py`). Every other `sglang.*` module
is a stub whose attributes are permissive classes, so the config constructors' marker checks
run while GPU kernels, model layers and the srt runtime are never imported. The platform is a
CPU host (neither CUDA nor MPS), the ConvRot INT8 backend "auto".
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

REAL = (
    "sglang.multimodal_gen.runtime.utils.quantization_utils",
    "sglang.multimodal_gen.runtime.layers.quantization.comfy_fp8",
    "sglang.multimodal_gen.runtime.layers.quantization.comfy_int8",
    "sglang.multimodal_gen.runtime.layers.quantization.comfy_nvfp4",
    "sglang.multimodal_gen.runtime.layers.quantization.configs.kitchen_int8_config",
    "sglang.multimodal_gen.runtime.layers.quantization.configs.convrot_int8_config",
    "sglang.multimodal_gen.runtime.layers.quantization.configs.kitchen_w4a8_config",
    "sglang.multimodal_gen.runtime.layers.quantization.configs.kitchen_w4a4_config",
    # 0.5.23's rowwise FP8 header path (absent before: the finder then stubs it)
    "sglang.multimodal_gen.runtime.layers.quantization.rowwise_fp8",
)


def _special(name: str) -> Any:
    """Stubbed names the constructors read as values: a CPU host, the default ConvRot
    backend, the JIT group sizes, a logger; with the stage modules (`STAGES`) also the
    parallel state of a single-GPU diffusion worker (tensor-parallel size 1, rank 0), unset
    environment flags and no accelerator-specific code path."""
    if STAGES[0]:
        hit = _stage_special(name)
        if hit is not None:
            return hit
    if name == "current_platform":
        return _Platform()
    if name == "SGLANG_DIFFUSION_CONVROT_INT8_BACKEND":
        return "auto"
    if name == "init_logger":
        import logging

        return logging.getLogger
    if name in ("GROUP_SIZES", "JIT_GROUP_SIZES"):
        return (64, 128, 256, 512)
    return None


#: [True] while the weight-loading stage modules are loaded (`load_release(root, stages=True)`)
STAGES = [False]
#: what the weight-loading stages execute beside `REAL`: the DiT linears and their parameter
#: classes, the weight loader (fsdp_load), the FP8 / MXFP8 quant methods (SRT's too) and the
#: quantization registry, the --transformer-weights-path resolution and the MiniMax-H3
#: inspector/resolver, and sglang's checkpoint declaration reader
STAGE_MODULES = (
    # the package first, as sglang's entry points import it (its config modules import the
    # linears, which import the package's base config)
    "sglang.multimodal_gen.runtime.layers.quantization",
    "sglang.multimodal_gen.runtime.layers.quantization.configs.base_config",
    "sglang.multimodal_gen.runtime.layers.quantization.method_names",  # 0.5.22+
    "sglang.srt.layers.quantization.base_config",
    "sglang.multimodal_gen.runtime.layers.linear",
    "sglang.multimodal_gen.runtime.models.parameter",
    "sglang.multimodal_gen.runtime.utils.weight_attrs",
    "sglang.multimodal_gen.runtime.layers.quantization.fp8",
    "sglang.multimodal_gen.runtime.layers.quantization.mxfp8",
    "sglang.multimodal_gen.runtime.layers.quantization.kitchen_w4a8",
    "sglang.multimodal_gen.runtime.loader.rank_local_checkpoint",
    "sglang.multimodal_gen.runtime.loader.utils",
    "sglang.multimodal_gen.runtime.loader.fsdp_load",
    "sglang.multimodal_gen.runtime.loader.transformer_load_utils",
    "sglang.multimodal_gen.runtime.loader.minimax_h3_weights",
    "sglang.srt.layers.quantization.fp8",
    "sglang.srt.layers.parameter",
    "sglang.srt.model_loader.checkpoint_quantization",
)
#: the `--comfyui-mode` single-file loader (0.5.21+): its spec registry and each spec, executed
#: with the stage modules (absent before 0.5.21: stubs, as any missing module)
COMFYUI_MODULES = tuple(
    f"sglang.multimodal_gen.runtime.loader.comfyui_checkpoints{m}"
    for m in ("", ".spec", ".flux", ".minimax_h3", ".qwen_image", ".qwen_image21", ".zimage")
)
#: third-party packages sglang imports that the test environment lacks (stubbed if absent)
ABSENT = ("huggingface_hub", "diffusers", "transformers")


class _Group:
    """The tensor-parallel group of a single-GPU worker."""

    world_size = tp_size = 1
    rank_in_group = rank = tp_rank = 0


class _EnvVar:
    def get(self) -> None:
        return None

    def __bool__(self) -> bool:
        return False


class _Backend(str):
    """`envs.SGLANG_DIFFUSION_CONVROT_INT8_BACKEND`: its default, "auto"."""

    def get(self) -> str:
        return str(self)


class _Envs:
    """`envs`: every environment flag unset (the ConvRot INT8 backend at its default)."""

    def __getattr__(self, name: str) -> Any:
        if name == "SGLANG_DIFFUSION_CONVROT_INT8_BACKEND":
            return _Backend("auto")
        return _EnvVar()


class _Log:
    """sglang's logger (takes its own keywords such as main_process_only): silent."""

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


def _stage_special(name: str) -> Any:
    if name in ("get_group_size", "get_tensor_model_parallel_world_size", "get_tp_world_size"):
        return lambda *a, **k: 1
    if name in ("get_group_rank", "get_tensor_model_parallel_rank", "get_tp_rank"):
        return lambda *a, **k: 0
    if name in ("get_tp_group", "get_tensor_model_parallel_group", "get_parallel"):
        return lambda *a, **k: _Group()
    if name == "divide":
        return lambda a, b: a // b
    if name == "envs":
        return _Envs()
    if name == "init_logger":
        return lambda *a, **k: _Log()
    if name.startswith(("is_", "_is_")):
        return lambda *a, **k: False  # no CUDA/ROCm/NPU/gfx path on the CPU host
    if name.startswith(("USE_", "_USE_")):
        return False
    return None


class _StubMeta(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        special = _special(name)
        return special if special is not None else _stub_class(name)

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __iter__(cls) -> Any:  # `x in Stub` must not iterate __getitem__ forever
        return iter(())


class _Stub(metaclass=_StubMeta):
    """Any stubbed object: constructible with anything, callable (as a decorator it returns
    what it decorates), attribute access yields more stubs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return args[0] if len(args) == 1 and callable(args[0]) else _Stub()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub()


def _stub_class(name: str) -> type:
    return _StubMeta(name, (_Stub,), {})


class _Platform:
    def __getattr__(self, name: str) -> Any:
        if name.startswith("is_"):
            return lambda *a, **k: False
        return _Stub()

    def is_mps(self) -> bool:
        return False

    def is_cuda(self) -> bool:
        return False

    def get_device_capability(self) -> None:
        return None


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        special = _special(name)
        if special is not None:
            return special
        value = _stub_class(name)
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        top = fullname.partition(".")[0]
        if top in ABSENT and STAGES[0]:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        if top != "sglang":
            return None
        base = self.root / fullname.replace(".", "/")
        real = REAL + STAGE_MODULES + COMFYUI_MODULES if STAGES[0] else REAL
        if fullname in real:
            for file in (base.with_suffix(".py"), base / "__init__.py"):
                if file.exists():
                    return importlib.util.spec_from_file_location(fullname, file)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> Any:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: Any) -> None:
        pass


def load_release(root: Path, *, stages: bool = False) -> types.ModuleType:
    """`quantization_utils` of the release extracted at `root` (previous sglang modules are
    dropped from sys.modules first, so releases do not mix); `stages` also executes the
    weight-loading stage modules (`STAGE_MODULES`)."""
    STAGES[0] = stages
    for name in [
        n
        for n in sys.modules
        if n == "sglang" or n.startswith("sglang.") or n.partition(".")[0] in ABSENT
    ]:
        if n_is_stub_or_sglang(name):
            del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]
    sys.meta_path.insert(0, _Finder(root))
    import importlib

    if stages:  # submodules read with `from package import module` must be real attributes
        for name in STAGE_MODULES:
            importlib.import_module(name)
    return importlib.import_module(REAL[0])


def n_is_stub_or_sglang(name: str) -> bool:
    """Whether module `name` may be dropped: sglang's, or a stub of an absent package."""
    return (
        name == "sglang"
        or name.startswith("sglang.")
        or isinstance(sys.modules.get(name), _StubModule)
    )
