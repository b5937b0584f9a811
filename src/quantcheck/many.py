"""Check many checkpoints: one result per checkpoint. Standard library only.

The unit of work is one checkpoint (a `CheckpointSpec` from `quantcheck.model.discover`, or a path):

    from quantcheck.many import check_one
    result = check_one("model.safetensors")        # a plain dict, picklable and JSON-ready

`check_one` needs no shared state, so any executor can map it over many files::

    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor() as pool:
        results = list(pool.map(check_one, paths, chunksize=64))

`check_spec` is the same check returning a `CheckpointResult` (the `Report` with its
`Diagnostic` objects, for the renderers; picklable too); `check_many` maps it over specs in
order, on threads for remote checkpoints and on worker processes for many local ones
(`quantcheck.local_pool`).

A checkpoint is *not a quantized checkpoint* (a LoRA, VAE, text encoder, plain BF16 model) when
every header was read without an error and it has no `comfy_quant` marker (tensor or
`_quantization_metadata` entry), no `quant_format` / `_quantization_metadata` metadata key and
no tensor of a low-precision storage dtype (`QUANTIZED_DTYPES`). Such a checkpoint is listed,
its diagnostics are dropped, and it never changes the exit code.
"""

from __future__ import annotations

from quantcheck._record import factory, record
from quantcheck.checking import labelled_check
from quantcheck.diagnostics import Severity
from quantcheck.errors import InputError, describe_os_error
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.model.discover import CheckpointSpec
from quantcheck.results import Report
from quantcheck.textsafe import redact_url

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: Storage dtypes only quantized (or packed) weights use; F8_E8M0 is a block-scale dtype.
QUANTIZED_DTYPES = frozenset(
    {
        "I8",
        "U8",
        "I4",
        "U4",
        "F4",
        "F6_E2M3",
        "F6_E3M2",
        "F8_E4M3",
        "F8_E5M2",
        "F8_E8M0",
        "F8_E4M3FNUZ",
        "F8_E5M2FNUZ",
    }
)
QUANT_METADATA = ("quant_format", "_quantization_metadata")

#: Per-checkpoint `kind`: checked, not a quantized checkpoint, could not be opened.
CHECKED, NOT_QUANTIZED, UNREADABLE = "checked", "not-quantized", "unreadable"


@record
class CheckpointResult:
    """What checking one checkpoint gave."""

    spec: CheckpointSpec
    kind: str
    report: Report | None = None
    size: int = 0
    formats: list[str] = factory(list)
    files: dict[str, str] = factory(dict)  # diagnostic file label -> path or address
    error: str | None = None
    suppressed: list[Any] = factory(list)  # diagnostics matched by a baseline

    @property
    def name(self) -> str:
        """The checkpoint's name as it may be printed (a URL without credentials or query)."""
        return redact_url(self.spec.name)

    def status(self, target: str) -> str:
        """ok / degraded / fails for one runtime; `not quantized` or `unreadable` otherwise."""
        if self.kind == NOT_QUANTIZED:
            return "not quantized"
        if self.report is None:
            return "unreadable"
        return self.report.status(target)

    def exit_code(self, fail_on: Any) -> int:
        if self.kind == UNREADABLE:
            return 2
        if self.report is None or self.kind == NOT_QUANTIZED:
            return 0
        return self.report.exit_code(fail_on)

    def to_json(self) -> dict[str, Any]:
        """The plain per-checkpoint entry of the check JSON document (schema_version 3)."""
        paths = [redact_url(p) for p in self.spec.paths]
        doc: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "paths": paths,
            "size": self.size,
            "formats": self.formats,
            "error": self.error,
        }
        if self.report is not None and self.kind == CHECKED:
            doc.update(
                {
                    k: v
                    for k, v in self.report.to_json().items()
                    if k not in ("schema_version", "tool", "tool_version", "kind")
                }
            )
        else:
            doc.update(
                {
                    "inputs": self.report.inputs if self.report else [],
                    "targets": {},
                    "diagnostics": [],
                    "summary": {},
                }
            )
        doc["suppressed"] = [d.to_json() for d in self.suppressed]
        return doc


def check_spec(
    spec: CheckpointSpec | str | list[str],
    *,
    target: str = "default",
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    deep: bool = False,
    read_weights: bool = False,
    gpus: list[Any] | None = None,
    lora: list[str] | None = None,
    lora_strength: float = 1.0,
) -> CheckpointResult:
    """Open and check one checkpoint (`lora`: with those LoRA files' QC83x findings). Never
    raises for input that cannot be read: the result then has kind `unreadable` and `error`
    says why."""
    try:
        spec = resolved(spec)
    except InputError as exc:
        return CheckpointResult(as_spec(spec), UNREADABLE, error=str(exc))
    try:
        with load_checkpoint(spec) as ck:
            report, labels = labelled_check(
                ck,
                target=target,
                select=select,
                ignore=ignore,
                deep=deep,
                read_weights=read_weights,
                gpus=gpus,
                lora=lora,
                lora_strength=lora_strength,
            )
            files = {label: path for path, label in labels.items()}
            size = sum(s.header.file_size for s in ck.shards)
            kind = CHECKED if is_quantized(ck) else NOT_QUANTIZED
            formats = checkpoint_formats(ck)
    except InputError as exc:
        return CheckpointResult(spec, UNREADABLE, error=str(exc) or type(exc).__name__)
    except OSError as exc:
        return CheckpointResult(spec, UNREADABLE, error=describe_os_error(exc, "read"))
    return CheckpointResult(spec, kind, report, size, formats, files)


def check_one(spec: CheckpointSpec | str | list[str], **options: Any) -> dict[str, Any]:
    """Check one checkpoint (a path, a list of its shard paths, or a `CheckpointSpec`) and
    return its plain, picklable JSON entry (see docs/json-schema.md, `checkpoints[]`)."""
    return check_spec(spec, **options).to_json()


