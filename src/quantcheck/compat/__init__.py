"""Public drop-ins for other tools' checkpoint handling (`quantcheck.compat.sglang`); what they
reproduce lives with that runtime's behaviour (`rules/sglang/`)."""
