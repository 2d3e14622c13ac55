"""The kinds of the columns klogtool hands to Arrow and Spark (export's records and batches,
verify's findings in Spark), and the Arrow type of each. The Spark data source derives its
Spark types from the same kinds."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

BINARY, STRING, INT, LONG, TIMESTAMP, BOOLEAN = "binary", "string", "int", "long", "ts", "bool"
HEADERS_BINARY, HEADERS_STRING = "headers-binary", "headers-string"


def arrow_type(kind: str) -> pa.DataType:
    import pyarrow as pa

    simple = {
        BINARY: pa.binary(),
        STRING: pa.string(),
        INT: pa.int32(),
        LONG: pa.int64(),
        TIMESTAMP: pa.timestamp("us", tz="UTC"),
        BOOLEAN: pa.bool_(),
    }
    if kind in simple:
        return simple[kind]
    value = pa.binary() if kind == HEADERS_BINARY else pa.string()
    # Exactly what pyspark's to_arrow_schema gives for array<struct<key:string,value:...>>.
    return pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", value)])))
