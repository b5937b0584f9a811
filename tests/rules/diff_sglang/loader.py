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
    backend, the JIT group sizes, a logger."""
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


class _StubMeta(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        special = _special(name)
        return special if special is not None else _stub_class(name)

    def __getitem__(cls, item: Any) -> Any:
        return cls


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
    def is_mps(self) -> bool:
        return False

    def is_cuda(self) -> bool:
        return False

    def get_device_capability(self) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return _Stub()


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
        if fullname != "sglang" and not fullname.startswith("sglang."):
            return None
        file = self.root / (fullname.replace(".", "/") + ".py")
        if fullname in REAL and file.exists():
            return importlib.util.spec_from_file_location(fullname, file)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> Any:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: Any) -> None:
        pass


def load_release(root: Path) -> types.ModuleType:
    """`quantization_utils` of the release extracted at `root` (previous sglang modules are
    dropped from sys.modules first, so releases do not mix)."""
    for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
        del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]
    sys.meta_path.insert(0, _Finder(root))
    import importlib

    return importlib.import_module(REAL[0])
