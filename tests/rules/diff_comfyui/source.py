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
LOADER_FILES = ("comfy/utils.py", "comfy/model_detection.py", "comfy/sd.py")
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
}
#: Which commit each file is fetched at.
FETCH = {COMMIT: FILES, LOADER_COMMIT: LOADER_FILES}
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
    """The source text of top-level function `name` in `path` (KeyError if absent)."""
    text = path.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
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
