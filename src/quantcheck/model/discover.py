"""The one place arguments become checkpoints: every command, `quantcheck.load` and
`quantcheck.check` resolve their arguments here into `CheckpointSpec`s whose shards are all
known (paths or addresses, sizes where the listing or the disk gives them, the hub revision,
the index's weight_map and its findings); `model.checkpoint.load_checkpoint` opens exactly
those and never resolves again. Standard library only.

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
import stat

from quantcheck._record import factory, record
from quantcheck.errors import InputError
from quantcheck.model.shard_sets import (
    SAFETENSORS,
    SHARD_NAME,
    IncompleteSet,
    IndexRead,
    missing_shards,
    read_local,
    read_remote,
)

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from quantcheck.diagnostics import Diagnostic
    from quantcheck.io.hub import HubPath

INDEX_SUFFIX = ".safetensors.index.json"
ANY_INDEX = ".index.json"


@record
class CheckpointSpec:
    """One checkpoint: a display name, the paths the arguments gave for it (`paths`, shown in
    reports) and, once resolved (`resolve_spec`), everything `load_checkpoint` needs: the
    shard files to open in order (`shards`), their sizes where known before opening, the hub
    revision, the index it came from with its weight_map and findings (QC502-QC504), the
    incomplete shard sets (QC506), or the error that stopped resolving it (`failure`, raised
    when it is loaded: one unreadable checkpoint is a row, not the end of the run).
    Picklable (plain fields). The name is for showing (tables, reports, page file names,
    baselines): made with `redact_url`, it never carries a URL's credentials or query."""

    name: str
    paths: list[str]
    shards: list[str] | None = None  # None: not resolved yet
    sizes: list[int | None] = factory(list)
    revision: str | None = None
    index: str | None = None
    weight_map: Any = None
    findings: list[Diagnostic] = factory(list)
    incomplete: list[IncompleteSet] = factory(list)
    index_bytes: int = 0  # bytes of a remote index already read (charged to its check)
    failure: BaseException | None = None

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
    """The checkpoints `args` name, resolved (`resolve_spec`), in argument order (a folder's
    in sorted path order). Raises InputError for a missing path or a folder that holds no
    checkpoint; a checkpoint whose index cannot be fetched carries that as its `failure`."""
    if as_one:
        return [as_one_spec(list(args))]
    return [resolve_spec(s) for s in _unclaimed(_unique(_found(args, include, exclude)))]


def as_one_spec(paths: list[str]) -> CheckpointSpec:
    """The `--as-one` reading: every path (file, folder, index, address) is a shard of one
    checkpoint, resolved."""
    name = paths[0] if len(paths) == 1 else " + ".join(paths)
    return resolve_spec(CheckpointSpec(name, list(paths)))


def resolve_one(path: str) -> CheckpointSpec:
    """The one checkpoint `path` names, as `check` finds it (`quantcheck.load`,
    `quantcheck.check`, `many.check_spec` of a path); InputError when it names several."""
    return only_one(discover([path]), f"{path}: loading a path reads")


def _found(
    args: list[str], include: list[str] | None, exclude: list[str] | None
) -> list[CheckpointSpec]:
    """The checkpoints each argument names, unresolved, in argument order."""
    out: list[CheckpointSpec] = []
    for arg in args:
        local = _cached(arg)
        if local is not None:  # the local Hugging Face cache holds it: no request
            from quantcheck.io.hubcache import address_of

            found = _found([local], include, exclude)
            out += [_renamed(s, address_of(arg, local, s.name)) for s in found]
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
    return out


def _renamed(spec: CheckpointSpec, name: str) -> CheckpointSpec:
    spec.name = CheckpointSpec(name, []).name
    return spec


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
            claimed.update(os.path.realpath(os.path.join(folder, m)) for m in _claims_of(p))
    if not claimed:
        return specs
    return [
        s
        for s in specs
        if len(s.paths) != 1 or "://" in s.paths[0] or os.path.realpath(s.paths[0]) not in claimed
    ]


def _claims_of(index_path: str) -> list[str]:
    """The paths relative to its folder a local index claims: none when it cannot be read,
    and no name that no local file can have (a NUL, a lone surrogate)."""
    try:
        return read_local(index_path).claims
    except OSError:
        return []


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
    reads: dict[str, IndexRead | BaseException] = {}

    def members_of(idx: str) -> list[str]:
        path = os.path.join(root, idx)
        reads[path] = _read(lambda: read_local(path, idx))
        got = reads[path]
        return got.claims if isinstance(got, IndexRead) else []

    return _resolved(group(sorted(rels), members_of, lambda rel: os.path.join(root, rel)), reads)


def _read(how: Callable[[], IndexRead]) -> IndexRead | BaseException:
    """An index read, or the error that stopped it (the check of its checkpoint says why)."""
    try:
        return how()
    except (OSError, ValueError) as exc:
        return exc


