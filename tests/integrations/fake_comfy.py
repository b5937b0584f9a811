"""Just enough of ComfyUI's modules for the node pack to import and run outside ComfyUI.

`install(monkeypatch, models, v3=...)` puts fake `folder_paths`, `comfy.sd`, `comfy.utils`,
`comfy.model_management`, `comfyui_version` (0.33.0, CPU device) and, with `v3`, a recording
`comfy_api.latest` into sys.modules; `load_pack()` imports integrations/comfyui the way ComfyUI's
nodes.load_custom_node does (a package from its __init__.py, under a path-derived name).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

PACK = Path(__file__).resolve().parents[2] / "integrations" / "comfyui"


class Calls:
    """What the fake loaders were called with, and the objects they returned."""

    def __init__(self) -> None:
        self.unet: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.torch_file: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.returned: list[object] = []


def _recorder(name: str) -> type:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs

    return type(name, (), {"__init__": __init__})


def fake_v3() -> types.ModuleType:
    latest = types.ModuleType("comfy_api.latest")
    io = types.SimpleNamespace()
    io.Schema = _recorder("Schema")
    io.NodeOutput = _recorder("NodeOutput")
    io.ComfyNode = type("ComfyNode", (), {})
    for kind in ("Combo", "String", "Boolean"):
        setattr(
            io,
            kind,
            types.SimpleNamespace(
                Input=_recorder(f"{kind}.Input"), Output=_recorder(f"{kind}.Output")
            ),
        )
    latest.io = io  # type: ignore[attr-defined]
    latest.ui = types.SimpleNamespace(PreviewText=_recorder("PreviewText"))  # type: ignore[attr-defined]
    latest.ComfyExtension = type("ComfyExtension", (), {})  # type: ignore[attr-defined]
    return latest


def install(monkeypatch: Any, models: Path, *, v3: bool) -> Calls:
    calls = Calls()
    folders = {
        "diffusion_models": models / "diffusion_models",
        "text_encoders": models / "text_encoders",
        "loras": models / "loras",
    }
    for f in folders.values():
        f.mkdir(parents=True, exist_ok=True)
    fp = types.ModuleType("folder_paths")
    fp.get_folder_paths = lambda name: [str(folders[name])]  # type: ignore[attr-defined]
    fp.get_filename_list = lambda name: sorted(os.listdir(folders[name]))  # type: ignore[attr-defined]
    fp.get_full_path = lambda name, file: str(folders[name] / file)  # type: ignore[attr-defined]

    comfy = types.ModuleType("comfy")
    sd = types.ModuleType("comfy.sd")
    utils = types.ModuleType("comfy.utils")
    mm = types.ModuleType("comfy.model_management")

    def load_torch_file(
        ckpt: str, safe_load: bool = False, device: Any = None, return_metadata: bool = False
    ) -> object:
        calls.torch_file.append(
            ((ckpt,), {"safe_load": safe_load, "return_metadata": return_metadata})
        )
        out = object()
        calls.returned.append(out)
        return out

    def load_diffusion_model(
        unet_path: str, model_options: Any = None, disable_dynamic: bool = False
    ) -> object:
        calls.unet.append(((unet_path,), {"model_options": model_options}))
        utils.load_torch_file(unet_path, return_metadata=True)
        out = object()
        calls.returned.append(out)
        return out

    sd.load_diffusion_model = load_diffusion_model  # type: ignore[attr-defined]
    utils.load_torch_file = load_torch_file  # type: ignore[attr-defined]
    mm.get_torch_device = lambda: types.SimpleNamespace(type="cpu")  # type: ignore[attr-defined]
    # ComfyUI 783545f6 with --cpu: no FP8, NVFP4 or MXFP8 compute (its log: "emulated ops")
    for gate in ("supports_fp8_compute", "supports_nvfp4_compute", "supports_mxfp8_compute"):
        setattr(mm, gate, lambda device: False)
    comfy.sd, comfy.utils, comfy.model_management = sd, utils, mm  # type: ignore[attr-defined]
    version = types.ModuleType("comfyui_version")
    version.__version__ = "0.33.0"  # type: ignore[attr-defined]
    mods = {
        "folder_paths": fp,
        "comfy": comfy,
        "comfy.sd": sd,
        "comfy.utils": utils,
        "comfy.model_management": mm,
        "comfyui_version": version,
    }
    if v3:
        api = types.ModuleType("comfy_api")
        mods |= {"comfy_api": api, "comfy_api.latest": fake_v3()}
    else:
        mods |= {"comfy_api": None, "comfy_api.latest": None}  # type: ignore[dict-item]
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    return calls


def load_pack(monkeypatch: Any, name: str = "custom_nodes_x_quantcheck") -> types.ModuleType:
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        monkeypatch.delitem(sys.modules, mod)
    spec = importlib.util.spec_from_file_location(name, PACK / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module
