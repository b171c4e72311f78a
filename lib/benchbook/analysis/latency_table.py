"""The per-packet latency table on disk: Parquet, written in batches (pyarrow ParquetWriter)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SCHEMA_FIELDS = (("id", "uint64"), ("t_pre_ns", "int64"), ("t_post_ns", "int64"), ("latency_ns", "int64"))


class LatencyParquetWriter:
    """Streams (id, t_pre_ns, t_post_ns, latency_ns) batches into one Parquet file."""

    def __init__(self, path: Path, compression: str = "zstd") -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._pa = pa
        self.path = Path(path)
        self.schema = pa.schema([(n, getattr(pa, t)()) for n, t in SCHEMA_FIELDS])
        self._w = pq.ParquetWriter(
            str(self.path), self.schema, compression=compression, use_dictionary=False,
            compression_level=1 if compression == "zstd" else None,
        )
        self.rows = 0

    def write(self, ids: np.ndarray, t_pre: np.ndarray, t_post: np.ndarray, lat: np.ndarray) -> None:
        pa = self._pa
        batch = pa.record_batch(
            [pa.array(ids, pa.uint64()), pa.array(t_pre), pa.array(t_post), pa.array(lat)],
            schema=self.schema,
        )
        self._w.write_batch(batch)
        self.rows += len(ids)

    def close(self) -> None:
        self._w.close()


def read_latencies(path: str | Path) -> dict[str, np.ndarray]:
    """Read a latencies.parquet back into numpy arrays."""
    import pyarrow.parquet as pq

    t = pq.read_table(str(path))
    return {name: t.column(name).to_numpy() for name, _ in SCHEMA_FIELDS}
