"""Which checkpoints a command line names. Standard library only.

Each argument is read on its own:

- a file (`.safetensors`, `*.safetensors.index.json`, a URL) is one checkpoint;
- a folder (searched recursively; hidden folders such as `.git` are skipped; symlinked
  folders are followed, each real folder once, so a link loop ends) or an
  `hf://ORG/REPO[/FOLDER]` listing holds many: an index and the shards it names form one
  checkpoint (a name is resolved by name within the index's folder, `shard_sets.index_member`,
  the same for both); files named `NAME-00001-of-00003.safetensors` with no index naming them
  form one checkpoint per (folder, NAME, total) (the loader reports missing members as QC506);
  every other `.safetensors` file is a checkpoint of its own. An index that cannot be read
  claims nothing: it is a checkpoint of its own, which `check` reports as unreadable.

A real file reached under several paths (two links, a linked folder) is one checkpoint,
named by the first of its paths in sorted order (`_walk`).

`--include` / `--exclude` globs are matched against each file's path relative to the folder
argument (`/`-separated) and against its base name. `as_one=True` keeps the pre-0.3 reading:
every argument is a shard of one checkpoint.
"""

from __future__ import annotations

import fnmatch
import os

from quantcheck._record import record
from quantcheck.model.shard_sets import SAFETENSORS, SHARD_NAME, index_member

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

INDEX_SUFFIX = ".safetensors.index.json"


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
            if "://" not in arg and not os.path.lexists(arg):  # a dangling link: a row
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
    claimed: set[str] = set()
    for spec in specs:
        p = spec.paths[0]
        if len(spec.paths) == 1 and p.endswith(INDEX_SUFFIX) and "://" not in p:
            folder = os.path.dirname(p)
            claimed.update(os.path.realpath(os.path.join(folder, m)) for m in _members(p, ""))
    if not claimed:
        return specs
    return [
        s
        for s in specs
        if len(s.paths) != 1 or "://" in s.paths[0] or os.path.realpath(s.paths[0]) not in claimed
    ]


def _members(index_path: str, index_rel: str) -> list[str]:
    """The listing-relative paths a local index claims: none when it cannot be read, and
    no name that no local file can have (a NUL, a lone surrogate)."""
    from quantcheck.model.checkpoint import weight_map_names

    found = (index_member(index_rel, n) for n in weight_map_names(index_path) if _usable(n))
    return [m for m in found if m is not None]


def _usable(name: str) -> bool:
    try:
        return "\x00" not in name and bool(os.fsencode(name))
    except (ValueError, UnicodeError):
        return False


def _unique(specs: list[CheckpointSpec]) -> list[CheckpointSpec]:
    """`specs` without a checkpoint named twice (the same file under two spellings, a
    symlink and its target, a file inside a folder also given): the first is kept. An index
    is the same checkpoint only in the same real folder: its shard names are resolved there,
    so two Hugging Face cache revisions that share one index blob are two checkpoints."""
    seen: set[object] = set()
    out = []
    for spec in specs:
        key: list[object] = []
        for p in spec.paths:
            try:
                st = os.stat(p) if "://" not in p else None
                place = os.path.realpath(os.path.dirname(p)) if p.endswith(INDEX_SUFFIX) else ""
                key.append((st.st_dev, st.st_ino, place) if st else p)
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
    globs = bool(include or exclude)
    rels = [
        rel
        for rel in _walk(root)
        if rel.endswith((SAFETENSORS, INDEX_SUFFIX))
        and (not globs or selected(rel, include, exclude))
    ]
    return group(
        sorted(rels),
        lambda idx: _members(os.path.join(root, idx), idx),
        lambda rel: os.path.join(root, rel),
    )


def _walk(root: str) -> Iterator[str]:
    """The `/`-separated relative path of every non-folder entry under `root`, following
    symlinked folders. Each real folder (device and inode) is listed once, under the first of
    its paths in sorted order (folders are taken in order of `path/`, so a folder's files
    come out under the smallest path that reaches them); a link to the folder itself or to
    one above it would only lead back, and is not followed. Hidden folders are skipped, and
    a folder that cannot be listed is passed over, as `os.walk` does."""
    import heapq

    top = os.path.realpath(root)
    seen: set[tuple[int, int]] = set()
    todo: list[tuple[str, str]] = [("", root)]
    while todo:
        prefix, folder = heapq.heappop(todo)
        try:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as it:
                entries = list(it)
        except (OSError, ValueError):
            continue
        for e in entries:
            try:
                is_dir = e.is_dir()
                if is_dir and e.is_symlink():
                    real = os.path.realpath(e.path)
                    is_dir = not (top == real or top.startswith(real.rstrip(os.sep) + os.sep))
                    if not is_dir:
                        continue
            except (OSError, ValueError):
                is_dir = False
            if not is_dir:
                yield prefix + e.name
            elif not e.name.startswith("."):  # .git, .cache, ...
                heapq.heappush(todo, (f"{prefix}{e.name}/", e.path))


