"""Start a real ComfyUI with the node pack and talk to it over its HTTP API.

`ComfyServer(source, python, base)`: `source` is a full ComfyUI checkout (main.py), `python` the
interpreter of a venv with ComfyUI's requirements and quantcheck, `base` a fresh folder used as
`--base-directory` (models, custom_nodes, user, output). The pack is copied to
base/custom_nodes/quantcheck and the examples to base/models/diffusion_models.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "integrations" / "comfyui"
MODELS = (
    "flux_bf16.safetensors",
    "flux_fp8.safetensors",
    "flux_broken.safetensors",
    "flux_nvfp4.safetensors",
)
#: how long a start may take on a shared 2-core machine (it is ~7-11 s idle)
START_LIMIT = 600


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(base: Path) -> None:
    """The base directory: the pack in custom_nodes, the Flux examples as diffusion models."""
    shutil.copytree(
        PACK, base / "custom_nodes" / "quantcheck", ignore=shutil.ignore_patterns("__pycache__")
    )
    models = base / "models" / "diffusion_models"
    models.mkdir(parents=True)
    for name in MODELS:
        shutil.copyfile(ROOT / "examples" / "flux" / name, models / name)


class ComfyServer:
    def __init__(self, source: Path, python: str, base: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = base / f"comfyui-{self.port}.log"
        full_env = {**os.environ, **env, "PYTHONPATH": str(ROOT / "src")}
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                python,
                "main.py",
                "--cpu",
                "--listen",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--base-directory",
                str(base),
                "--disable-auto-launch",
            ],
            cwd=source,
            env=full_env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + START_LIMIT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ComfyUI exited at start:\n{self.text_log()[-4000:]}")
            try:
                self.get("/system_stats")
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("ComfyUI did not listen") from None
                time.sleep(1)

    def text_log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=60) as r:
            return json.loads(r.read())

    def post(self, path: str, doc: dict[str, Any]) -> Any:
        req = urllib.request.Request(
            self.url + path, json.dumps(doc).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def run(self, prompt: dict[str, Any], limit: float = 600) -> dict[str, Any]:
        """Queue `prompt` and return its /history entry once it finished."""
        pid = self.post("/prompt", {"prompt": prompt})["prompt_id"]
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            hist = self.get(f"/history/{pid}")
            if pid in hist and hist[pid].get("status", {}).get("completed") is not None:
                entry: dict[str, Any] = hist[pid]
                if entry["status"].get("status_str") in ("success", "error"):
                    return entry
            time.sleep(0.5)
        raise RuntimeError(f"prompt {pid} did not finish")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def check_prompt(model: str) -> dict[str, Any]:
    return {
        "1": {"class_type": "QuantcheckCheckModel", "inputs": {"model": model, "path": ""}},
        "2": {"class_type": "PreviewAny", "inputs": {"source": ["1", 0]}},
    }


def unet_prompt(name: str) -> dict[str, Any]:
    return {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": name, "weight_dtype": "default"}},
        "2": {"class_type": "PreviewAny", "inputs": {"source": ["1", 0]}},
    }


def error_message(entry: dict[str, Any]) -> str:
    """The exception message of a failed prompt (its execution_error status message)."""
    for kind, data in entry["status"].get("messages", []):
        if kind == "execution_error":
            return str(data.get("exception_message", ""))
    return ""
