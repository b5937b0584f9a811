"""sglang's behaviour: its rules (catalog), their checks (checks: format support and mixes;
header_path, header_rules: its header path per release; release_rules: older releases' marker
rules; loaders: each loader's verdict; gpu: its device gates), its error messages (messages), and
its marker loading reproduced byte for byte (configs: resolver and config constructors;
inspector, inspector_layers, marker_bytes: the marker inspector; outcome: the three in a row),
which `quantcheck.compat.sglang` offers as a drop-in. Its record and releases:
runtimes/sglang_releases.py.
"""
