"""ComfyUI's code at the pinned commit, from a reproducible source, verified before it runs.

Where it comes from (first that works):
1. `QUANTCHECK_COMFYUI_SRC`: a folder holding `comfy/quant_ops.py` and `comfy/ops.py` at the
   pin, and `comfy/utils.py`, `comfy/model_detection.py`, `comfy/sd.py` at LOADER_COMMIT (or
   only the pinned functions of those files). Nothing there is trusted: each definition the
   tests execute must match its SHA-256 pin below.
2. The cache `~/.cache/quantcheck/comfyui/<commit>/` (or `$QUANTCHECK_COMFYUI_CACHE/<commit>/`),
   filled once by `git fetch --depth 1 https://github.com/Comfy-Org/ComfyUI <commit>` (for
   each of the two commits) into a scratch repository: git checks every object against its
   id, and the fetched commit must be the pin (`git rev-parse FETCH_HEAD`); the needed files
   are then written with `git show`.

Only the pieces the tests run are executed (see loader.py); the pins cover exactly those.
Nothing of ComfyUI is stored in this repository.

The project's machines (and CI) reach no GitHub host, and the code-search mirror of
Comfy-Org/ComfyUI there is a 2025-10 snapshot without the pin; so the tests were run with
`QUANTCHECK_COMFYUI_SRC` pointing at a folder holding `comfy/quant_ops.py` and the two pinned
functions of `comfy/ops.py`, written from the code index's stored copy of those files at
0271a469, and the loader files of 783545f6 from a git mirror of ComfyUI (outside the
repository). The pins were computed from that copy; the first run from a
`git fetch` of the commit confirms them (a mismatch fails, naming both hashes).
"""

from __future__ import annotations

import ast
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

