"""The sglang plugin (`pip install 'quantcheck[sglang]'`): every problem at once, before the load.

sglang 0.5.23's diffusion runtime (`sglang.multimodal_gen`) runs the callables of the entry-point
group `sglang.multimodal_gen.plugins` in `load_plugins()` (only those named in `SGLANG_PLUGINS`
when that is set) and patches the hooks they registered in `apply_plugin_hooks()`; both are
called by `runtime/managers/worker_bootstrap.py` before a worker builds a model
(`runtime/platforms/plugins.py`: `plugin_hook(target, type=HookType.…)`). This module's
`register` is that callable (entry-point name `quantcheck`): it puts a BEFORE hook on sglang's
Comfy marker inspector, `runtime/utils/quantization_utils.inspect_comfy_quant_markers`, which
every Comfy checkpoint passes through (transformer, text encoder, MiniMax-H3 and Qwen-Image 2.1
loaders). The hook reads the headers of the same files, runs quantcheck's rules for the sglang
release installed (its distribution version, read at run time, `runtimes/versions.py`), and on
a blocking finding raises one `ValueError` listing every problem with its code and fix, where
sglang would stop at the first. A clean file goes on to sglang's own inspector unchanged (the
hook returns None: the arguments are passed on as given). Without the plugin, or with
`SGLANG_PLUGINS` naming other plugins only, sglang never imports this module.
"""

from __future__ import annotations

import logging
from importlib import metadata

from quantcheck.errors import InputError
from quantcheck.integrations.preflight import blocking_error, preflight, warning_lines
from quantcheck.runtimes.versions import release_for_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the entry-point name (what `SGLANG_PLUGINS` lists) and group, as in pyproject.toml
ENTRY_POINT = "quantcheck"
GROUP = "sglang.multimodal_gen.plugins"
#: the function the hook runs before (sglang 0.5.23)
HOOK_TARGET = "sglang.multimodal_gen.runtime.utils.quantization_utils.inspect_comfy_quant_markers"
log = logging.getLogger("quantcheck.sglang")


def register() -> None:
    """The entry point's callable: register the BEFORE hook with sglang's plugin registry."""
    from sglang.multimodal_gen.runtime.platforms.plugins import (  # type: ignore[import-not-found]
        HookType,
        plugin_hook,
    )

    plugin_hook(HOOK_TARGET, type=HookType.BEFORE)(check_before_inspection)


def installed_sglang() -> str:
    """The version of the installed `sglang` distribution ("" when it has no metadata)."""
    try:
        return metadata.version("sglang")
    except metadata.PackageNotFoundError:
        return ""


def check_before_inspection(*args: Any, **kwargs: Any) -> None:
    """The hook: raise ValueError with every blocking problem of the files sglang is about to
    inspect; log the rest; return None (sglang's inspector then runs on the same arguments).
    A file quantcheck cannot read is left to sglang's own error."""
    files = kwargs.get("safetensors_list", args[0] if args else None)
    if not files:
        return None
    paths = [str(f) for f in files]
    version = installed_sglang()
    target, note = release_for_version("sglang", version or "unknown")
    try:
        # the marker inspector runs: a loader that reads the markers (MiniMax-H3's own
        # inspection reads them whatever the header says), not --transformer-weights-path
        pf = preflight(paths, target, loader="minimax-h3")
    except InputError as exc:
        log.warning("quantcheck could not read %s: %s", ", ".join(paths), exc)
        return None
    if pf.blocking:
        raise ValueError(blocking_error(pf, f"sglang {version or '(version unknown)'}", note))
    for line in warning_lines(pf):
        log.warning("quantcheck: %s", line)
    return None
