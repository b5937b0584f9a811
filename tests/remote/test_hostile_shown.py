"""What is shown and what leaks, remotely (issue 21 B, R, U, T): a location is shown only
through `redact_url`, a token never appears in any output, names from a listing are data."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.cli.main import main

from ._nginx import Nginx
from ._run import run_cli

SECRETS = ("hunter2", "SIGNEDSECRET", "Policy=", "X-Amz")


def _no_secret(text: str) -> None:
    for s in SECRETS:
        assert s not in text, (s, text[:2000])


def test_report_of_remote_checkpoints_shows_no_credentials(
    hub: Nginx, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """index.html, page file names and pages carry no `user:password@` and no signed query."""
    host = hub.endpoint.replace("http://", "http://joe:hunter2@")
    urls = [
        f"{host}/acme/examples/resolve/main/{name}?X-Amz-Signature=SIGNEDSECRET&Policy=p"
        for name in ("fp8_e4m3fn.safetensors", "nvfp4.safetensors")
    ]
    out = tmp_path / "rep"
    assert main(["report", *urls, "-o", str(out)]) == 0
    outerr = capsys.readouterr()
    _no_secret(outerr.out + outerr.err)
    files = sorted(out.iterdir())
    assert len(files) == 3, files
    for f in files:
        _no_secret(f.name)
        _no_secret(f.read_text())
    index = (out / "index.html").read_text()
    assert "joe:" not in index and "***@" in index and "fp8_e4m3fn.safetensors?…" in index
    assert any(f.name.endswith("fp8_e4m3fn.safetensors.html") for f in files)


def test_check_of_signed_urls_shows_no_credentials(
    hub: Nginx, capsys: pytest.CaptureFixture[str]
) -> None:
    host = hub.endpoint.replace("http://", "http://joe:hunter2@")
    urls = [
        f"{host}/acme/examples/resolve/main/{n}?X-Amz-Signature=SIGNEDSECRET"
        for n in ("fp8_e4m3fn.safetensors", "nvfp4.safetensors", "missing.safetensors")
    ]
    for fmt in ("text", "json", "sarif", "github"):
        capsys.readouterr()
        main(["check", "--output-format", fmt, *urls])
        outerr = capsys.readouterr()
        _no_secret(outerr.out + outerr.err)


# --- R: a token is never printed, even a malformed one ---------------------------------------

BAD_TOKENS = [
    "hf_LEAKME\nX-Injected: 1",
    "hf_LEAK\rME",
    "hf_LEAK ME",
    "hf_LEAKMEé",
    "hf_\x1bLEAKME",
]


@pytest.mark.parametrize("bad", BAD_TOKENS)
def test_a_malformed_token_is_refused_and_never_shown(
    hub: Nginx, bad: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_TOKEN", bad)
    hub.clear_log()
    for fmt in ("text", "json"):
        rc, _doc, err = run_cli(
            capsys, "check", "--output-format", fmt, "hf://acme/examples/fp8_e4m3fn.safetensors"
        )
        assert rc == 2
        assert "HF_TOKEN" in err and "neither sent nor shown" in err, err
        assert "LEAK" not in err and "LEAK" not in str(_doc)
    assert hub.log() == []  # refused before any request


def test_a_token_in_a_library_error_is_scrubbed() -> None:
    from quantcheck.io.http import HttpClient, HttpSettings, RemoteError, _Watchdog

    client = HttpClient(HttpSettings(token="hf_LEAKME"))
    dog = _Watchdog(5)
    with pytest.raises(RemoteError) as exc:
        client.fail("http://h/x", ValueError("Invalid header value b'Bearer hf_LEAKME\\n'"), dog)
    assert "LEAK" not in str(exc.value) and "Bearer ***" in str(exc.value)
    with pytest.raises(RemoteError) as exc:
        client.fail("http://h/x", ValueError("bearer zz_other\\r\\n"), dog)
    assert "zz_other" not in str(exc.value)
    url = "http://joe:hunter2@h/x?X-Amz-Signature=SIGNEDSECRET#frag"
    with pytest.raises(RemoteError) as exc:
        client.fail(url, ValueError(f"can't contain control characters: {url!r}"), dog)
    _no_secret(str(exc.value))


def test_the_token_hf_auth_login_saved_is_used(
    hub: Nginx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """HF_TOKEN unset: $HF_HOME/token (what `hf auth login` writes), or $HF_TOKEN_PATH."""
    home = tmp_path / "hfhome"
    home.mkdir()
    (home / "token").write_text("hf_saved_token\n")
    monkeypatch.setenv("HF_HOME", str(home))
    hub.clear_log()
    url = "hf://acme/examples/fp8_e4m3fn.safetensors"
    rc, _doc, err = run_cli(capsys, "check", url)
    assert rc == 0, err
    assert {row[3] for row in hub.log()} == {"Bearer hf_saved_token"}
    other = tmp_path / "elsewhere"
    other.write_text("hf_path_token")
    monkeypatch.setenv("HF_TOKEN_PATH", str(other))
    hub.clear_log()
    assert run_cli(capsys, "check", url)[0] == 0
    assert {row[3] for row in hub.log()} == {"Bearer hf_path_token"}
    monkeypatch.setenv("HF_TOKEN", "hf_env_wins")
    hub.clear_log()
    assert run_cli(capsys, "check", url)[0] == 0
    assert {row[3] for row in hub.log()} == {"Bearer hf_env_wins"}


def test_a_saved_token_that_is_a_fifo_is_not_waited_on(
    hub: Nginx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    fifo = tmp_path / "token"
    os.mkfifo(fifo)
    monkeypatch.setenv("HF_TOKEN_PATH", str(fifo))
    hub.clear_log()
    assert run_cli(capsys, "check", "hf://acme/examples/fp8_e4m3fn.safetensors")[0] == 0
    assert {row[3] for row in hub.log()} == {"-"}


# --- U: hub file names are data --------------------------------------------------------------

ODD = ["a@b.safetensors", "q?x.safetensors", "h#1.safetensors", "p%41.safetensors"]


@pytest.fixture
def odd_repo(hub: Nginx) -> str:
    """A repository whose file names hold `@`, `?`, `#`, `%`, and an index whose shards do."""
    import json
    import shutil

    from ._files import EXAMPLES, split_example, tree_listing

    files = hub.root / "acme" / "odd" / "resolve" / "main"
    if not files.exists():
        files.mkdir(parents=True)
        for name in ODD:
            shutil.copy(EXAMPLES / "fp8_e4m3fn.safetensors", files / name)
        sharded = files / "sh"
        sharded.mkdir()
        split_example(EXAMPLES / "nvfp4.safetensors", sharded, stem="m@1?#")
        api = hub.root / "api" / "models" / "acme" / "odd" / "tree"
        api.mkdir(parents=True)
        listing = tree_listing(files) + [
            {**e, "path": f"sh/{e['path']}"} for e in tree_listing(sharded)
        ]
        (api / "main").write_text(json.dumps(listing))
    return "hf://acme/odd"


def test_hub_file_names_with_at_query_and_hash_are_data(
    odd_repo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, doc, err = run_cli(capsys, "check", "--output-format", "json", odd_repo)
    assert isinstance(doc, dict), err
    names = [c["name"] for c in doc["checkpoints"]]
    assert names == [
        f"{odd_repo}/a%40b.safetensors",
        f"{odd_repo}/h%231.safetensors",
        f"{odd_repo}/p%2541.safetensors",
        f"{odd_repo}/q%3Fx.safetensors",
        f"{odd_repo}/sh/m%401%3F%23.safetensors.index.json",
    ], names
    assert rc == 0 and all(c["kind"] == "checked" for c in doc["checkpoints"]), doc
    # each shown name, given back, names the same file (no revision, query or fragment)
    for name in names[:4]:
        rc, doc, err = run_cli(capsys, "check", "--output-format", "json", name)
        assert rc == 0, err


def test_http_index_shard_names_are_quoted(
    odd_repo: str, hub: Nginx, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{hub.endpoint}/acme/odd/resolve/main/sh/m%401%3F%23.safetensors.index.json"
    rc, doc, err = run_cli(capsys, "check", "--output-format", "json", url)
    assert rc == 0, err
    assert [i["path"].rsplit("/", 1)[-1] for i in doc["checkpoints"][0]["inputs"]] == [
        "m%401%3F%23-00001-of-00002.safetensors",
        "m%401%3F%23-00002-of-00002.safetensors",
    ], doc


def test_redact_url_keeps_hub_names_whole() -> None:
    from quantcheck.io import hub
    from quantcheck.textsafe import redact_url

    for name in ODD:
        shown = hub.HubPath("models", "o/r", name, None).name()
        assert redact_url(shown) == shown
        assert hub.parse(shown).path == name and hub.parse(shown).revision is None
    assert redact_url("hf://o/r/x?.safetensors") == "hf://o/r/x?.safetensors"
    assert redact_url("https://h/x.safetensors?sig=1") == "https://h/x.safetensors?…"


# --- J: a listing page is filtered as it arrives ---------------------------------------------


def test_a_huge_listing_page_is_not_kept(tmp_path: Path) -> None:
    """A 60 MiB listing page (half a million entries, none a checkpoint but one) costs the
    child process about what a tiny listing costs, not the page several times over."""
    import os

    from ._listing_server import ListingServer, listing_bytes, peak_rss_of

    huge = 580_000
    assert listing_bytes(huge) > 56 * 2**20
    peaks = {}
    for n in (10, huge):
        with ListingServer(n) as server:
            env = {**os.environ, "HF_ENDPOINT": server.endpoint, "HF_HOME": str(tmp_path)}
            env["QUANTCHECK_HTTP_TIMEOUT"] = "60"  # a loaded machine streams 57 MB slowly
            rc, err, peaks[n] = peak_rss_of(["check", "-q", "hf://acme/huge"], env)
            assert rc == 1, err  # its one checkpoint is marked: sglang's loaders (QC631)
    assert peaks[huge] - peaks[10] < 24 * 2**20, peaks


# --- T: --max-bytes counts an index --------------------------------------------------------


@pytest.fixture
def big_index_repo(hub: Nginx) -> str:
    """A sharded checkpoint whose index is 9 MB (a long metadata string)."""
    import json

    from ._files import EXAMPLES, split_example, tree_listing

    files = hub.root / "acme" / "bigindex" / "resolve" / "main"
    if not files.exists():
        files.mkdir(parents=True)
        split_example(EXAMPLES / "fp8_e4m3fn.safetensors", files)
        index = files / "model.safetensors.index.json"
        doc = json.loads(index.read_text())
        doc["metadata"]["pad"] = "x" * 9_000_000
        index.write_text(json.dumps(doc))
        api = hub.root / "api" / "models" / "acme" / "bigindex" / "tree"
        api.mkdir(parents=True)
        (api / "main").write_text(json.dumps(tree_listing(files)))
    return "hf://acme/bigindex"


def test_max_bytes_bounds_a_remote_index(
    big_index_repo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The index itself is over the cap (the error names it, not a shard after it)."""
    for arg in (f"{big_index_repo}/model.safetensors.index.json", big_index_repo):
        rc, _doc, err = run_cli(capsys, "check", "--max-bytes", "100K", arg)
        assert rc == 2, (arg, err)
        assert "index.json: checking it needs more than the 102,400-byte cap" in err, err
        rc, _doc, err = run_cli(capsys, "check", "--max-bytes", "20M", arg)
        assert rc == 0, (arg, err)


