"""QC5xx: rules of several files, index.json and tensors repeated across shards (the checks run in
the model's shard merge).
"""
