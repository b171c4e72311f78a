"""benchbook.capture: streaming pcap/pcapng readers (plain or zstd), writers, synthetic captures."""

from benchbook.capture.chunk import PacketChunk
from benchbook.capture.errors import CaptureFormatError, CaptureWarning
from benchbook.capture.reader import capture_format, open_capture
from benchbook.capture.writer import PcapWriter, write_pcap, write_pcapng

__all__ = [
    "CaptureFormatError", "CaptureWarning", "PacketChunk", "PcapWriter", "capture_format",
    "open_capture", "write_pcap", "write_pcapng",
]
