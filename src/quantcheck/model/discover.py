"""Which checkpoints a command line names. Standard library only.

Each argument is read on its own:

- a file (`.safetensors`, `*.safetensors.index.json`, a URL) is one checkpoint;
- a folder (searched recursively; hidden folders such as `.git` are skipped) or an
  `hf://ORG/REPO[/FOLDER]` listing holds many: an index and the shards it names form one
  checkpoint; files named `NAME-00001-of-00003.safetensors` with no index naming them form
  one checkpoint per (folder, NAME, total) (the loader reports missing members as QC506);
  every other `.safetensors` file is a checkpoint of its own.

`--include` / `--exclude` globs are matched against each file's path relative to the folder
argument (`/`-separated) and against its base name. `as_one=True` keeps the pre-0.3 reading:
every argument is a shard of one checkpoint.
"""

from __future__ import annotations

import fnmatch
import os

from quantcheck._record import record
from quantcheck.model.shard_sets import SAFETENSORS, SHARD_NAME

INDEX_SUFFIX = ".safetensors.index.json"

#: `model-00001-of-00003.safetensors`: the Hugging Face shard naming convention.


@record
class CheckpointSpec:
    """One checkpoint to check: a display name and the paths `load_checkpoint` opens.
    Picklable (plain fields). The name is for showing (tables, reports, page file names,
    baselines): made with `redact_url`, it never carries a URL's credentials or query."""

    name: str
    paths: list[str]

    def __post_init__(self) -> None:
        from quantcheck.textsafe import redact_url

        self.name = " + ".join(redact_url(p) for p in self.name.split(" + "))


def discover(
    args: list[str],
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    as_one: bool = False,
) -> list[CheckpointSpec]:
    """The checkpoints `args` name, in argument order (a folder's in sorted path order).
    Raises InputError for a missing path or a folder that holds no checkpoint."""
    from quantcheck.errors import InputError

    if as_one:
        return [CheckpointSpec(args[0] if len(args) == 1 else " + ".join(args), list(args))]
    out: list[CheckpointSpec] = []
    for arg in args:
        local = _cached(arg)
        if local is not None:  # the local Hugging Face cache holds it: no request
            from quantcheck.io.hubcache import address_of

            found = discover([local], include=include, exclude=exclude)
            out += [CheckpointSpec(address_of(arg, local, s.name), s.paths) for s in found]
            continue
        if arg.startswith("hf://") and not arg.split("@", 1)[0].endswith((SAFETENSORS, ".json")):
            found = _discover_hub(arg, include, exclude)
        elif "://" in arg or not os.path.isdir(arg):
            if "://" not in arg and not os.path.exists(arg):
                raise InputError(f"{arg}: no such file or folder")
            found = [CheckpointSpec(arg, [arg])]
        else:
            found = _discover_folder(arg, include, exclude)
        if not found:
            raise InputError(
                f"{arg}: folder holds no .safetensors files"
                + (" matching --include/--exclude" if include or exclude else "")
            )
        out += found
    return _unclaimed(_unique(out))


def _cached(arg: str) -> str | None:
    """The local path of an `hf://` address in the Hugging Face cache (`io.hubcache`)."""
    if not arg.startswith("hf://"):
        return None
    from quantcheck.io.hubcache import lookup

    return lookup(arg)


def _unclaimed(specs: list[CheckpointSpec]) -> list[CheckpointSpec]:
    """Without the single local files that an index among `specs` names (pre-commit passes
    an index and its staged shards: the shards are checked with their index)."""
    from quantcheck.model.checkpoint import shards_from_index

    claimed: set[str] = set()
    for spec in specs:
        p = spec.paths[0]
        if len(spec.paths) == 1 and p.endswith(INDEX_SUFFIX) and "://" not in p:
            claimed.update(os.path.realpath(s) for s in shards_from_index(p)[0])
    if not claimed:
        return specs
    return [
        s
        for s in specs
        if len(s.paths) != 1 or "://" in s.paths[0] or os.path.realpath(s.paths[0]) not in claimed
    ]


def _unique(specs: list[CheckpointSpec]) -> list[CheckpointSpec]:
    """`specs` without a checkpoint named twice (the same file under two spellings, a
    symlink and its target, a file inside a folder also given): the first is kept."""
    seen: set[object] = set()
    out = []
    for spec in specs:
        key: list[object] = []
        for p in spec.paths:
            try:
                st = os.stat(p) if "://" not in p else None
                key.append((st.st_dev, st.st_ino) if st else p)
            except (OSError, ValueError):
                key.append(p)
        if tuple(key) not in seen:
            seen.add(tuple(key))
            out.append(spec)
    return out


def selected(rel: str, include: list[str] | None, exclude: list[str] | None) -> bool:
    """Whether the file at `rel` (relative, `/`-separated) passes the globs."""
    base = rel.rsplit("/", 1)[-1]

    def hit(globs: list[str]) -> bool:
        return any(fnmatch.fnmatchcase(rel, g) or fnmatch.fnmatchcase(base, g) for g in globs)

    if include and not hit(include):
        return False
    return not (exclude and hit(exclude))


