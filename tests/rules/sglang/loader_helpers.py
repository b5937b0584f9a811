"""Test helpers for sglang's per-loader verdicts (rules/sglang/loaders.py): most tests are about
the marker path (sglang's text-encoder loader order), not about the loaders that never read the
markers (--transformer-weights-path, --comfyui-mode), whose findings name their loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: the loaders' own codes: a loader that cannot read any such file says so with one of them
LOADER_CODES = frozenset(f"QC63{i}" for i in range(1, 9))


def marker_path(report: Any, key: str = "sglang") -> str:
    """sglang's verdict through its marker path: the text-encoder loader's order (header path,
    then the markers; 0.5.18: its one transformer loader)."""
    loaders = report.target_status(key)["loaders"]
    v = loaders.get("text-encoder") or loaders["transformer-weights-path"]
    return str(v["status"])


def core(diags: list[Any]) -> list[Any]:
    """The findings that do not name a loader (the marker path's and every other runtime's)."""
    return [d for d in diags if not d.data.get("loaders")]


def core_codes(diags: list[Any]) -> set[str]:
    return {d.code for d in core(diags)}


#: `--ignore` of the loaders' codes, for tests about something else (transport, discovery,
#: rendering) that run `check` on marked files: every marked file fails a loader of sglang
#: that never reads markers (tests/rules/sglang/test_loader_findings.py covers those)
IGNORE_LOADERS = ("--ignore", ",".join(sorted(LOADER_CODES)))


def without_loaders(argv: list[str] | tuple[str, ...]) -> list[str]:
    """`argv` of a `check` command with `IGNORE_LOADERS` added (other commands as given)."""
    argv = list(argv)
    return ["check", *IGNORE_LOADERS, *argv[1:]] if argv[:1] == ["check"] else argv


#: the key ComfyUI's text-encoder detection tests for T5-XXL (`families/table.py`): a file that
#: has it is a text encoder to sglang's loader choice, read by its text-encoder loader, whose
#: order (header path, then the markers) is quantcheck's sglang marker rules'
T5_KEY = "encoder.block.23.layer.1.DenseReluDense.wi_1.weight"


def as_text_encoder(make: Any) -> Any:
    """`make` (a `tests/rules/_build.py` tensor list maker) with `T5_KEY` added: the text-encoder
    loader then decides sglang's verdict (the marker path's release data shows in it). A
    second BF16 module keeps the layout comparison unsure (`families/detection.py`
    UNSURE_EXTRA), so no T5 module is called missing."""
    from .._build import t

    return lambda: [*make(), t(T5_KEY, "BF16", (64, 64)), t("extra.weight", "BF16", (64, 64))]


def text_encoder_copy(src: Path, dst: Path) -> Path:
    """A copy of the safetensors file `src` at `dst` with the tensors `as_text_encoder` adds
    (BF16 zeros): the same findings, read by sglang's text-encoder loader."""
    raw = src.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    data = bytearray(raw[8 + n :])
    for name in (T5_KEY, "extra.weight"):
        header[name] = {
            "dtype": "BF16",
            "shape": [64, 64],
            "data_offsets": [len(data), len(data) + 64 * 64 * 2],
        }
        data += bytes(64 * 64 * 2)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    dst.write_bytes(len(text).to_bytes(8, "little") + text + bytes(data))
    return dst
