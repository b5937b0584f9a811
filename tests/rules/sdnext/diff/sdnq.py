"""SD.Next's SDNQ quantizer at the modelled snapshot d11a619, verified before it runs.

The LoRA merge of SD.Next (`modules/lora/lora_apply.py` `network_add_weights`) re-quantizes a
patched SDNQ layer with `modules/sdnq/quant_utils.py` `quantize_weight` (and, for FP4,
`packed_float.pack_float`); test_diff_lora.py runs those against `numeric/lora_requant.py`.
Where the code comes from (first that works):
1. `QUANTCHECK_SDNEXT_SRC`: a folder holding `modules/sdnq/` of d11a619 (a checkout);
2. the cache `~/.cache/quantcheck/sdnext/<commit>/` (or `$QUANTCHECK_SDNEXT_CACHE/<commit>/`),
   filled once by `git fetch --depth 1` of the commit (git checks the objects; the fetched
   commit must be the pin).
Each executed file must match its SHA-256 pin. `modules.shared` and `modules.devices` (the
web UI's settings and device helpers) are stubbed: the CPU, no options set. Nothing of SD.Next
is stored in this repository.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

URL = "https://github.com/vladmandic/sdnext"
COMMIT = "d11a619a643e6dbce0e0bf3cd0a56cfdf0588140"
PINS = {
    "modules/sdnq/common.py": "8814d0598695ff5e33325a7f6d0838f02e1679e7f9222dab0f13f3733a28d0de",
    "modules/sdnq/quant_utils.py": (
        "198e976739152bb8c8aa7a16caf3c026485a088d087d8dc1234eda7e4599289d"
    ),
    "modules/sdnq/kernel_wrappers.py": (
        "660e71f601620696fc1f2f5dc1d797eadd55abfd2f27d6b9376eb13ba7163478"
    ),
    "modules/sdnq/utils.py": "2c0a7d305c92819bfa22428ee1212f4cd28d6c6f2519ad0943bc7c21ca353c4b",
    "modules/sdnq/packed_float.py": (
        "1ed701195f753804610578268218926ee987d0135a7756e3391c083fbc4c8aed"
    ),
    "modules/sdnq/packed_int/__init__.py": (
        "2480acc89b1c482804d3c3cbacb57de8598bc6a382fe7a0a5a5343c4bbcbb04d"
    ),
    "modules/sdnq/packed_int/pack.py": (
        "d299ff90767a72dc7df068bbed11343866218361303ea9e7ffa3deffe76146f5"
    ),
    "modules/sdnq/packed_int/unpack.py": (
        "d86406307e412eb5f0781cca0f34f704a245c3e2f38ae5bedb5eff1f4ed57856"
    ),
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _verified(root: Path) -> Path:
    bad = [
        f"{rel}: {'missing' if not (root / rel).exists() else _sha(root / rel)}"
        for rel, want in PINS.items()
        if not (root / rel).exists() or _sha(root / rel) != want
    ]
    if bad:
        raise RuntimeError("SD.Next source is not the pinned code:\n" + "\n".join(bad))
    return root


def _fetch(into: Path) -> bool:
    with tempfile.TemporaryDirectory() as scratch:

        def git(*args: str) -> subprocess.CompletedProcess[bytes]:
            return subprocess.run(
                ["git", "-C", scratch, *args], capture_output=True, timeout=600, check=False
            )

        git("init", "-q")
        if git("fetch", "--depth", "1", "-q", URL, COMMIT).returncode != 0:
            return False
        if git("rev-parse", "FETCH_HEAD").stdout.decode().strip() != COMMIT:
            raise RuntimeError(f"fetched commit is not the pinned {COMMIT}")
        for rel in PINS:
            shown = git("show", f"{COMMIT}:{rel}")
            target = into / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(shown.stdout)
    return True


def tree() -> Path | None:
    """A verified folder holding the pinned files, or None when none can be had."""
    given = os.environ.get("QUANTCHECK_SDNEXT_SRC")
    if given:
        return _verified(Path(given))
    cache = (
        Path(os.environ.get("QUANTCHECK_SDNEXT_CACHE", Path.home() / ".cache/quantcheck/sdnext"))
        / COMMIT
    )
    if not all((cache / rel).exists() for rel in PINS) and not _fetch(cache):
        return None
    return _verified(cache)


class _Anything:
    def __getattr__(self, name: str) -> Any:
        return None


def load_sdnq(root: Path) -> types.SimpleNamespace:
    """SD.Next's `quant_utils` and `packed_float`, with `modules.shared` / `modules.devices`
    stubbed (no options set; the CPU) and the `modules.sdnq` package's own `__init__` not
    run."""
    import torch

    for name in [n for n in sys.modules if n == "modules" or n.startswith("modules.")]:
        del sys.modules[name]
    package = types.ModuleType("modules")
    package.__path__ = [str(root / "modules")]
    sys.modules["modules"] = package
    # modules/sdnq/__init__.py imports the whole quantizer (transformers, diffusers): the
    # package is an empty one over the folder, its submodules the real files
    sdnq = types.ModuleType("modules.sdnq")
    sdnq.__path__ = [str(root / "modules/sdnq")]
    sys.modules["modules.sdnq"] = package.sdnq = sdnq  # type: ignore[attr-defined]
    shared = types.ModuleType("modules.shared")
    shared.opts = shared.cmd_opts = _Anything()  # type: ignore[attr-defined]
    devices = types.ModuleType("modules.devices")
    devices.__dict__.update(
        device=torch.device("cpu"),
        cpu=torch.device("cpu"),
        dtype=torch.float32,
        backend="cpu",
        inference_context=torch.inference_mode,
        normalize_device=torch.device,
    )
    for m in (shared, devices):
        sys.modules[m.__name__] = m
        setattr(package, m.__name__.split(".")[1], m)
    return types.SimpleNamespace(
        quant_utils=importlib.import_module("modules.sdnq.quant_utils"),
        packed_float=importlib.import_module("modules.sdnq.packed_float"),
    )