def _discover_folder(
    root: str, include: list[str] | None, exclude: list[str] | None
) -> list[CheckpointSpec]:
    rels: list[str] = []
    globs = bool(include or exclude)
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))  # .git, .cache, ...
        sub = os.path.relpath(folder, root)
        for f in files:
            rel = f if sub == "." else f"{sub.replace(os.sep, '/')}/{f}"
            if f.endswith((SAFETENSORS, INDEX_SUFFIX)) and (
                not globs or selected(rel, include, exclude)
            ):
                rels.append(rel)

    def shards_of(index_rel: str) -> list[str]:
        from quantcheck.model.checkpoint import shards_from_index

        shards, _ = shards_from_index(os.path.join(root, index_rel))
        return [os.path.relpath(s, root).replace(os.sep, "/") for s in shards]

    def name(rel: str) -> str:
        return os.path.join(root, rel)

    return group(sorted(rels), shards_of, name)


def group(rels: list[str], shards_of: object, name: object) -> list[CheckpointSpec]:
    """Group relative file paths into checkpoints. `shards_of(index_rel)` gives the relative
    paths an index names; `name(rel)` the path or address to open."""
    indexes = [r for r in rels if r.endswith(INDEX_SUFFIX)]
    files = [r for r in rels if r.endswith(SAFETENSORS)]
    claimed: set[str] = set()
    specs: list[tuple[str, CheckpointSpec]] = []
    for idx in indexes:
        claimed.update(shards_of(idx))  # type: ignore[operator]
        specs.append((idx, CheckpointSpec(name(idx), [name(idx)])))  # type: ignore[operator]
    sets: dict[tuple[str, str, str], dict[int, str]] = {}
    for rel in files:
        if rel in claimed:
            continue
        folder, _, base = rel.rpartition("/")
        m = SHARD_NAME.match(base)
        if m and 1 <= int(m["part"]) <= int(m["total"]):
            sets.setdefault((folder, m["stem"], m["total"]), {})[int(m["part"])] = rel
            continue
        path = name(rel)  # type: ignore[operator]
        specs.append((rel, CheckpointSpec(path, [path])))
    for (folder, stem, total), parts in sets.items():
        first = parts[min(parts)]
        label = f"{folder}/{stem}" if folder else stem
        display = name(f"{label}-*-of-{total}{SAFETENSORS}")  # type: ignore[operator]
        specs.append((first, CheckpointSpec(display, [name(parts[i]) for i in sorted(parts)])))  # type: ignore[operator]
    specs.sort(key=lambda kv: kv[0])
    return [s for _, s in specs]


def _discover_hub(
    arg: str, include: list[str] | None, exclude: list[str] | None
) -> list[CheckpointSpec]:
    """Checkpoints in a hub repository folder, listed recursively."""
    from quantcheck.io import hub

    hp = hub.parse(arg)
    prefix = f"{hp.path}/" if hp.path else ""
    rels = [f[len(prefix) :] for f in _list_hub_tree(hp) if f.startswith(prefix)]
    rels = [
        r for r in rels if r.endswith((SAFETENSORS, INDEX_SUFFIX)) and selected(r, include, exclude)
    ]

    def shards_of(index_rel: str) -> list[str]:
        import posixpath

        from quantcheck.io.remote import read_remote_json

        try:
            doc = read_remote_json(hp.name(prefix + index_rel), ahead=True)
        except (OSError, ValueError):
            return []  # checking the index reports why
        wmap = doc.get("weight_map") if isinstance(doc, dict) else None
        folder = posixpath.dirname(index_rel)
        return [
            posixpath.normpath(posixpath.join(folder, v))
            for v in (wmap.values() if isinstance(wmap, dict) else ())
            if isinstance(v, str)
        ]

    return group(sorted(rels), shards_of, lambda rel: hp.name(prefix + rel))


def _list_hub_tree(hp: object) -> list[str]:
    """Every checkpoint file path under `hp.path` in the repo: the tree API asked for a
    recursive listing (all pages, filtered as they arrive: `hub.list_files`)."""
    from quantcheck.io import hub

    assert isinstance(hp, hub.HubPath)
    return sorted(set(hub.list_files(hp, recursive=True)))


def one_checkpoint(args: list[str], command: str, *, as_one: bool = False) -> list[str]:
    """The paths of the one checkpoint a command that writes one output (`fix`, `quantize`,
    `dequantize`) may be given: `args` unchanged when they name one checkpoint (or with
    `as_one`). Raises InputError (exit 2) when they name several unrelated checkpoints, as
    `check` would read them."""
    from quantcheck.errors import InputError

    if as_one:
        return list(args)
    specs = discover(list(args))
    if len(specs) <= 1:
        return list(args)
    from quantcheck.textsafe import redact_url

    names = ", ".join(redact_url(s.name) for s in specs[:3])
    more = f" and {len(specs) - 3} more" if len(specs) > 3 else ""
    raise InputError(
        f"{command} writes one checkpoint, but the arguments name {len(specs)} checkpoints "
        f"({names}{more}); give one, or add --as-one if they are the shards of one checkpoint"
    )
