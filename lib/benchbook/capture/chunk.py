"""PacketChunk: a batch of packets read from one capture file."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PacketChunk:
    """Packets ``first_index .. first_index + n - 1`` of ``source``.

    ``data`` holds the frame bytes; frame ``i`` is ``data[offsets[i] : offsets[i] + caplen[i]]``.
    Each chunk owns its buffer, so chunks stay valid after the reader moves on.
    """

    ts_ns: np.ndarray  # int64[n], nanoseconds since the epoch
    caplen: np.ndarray  # uint32[n], captured bytes
    wirelen: np.ndarray  # uint32[n], original length on the wire
    offsets: np.ndarray  # int64[n], start of each frame in data
    data: np.ndarray  # uint8 buffer
    first_index: int
    source: str
    file_offsets: np.ndarray  # int64[n], byte offset of each record header in the (decompressed) file
    linktype: int = 1
    snaplen: int = 0  # pcap header snap length, or the first pcapng interface's (0: none)
    format: str = "pcap"  # "pcap" or "pcapng"

    def __len__(self) -> int:
        return int(self.ts_ns.shape[0])

    def frame(self, i: int) -> bytes:
        """Bytes of packet ``i`` of this chunk (0-based within the chunk)."""
        o = int(self.offsets[i])
        return self.data[o : o + int(self.caplen[i])].tobytes()
