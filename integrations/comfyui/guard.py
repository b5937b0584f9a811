"""The opt-in pre-load guard: quantcheck reads a model's header before ComfyUI reads its weights.

Off unless the environment variable `QUANTCHECK_GUARD` is `1` (also `on`, `true`, `yes`; `warn`
only logs). When on, `install()` wraps two ComfyUI functions (upstream 783545f6):
`comfy.sd.load_diffusion_model(unet_path, model_options, disable_dynamic)` (UNETLoader and the
other diffusion-model loaders) and `comfy.utils.load_torch_file(ckpt, ...)` for a
.safetensors/.sft file inside ComfyUI's diffusion_models or text_encoders folders (CLIPLoader,
DualCLIPLoader and the other text-encoder loaders read them through it). Before the original
runs, the wrapper checks the file's header and markers for the running ComfyUI
(`runtime_facts.target_and_gpu`): a blocking finding raises one `QuantcheckGuardError` that
lists every problem with its code and fix, so nothing of the weights is read; degraded layers,
emulated formats (the running ComfyUI's own device gates) are logged as warnings, and so is
what quantcheck says of a LoRA loaded from the loras folder onto the diffusion model loaded
last (once its check takes `lora=`: the LoRA dimension). Then the original is called with
the very arguments it was given and its result returned as it is: the guard never changes what
ComfyUI loads. A file is checked once per (path, size, mtime).
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
from collections.abc import Callable
from typing import Any

from quantcheck.errors import InputError
from quantcheck.integrations.preflight import (
    accepted_keywords,
    blocking_error,
    preflight,
    warning_lines,
)

from .runtime_facts import comfyui_version, emulated_formats, target_and_gpu

ENV = "QUANTCHECK_GUARD"
ON = ("1", "on", "true", "yes")
WARN = ("warn",)
#: folder_paths names whose files the load_torch_file wrapper guards
GUARDED_FOLDERS = ("diffusion_models", "text_encoders")
SUFFIXES = (".safetensors", ".sft")
log = logging.getLogger("quantcheck.guard")
#: the path a wrapper is checking or loading now (the inner load_torch_file of
#: load_diffusion_model does not check it again)
_ACTIVE: contextvars.ContextVar[str | None] = contextvars.ContextVar("qc_active", default=None)
_SEEN: dict[tuple[str, int, int], str | None] = {}
#: the diffusion model the guard let through last: the base a LoRA loaded next is applied to
_LAST_MODEL: list[str] = []


class QuantcheckGuardError(ValueError):
    """A model file ComfyUI would fail to load, stopped before its weights were read."""


def mode(env: dict[str, str] | os._Environ[str] | None = None) -> str:
    """ "block", "warn" or "off" from `QUANTCHECK_GUARD`."""
    value = (os.environ if env is None else env).get(ENV, "").strip().lower()
    return "block" if value in ON else "warn" if value in WARN else "off"


def check_file(path: str, blocking: bool = True) -> None:
    """Check `path` for the running ComfyUI: raise QuantcheckGuardError (when `blocking`) with
    every blocking problem, log warnings; the same unchanged file is checked once."""
    try:
        st = os.stat(path)
    except OSError:
        return  # ComfyUI reports a missing file itself
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    if key in _SEEN:
        error = _SEEN[key]
    else:
        error = _SEEN[key] = _check(path)
    if error is not None:
        if blocking:
            raise QuantcheckGuardError(error)
        log.warning("%s", error)


def _check(path: str) -> str | None:
    target, note, gpu = target_and_gpu()
    try:
        pf = preflight([path], target, gpu=gpu, emulated=emulated_formats())
    except InputError as exc:
        log.warning("quantcheck could not read %s: %s", path, exc)
        return None
    for line in warning_lines(pf):
        log.warning("quantcheck: %s: %s", os.path.basename(path), line)
    if not pf.blocking:
        return None
    return blocking_error(pf, f"ComfyUI {comfyui_version() or '(version unknown)'}", note)


def check_lora(path: str) -> None:
    """Log what quantcheck says of LoRA `path` on the diffusion model loaded last (a LoRA the
    base's format erases, a slower path), when its check takes `lora=`; never raises."""
    if not _LAST_MODEL or "lora" not in accepted_keywords():
        return  # the LoRA dimension is not in this quantcheck yet: nothing to say
    target, _, gpu = target_and_gpu()
    try:
        pf = preflight([_LAST_MODEL[-1]], target, gpu=gpu, lora=path)
    except Exception as exc:  # the LoRA check must never stop a LoRA from loading
        log.warning("quantcheck could not check LoRA %s: %s", path, exc)
        return
    for line in warning_lines(pf):
        log.warning(
            "quantcheck: LoRA %s on %s: %s",
            os.path.basename(path),
            os.path.basename(_LAST_MODEL[-1]),
            line,
        )


def guarded_folders(names: tuple[str, ...] = GUARDED_FOLDERS) -> list[str]:
    """The absolute folders ComfyUI keeps `names` in (diffusion models and text encoders)."""
    try:
        import folder_paths  # type: ignore[import-not-found]
    except ImportError:
        return []
    out: list[str] = []
    for name in names:
        try:
            out += [os.path.abspath(p) for p in folder_paths.get_folder_paths(name)]
        except Exception:
            continue
    return out


def is_guarded(path: object, names: tuple[str, ...] = GUARDED_FOLDERS) -> bool:
    """Whether load_torch_file's `path` is a safetensors file in the folders `names`."""
    if not isinstance(path, str) or not path.lower().endswith(SUFFIXES):
        return False
    full = os.path.abspath(path)
    return any(full.startswith(folder.rstrip(os.sep) + os.sep) for folder in guarded_folders(names))


def wrap_diffusion_loader(original: Callable[..., Any], blocking: bool) -> Callable[..., Any]:
    """`load_diffusion_model` that checks `unet_path` first, then calls `original` as given."""

    @functools.wraps(original)
    def load_diffusion_model(*args: Any, **kwargs: Any) -> Any:
        path = kwargs.get("unet_path", args[0] if args else None)
        if isinstance(path, str) and path.lower().endswith(SUFFIXES):
            check_file(path, blocking)
            _LAST_MODEL[:] = [path]
        token = _ACTIVE.set(path if isinstance(path, str) else None)
        try:
            return original(*args, **kwargs)
        finally:
            _ACTIVE.reset(token)

    load_diffusion_model.__wrapped__ = original  # type: ignore[attr-defined]
    return load_diffusion_model


def wrap_torch_file_loader(original: Callable[..., Any], blocking: bool) -> Callable[..., Any]:
    """`load_torch_file` that checks a guarded file first, then calls `original` as given."""

    @functools.wraps(original)
    def load_torch_file(*args: Any, **kwargs: Any) -> Any:
        path = kwargs.get("ckpt", args[0] if args else None)
        if path != _ACTIVE.get() and is_guarded(path):
            check_file(str(path), blocking)
        elif is_guarded(path, ("loras",)):
            check_lora(str(path))
        return original(*args, **kwargs)

    load_torch_file.__wrapped__ = original  # type: ignore[attr-defined]
    return load_torch_file


def install(env: dict[str, str] | None = None) -> str:
    """Wrap ComfyUI's loaders when the guard is on; returns the mode. Idempotent."""
    how = mode(env)
    if how == "off":
        return how
    import comfy.sd  # type: ignore[import-not-found]
    import comfy.utils  # type: ignore[import-not-found]

    blocking = how == "block"
    if not hasattr(comfy.sd.load_diffusion_model, "__wrapped__"):
        comfy.sd.load_diffusion_model = wrap_diffusion_loader(
            comfy.sd.load_diffusion_model, blocking
        )
    if not hasattr(comfy.utils.load_torch_file, "__wrapped__"):
        comfy.utils.load_torch_file = wrap_torch_file_loader(comfy.utils.load_torch_file, blocking)
    log.info("quantcheck pre-load guard on (%s): diffusion models and text encoders", how)
    return how
