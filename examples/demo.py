"""`make demo`: inspect and check the bundled examples — a clean file and a broken one."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent


def run(*args: str) -> int:
    cmd = [sys.executable, "-m", "quantcheck", *args]
    print(f"\n$ quantcheck {' '.join(args)}", flush=True)
    return subprocess.call(cmd)


def main() -> int:
    clean = str(HERE / "nvfp4.safetensors")
    broken = str(HERE / "broken_seeds.safetensors")
    run("inspect", "--summary", clean)
    code_clean = run("check", clean)
    run("inspect", broken)
    code_broken = run("check", broken)
    run("explain", "Comfy W4A8 layer 'blocks.0.attn.qkv' needs F32 channel scales, got BF16")
    with tempfile.TemporaryDirectory() as tmp:
        fixed = os.path.join(tmp, "fixed.safetensors")
        run("fix", broken, "-o", fixed, "--target", "sglang")
        code_fixed = run("check", "--target", "sglang", fixed)
    print(
        f"\ndemo: the clean file exited {code_clean} (0 = clean), the broken one "
        f"{code_broken} (1 = problems found); after `fix` the safe repairs are done and "
        f"what is left has no safe fix (exit {code_fixed})."
    )
    ok = (code_clean, code_broken) == (0, 1)
    if not ok:
        print("demo: FAILED: expected the clean file to exit 0 and the broken one 1")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