def test_an_index_read_by_discovery_counts_in_the_check(
    big_index_repo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Discovery reads the index ahead (to group shards); the check that takes that copy
    counts it: 9 MB of index plus the shards do not fit in 9.5M."""
    rc, _doc, err = run_cli(capsys, "check", "--max-bytes", "8800K", big_index_repo)
    assert rc == 2 and "cap" in err, err


# --- issue 22 item 7: commands that read tensor data have --max-bytes, and no cap by default ---


def _big_original(path: Path) -> None:
    """The BF16 original of `_files.big_file(8)`: one [512, 16384] zero weight."""
    from quantcheck.io.build import RawTensor, build_safetensors

    rows, k = 8 * 1024 * 1024 // 16384, 16384
    path.write_bytes(
        build_safetensors([RawTensor("blk.lin.weight", "BF16", (rows, k), bytes(rows * k * 2))])
    )


def test_remote_compare_reads_the_whole_checkpoint_by_default(
    hub: Nginx, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    orig = tmp_path / "orig.safetensors"
    _big_original(orig)
    url = "hf://acme/big/big.safetensors"
    rc, out, err = run_cli(capsys, "compare", "--max-bytes", "1M", url, str(orig))
    assert rc == 1, err
    assert "not compared: blk.lin:" in out and "raise --max-bytes" in out, out
    assert out.rstrip().endswith("compared 0 layers, 1 not compared"), out
    rc, out, err = run_cli(capsys, "compare", url, str(orig))
    assert rc == 0, (out, err)
    assert out.rstrip().splitlines()[-1].startswith("compared 1 layer: worst relative L2")
    rc, doc, err = run_cli(capsys, "compare", "--output-format", "json", url, str(orig))
    assert doc["summary"]["layers_compared"] == 1 and doc["summary"]["worst_layer"] == "blk.lin"


@pytest.mark.parametrize(
    ("argv", "cap"),
    [
        (["compare", "Q", "O"], None),
        (["compare", "--max-bytes", "2G", "Q", "O"], 2 << 30),
        (["dequantize", "Q", "-o", "X"], None),
        (["quantize", "Q", "--to", "mxfp8", "-o", "X"], None),
        (["fix", "Q", "--dry-run"], None),
        (["fix", "--max-bytes", "10M", "Q", "--dry-run"], 10 << 20),
        (["report", "Q"], 64 << 20),
        (["report", "Q", "--compare", "O"], None),
        (["report", "--max-bytes", "1G", "Q", "--compare", "O"], 1 << 30),
    ],
)
def test_the_byte_cap_each_command_reads_with(
    argv: list[str], cap: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap in force when the command opens a checkpoint: none for commands whose job
    is reading tensor data, 64 MiB for header checks; `--max-bytes` sets it everywhere."""
    import quantcheck.model.checkpoint as checkpoint
    import quantcheck.numeric.compare as compare
    from quantcheck.errors import InputError
    from quantcheck.io.limits import byte_cap

    from ._files import EXAMPLES

    seen: list[int | None] = []

    def load(*_a: object, **_k: object) -> None:
        seen.append(byte_cap())
        raise InputError("stop here")

    monkeypatch.setattr(checkpoint, "load_checkpoint", load)
    monkeypatch.setattr(compare, "load_checkpoint", load)  # imported at module level there
    files = {
        "Q": str(EXAMPLES / "fp8_e4m3fn.safetensors"),
        "O": str(EXAMPLES / "nvfp4.safetensors"),
    }
    assert main([files.get(a, a) for a in argv]) in (1, 2)
    assert seen[:1] == [cap]


# --- C, remotely: a hub listing entry with a hostile name --------------------------------------

FORGED = "x\n::error file=README.md,line=1::forged\n\x1b]0;T\x07.safetensors"


def test_a_hostile_listing_name_is_escaped_in_every_format(
    hub: Nginx, capfd: pytest.CaptureFixture[str]
) -> None:
    """The listing names a file that is not there (the server answers 404): its error line,
    in every format, on stdout and stderr, carries no raw control and starts no `::` line."""
    import json
    import re

    api = hub.root / "api" / "models" / "acme" / "forged" / "tree"
    api.mkdir(parents=True, exist_ok=True)
    entry = {"type": "file", "oid": "0" * 40, "size": 10, "path": FORGED}
    (api / "main").write_text(json.dumps([entry]))
    raw = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
    for fmt in ("text", "json", "sarif", "github"):
        assert main(["check", "--output-format", fmt, "hf://acme/forged"]) == 2
        out, err = capfd.readouterr()
        for text in (out, err):
            assert not raw.search(text), (fmt, text)
            assert not any(line.startswith("::error file=README") for line in text.splitlines())
        assert "%1B%5D0%3BT%07" in err or "\\x1b]0;T\\x07" in err, err


def _stream(text: bytes, sizes: list[int]) -> list[object]:
    from quantcheck.io import hub

    s = hub._ArrayStream("where", hub.HubPath("models", "o/r", "", None))
    out: list[object] = []
    pos, k = 0, 0
    while pos < len(text):
        n = sizes[k % len(sizes)]
        out += list(s.feed(text[pos : pos + n]))
        pos, k = pos + n, k + 1
    out += list(s.feed(b""))
    s.finish()
    return out


def test_listing_stream_reads_what_json_reads() -> None:
    import json

    doc = [
        {"type": "file", "path": "a/é.safetensors", "size": 1},
        {"type": "directory", "path": "a"},
        [1, 2, {"x": "]}[,"}],
        's"tr',
        12345,
        True,
        None,
        {"path": "x" * 5000},
    ]
    text = json.dumps(doc, ensure_ascii=False, indent=1).encode()
    for sizes in ([1], [2, 3, 5], [7, 64, 1], [len(text)]):
        assert _stream(text, sizes) == doc, sizes
    assert _stream(b"  [ ]  ", [1]) == []


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (b'{"a": 1}', "not a JSON array"),
        (b"[1, 2", "not closed"),
        (b"[1 2]", "expected , or ]"),
        (b"[1] x", "text after the array"),
        (b"[1, }", "not valid JSON"),
    ],
)
def test_listing_stream_refuses_what_is_not_a_listing(text: bytes, why: str) -> None:
    from quantcheck.io.http import RemoteError

    with pytest.raises(RemoteError, match=why):
        _stream(text, [3])


def test_listing_stream_bounds_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry that never ends is refused at MAX_ENTRY, and an incomplete entry is tried
    again only when the text after it has doubled (linear work)."""
    import json

    from quantcheck.io import hub
    from quantcheck.io.http import RemoteError

    monkeypatch.setattr(hub, "MAX_ENTRY", 10_000)
    with pytest.raises(RemoteError, match="an entry is over"):
        _stream(b'[{"path": "' + b"x" * 20_000, [100])
    calls: list[int] = []
    real = json.JSONDecoder.raw_decode

    def counting(self: json.JSONDecoder, s: str, idx: int = 0) -> tuple[object, int]:
        calls.append(len(s) - idx)
        return real(self, s, idx)

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counting)
    _stream(b'[{"path": "' + b"x" * 9_000 + b'"}]', [10])
    assert len(calls) < 20 and sum(calls) < 4 * 9_000, (len(calls), sum(calls))
