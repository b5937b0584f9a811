"""Which family a checkpoint is, from its tensor names and shapes alone (standard library).

`detect(shapes)` takes name -> shape and answers with a `Detection`: the family (None when no
entry's key test matches), the config the shapes imply (the fields ComfyUI's detection
computes, `table.ShapeRead`), the block counts, and the modules missing from or extra to the
closest reference layout. Give it the stored shapes to see what ComfyUI computes, or the
logical shapes (a packed layer's [N, K]) to see what the file means. With a detection in hand,
`keep_list` fills the family's high-precision list with the block count found, and
`match_topology` tells whether the file's quantized layers are exactly a released file's.
"""

from __future__ import annotations

from quantcheck._record import factory, record
from quantcheck.families.table import FAMILIES, Family, Keep, Topology
from quantcheck.formats.table import COMPANION_SUFFIXES

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping

#: Prefixes a single-file export puts before the model's own names (ComfyUI strips the first
#: two: comfy/model_detection.py unet_prefix_from_state_dict; diffusers exports the third).
PREFIXES = ("model.diffusion_model.", "diffusion_model.", "transformer.", "net.")
#: Tensor suffixes that name a parameter or a quantization companion, not a module.
PARAM_SUFFIXES = frozenset(
    {"weight", "bias", "scale", "comfy_quant", "scale_weight", "scale_input"} | COMPANION_SUFFIXES
)
#: Whole-file marker tensors that belong to no module.
FILE_MARKERS = frozenset({"scaled_fp8"})
#: A layout comparison this far off (extra modules over the checkpoint's modules) is not
#: this family's layout: the family is reported unsure and no layer is called missing.
UNSURE_EXTRA = 0.5


@record
class Detection:
    """What `detect` found (`family` None: unknown)."""

    family: Family | None
    prefix: str = ""
    config: dict[str, int] = factory(dict)
    #: block group label -> blocks counted from 0, as ComfyUI counts them
    blocks: dict[str, int] = factory(dict)
    layout: str | None = None
    missing: list[str] = factory(list)
    extra: list[str] = factory(list)
    unsure: bool = False

    @property
    def name(self) -> str | None:
        """The family's name, None when unknown or unsure."""
        return None if self.family is None or self.unsure else self.family.name

    def to_json(self) -> dict[str, object]:
        """The `family` object of the check and inspect JSON (docs/json-schema.md)."""
        fam = self.family
        if fam is None:
            return {"name": None, "summary": "unknown"}
        return {
            "name": self.name,
            "summary": self.summary(),
            "keys_of": fam.name,
            "title": fam.title,
            "kind": fam.kind,
            "comfyui": fam.comfyui,
            "prefix": self.prefix,
            "config": dict(self.config),
            "blocks": dict(self.blocks),
            "layout": self.layout,
        }

    def summary(self) -> str:
        """`flux2 (8 double + 48 single blocks, hidden 6144)`, or `unknown`."""
        fam = self.family
        if fam is None:
            return "unknown"
        if self.unsure:
            return f"unknown (the keys of {fam.name}, but not its layout)"
        parts = [f"{n} {label}".strip() for label, n in self.blocks.items()]
        inner = " + ".join(parts) + " blocks" if parts else ""
        hidden = next((self.config[k] for k in ("hidden_size", "dim") if k in self.config), None)
        if hidden is not None:
            inner = f"{inner}, hidden {hidden}" if inner else f"hidden {hidden}"
        return f"{fam.name} ({inner})" if inner else fam.name


def module_of(name: str) -> str | None:
    """The module a tensor belongs to (None for a whole-file marker)."""
    if name in FILE_MARKERS:
        return None
    prefix, _, suffix = name.rpartition(".")
    return prefix if prefix and suffix in PARAM_SUFFIXES else name


def modules(names: Iterable[str]) -> list[str]:
    """The module names of these tensors, first-seen order."""
    out: dict[str, None] = {}
    for name in names:
        m = module_of(name)
        if m is not None:
            out[m] = None
    return list(out)