def _resolved(
    specs: list[CheckpointSpec], reads: dict[str, IndexRead | BaseException]
) -> list[CheckpointSpec]:
    """`specs` with each index checkpoint resolved from the read that grouped it (no second
    read); the others are resolved by `discover`."""
    for spec in specs:
        if len(spec.paths) == 1 and spec.paths[0] in reads:
            found = reads[spec.paths[0]]
            if isinstance(found, IndexRead):
                _set(spec, found.shards, spec.paths[0], found)
            else:
                spec.shards, spec.failure = [], found
    return specs


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
    listed = hub.Listed({})
    rels = [f[len(prefix) :] for f in _list_hub_tree(hp, listed) if f.startswith(prefix)]
    rels = [
        r for r in rels if r.endswith((SAFETENSORS, INDEX_SUFFIX)) and selected(r, include, exclude)
    ]

    reads: dict[str, IndexRead | BaseException] = {}
    local: dict[str, str] = {}

    def members_of(index_rel: str) -> list[str]:
        at = hp.with_path(prefix + index_rel)
        name = at.name()
        cached = _cached(name)  # the index is in the local cache: its shards are read there
        if cached is not None:
            local[name] = cached
            reads[name] = _read(lambda: read_local(cached, index_rel))
        else:
            reads[name] = _read(lambda: read_remote(name, hub.resolve_url(at), at))
        got = reads[name]
        return got.claims if isinstance(got, IndexRead) else []

    specs = _resolved(group(sorted(rels), members_of, lambda rel: hp.name(prefix + rel)), reads)
    for spec in specs:
        if spec.index in local:
            spec.index = local[spec.index]
        _listed_facts(resolve_spec(spec), listed)
    return specs


def _listed_facts(spec: CheckpointSpec, listed: Any) -> None:
    """A hub checkpoint's shard sizes from the listing, and the commit its revision resolved
    to when the hub said so."""
    from quantcheck.io import hub

    if not spec.shards or not all(s.startswith("hf://") for s in spec.shards):
        return
    spec.sizes = [listed.sizes.get(hub.parse(s).path) for s in spec.shards]
    spec.revision = listed.commit or spec.revision


def _list_hub_tree(hp: object, listed: Any) -> list[str]:
    """Every checkpoint file path under `hp.path` in the repo: the tree API asked for a
    recursive listing (all pages, filtered as they arrive: `hub.list_files`); `listed`
    receives the sizes and the commit."""
    from quantcheck.io import hub

    assert isinstance(hp, hub.HubPath)
    return sorted(set(hub.list_files(hp, recursive=True, listed=listed)))


def resolve_spec(spec: CheckpointSpec) -> CheckpointSpec:
    """`spec` with its shards resolved from its paths (once: a resolved spec is returned as
    it is). Files stand for themselves; a folder gives its first index's shards, else every
    `.safetensors` file directly in it; an index gives the shards its weight_map names; an
    `hf://` address the local cache holds is read there. An error is kept as `failure`."""
    if spec.shards is not None:
        return spec
    try:
        files, index, read = _expand(spec.paths)
    except (InputError, OSError) as exc:
        spec.shards, spec.failure = [], exc
        return spec
    _set(spec, files, index, read)
    return spec


def _set(spec: CheckpointSpec, files: list[str], index: str | None, read: IndexRead) -> None:
    """Fill a spec's resolved fields."""
    spec.shards = _unique_files(files) if len(files) > 1 else files
    spec.index = index
    spec.weight_map = read.weight_map if index is not None else None
    spec.findings = list(read.findings)
    spec.index_bytes = read.raw_bytes
    spec.incomplete = missing_shards(spec.shards) if index is None else []
    spec.sizes = [read.sizes[f] if f in read.sizes else _size(f) for f in spec.shards]
    spec.revision = _revision(spec.shards[0]) if spec.shards else None


def _size(path: str) -> int | None:
    """A local shard's size (a remote one's is known once its first range is read)."""
    if "://" in path:
        return None
    st = _stat(path)
    return st.st_size if st is not None else None


def _revision(path: str) -> str | None:
    """The hub revision a shard is read at: the commit of a local cache snapshot, the
    revision an `hf://` address names (None: the default branch), else None."""
    if path.startswith("hf://"):
        from quantcheck.io import hub

        return hub.parse(path).revision
    if "snapshots" in path:
        from quantcheck.io.hubcache import origin

        found = origin(path)
        return found["revision"] if found else None
    return None