URL = "https://github.com/Comfy-Org/ComfyUI"
#: Comfy-Org/ComfyUI 0271a469 (quantcheck's reference commit for its ComfyUI rules).
COMMIT = "0271a469fe29524fafe5872b737123d65a63e5fc"
#: The files read at the pin.
FILES = ("comfy/quant_ops.py", "comfy/ops.py")
#: ComfyUI 783545f6: the key plumbing before any layer is built (comfy/sd.py
#: load_diffusion_model_state_dict and what it calls), read at that commit (the loader facts'
#: commit for sd.py and utils.py; the code index holds only ops.py and quant_ops.py at
#: 0271a469). Its files sit beside the pinned ones in the same tree.
LOADER_COMMIT = "783545f689a0af730065994b46b382ae24844c99"
LOADER_FILES = (
    "comfy/utils.py",
    "comfy/model_detection.py",
    "comfy/sd.py",
    "comfy/supported_models.py",
    "comfy/supported_models_base.py",
    "comfy/latent_formats.py",
)
#: ComfyUI 783545f6: how a LoRA is loaded and patched (test_diff_lora.py): comfy/lora.py
#: (model_lora_keys_unet, load_lora, calculate_weight), lora_convert.py, the weight adapters,
#: and float.py (the stochastic rounding quant_ops calls when it re-quantizes a patched layer).
LORA_FILES = (
    "comfy/lora.py",
    "comfy/lora_convert.py",
    "comfy/float.py",
    *(
        f"comfy/weight_adapter/{n}.py"
        for n in ("__init__", "base", "boft", "bypass", "glora", "loha", "lokr", "lora", "oft")
    ),
)
#: SHA-256 of what is executed: a whole file, or `path::function` (the function's source text
#: as `ast.get_source_segment` returns it). Taken from the file text at 0271a469 (ops.py,
#: quant_ops.py) and 783545f6 (the rest).
PINS = {
    "comfy/quant_ops.py": "acb89f938544e50ca910bd48f8d10ecda245ff0028b8988830000c97bbdbaebc",
    "comfy/ops.py::_load_quantized_module": (
        "5ded89d9facfb509dc049d8628ca7f5d80cb60a937b649f60183ee25d4d925f6"
    ),
    "comfy/ops.py::get_disabled_quant_formats": (
        "077aba6c842a1dc8f09e2657af2787f724aece2e36ae005c75f4ba8537804b3a"
    ),
    "comfy/utils.py::convert_old_quants": (
        "58d5013a0932e78ffe0cf2f1ed01a3e886dd3626da84c5be57a26b49f5bbea93"
    ),
    "comfy/utils.py::state_dict_prefix_replace": (
        "09a35481e7a5d4ee8cb418bb915c8886f2b4d929a2524c4bb8b9a4b2c1d262d0"
    ),
    "comfy/model_detection.py::unet_prefix_from_state_dict": (
        "87bac94ccde648d12c2a83dadf4e7ef20cda4c44a5389ca5aa8ac1abb3d44882"
    ),
    "comfy/sd.py::load_diffusion_model_state_dict": (
        "cd79d8bb0f32b6259ed73c1dee480a061e96ee2540615554de69059fb61f91b8"
    ),
    # model detection (detection.py): these files whole, and the pieces of utils.py and sd.py
    # it calls
    "comfy/model_detection.py": "ead7ef2738fecd266eddd1eb36dbd7c29d1f16d13768f294d176c5354f744212",
    "comfy/supported_models.py": "0f978036c17dfee74d106f04f0d361198c0d444b4e1839e2cd8920a9dcebd40c",
    "comfy/supported_models_base.py": (
        "0b234d6f6ceacd04ff96e4126c388cd7c763e21a7d1aed672ba3a235d7a914a5"
    ),
    "comfy/latent_formats.py": "a37809a0139ee492b7246dac4fb8adcd0b6428591b2d929d73b5747f5c6860d7",
    "comfy/utils.py::detect_layer_quantization": (
        "afbad431c71e7be4e2c6e5e9fcc8577ae631504b82dc20b910c664f4690e2b35"
    ),
    "comfy/sd.py::TEModel": "cf805d201c087340fa330136d627b035488b7763cb685c262a9035b83e69bd88",
    "comfy/sd.py::detect_te_model": (
        "91786ffe284a4460e4480bc35a073daa064a75ee074a96ca677fcd3bef0f220d"
    ),
    # the LoRA path (test_diff_lora.py), 783545f6
    "comfy/lora.py": "8f75c95ddc8ab0144919fe5277c4e6b4fa4f4f45aa64aa3de5d2d3b1b4a927d8",
    "comfy/lora_convert.py": "0790e993706b6e5c255fd4000f8f48abed80e318274da5264681eb799df25d0b",
    "comfy/float.py": "3a6e6c6fb306b5827378f8b2a551984d89b2b9719c24cff39abc423fc1f37c01",
    "comfy/weight_adapter/__init__.py": (
        "d9fe388a6bd3b93212a5e04b8921759841e2cf88939cfcc3a7bf59e16505edd0"
    ),
    "comfy/weight_adapter/base.py": (
        "484f0d83a96e700f80c793e4bcc6a897d633233e51a59191d91da5e59da345c7"
    ),
    "comfy/weight_adapter/boft.py": (
        "2850e0b4c2295cd87445415e287061fa3bfd69e88bd0aeb3eb16064864bd078d"
    ),
    "comfy/weight_adapter/bypass.py": (
        "618c286c5f74e823318f41774e02cfcfa02d74ee9d51320ec0aa2694cd74aa8e"
    ),
    "comfy/weight_adapter/glora.py": (
        "31cdd03f5b0beaa0df055512560128930f4f26b219ba57602d21abb086425b09"
    ),
    "comfy/weight_adapter/loha.py": (
        "579ca1e33e0d244e0d7eedd30fb727913341f8e7bfbd74b51221f567612286d5"
    ),
    "comfy/weight_adapter/lokr.py": (
        "b4763cc32215a47e4d906cfa6cbad9cf893f6a1329ada2225fda81fd99fcfeb4"
    ),
    "comfy/weight_adapter/lora.py": (
        "e506062b4eb189be4c36f88270e0fd4dcce038c79a98f7163604ed6b44efe4b5"
    ),
    "comfy/weight_adapter/oft.py": (
        "88be3c32f610478bc6900a10009eaadf6fe2af973ed4861731e4f21e1afacf89"
    ),
    "comfy/utils.py::unet_to_diffusers": (
        "59297611ed60555fa39c78f72efa1cfdd6a6b9beb8bad142f50b38a5c063de3d"
    ),
    "comfy/utils.py::flux_to_diffusers": (
        "e24233f139ea3ba5a6add7f61584d3a672ad39cb698bfdc56db6fb8afc2f5efb"
    ),
    "comfy/utils.py::string_to_seed": (
        "41ac7d03d126012b398441f1766f6a102685ed202b6385c6dcc5628a533e3780"
    ),
    # the diffusers tables of model_lora_keys_unet's family branches (test_diff_lora_families)
    "comfy/utils.py::swap_scale_shift": (
        "8b3d10d586fd4d7d454f41b6a18726c2ab412b8b658a926a4d6e5f84fa76b7e9"
    ),
    "comfy/utils.py::MMDIT_MAP_BASIC": (
        "e48a45dc2d8781f255a582baef48324f38b07f66e737137278e4410c52306db8"
    ),
    "comfy/utils.py::MMDIT_MAP_BLOCK": (
        "57edec61084dbea43a35bf4bd1840fc62d6cbe44c2135cd8a672ebca7dcf62e7"
    ),
    "comfy/utils.py::mmdit_to_diffusers": (
        "d4e8a0bf259969bed22c928b881378ad33e37884f5e4d34e15ae4922c29d3d67"
    ),
    "comfy/utils.py::PIXART_MAP_BASIC": (
        "011d57f864d5b705ea5d69727bf5e4997f4f8e82d45dc06d72dd72ecb5817650"
    ),
    "comfy/utils.py::PIXART_MAP_BLOCK": (
        "15e48b65042cec1d442cbc39c62387eb6cd0773c6f5ace8ffebe91f9fc9dc95d"
    ),
    "comfy/utils.py::pixart_to_diffusers": (
        "56f76b0e68d47b4d372468f42c47484de9d32ff6c74e24be54038ea6503dbadd"
    ),
    "comfy/utils.py::auraflow_to_diffusers": (
        "a1bb3cb817cef6c4cff42a25e989001795b8fb410b03ed8a02f6da74541c738b"
    ),
    "comfy/utils.py::krea2_to_diffusers": (
        "685bb1530ca5b43a0b2290467e53c6f5409ed0250cc2d8077e1d21f65f1562f7"
    ),
    "comfy/utils.py::z_image_to_diffusers": (
        "97478ba08af06347eba81fae32a18a3e5b473e176289a1bf2d63f5f1bf3803cf"
    ),
}
#: Which commit each file is fetched at.
FETCH = {COMMIT: FILES, LOADER_COMMIT: LOADER_FILES + LORA_FILES}
#: The GPU oracle's files (gpu_oracle.py), pinned whole: `whole/comfy/ops.py` is comfy/ops.py
#: @0271a469 in full (the tree's `comfy/ops.py` holds only two of its functions), and
#: comfy/model_management.py @783545f6 (the device gates `supports_*_compute`, the module
#: state they read, `cast_to`), and @783545f6's DynamicVRAM switch: `enables_dynamic_vram`
#: (comfy/cli_args.py) and `dynamic_vram_supported` with the `if` that uses them (main.py).
#: The suite skips its GPU cases when they are absent.
GPU_PINS = {
    "whole/comfy/ops.py": "8fc3ee2386cdbfdf4eabdc8268514550bedd858a012f8c503433f289c6cf66e3",
    "comfy/model_management.py": (
        "ddf5fe6399398d9101850d42604dce20eec0a6b6cba18135ea4ad5d3da3de99e"
    ),
    "comfy/cli_args.py": "fc43d5f71e7a493414d843224732db23e48ad18d47d21537e563d8512d29f3c3",
    "main.py": "31f9ebf1dec72bda8b75aec72d46cee3c5bcd7382610dc26012e4fd635804073",
}
#: Where each GPU file comes from: path under the tree -> (commit, path in the repository).
GPU_FETCH = {
    "whole/comfy/ops.py": (COMMIT, "comfy/ops.py"),
    "comfy/model_management.py": (LOADER_COMMIT, "comfy/model_management.py"),
    "comfy/cli_args.py": (LOADER_COMMIT, "comfy/cli_args.py"),
    "main.py": (LOADER_COMMIT, "main.py"),
}


