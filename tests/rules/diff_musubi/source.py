"""musubi-tuner's own checks, from outside the repository, verified before they run.

`QUANTCHECK_MUSUBI_SRC` names a folder holding, under `src/musubi_tuner/`:
- `modules/convrot_int8_utils.py`: the pre-quantized gate quantcheck's musubi target models,
  `inspect_convrot_int8_artifact` and what it calls, at kohya-ss/musubi-tuner 725869d
  (runtimes/musubi.py's release);
- `minimax_h3/text_encoder.py`: PR #1024's exact-topology check of the MiniMax H3 Qwen3-VL text
  encoder, `_validate_h3_text_encoder_convrot_topology` (with `LAYER_50_HIDDEN_STATE_INDEX`
  and `normalize_h3_text_encoder_key`), as the PR branch had it.

Only those definitions run (loader.py); each is pinned below by the SHA-256 of its source text
(decorators included). Nothing of musubi-tuner is stored in this repository.

The project's machines reach no GitHub host, and the code-search mirror of kohya-ss/musubi-tuner
is a snapshot older than PR #1024; the folder was written from the code index's stored copies
(convrot_int8_utils.py at 725869d; text_encoder.py from the PR branch, a copy whose commit the
index does not name) and the pins computed from it. The later musubi-tuner code no longer runs
the topology check (runtimes/musubi.py says which code says so).
"""

from __future__ import annotations

import ast
import hashlib
import os
from pathlib import Path

ENV = "QUANTCHECK_MUSUBI_SRC"
CONVROT = "src/musubi_tuner/modules/convrot_int8_utils.py"
TEXT_ENCODER = "src/musubi_tuner/minimax_h3/text_encoder.py"
#: file::definition -> SHA-256 of its source text
PINS = {
    f"{CONVROT}::ConvRotInt8LayerSpec": (
        "897d3f68e60a98796b9dc82aac269ee4bad88f575f943e42528a66af5b873091"
    ),
    f"{CONVROT}::ConvRotInt8Artifact": (
        "f9577d1b6343d91d9800d16720aa84c9f20d50f63cd647a0ccd7cbc0f6ea7e24"
    ),
    f"{CONVROT}::_HeaderTensor": (
        "23bf3d762ae7c6f1090237a70bbd573aa05b34010e34cb6518324ed2d8f39eb7"
    ),
    f"{CONVROT}::canonicalize_convrot_int8_key": (
        "8e1a20a36e17daf0e154cc41789da3cc0e469cef2e5f70d9ff04ad7bf39a3a11"
    ),
    f"{CONVROT}::_is_power_of_four": (
        "db4f54427b7b9f7f436b2fe1d8e8b0d188411eb0b86fc2ee2d1204ad27406e19"
    ),
    f"{CONVROT}::_artifact_error": (
        "85e5e662fc59720be4d3e3377894c2406127435cb67bd1467295ad23ddc26082"
    ),
    f"{CONVROT}::_decode_convrot_control": (
        "2dd723cb0d8afaa9ec00cfddb11bceeba443f475607dc20046175215a08b03c4"
    ),
    f"{CONVROT}::inspect_convrot_int8_artifact": (
        "6b5bff3eaf0653d23350013afeb7d73e495b787c74b17121518556490bb04e6c"
    ),
    f"{TEXT_ENCODER}::LAYER_50_HIDDEN_STATE_INDEX": (
        "5cfa06fec4f9029e0120bace56eeb43075b933f00ea9fdd84377569245497e96"
    ),
    f"{TEXT_ENCODER}::normalize_h3_text_encoder_key": (
        "516afbe0382f26f8aff586194433e55e6824f3404186e268aaf853c4fa1150bd"
    ),
    f"{TEXT_ENCODER}::_validate_h3_text_encoder_convrot_topology": (
        "ad81d06d8c21df7e690129a9ff1250bd4349f2701cd3fe3d011f4427acb936fb"
    ),
}


def definition(path: Path, name: str) -> str:
    """The source text of top-level definition `name` in `path`: a function or class with its
    decorators, or an assignment (KeyError if absent)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    for node in ast.parse(text).body:
        named = isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name
        assigned = isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        )
        if named or assigned:
            decorators = getattr(node, "decorator_list", [])
            first = min([node.lineno, *(d.lineno for d in decorators)])
            assert node.end_lineno is not None
            return "".join(lines[first - 1 : node.end_lineno])
    raise KeyError(f"{path}: no top-level definition {name}")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def root() -> Path | None:
    """The verified folder (None when QUANTCHECK_MUSUBI_SRC is unset); raises when a pinned
    definition is missing or differs."""
    value = os.environ.get(ENV)
    if not value:
        return None
    base = Path(value)
    bad = []
    for key, want in PINS.items():
        rel, _, name = key.partition("::")
        try:
            got = sha256(definition(base / rel, name))
        except (OSError, KeyError) as exc:
            bad.append(f"{key}: {exc}")
            continue
        if got != want:
            bad.append(f"{key}: sha256 {got} is not the pinned {want}")
    if bad:
        raise RuntimeError("musubi-tuner source is not the pinned code:\n" + "\n".join(bad))
    return base
