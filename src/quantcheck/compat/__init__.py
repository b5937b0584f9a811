"""Drop-in reproductions of other tools' checkpoint handling (see `quantcheck.compat.sglang`)."""
