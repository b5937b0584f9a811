"""Screenshot of "Check Quantized Model" in ComfyUI's own frontend (headless Chromium).

    python tests/integrations/comfyui_screenshot.py COMFYUI_SRC COMFYUI_PYTHON OUT.png

Run with an interpreter that has aiohttp (the ComfyUI venv's). Starts ComfyUI (--cpu) with the
pack and the Flux examples, opens its page in /usr/bin/chromium with a DevTools port, builds a
graph with the frontend's own LiteGraph (the node on the broken example, its report shown by
Preview Any), queues it from the page, and captures the page once the node shows its summary.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.integrations.comfyui_live import ComfyServer, free_port, prepare

from quantcheck.render.html.chromium import FLAGS, find_chromium

GRAPH_JS = """
(async () => {
  const app = window.app, LG = window.LiteGraph;
  app.graph.clear();
  const check = LG.createNode("QuantcheckCheckModel");
  check.pos = [90, 120];
  check.size = [430, check.size[1]];
  app.graph.add(check);
  check.widgets.find(w => w.name === "model").value = "diffusion_models/flux_broken.safetensors";
  const show = LG.createNode("PreviewAny");
  show.pos = [560, 100];
  show.size = [700, 380];
  app.graph.add(show);
  check.connect(0, show, 0);
  app.canvas.ds.scale = 1.0;
  app.canvas.ds.offset = [0, 0];
  app.graph.setDirtyCanvas(true, true);
  await app.queuePrompt(0);
  return "queued";
})()
"""
DONE_JS = """
(() => { const n = window.app.graph._nodes.find(n => n.type === "QuantcheckCheckModel");
  const w = n && n.widgets && n.widgets.find(w => w.name === "quantcheck_summary");
  return w ? String(w.value) : ""; })()
"""


async def cdp(ws_url: str, out: Path) -> str:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.ws_connect(ws_url, max_msg_size=0) as ws:
        ids = iter(range(1, 10**6))

        async def call(method: str, **params: object) -> dict:
            i = next(ids)
            await ws.send_json({"id": i, "method": method, "params": params})
            while True:
                msg = json.loads((await ws.receive()).data)
                if msg.get("id") == i:
                    return msg.get("result", {})

        async def js(expr: str) -> object:
            r = await call(
                "Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True
            )
            return r.get("result", {}).get("value")

        await call(
            "Emulation.setDeviceMetricsOverride",
            width=1300,
            height=520,
            deviceScaleFactor=1,
            mobile=False,
        )
        for _ in range(240):
            if await js("!!(window.app && window.app.graph && window.LiteGraph)"):
                break
            await asyncio.sleep(0.5)
        await asyncio.sleep(2)
        await js("document.querySelectorAll('.p-dialog-mask, .p-dialog').forEach(e => e.remove())")
        print(await js(GRAPH_JS))
        summary = ""
        for _ in range(240):
            summary = str(await js(DONE_JS) or "")
            if summary:
                break
            await asyncio.sleep(0.5)
        await asyncio.sleep(2)
        for _ in range(3):  # the first-run template browser and any other dialog
            await call(
                "Input.dispatchKeyEvent",
                type="keyDown",
                key="Escape",
                code="Escape",
                windowsVirtualKeyCode=27,
            )
            await call(
                "Input.dispatchKeyEvent",
                type="keyUp",
                key="Escape",
                code="Escape",
                windowsVirtualKeyCode=27,
            )
            await js(
                "document.querySelectorAll('.p-dialog-mask, [class*=minimap]')"
                ".forEach(e => e.remove())"
            )
            await asyncio.sleep(0.5)
        await js("window.app.graph.setDirtyCanvas(true, true)")
        await asyncio.sleep(1)
        shot = await call("Page.captureScreenshot", format="png")
        out.write_bytes(base64.b64decode(shot["data"]))
        return summary


def main(source: str, python: str, out: str) -> None:
    base = Path(tempfile.mkdtemp(prefix="qc-shot-"))
    prepare(base)
    server = ComfyServer(Path(source), python, base, {"QUANTCHECK_GUARD": "0"})
    port = free_port()
    profile = base / "chromium"
    browser = subprocess.Popen(
        [
            find_chromium() or "/usr/bin/chromium",
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--remote-debugging-port={port}",
            "--window-size=1300,560",
            server.url,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import urllib.request

        ws_url = ""
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=5) as r:
                    pages = [p for p in json.loads(r.read()) if p.get("type") == "page"]
                if pages:
                    ws_url = pages[0]["webSocketDebuggerUrl"]
                    break
            except OSError:
                pass
            time.sleep(0.5)
        print("summary:", asyncio.run(cdp(ws_url, Path(out))))
    finally:
        browser.terminate()
        browser.wait(30)
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