def cache_root() -> Path:
    default = Path.home() / ".cache" / "quantcheck" / "comfyui"
    return Path(os.environ.get("QUANTCHECK_COMFYUI_CACHE", default))


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def function_source(path: Path, name: str) -> str:
    """The source text of top-level function (or class, or `NAME = ...` assignment) `name` in
    `path` (KeyError if absent)."""
    text = path.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        named = isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name
        assigned = isinstance(node, ast.Assign) and [
            t.id for t in node.targets if isinstance(t, ast.Name)
        ] == [name]
        if named or assigned:
            segment = ast.get_source_segment(text, node)
            assert segment is not None
            return segment
    raise KeyError(f"{path}: no top-level function {name}")


def verify(root: Path) -> None:
    """Raise unless every pinned piece under `root` has its pinned SHA-256."""
    bad = []
    for key, want in PINS.items():
        rel, _, func = key.partition("::")
        path = root / rel
        if not path.exists():
            bad.append(f"{key}: missing under {root}")
            continue
        text = function_source(path, func) if func else path.read_text(encoding="utf-8")
        got = sha256(text)
        if got != want:
            bad.append(f"{key}: sha256 {got} is not the pinned {want}")
    if bad:
        raise RuntimeError("ComfyUI source is not the pinned code:\n" + "\n".join(bad))