def check_many(
    specs: list[CheckpointSpec], *, jobs: int = 1, **options: Any
) -> list[CheckpointResult]:
    """`check_spec` over `specs`, results in input order. When any checkpoint is remote and
    `jobs` > 1, up to `jobs` are checked at once on threads (remote checks wait on the
    network). Local checkpoints are CPU work: with `jobs` > 1 and enough of them, they are
    checked on up to `jobs` worker processes, one per usable CPU (`quantcheck.local_pool`);
    otherwise one at a time. A progress bar on a terminal counts checkpoints when there are
    several."""
    from quantcheck.io.source import is_remote

    remote = any(is_remote(p) for s in specs for p in s.paths)
    if len(specs) == 1:  # no bar, read-ahead, pool or threads (nor their imports)
        share_across_checkpoints(True)
        try:
            if remote and jobs > 1:  # as on the threads: a defect is the row's error
                return [check_safely(specs[0], options)]
            return [check_spec(specs[0], **options)]
        finally:
            share_across_checkpoints(False)
    from quantcheck.progress import Progress

    procs = 1
    if not remote and jobs > 1 and len(specs) > 1:
        from quantcheck.local_pool import pool_size

        procs = pool_size(len(specs), jobs)
    bar = Progress(
        len(specs), "checking", unit="checkpoints", enabled=None if len(specs) > 1 else False
    )
    share_across_checkpoints(True)
    try:
        if procs > 1:
            from quantcheck.local_pool import check_in_processes

            return check_in_processes(
                specs,
                procs,
                check_safely,
                options,
                lambda s, n: bar.advance(redact_url(s.name), n),
                start=_start_sharing,
            )
        if not remote or jobs == 1:  # no threads (nor their imports) for local checkpoints
            from quantcheck.io.readahead import read_ahead

            out = []
            for s in read_ahead(specs) if not remote and len(specs) > 1 else specs:
                out.append(check_spec(s, **options))
                if bar.enabled:
                    bar.advance(redact_url(s.name))
            return out
        from quantcheck.io.batch import map_bounded

        return [
            r if isinstance(r, CheckpointResult) else _failed(s, r)
            for s, r in map_bounded(
                lambda s: check_spec(s, **options),
                specs,
                jobs,
                progress=lambda s: bar.advance(redact_url(s.name)),
            )
        ]
    finally:
        share_across_checkpoints(False)
        bar.close()


def share_across_checkpoints(on: bool) -> None:
    """Identical clean headers, a repeated name list's layout and marker positions, marker
    decodes and format-rule findings are reused across the checkpoints of one run (results
    are identical; see `io.header.shared_header_replay`, `rules.engine.shared_layer_cache`);
    off, nothing is kept."""
    from quantcheck.io.header import shared_header_replay
    from quantcheck.model.layers import shared_layout_replay
    from quantcheck.model.markers import shared_decode_cache
    from quantcheck.rules.engine import shared_layer_cache

    shared_header_replay(on)
    shared_layout_replay(on)
    shared_decode_cache(on)
    shared_layer_cache(on)


def _start_sharing() -> None:
    share_across_checkpoints(True)


def check_safely(spec: CheckpointSpec, options: dict[str, Any]) -> CheckpointResult:
    """`check_spec`, with an unexpected exception (a defect) reported as the checkpoint's
    error instead of ending the run."""
    try:
        return check_spec(spec, **options)
    except Exception as exc:
        return _failed(spec, exc)


def _failed(spec: CheckpointSpec, exc: Exception) -> CheckpointResult:
    """A checkpoint whose check raised unexpectedly (a defect): reported, never lost."""
    return CheckpointResult(spec, UNREADABLE, error=f"{type(exc).__name__}: {exc}")


def as_spec(spec: CheckpointSpec | str | list[str]) -> CheckpointSpec:
    """A spec named as given (not resolved): a path, or a list of one checkpoint's shards."""
    if isinstance(spec, CheckpointSpec):
        return spec
    if isinstance(spec, str):
        return CheckpointSpec(spec, [spec])
    paths = [str(p) for p in spec]
    return CheckpointSpec(paths[0] if len(paths) == 1 else " + ".join(paths), paths)


def resolved(spec: CheckpointSpec | str | list[str]) -> CheckpointSpec:
    """The checkpoint to check, resolved: a path as `check` resolves it
    (`discover.resolve_one`), a list as the shards of one checkpoint, a spec once
    (`discover.resolve_spec`)."""
    from quantcheck.model.discover import as_one_spec, resolve_one, resolve_spec

    if isinstance(spec, CheckpointSpec):
        return resolve_spec(spec)
    if isinstance(spec, str):
        return resolve_one(spec)
    return as_one_spec([str(p) for p in spec])


def is_quantized(ck: Any) -> bool:
    """Any evidence of quantization, or a header that could not be read (then the
    checkpoint is checked and its errors count)."""
    if ck.markers or any(k in ck.metadata for k in QUANT_METADATA):
        return True
    if any(not s.header.usable for s in ck.shards) or any(
        d.effective_severity is Severity.ERROR for d in ck.diagnostics
    ):
        return True
    return any(
        name.endswith(".comfy_quant") or t.dtype in QUANTIZED_DTYPES
        for name, t in ck.tensors.items()
    )


def checkpoint_formats(ck: Any) -> list[str]:
    """The marker formats in use, sorted; else the `quant_format` metadata values."""
    found = {f for m in ck.markers.values() if isinstance(f := m.fields.get("format"), str)}
    if not found:
        found = {v for v in ck.quant_formats.values() if isinstance(v, str)}
    return sorted(found)
