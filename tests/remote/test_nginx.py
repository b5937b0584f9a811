"""Remote checks against nginx serving a hub-like folder: results equal local ones."""

from __future__ import annotations

import pytest

from quantcheck.io.httpsource import FIRST_READ

from ._files import EXAMPLES, example_files
from ._nginx import CDN_COMMIT, COMMIT, LINKED_ETAG, Nginx
from ._run import rename, run_cli, without_inputs
from .conftest import BOUNDARY_SIZES

pytestmark = pytest.mark.system

EXAMPLE_NAMES = [p.name for p in example_files()]


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_check_remote_equals_local(
    hub: Nginx, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    lcode, local, _ = run_cli(capsys, "check", "--format", "json", str(EXAMPLES / name))
    rcode, remote, err = run_cli(capsys, "check", "--format", "json", f"hf://acme/examples/{name}")
    assert rcode == lcode, err
    assert without_inputs(remote) == without_inputs(local)
    (rec,) = remote["inputs"]
    size = (EXAMPLES / name).stat().st_size
    assert rec["size"] == size
    assert rec["revision"] == COMMIT
    assert rec["warnings"] == []
    # the first read holds the header and every marker before byte 100,000; the rest of the
    # markers come in one multi-range request
    assert rec["requests"] == (1 if size <= FIRST_READ else 2)
    assert rec["bytes_fetched"] < min(size, FIRST_READ) + 4096


@pytest.mark.parametrize("name", EXAMPLE_NAMES[:3])
def test_inspect_remote_equals_local(
    hub: Nginx, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    local_path, url = str(EXAMPLES / name), f"hf://acme/examples/{name}"
    _, local, _ = run_cli(capsys, "inspect", "--format", "json", local_path)
    _, remote, err = run_cli(capsys, "inspect", "--format", "json", url)
    assert isinstance(remote, dict) and isinstance(local, dict), err
    # inspect names files by their full path or URL
    assert rename(without_inputs(remote), {url: name}) == rename(
        without_inputs(local), {local_path: name}
    )


def test_small_first_read_fetches_only_header_and_markers(
    hub: Nginx, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import quantcheck.io.httpsource as hs

    monkeypatch.setattr(hs, "FIRST_READ", 16384)
    for path in example_files():
        _, remote, err = run_cli(
            capsys, "check", "--format", "json", f"hf://acme/examples/{path.name}"
        )
        (rec,) = remote["inputs"]
        assert rec["requests"] <= 3, err
        assert rec["bytes_fetched"] < path.stat().st_size // 4


@pytest.mark.parametrize("n", BOUNDARY_SIZES)
def test_header_sizes_around_first_read(
    hub: Nginx, capsys: pytest.CaptureFixture[str], n: int
) -> None:
    local_path = hub.root / "acme/boundary/resolve/main" / f"h{n}.safetensors"
    _, local, _ = run_cli(capsys, "check", "--format", "json", str(local_path))
    _, remote, err = run_cli(
        capsys, "check", "--format", "json", f"hf://acme/boundary/h{n}.safetensors"
    )
    assert isinstance(remote, dict), err
    assert without_inputs(remote) == without_inputs(local)
    (rec,) = remote["inputs"]
    assert rec["header_bytes"] == n
    assert rec["requests"] == (1 if 8 + n <= FIRST_READ else 2)
    assert rec["bytes_fetched"] == min(8 + n + 16, max(8 + n, FIRST_READ))


def test_listing_finds_index_and_shards(hub: Nginx, capsys: pytest.CaptureFixture[str]) -> None:
    local_dir = hub.root / "acme/sharded/resolve/main"
    _, local, _ = run_cli(capsys, "check", "--format", "json", str(local_dir))
    _, remote, err = run_cli(capsys, "check", "--format", "json", "hf://acme/sharded")
    assert isinstance(remote, dict), err
    assert without_inputs(remote) == without_inputs(local)
    assert [r["path"] for r in remote["inputs"]] == [
        "hf://acme/sharded/model-00001-of-00002.safetensors",
        "hf://acme/sharded/model-00002-of-00002.safetensors",
    ]
    _, by_index, _ = run_cli(
        capsys, "check", "--format", "json", "hf://acme/sharded/model.safetensors.index.json"
    )
    assert without_inputs(by_index) == without_inputs(local)
    _, at_rev, _ = run_cli(capsys, "check", "--format", "json", "hf://acme/sharded@main")
    assert [r["path"] for r in at_rev["inputs"]] == [
        "hf://acme/sharded@main/model-00001-of-00002.safetensors",
        "hf://acme/sharded@main/model-00002-of-00002.safetensors",
    ]


def test_listing_checks_the_safetensors_files(
    hub: Nginx, capsys: pytest.CaptureFixture[str]
) -> None:
    _, remote, err = run_cli(capsys, "check", "--format", "json", "hf://acme/plain")
    assert isinstance(remote, dict), err
    assert [r["path"] for r in remote["inputs"]] == [f"hf://acme/plain/{EXAMPLE_NAMES[0]}"]


def test_listing_without_safetensors_is_an_input_error(
    hub: Nginx, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "check", "hf://acme/empty")
    assert code == 2
    assert "holds no .safetensors files" in err


def test_listing_unavailable_asks_for_a_path(
    hub: Nginx, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "check", "hf://acme/boundary")
    assert code == 2
    assert "give a file path" in err
    assert "Traceback" not in err


def test_missing_file_is_404(hub: Nginx, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "check", "hf://acme/examples/nope.safetensors")
    assert code == 2
    assert "404" in err and "not found" in err


def test_redirect_to_other_host_keeps_range_drops_token(
    hub: Nginx, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token")
    name = EXAMPLE_NAMES[0]
    hub.clear_log()
    _code, remote, err = run_cli(capsys, "check", "--format", "json", f"hf://acme/cdn/{name}")
    assert isinstance(remote, dict), err
    _, local, _ = run_cli(capsys, "check", "--format", "json", str(EXAMPLES / name))
    assert without_inputs(remote) == without_inputs(local)
    (rec,) = remote["inputs"]
    assert rec["revision"] == CDN_COMMIT
    assert rec["etag"] == LINKED_ETAG
    assert rec["served_by"] == "localhost"
    rows = hub.log()
    hub_rows = [r for r in rows if r[1].startswith("/acme/cdn/")]
    cdn_rows = [r for r in rows if r[1].startswith("/cdn-store/")]
    assert hub_rows and cdn_rows
    assert all(r[0] == "127.0.0.1" and r[3] == "Bearer hf_secret_token" for r in hub_rows)
    assert all(r[0] == "localhost" and r[3] == "-" for r in cdn_rows)
    assert all(r[2].startswith("bytes=") for r in hub_rows + cdn_rows)
    assert all(r[4] == "206" for r in cdn_rows)


def test_same_host_redirect_keeps_token(
    hub: Nginx, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token")
    hub.clear_log()
    _, remote, err = run_cli(
        capsys, "check", "--format", "json", f"hf://acme/hop/{EXAMPLE_NAMES[0]}"
    )
    assert isinstance(remote, dict), err
    rows = hub.log()
    assert rows and all(r[3] == "Bearer hf_secret_token" for r in rows)


def test_offline_refuses(
    hub: Nginx, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.clear_log()
    code, _, err = run_cli(capsys, "check", f"hf://acme/examples/{EXAMPLE_NAMES[0]}")
    assert code == 2
    assert "HF_HUB_OFFLINE" in err
    assert hub.log() == []


def test_plain_https_style_url(hub: Nginx, capsys: pytest.CaptureFixture[str]) -> None:
    name = EXAMPLE_NAMES[1]
    url = f"{hub.endpoint}/acme/examples/resolve/main/{name}"
    _, remote, err = run_cli(capsys, "check", "--format", "json", url)
    _, local, _ = run_cli(capsys, "check", "--format", "json", str(EXAMPLES / name))
    assert isinstance(remote, dict), err
    assert without_inputs(remote) == without_inputs(local)
    assert remote["inputs"][0]["path"] == url


def test_scale_tensors_read_remotely(hub: Nginx, monkeypatch: pytest.MonkeyPatch) -> None:
    """What --deep reads (scale tensors) comes through one multi-range request per batch."""
    import quantcheck.io.httpsource as hs

    monkeypatch.setattr(hs, "FIRST_READ", 16384)  # scales past the first read
    from quantcheck.model.checkpoint import load_checkpoint

    name = "mxfp8.safetensors"
    with (
        load_checkpoint(str(EXAMPLES / name)) as local,
        load_checkpoint(f"hf://acme/examples/{name}") as remote,
    ):
        src = remote.shards[0].source
        before = src.describe()
        scales = [t for t in remote.tensors.values() if "scale" in t.name]
        assert scales
        got = src.read_many([(t.begin, t.nbytes) for t in scales])
        want = [local.shards[0].source.read(t.begin, t.nbytes) for t in scales]
        assert got == want
        after = src.describe()
        assert after["requests"] == before["requests"] + 1
        fetched = after["bytes_fetched"] - before["bytes_fetched"]
        assert fetched < sum(t.nbytes for t in scales) + 200 * len(scales)
        layer = next(la for la in remote.layers.values() if la.marker is not None)
        tensor = layer.tensors["weight"]
        assert src.read(tensor.begin, tensor.nbytes) == local.shards[0].source.read(
            tensor.begin, tensor.nbytes
        )
