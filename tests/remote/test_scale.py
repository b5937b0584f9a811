"""Remote at scale: request counts per checkpoint, the byte cap, and --jobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.io.build import RawTensor, build_safetensors, marker_tensor
from quantcheck.io.header import read_header
from quantcheck.io.httpsource import FIRST_READ, HttpSource
from quantcheck.io.limits import MAX_BYTES, byte_cap, parse_byte_count
from quantcheck.model.checkpoint import Checkpoint, Shard, assemble

from ._files import EXAMPLES, big_file, example_files
from ._hostile import HostileServer
from ._nginx import Nginx
from ._run import run_cli, without_inputs


def many_layers(n: int, weight_bytes: int = 256) -> bytes:
    """`n` fp8 layers (marker, weight, scale): about 140 header bytes per tensor, like real
    diffusion checkpoints."""
    tensors: list[RawTensor] = []
    for i in range(n):
        p = f"model.diffusion_model.double_blocks.{i}.img_attn.qkv"
        tensors += [
            marker_tensor(p, {"format": "float8_e4m3fn"}),
            RawTensor(f"{p}.weight", "F8_E4M3", (weight_bytes // 16, 16), bytes(weight_bytes)),
            RawTensor(f"{p}.weight_scale", "F32", (), b"\x00\x00\x80\x3f"),
        ]
    return build_safetensors(tensors)


def header_len(data: bytes) -> int:
    return 8 + int.from_bytes(data[:8], "little")


# -- round trips -------------------------------------------------------------------------


@pytest.mark.parametrize("name", [p.name for p in example_files()])
def test_every_example_costs_one_request(
    hub: Nginx, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """Header and markers of every bundled example lie in the first range: one request."""
    assert (EXAMPLES / name).stat().st_size <= FIRST_READ
    code, doc, err = run_cli(capsys, "check", "--format", "json", f"hf://acme/examples/{name}")
    assert code in (0, 1), err
    assert doc["inputs"][0]["requests"] == 1


def test_a_3000_tensor_header_comes_in_the_first_request(hostile: HostileServer) -> None:
    data = many_layers(1000)
    assert 3 * 1000 * 120 < header_len(data) <= FIRST_READ < len(data)
    hostile.set_data(data)
    src = HttpSource(hostile.url("ok"))
    try:
        ck = assemble(Checkpoint(inputs=["x"]), [Shard(src, read_header(src))])
        assert len(ck.markers) == 1000
        assert src.describe()["requests"] == 2  # the first range, then the markers past it
    finally:
        src.close()


def test_far_apart_markers_come_in_one_multi_range_request(hostile: HostileServer) -> None:
    data = many_layers(40, weight_bytes=64 * 1024)  # markers 64 KiB apart: not coalesced
    hostile.set_data(data)
    src = HttpSource(hostile.url("ok"), first_read=16384)
    try:
        ck = assemble(Checkpoint(inputs=["x"]), [Shard(src, read_header(src))])
        assert len(ck.markers) == 40
        assert src.describe()["requests"] == 2
        assert "," in hostile.served.requests[-1].headers["range"]
    finally:
        src.close()


# -- the byte cap ----------------------------------------------------------------------


def test_byte_cap_default_and_parsing() -> None:
    assert byte_cap() == MAX_BYTES == 64 * 2**20
    assert [parse_byte_count(s) for s in ("500K", "64M", "1G", "4096", "2MiB", "3kb")] == [
        500 * 1024,
        64 * 2**20,
        2**30,
        4096,
        2 * 2**20,
        3 * 1024,
    ]
    for bad in ("", "lots", "-5", "8", "1.5M"):
        with pytest.raises(ValueError):
            parse_byte_count(bad)


def test_header_beyond_the_cap_is_refused_before_downloading(
    hostile: HostileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    data = many_layers(1000)
    hostile.set_data(data)
    code, _, err = run_cli(capsys, "check", "--max-bytes", "64K", hostile.url("ok"))
    assert code == 2
    assert err.startswith("quantcheck: error: ") and "Traceback" not in err
    assert "65,536-byte cap per checkpoint" in err and "--max-bytes" in err, err
    assert sum(hostile.served.sent) <= 64 * 1024
    assert byte_cap() == MAX_BYTES  # the run's cap does not outlive it


def test_read_weights_beyond_the_cap_is_exit_2(
    hostile: HostileServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = big_file(8)
    hostile.set_data(data)
    url = hostile.url("ok", "big.safetensors")
    code, _, err = run_cli(capsys, "check", "--format", "json", "--max-bytes", "1M", url)
    assert code in (0, 1), err  # header and markers: far below the cap
    code, _, err = run_cli(capsys, "check", "--deep", "--read-weights", "--max-bytes", "1M", url)
    assert code == 2, err
    assert "1,048,576-byte cap per checkpoint" in err, err
    assert sum(hostile.served.sent) < 2 * 2**20


def test_a_server_pushing_past_the_cap_is_cut_off(hostile: HostileServer) -> None:
    """A server ignoring Range sends the whole file: reading stops at the cap."""
    data = big_file(8)
    hostile.set_data(data)
    src = HttpSource(hostile.url("norange", "big.safetensors"), max_bytes=200_000)
    try:
        with pytest.raises(OSError, match="cap per checkpoint"):
            src.read(len(data) - 100, 100)
        assert src.describe()["bytes_fetched"] <= 200_000 + 64 * 1024
    finally:
        src.close()


def test_cap_messages_redact_credentials(
    hostile: HostileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile.set_data(many_layers(1000))
    url = hostile.url("ok").replace("http://", "http://user:s3cret@") + "?sig=s3cret"
    code, _, err = run_cli(capsys, "check", "--max-bytes", "64K", url)
    assert code == 2 and "cap per checkpoint" in err
    assert "s3cret" not in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--max-bytes", "lots"], "--max-bytes: 'lots' is not a byte count"),
        (["--jobs", "0"], "--jobs: 0 is not between 1 and 64"),
    ],
)
def test_bad_limits_are_usage_errors(
    capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    code, _, err = run_cli(capsys, "check", *args, str(example_files()[0]))
    assert code == 2
    assert needle in err, err


# -- --jobs ----------------------------------------------------------------------------


def test_jobs_reads_shards_concurrently_with_the_same_result(
    hub: Nginx, capsys: pytest.CaptureFixture[str]
) -> None:
    one = run_cli(capsys, "check", "--format", "json", "--jobs", "1", "hf://acme/sharded")
    many = run_cli(capsys, "check", "--format", "json", "--jobs", "4", "hf://acme/sharded")
    assert one[0] == many[0] and one[0] in (0, 1), one[2]
    assert without_inputs(many[1]) == without_inputs(one[1])
    assert [r["requests"] for r in many[1]["inputs"]] == [r["requests"] for r in one[1]["inputs"]]
    assert len(many[1]["inputs"]) == 2


def test_jobs_with_a_missing_shard_is_a_clear_error(
    hostile: HostileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile.set_data(example_files()[0].read_bytes())
    code, _, err = run_cli(
        capsys,
        "check",
        "--jobs",
        "4",
        hostile.url("ok", "a.safetensors"),
        hostile.url("status404", "b.safetensors"),
        hostile.url("ok", "c.safetensors"),
    )
    assert code == 2
    assert "HTTP 404" in err and "b.safetensors" in err, err


@pytest.mark.parametrize("jobs", ["1", "4"])
def test_byte_cap_bounds_a_checkpoint_not_each_shard(
    hub: Nginx, capsys: pytest.CaptureFixture[str], jobs: str
) -> None:
    """Every shard fits under the cap, the checkpoint does not: the check stops (exit 2)
    instead of fetching up to the cap once per shard."""
    url = "hf://acme/sharded/model.safetensors.index.json"
    code, doc, err = run_cli(capsys, "check", "--format", "json", "--jobs", jobs, url)
    assert code in (0, 1) and isinstance(doc, dict), err
    per_shard = [i["bytes_fetched"] for i in doc["inputs"] if "bytes_fetched" in i]
    assert len(per_shard) == 2, doc["inputs"]
    cap = max(per_shard) + (sum(per_shard) - max(per_shard)) // 2
    assert max(per_shard) < cap < sum(per_shard)
    hub.clear_log()
    code, _, err = run_cli(capsys, "check", "--jobs", jobs, "--max-bytes", str(cap), url)
    assert code == 2, err
    assert f"{cap:,}-byte cap per checkpoint" in err and "Traceback" not in err, err
    sent = sum(int(row[5]) for row in hub.log() if row[1].endswith(".safetensors"))
    assert sent <= cap + 64 * 1024
    index = hub.root / "acme" / "sharded" / "resolve" / "main" / "model.safetensors.index.json"
    whole = sum(per_shard) + index.stat().st_size  # the index counts too (issue 21 T)
    code, _, err = run_cli(capsys, "check", "--max-bytes", str(whole), url)
    assert code in (0, 1), err
