"""QC5xx: several files, index.json and tensors repeated across shards."""

from __future__ import annotations

from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.rule import Rule, effects

E, W = Severity.ERROR, Severity.WARNING

RULES = [
    Rule(
        "QC501",
        "duplicate-tensor-across-shards",
        E,
        "the same tensor name in two shards",
        effects("degraded", "degraded"),
        None,
        "Each tensor name appears in exactly one shard.",
        "Loaders merge shards into one dict: the last shard read wins silently, so which "
        "bytes load depends on file order.",
        "blocks.0.attn.qkv.weight in part1 (I8) and part2 (BF16)",
        "Delete the stale copy from one shard and re-save it.",
        "sglang 0.5.23 inspect_comfy_quant_markers keys tensor metadata by name across shards, "
        "last wins ("
        "case duplicate_key_across_shards, recorded); ComfyUI effect inferred.",
        repair="refuse",
    ),
    Rule(
        "QC502",
        "index-path-escapes",
        E,
        "index names a shard outside its folder",
        effects("fails", "fails"),
        None,
        "Every shard path in an index's weight_map stays inside the index's folder by name: "
        "no absolute path, no `..` component. A shard that is a symlink is opened wherever it "
        "points (a Hugging Face cache snapshot links every file into ../../blobs/).",
        "An index pointing at ../../x is a path traversal; quantcheck does not open it.",
        '"weight_map": {"a.weight": "../../etc/passwd"}',
        "Put the shards beside the index and name them relatively.",
        "quantcheck's own safety rule (inferred: loaders would open another file).",
        repair="refuse",
    ),
    Rule(
        "QC503",
        "index-invalid",
        E,
        "index.json is not a weight_map index",
        effects("fails", "fails"),
        None,
        "A *.safetensors.index.json is JSON with a weight_map object of name -> shard file.",
        "Loaders that read the index cannot find any shard.",
        '{"metadata": {}}',
        "Regenerate the index from the shards.",
        "Hugging Face sharded-checkpoint convention (read); effect inferred.",
        repair="refuse",
    ),
    Rule(
        "QC504",
        "index-shard-missing",
        E,
        "a shard named by the index does not exist",
        effects("fails", "fails"),
        None,
        "Every shard file named in weight_map exists.",
        "The tensors of that shard are missing; the model cannot load.",
        '"weight_map": {"a.weight": "model-00002-of-00002.safetensors"} with no such file',
        "Download the missing shard.",
        "Hugging Face sharded-checkpoint convention (read); effect inferred.",
        repair="refuse",
    ),
    Rule(
        "QC505",
        "index-weight-map-mismatch",
        W,
        "index and shards disagree on a tensor",
        effects("none", "none"),
        Safety.SAFE,
        "Every tensor of every shard is listed in weight_map under the shard that holds it.",
        "Loaders that trust the index skip or mislocate such tensors (a missing marker entry "
        "leaves a layer unmarked).",
        '"weight_map": {"a.weight": "part1.safetensors"} but a.weight is in part2',
        "Regenerate the index from the shards (`quantcheck fix` writes a correct index).",
        "Hugging Face sharded-checkpoint convention (read); effect inferred.",
        repair="rewrite",
    ),
    Rule(
        "QC506",
        "shard-set-incomplete",
        E,
        "a NAME-0000k-of-0000n shard set lacks a member",
        effects("fails", "fails"),
        None,
        "Files named NAME-00001-of-0000N.safetensors with no index naming them are one "
        "checkpoint; all N of them are present.",
        "The tensors of the missing shard are missing; the model cannot load (or loads "
        "with layers left at their initial values).",
        "model-00001-of-00003.safetensors and model-00003-of-00003.safetensors, no part 2",
        "Download the missing shard.",
        "Hugging Face sharded-checkpoint naming convention (read). A missing tensor is "
        "missing on every runtime: each one fails (its reason below).",
    ),
]
