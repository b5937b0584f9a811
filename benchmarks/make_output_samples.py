"""Write the inputs of BENCHMARKS.md's "new-user output" figures (not a test).

    python benchmarks/make_output_samples.py DIR

writes, as sparse files (real headers and markers, weights are holes):

- DIR/int8_1080.safetensors: `make_big_checkpoint.py`'s default (1,080 layers, 840 INT8
  linears without ConvRot: 840 QC316 warnings);
- DIR/nvfp4_1g.safetensors: the same 6-block layout as NVFP4 (84 linears, 1.15 GB logical);
- DIR/folder/: 13 checkpoints — the 9 bundled examples, both files above and two smaller
  copies of them (12 and 24 blocks of hidden size 1024).

Then count the lines `quantcheck check` prints for each (see BENCHMARKS.md).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# sibling script, not a package
from make_big_checkpoint import Tensor, linear_shapes, write_sparse
from make_big_checkpoint import write as write_int8

MARKER = json.dumps({"format": "nvfp4"}).encode()


def write_nvfp4(path: Path, blocks: int, hidden: int) -> int:
    """A sparse NVFP4 checkpoint (U8 packed weight, F8_E4M3 block scales, F32 global scale);
    its logical size in bytes."""
    items: list[Tensor] = []
    for prefix, (n, k) in linear_shapes(blocks, hidden).items():
        items.append((f"{prefix}.weight", "U8", [n, k // 2], n * k // 2, None))
        items.append((f"{prefix}.weight_scale", "F8_E4M3", [n, k // 16], n * k // 16, None))
        items.append((f"{prefix}.weight_scale_2", "F32", [], 4, None))
        items.append((f"{prefix}.comfy_quant", "U8", [len(MARKER)], len(MARKER), MARKER))
    return write_sparse(str(path), items)[2]


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit(__doc__)
    out = Path(argv[0])
    folder = out / "folder"
    folder.mkdir(parents=True, exist_ok=True)
    write_int8(str(out / "int8_1080.safetensors"))
    size = write_nvfp4(out / "nvfp4_1g.safetensors", 6, 3072)
    print(f"nvfp4_1g.safetensors: {size / 1e9:.2f} GB logical")
    examples = Path(__file__).resolve().parents[1] / "examples"
    for f in sorted(examples.glob("*.safetensors")):
        shutil.copy(f, folder / f.name)
    write_int8(str(folder / "int8_1080.safetensors"))  # written again: a copy is not sparse
    write_nvfp4(folder / "nvfp4_1g.safetensors", 6, 3072)
    write_int8(str(folder / "int8_small.safetensors"), 12, 1024)
    write_nvfp4(folder / "nvfp4_small.safetensors", 24, 1024)
    print(f"{len(list(folder.glob('*.safetensors')))} checkpoints in {folder}")


if __name__ == "__main__":
    main(sys.argv[1:])
