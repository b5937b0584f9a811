"""The safetensors dtype table: name -> bits per element and kind. Strings only, no numpy."""

from __future__ import annotations

from quantcheck._record import record


@record
class DType:
    """One safetensors dtype: its header name, width in bits and kind."""

    name: str
    bits: int
    kind: str  # "bool", "uint", "int", "float", "complex"


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("BOOL", 8, "bool"),
        DType("U8", 8, "uint"),
        DType("I8", 8, "int"),
        DType("F8_E5M2", 8, "float"),
        DType("F8_E4M3", 8, "float"),
        DType("F8_E8M0", 8, "float"),
        DType("F8_E4M3FNUZ", 8, "float"),
        DType("F8_E5M2FNUZ", 8, "float"),
        DType("F4", 4, "float"),
        DType("F6_E2M3", 6, "float"),
        DType("F6_E3M2", 6, "float"),
        DType("I16", 16, "int"),
        DType("U16", 16, "uint"),
        DType("F16", 16, "float"),
        DType("BF16", 16, "float"),
        DType("I32", 32, "int"),
        DType("U32", 32, "uint"),
        DType("F32", 32, "float"),
        DType("C64", 64, "complex"),
        DType("F64", 64, "float"),
        DType("I64", 64, "int"),
        DType("U64", 64, "uint"),
    )
}

#: Plain floating dtypes a layer "left in 16-bit" uses.
HIGH_PRECISION = frozenset({"BF16", "F16", "F32", "F64"})