def _matches(fam: Family, names: Collection[str], prefix: str) -> bool:
    if any(prefix + k in names for k in fam.absent):
        return False
    return any(all(prefix + k in names for k in keys) for keys in fam.detect)


def find_family(names: Collection[str]) -> tuple[Family, str] | None:
    """The first family whose key test matches, and the prefix its names carry."""
    for prefix in ("", *PREFIXES):
        if prefix and not any(n.startswith(prefix) for n in names):
            continue
        for fam in FAMILIES:
            if _matches(fam, names, prefix):
                return fam, prefix
    return None


def config_of(fam: Family, shapes: Mapping[str, tuple[int, ...]], prefix: str) -> dict[str, int]:
    """The config fields the shapes imply (`ShapeRead`s whose key is present)."""
    out: dict[str, int] = {}
    for read in fam.reads:
        shape = shapes.get(prefix + read.key)
        if shape is None or not shape or not -len(shape) <= read.dim < len(shape):
            continue
        out[read.field] = shape[read.dim] // read.divide
    return out


def count_blocks(names: Iterable[str], group: str) -> int:
    """Blocks `group.0.`, `group.1.`, ... present without a gap (ComfyUI's count_blocks)."""
    seen: set[int] = set()
    head = group + "."
    for n in names:
        if n.startswith(head):
            index, _, _ = n[len(head) :].partition(".")
            if index.isdigit():
                seen.add(int(index))
    count = 0
    while count in seen:
        count += 1
    return count


def renamed(fam: Family, module: str) -> str:
    """A module's name in the family's layout (a published file's prefix renamed)."""
    for old, new in fam.renames:
        if module.startswith(old):
            return new + module[len(old) :]
    return module


def _optional(fam: Family, module: str) -> bool:
    return any(p in module for p in fam.optional)


def _block_of(module: str, groups: Iterable[str]) -> tuple[str, int, str] | None:
    """(group, index, module inside the block) when `module` sits in a numbered block."""
    for g in groups:
        head = g + "."
        if module.startswith(head):
            index, _, inner = module[len(head) :].partition(".")
            if index.isdigit() and inner:
                return g, int(index), inner
    return None


def compare_layout(fam: Family, layout: str, present: list[str]) -> tuple[list[str], list[str]]:
    """(missing, extra) modules of a checkpoint (module names without the prefix) against
    reference layout `layout`, with each block group as long as the checkpoint's."""
    from quantcheck.families.layouts import LAYOUTS  # only once a family's keys match

    groups_spec, top_names = LAYOUTS[layout]
    top = frozenset(top_names)
    groups = sorted((g for g, _, _, _ in groups_spec), key=len, reverse=True)
    inner_of = {g: frozenset((*every, *some)) for g, _, every, some in groups_spec}
    have = set(present)
    indices: dict[str, set[int]] = {g: set() for g in inner_of}
    seen: dict[tuple[str, int], set[str]] = {}
    extra: list[str] = []
    for m in present:
        hit = _block_of(m, groups)
        if hit is not None:
            g, i, part = hit
            indices[g].add(i)
            seen.setdefault((g, i), set()).add(part)
            if part not in inner_of[g] and not _optional(fam, m):
                extra.append(m)
        elif m not in top and not _optional(fam, m):
            extra.append(m)
    missing = [m for m in top_names if m not in have and not _optional(fam, m)]
    for g, _, every, _ in groups_spec:
        found = indices[g]
        if not found:
            if not _optional(fam, g):
                missing.extend(f"{g}.0.{m}" for m in every if not _optional(fam, m))
            continue
        for i in range(max(found) + 1):
            parts = seen.get((g, i), set())
            if len(parts) >= len(every) and all(m in parts for m in every):
                continue
            for m in every:
                if m not in parts and not _optional(fam, name := f"{g}.{i}.{m}"):
                    missing.append(name)
    return missing, extra