def gpu_missing(root: Path) -> list[str]:
    """The GPU oracle's files absent under `root` (empty: all there)."""
    return [rel for rel in GPU_PINS if not (root / rel).exists()]


def verify_gpu(root: Path) -> None:
    """Raise unless every GPU oracle file under `root` is its pinned whole file."""
    bad = [
        f"{rel}: sha256 {got} is not the pinned {want}"
        for rel, want in GPU_PINS.items()
        if (got := sha256((root / rel).read_text(encoding="utf-8"))) != want
    ]
    if bad:
        raise RuntimeError("ComfyUI GPU source is not the pinned code:\n" + "\n".join(bad))


def _git_fetch(into: Path) -> bool:
    """Fetch the pinned commits with git and write their files under `into`; False if
    unreachable."""
    return all(_git_fetch_one(into, commit, files) for commit, files in FETCH.items()) and all(
        _git_fetch_one(into, commit, (rel,), under=tree_rel)
        for tree_rel, (commit, rel) in GPU_FETCH.items()
    )


def _git_fetch_one(
    into: Path, commit: str, files: tuple[str, ...], under: str | None = None
) -> bool:
    """Write `files` of `commit` under `into` (each at its own path, or the one file at
    `under`)."""
    with tempfile.TemporaryDirectory() as scratch:

        def git(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["git", "-C", scratch, *args],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )

        git("init", "-q")
        if git("fetch", "--depth", "1", "-q", URL, commit).returncode != 0:
            return False
        head = git("rev-parse", "FETCH_HEAD").stdout.strip()
        if head != commit:
            raise RuntimeError(f"fetched {head}, not the pinned {commit}")
        for rel in files:
            shown = git("show", f"{commit}:{rel}")
            if shown.returncode != 0:
                raise RuntimeError(f"{rel} is not in {commit}: {shown.stderr.strip()}")
            target = into / (under or rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(shown.stdout, encoding="utf-8")
    return True


def tree(*, download: bool = True) -> Path | None:
    """The verified ComfyUI tree to import from, or None when no source is reachable."""
    given = os.environ.get("QUANTCHECK_COMFYUI_SRC")
    if given:
        root = Path(given)
        verify(root)
        return root
    root = cache_root() / COMMIT
    if not (root / FILES[0]).exists():
        if not download:
            return None
        root.mkdir(parents=True, exist_ok=True)
        if not _git_fetch(root):
            return None
    verify(root)
    return root
