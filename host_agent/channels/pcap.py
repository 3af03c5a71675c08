"""Classic libpcap files (the format ``tcpdump -w`` writes: LINKTYPE_ETHERNET, µs stamps).

Format (https://wiki.wireshark.org/Development/LibpcapFileFormat): a 24-byte global
header (magic 0xa1b2c3d4, version 2.4, thiszone 0, sigfigs 0, snaplen, linktype) and,
per packet, ``ts_sec, ts_usec, incl_len, orig_len`` (little-endian here) plus the bytes.
"""
from __future__ import annotations

import struct
import threading
import time
from pathlib import Path
from typing import Callable

from .base import FramePort, PortWrapper

LINKTYPE_ETHERNET = 1
SNAPLEN = 262144


class PcapWriter:
    """Append frames to a pcap file; each record is flushed so readers see it at once."""

    def __init__(self, path: str | Path, snaplen: int = SNAPLEN, clock: Callable[[], float] = time.time):
        self.path = Path(path)
        self.snaplen = snaplen
        self._clock = clock
        self._lock = threading.Lock()
        self._f = open(self.path, "wb")
        self._f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET))
        self._f.flush()
        self.count = 0

    def write(self, frame: bytes, ts: float | None = None) -> None:
        ts = self._clock() if ts is None else ts
        sec = int(ts)
        usec = int(round((ts - sec) * 1e6))
        if usec >= 1000000:
            sec, usec = sec + 1, usec - 1000000
        data = frame[:self.snaplen]
        with self._lock:
            if self._f.closed:
                return
            self._f.write(struct.pack("<IIII", sec, usec, len(data), len(frame)) + data)
            self._f.flush()
            self.count += 1

    def close(self) -> None:
        with self._lock:
            if not self._f.closed:
                self._f.close()

    def __enter__(self) -> "PcapWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_pcap(path: str | Path) -> list[tuple[float, bytes]]:
    """(timestamp, frame) records of a classic pcap file (either byte order)."""
    raw = Path(path).read_bytes()
    if len(raw) < 24:
        raise ValueError(f"{path}: not a pcap file (too short)")
    magic = struct.unpack("<I", raw[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        e = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        e = ">"
    else:
        raise ValueError(f"{path}: not a classic pcap file (magic {magic:#x})")
    frac = 1e-9 if magic in (0xA1B23C4D, 0x4D3CB2A1) else 1e-6
    out = []
    off = 24
    while off + 16 <= len(raw):
        sec, sub, incl, _orig = struct.unpack(e + "IIII", raw[off:off + 16])
        off += 16
        out.append((sec + sub * frac, raw[off:off + incl]))
        off += incl
    return out


class PcapTap(PortWrapper):
    """Records what a port receives (``rx``) and sends (``tx``) into pcap writers."""

    def __init__(self, inner: FramePort, rx: PcapWriter | None = None, tx: PcapWriter | None = None):
        super().__init__(inner)
        self.rx, self.tx = rx, tx

    def send(self, frame: bytes) -> None:
        self.inner.send(frame)
        if self.tx is not None:
            self.tx.write(frame)

    def send_some(self, frames: list[bytes]) -> int:
        n = self.inner.send_some(frames)
        if self.tx is not None:
            for f in frames[:n]:
                self.tx.write(f)
        return n

    def recv(self, timeout: float | None = None) -> bytes | None:
        f = self.inner.recv(timeout)
        if f is not None and self.rx is not None:
            self.rx.write(f)
        return f

    def recv_batch(self, limit: int) -> list[bytes]:
        frames = self.inner.recv_batch(limit)
        if self.rx is not None:
            for f in frames:
                self.rx.write(f)
        return frames

    def close(self) -> None:
        super().close()
        for w in (self.rx, self.tx):
            if w is not None:
                w.close()
