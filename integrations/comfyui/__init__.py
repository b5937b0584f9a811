"""quantcheck for ComfyUI: the "Check Quantized Model" node and the opt-in pre-load guard.

ComfyUI loads this folder from custom_nodes/. Where ComfyUI has the V3 node API
(`comfy_api.latest`) the node is offered through `comfy_entrypoint`; otherwise through the V1
mappings (ComfyUI reads NODE_CLASS_MAPPINGS first, so only one of the two is defined). The
guard (guard.py) is off unless QUANTCHECK_GUARD=1.
"""

from __future__ import annotations

import logging

from . import guard

WEB_DIRECTORY = "./web"


def _has_v3() -> bool:
    try:
        import comfy_api.latest  # type: ignore[import-not-found]  # noqa: F401
    except Exception:
        return False
    return True


if _has_v3():
    from .nodes_v3 import comfy_entrypoint

    __all__ = ["WEB_DIRECTORY", "comfy_entrypoint"]
else:
    from .nodes_v1 import NODE_CLASS_MAPPINGS, NODE_DISPLAY_NAME_MAPPINGS

    __all__ = ["NODE_CLASS_MAPPINGS", "NODE_DISPLAY_NAME_MAPPINGS", "WEB_DIRECTORY"]

try:
    guard.install()
except Exception:  # the guard must never keep ComfyUI from starting
    logging.getLogger("quantcheck.guard").exception("quantcheck guard not installed")