def _expand(paths: list[str]) -> tuple[list[str], str | None, IndexRead]:
    """(shard files, the index whose weight_map is checked, what the indexes gave) for the
    paths of one checkpoint."""
    files: list[str] = []
    index: str | None = None
    read = IndexRead()
    for p in paths:
        if p.startswith("hf://"):
            p = _cached(p) or p  # the local Hugging Face cache holds it: no request
        got: IndexRead | None = None
        if "://" in p:
            more, idx, got = _expand_remote(p)
            files += more
            if index is None and idx is not None:
                index, read.weight_map = idx, got.weight_map if got else None
        else:
            st = _stat(p)
            if st is not None and stat.S_ISDIR(st.st_mode):
                names = sorted(os.listdir(p))
                idx_names = [n for n in names if n.endswith(INDEX_SUFFIX)]
                if idx_names:
                    index = os.path.join(p, idx_names[0])
                    got = read_local(index)
                    read.weight_map = got.weight_map
                    files += got.shards
                else:
                    found = [os.path.join(p, n) for n in names if n.endswith(SAFETENSORS)]
                    if not found:
                        raise InputError(f"{p}: folder holds no .safetensors files")
                    files += found
            elif p.endswith(ANY_INDEX):
                if st is None:
                    raise InputError(f"{p}: no such file")
                index = p
                got = read_local(p)
                read.weight_map = got.weight_map
                files += got.shards
            else:
                if st is None:
                    raise InputError(f"{p}: no such file or folder")
                files.append(p)
                read.sizes[p] = st.st_size
        if got is not None:
            read.findings += got.findings
            read.raw_bytes += got.raw_bytes
            read.sizes.update(got.sizes)
    return files, index, read


def _expand_remote(url: str) -> tuple[list[str], str | None, IndexRead | None]:
    """Shard addresses for a remote file, index or (hf:// only) repository folder."""
    from urllib.parse import urlsplit

    from quantcheck.io import hub
    from quantcheck.io.http import RemoteError, redact
    from quantcheck.io.remote import locate

    hub.refuse_offline(url)
    if url.split("://", 1)[0].lower() == "hf":
        hp = hub.parse(url)
        if hp.path.endswith(".json"):
            return _remote_index(hp.name(), hub.resolve_url(hp), hp, None)
        if hp.path.endswith(SAFETENSORS):
            return [hp.name()], None, None
        return _expand_hub_folder(url, hp)
    locate(url)
    path = urlsplit(url).path
    if path.endswith(ANY_INDEX):
        return _remote_index(redact(url), url, None, None)
    if path.endswith("/"):
        raise RemoteError(
            f"{redact(url)}: an HTTP folder cannot be listed; give the URL of a "
            ".safetensors file or of its .index.json"
        )
    return [url], None, None


def _remote_index(
    name: str, fetch: str, hp: HubPath | None, listing: set[str] | None
) -> tuple[list[str], str, IndexRead]:
    got = read_remote(name, fetch, hp, listing)
    return got.shards, name, got


def _expand_hub_folder(url: str, hp: HubPath) -> tuple[list[str], str | None, IndexRead | None]:
    """One level of a hub folder (`--as-one`): its first index's shards (checked against the
    listing), else its `.safetensors` files."""
    from quantcheck.io import hub
    from quantcheck.io.http import redact

    prefix = f"{hp.path}/" if hp.path else ""
    here = sorted(
        f for f in hub.list_folder(hp) if f.startswith(prefix) and "/" not in f[len(prefix) :]
    )
    indexes = [f for f in here if f.endswith(INDEX_SUFFIX)]
    if indexes:
        idx = hp.with_path(indexes[0])
        return _remote_index(idx.name(), hub.resolve_url(idx), idx, set(here))
    found = [hp.name(f) for f in here if f.endswith(SAFETENSORS)]
    if not found:
        raise InputError(f"{redact(url)}: folder holds no .safetensors files")
    return found, None, None


def _stat(path: str) -> os.stat_result | None:
    """`os.stat(path)`, or None where `os.path.exists` would say False."""
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _unique_files(files: list[str]) -> list[str]:
    """`files` without repeats: the same spelling, or the same file under another spelling
    (`a.safetensors` and `./a.safetensors`, a symlink and its target: same st_dev/st_ino).
    The first spelling is kept; a file that cannot be stat'ed stays (opening it reports why)."""
    seen: set[object] = set()
    out = []
    for f in files:
        key: object = f
        if "://" not in f:
            try:
                st = os.stat(f)
                key = (st.st_dev, st.st_ino)
            except (OSError, ValueError):
                pass
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def one_checkpoint(
    args: list[str], command: str, *, as_one: bool = False, what: str = "writes"
) -> CheckpointSpec:
    """The one checkpoint, resolved, that a command taking one checkpoint (`fix`, `quantize`,
    `dequantize`, each side of `compare`) was given, found as `check` finds them
    (`discover`): a folder or `hf://ORG/REPO` whose only checkpoint is in a subfolder (a
    diffusers-style `transformer/`) gives that checkpoint. With `as_one`, the arguments are
    its shards. Raises InputError (exit 2) when they name no checkpoint or several unrelated
    ones."""
    return only_one(discover(list(args), as_one=as_one), f"{command} {what}")


def only_one(specs: list[CheckpointSpec], doing: str) -> CheckpointSpec:
    """The one checkpoint in `specs`; InputError naming them when there are several
    (`doing`: "fix writes", "compare reads")."""
    if len(specs) == 1:
        return specs[0]
    from quantcheck.textsafe import redact_url

    names = ", ".join(redact_url(s.name) for s in specs[:3])
    more = f" and {len(specs) - 3} more" if len(specs) > 3 else ""
    raise InputError(
        f"{doing} one checkpoint, but the arguments name {len(specs)} checkpoints "
        f"({names}{more}); give one, or add --as-one if they are the shards of one checkpoint"
    )