def detect(
    shapes: Mapping[str, tuple[int, ...]], module_names: Iterable[str] | None = None
) -> Detection:
    """The family of a checkpoint given as tensor name -> shape (see the module docstring);
    `module_names`: the tensors' modules when the caller has them (`modules(shapes)` else)."""
    found = find_family(shapes.keys())
    if found is None:
        return Detection(None)
    fam, prefix = found
    config = config_of(fam, shapes, prefix)
    for field, allowed in fam.only:
        if field in config and config[field] not in allowed:
            return Detection(None)
    named = modules(shapes) if module_names is None else module_names
    cut = len(prefix)
    stripped = [renamed(fam, m[cut:]) for m in named if m.startswith(prefix)]
    best: tuple[int, str, list[str], list[str]] | None = None
    for layout in fam.layouts:
        missing, extra = compare_layout(fam, layout, stripped)
        score = len(missing) + len(extra)
        if best is None or score < best[0]:
            best = (score, layout, missing, extra)
    assert best is not None  # every family names a layout (tests/families)
    _, layout, missing, extra = best
    blocks = {label: count_blocks(stripped, g) for g, label in fam.blocks}
    blocks = {k: v for k, v in blocks.items() if v or k == fam.blocks[0][1]}
    unsure = bool(stripped) and len(extra) > UNSURE_EXTRA * len(stripped)
    if unsure:
        missing, extra = [], []
    return Detection(fam, prefix, config, blocks, layout, missing, extra, unsure)


def family_name(shapes: Mapping[str, tuple[int, ...]]) -> str | None:
    """The family's name (`table.FAMILIES`), or None when unknown or unsure: the function a
    loader choice calls (e.g. sglang's, which differs for MiniMax H3)."""
    return detect(shapes).name


def keep_list(fam: Family, det: Detection | None) -> tuple[Keep, ...]:
    """The family's high-precision list with `{last}` (table.Keep) filled in from the block
    count `det` found for the family's first block group; entries with `{last}` are left out
    when the count is unknown (another family detected, or no blocks)."""
    count = 0
    if det is not None and det.family is fam and fam.blocks:
        count = det.blocks.get(fam.blocks[0][1], 0)
    out: list[Keep] = []
    for k in fam.keep:
        if "{last}" not in k.pattern:
            out.append(k)
        elif count:
            out.append(Keep(k.pattern.replace("{last}", str(count - 1)), k.producers, k.reason))
    return tuple(out)


#: One quantized layer as a topology sees it: (format, convrot flag, ConvRot group size).
QuantizedLayer = tuple[object, object, object]


def topology_layers(topo: Topology) -> dict[str, int]:
    """Module name (without the file's prefix) -> ConvRot group size, for every layer the
    topology quantizes."""
    return {f"{topo.group}.{i}.{m}": size for i in range(topo.blocks) for m, size in topo.modules}


def match_topology(
    fam: Family, quantized: Mapping[str, QuantizedLayer], names: Collection[str]
) -> Topology | None:
    """The family's released topology that the file is exactly (None: none). `quantized`:
    every quantized layer's module name (prefix stripped, renamed) -> (format, convrot, group
    size) from its marker; `names`: the file's tensor names (prefix stripped), for a
    variant's `needs` / `lacks`."""
    for topo in fam.topologies:
        if any(n not in names for n in topo.needs) or any(n in names for n in topo.lacks):
            continue
        want = topology_layers(topo)
        if quantized.keys() != want.keys():
            continue
        if all(_is(quantized[m], topo.fmt, size) for m, size in want.items()):
            return topo
    return None


def _is(layer: QuantizedLayer, fmt: str, size: int) -> bool:
    """Whether a quantized layer is `fmt` with ConvRot (exactly `true`) at group `size` (an
    int): a convrot of 1 or a float group are not what the released files hold."""
    found, convrot, group = layer
    return found == fmt and convrot is True and type(group) is int and group == size