def group(
    rels: list[str],
    members_of: Callable[[str], list[str]],
    name: Callable[[str], str],
) -> list[CheckpointSpec]:
    """Group relative file paths (a folder's or a hub listing's, sorted) into checkpoints.
    `members_of(index_rel)` gives the relative paths an index claims (`index_member` of its
    shard names); `name(rel)` the path or address to open."""
    indexes = [r for r in rels if r.endswith(INDEX_SUFFIX)]
    files = [r for r in rels if r.endswith(SAFETENSORS)]
    claimed: set[str] = set()
    specs: list[tuple[str, CheckpointSpec]] = []
    for idx in indexes:
        claimed.update(members_of(idx))
        specs.append((idx, CheckpointSpec(name(idx), [name(idx)])))
    sets: dict[tuple[str, str, str], dict[int, str]] = {}
    for rel in files:
        if rel in claimed:
            continue
        folder, _, base = rel.rpartition("/")
        m = SHARD_NAME.match(base)
        if m and 1 <= int(m["part"]) <= int(m["total"]):
            sets.setdefault((folder, m["stem"], m["total"]), {})[int(m["part"])] = rel
            continue
        path = name(rel)
        specs.append((rel, CheckpointSpec(path, [path])))
    for (folder, stem, total), parts in sets.items():
        first = parts[min(parts)]
        label = f"{folder}/{stem}" if folder else stem
        display = name(f"{label}-*-of-{total}{SAFETENSORS}")
        specs.append((first, CheckpointSpec(display, [name(parts[i]) for i in sorted(parts)])))
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

    def members_of(index_rel: str) -> list[str]:
        from quantcheck.io.remote import read_remote_json

        try:
            doc = read_remote_json(hp.name(prefix + index_rel), ahead=True)
        except (OSError, ValueError):
            return []  # checking the index reports why
        wmap = doc.get("weight_map") if isinstance(doc, dict) else None
        found = (
            index_member(index_rel, v)
            for v in (wmap.values() if isinstance(wmap, dict) else ())
            if isinstance(v, str)
        )
        return [m for m in found if m is not None]

    return group(sorted(rels), members_of, lambda rel: hp.name(prefix + rel))


def _list_hub_tree(hp: object) -> list[str]:
    """Every checkpoint file path under `hp.path` in the repo: the tree API asked for a
    recursive listing (all pages, filtered as they arrive: `hub.list_files`)."""
    from quantcheck.io import hub

    assert isinstance(hp, hub.HubPath)
    return sorted(set(hub.list_files(hp, recursive=True)))


def one_checkpoint(
    args: list[str], command: str, *, as_one: bool = False, what: str = "writes"
) -> list[str]:
    """The paths of the one checkpoint that a command taking one checkpoint (`fix`,
    `quantize`, `dequantize`, each side of `compare`) was given, found as `check` finds them
    (`discover`): a folder or `hf://ORG/REPO` whose only checkpoint is in a subfolder (a
    diffusers-style `transformer/`) gives that checkpoint's files. With `as_one`, `args`
    unchanged. Raises InputError (exit 2) when they name no checkpoint or several unrelated
    ones."""
    return list(args) if as_one else only_one(discover(list(args)), f"{command} {what}")


def only_one(specs: list[CheckpointSpec], doing: str) -> list[str]:
    """The paths of the one checkpoint in `specs`; InputError naming them when there are
    several (`doing`: "fix writes", "compare reads")."""
    from quantcheck.errors import InputError

    if len(specs) == 1:
        return list(specs[0].paths)
    from quantcheck.textsafe import redact_url

    names = ", ".join(redact_url(s.name) for s in specs[:3])
    more = f" and {len(specs) - 3} more" if len(specs) > 3 else ""
    raise InputError(
        f"{doing} one checkpoint, but the arguments name {len(specs)} checkpoints "
        f"({names}{more}); give one, or add --as-one if they are the shards of one checkpoint"
    )
