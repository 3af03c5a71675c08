"""Raw interface ports over ``PACKET_MMAP`` rings: frames move through memory shared with the
kernel instead of one system call each.

The socket is the same ``AF_PACKET``/``ETH_P_ALL`` socket as :class:`~.raw.RawSocketPort`
(see there for offloads and link loss), set to ``TPACKET_V2`` with a receive ring and a
transmit ring mapped into one ``mmap`` (Linux ``Documentation/networking/packet_mmap.rst``):

* receive: the ring holds ``RX_RING_FRAMES`` (4096) frames whatever the interface's MTU
  (slots are sized by it: 2 KiB up to 1500 bytes, 16 KiB for 9500), so a jumbo link does not
  get a ring 8x shallower; the kernel fills ring frames and sets ``tp_status`` to ``TP_STATUS_USER``;
  ``recv_batch`` copies out every ready frame (up to the limit) and hands each back
  (``TP_STATUS_KERNEL``), with no system call at all while frames are waiting;
* transmit: ``send_batch`` writes each frame into the next free ring slot, marks it
  ``TP_STATUS_SEND_REQUEST`` and then makes *one* ``send()`` for the whole batch.
  ``send_some`` does the same with ``MSG_DONTWAIT``: when the socket's send buffer is full
  (a ``tc``-shaped link), the kernel leaves the rest of the batch marked ``SEND_REQUEST``
  and stops at the first of them (the ring's head).  ``send_some`` leaves that first one in
  the ring (*stalled*: ``tx_stalled()``), takes the later slots back
  (``TP_STATUS_AVAILABLE``, its own index just past the head) and returns how many frames it
  kept, so the caller keeps the others and waits for ``POLLOUT``.  The stalled frame is
  what makes ``POLLOUT`` mean "send buffer has room": the kernel also reports ``POLLOUT``
  whenever the ring's head slot is free, which it would always be after a full take-back.
  The next ``send_some`` (``send_some([])`` too) pushes the stalled frame first.

Frames go through the interface's queueing discipline (no ``PACKET_QDISC_BYPASS``), so
``tc`` shaping and Mininet's ``TCLink(bw=...)`` apply to what the switch sends, as they do
to BMv2's (libpcap) sends.

``PACKET_IGNORE_OUTGOING`` keeps our own transmissions out of the receive ring (the plain
port reads and discards them).  A frame longer than a ring slot (bigger than the
interface's MTU when the port was opened) is still received truncated by the kernel: it is
counted in ``stats["rx_truncated"]`` and dropped; one too long for a transmit slot goes out
with a plain ``send``.

A receive slot the kernel took but left empty while it filled the ones after it (seen under
floods) is skipped after 2 ms and counted in ``stats["rx_ring_holes"]`` and in
``rx_overflow()``: frames the interface counted that never reach the reader.

:func:`open_raw_port` returns a ring port when the kernel accepts the rings and the plain
:class:`~.raw.RawSocketPort` otherwise (or when ``SAATP_PACKET_RING=0``).
"""
from __future__ import annotations

import errno
import mmap
import os
import select
import socket
import struct
import time

from .base import PortClosed, PortError
from .raw import SOL_PACKET, RawSocketPort, interface_exists

# <linux/if_packet.h>
PACKET_RX_RING = 5
PACKET_VERSION = 10
PACKET_TX_RING = 13
PACKET_QDISC_BYPASS = 20
PACKET_IGNORE_OUTGOING = 23
TPACKET_V2 = 1
TP_STATUS_KERNEL = 0
TP_STATUS_USER = 1
TP_STATUS_AVAILABLE = 0
TP_STATUS_SEND_REQUEST = 1
TP_STATUS_WRONG_FORMAT = 4
TPACKET2_HDR = struct.Struct("=IIIHHIIHH4x")      # status, len, snaplen, mac, net, sec, nsec, vlan tci/tpid
TPACKET_ALIGNMENT = 16
SOCKADDR_LL_SIZE = 20
TPACKET2_HDRLEN = ((TPACKET2_HDR.size + TPACKET_ALIGNMENT - 1) & ~(TPACKET_ALIGNMENT - 1)) + SOCKADDR_LL_SIZE
TX_DATA_OFFSET = TPACKET2_HDRLEN - SOCKADDR_LL_SIZE   # where the kernel reads a TX frame's bytes
RX_RING_FRAMES = 4096         # frames the receive ring holds, whatever the MTU (at 50k frames/s, 80 ms of
                              # the switch being off its core), within
RX_RING_MAX_BYTES = 64 << 20  # (4096 slots of 16 KiB: a 9500-byte MTU) per port
TX_RING_BYTES = 1 << 20
BLOCK_BYTES = 1 << 16
HOLE_WAIT_S = 0.002          # how long an empty slot before a filled one may stay empty
_STATUS = struct.Struct("=I")
_RX_HEAD = struct.Struct("=IIIH")                   # status, len, snaplen, mac


def _slot_size(mtu: int) -> int:
    """Power of two >= header + Ethernet header + VLAN tag + MTU (at least 2 KiB)."""
    need = 2 * TPACKET2_HDRLEN + 14 + 4 + mtu
    size = 2048
    while size < need:
        size *= 2
    return size


def _mtu(ifname: str) -> int:
    try:
        with open(f"/sys/class/net/{ifname}/mtu") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 1500


class PacketRingPort(RawSocketPort):
    """A raw interface port whose frames go through ``PACKET_MMAP`` rings (see the module
    docstring).  Raises :class:`PortError` when the kernel refuses the rings."""

    def __init__(self, ifname: str, *, name: str | None = None, rx_bytes: int | None = None,
                 tx_bytes: int = TX_RING_BYTES):
        super().__init__(ifname, name=name)
        sock = self.sock
        slot = _slot_size(_mtu(ifname))
        block = max(BLOCK_BYTES, slot)
        if rx_bytes is None:      # slots are sized by the MTU: count the ring in frames
            rx_bytes = min(RX_RING_FRAMES * slot, RX_RING_MAX_BYTES)
        rx_blocks, tx_blocks = max(1, rx_bytes // block), max(1, tx_bytes // block)
        try:
            sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
            try:
                sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
                self._ignore_outgoing = True
            except OSError:              # before Linux 4.20: skip them while reading
                self._ignore_outgoing = False
            per = block // slot
            sock.setsockopt(SOL_PACKET, PACKET_RX_RING, struct.pack("=IIII", block, rx_blocks, slot, rx_blocks * per))
            sock.setsockopt(SOL_PACKET, PACKET_TX_RING, struct.pack("=IIII", block, tx_blocks, slot, tx_blocks * per))
            self._mm = mmap.mmap(sock.fileno(), (rx_blocks + tx_blocks) * block, mmap.MAP_SHARED,
                                 mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as e:
            sock.close()
            raise PortError(f"interface {ifname}: PACKET_MMAP rings refused: {e.strerror or e}") from None
        self.slot = slot
        self._rx_n = rx_blocks * per
        self._tx_n = tx_blocks * per
        self._tx_base = rx_blocks * block
        self._rx_i = 0
        self._tx_i = 0
        self._stalled: tuple[int, int] | None = None   # (offset, length) of a refused head frame
        self.stats["rx_truncated"] = 0
        self.stats["rx_ring_holes"] = 0

    # ---------------------------------------------------------------- receive
    def recv_batch(self, limit: int) -> list[bytes]:
        """Up to ``limit`` frames that are waiting in the ring, without a system call."""
        if self.closed:
            raise PortClosed(self.name)
        out: list[bytes] = []
        mm, slot, n, i = self._mm, self.slot, self._rx_n, self._rx_i
        head, put = _RX_HEAD.unpack_from, _STATUS.pack_into
        skip_outgoing = not self._ignore_outgoing
        nbytes = 0
        while len(out) < limit:
            off = i * slot
            status, length, snap, mac = head(mm, off)
            if not status & TP_STATUS_USER:
                hole = self._hole(i)
                if hole is None:
                    break
                if hole:                     # the kernel will never fill it: skip it, counted
                    self.stats["rx_ring_holes"] += 1
                    i += 1
                    if i == n:
                        i = 0
                continue                     # (or it was filled meanwhile: read it)
            if snap < length:
                self.stats["rx_truncated"] += 1
            elif not (skip_outgoing and mm[off + TPACKET2_HDRLEN - SOCKADDR_LL_SIZE + 10] == 4):
                start = off + mac
                out.append(mm[start:start + snap])
                nbytes += snap
            put(mm, off, TP_STATUS_KERNEL)
            i += 1
            if i == n:
                i = 0
        self._rx_i = i
        if not out:
            # nothing waiting: a pending socket error (link down) would keep epoll waking us
            # and nothing else reads it with the rings, so read (and clear) it here
            try:
                self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            except OSError:
                pass
            return out
        st = self.stats
        st["rx_frames"] += len(out)
        st["rx_bytes"] += nbytes
        return out

    def _hole(self, i: int) -> bool | None:
        """Slot ``i`` is not ready: ``None`` if the next slot is not either (nothing has
        arrived), else whether ``i`` stays empty for HOLE_WAIT_S while the kernel has
        filled the next one.  Two CPUs filling consecutive slots finish out of order for
        microseconds; a slot the kernel took but never filled would stall the reader (and
        every frame behind it) until the next frame pushed it along, and on this host it
        happens under floods (seen: 67 frames waiting behind one empty slot)."""
        mm, n = self._mm, self._rx_n
        nxt = i + 1 if i + 1 < n else 0
        unpack = _STATUS.unpack_from
        if not unpack(mm, nxt * self.slot)[0] & TP_STATUS_USER:
            return None
        off = i * self.slot
        end = time.monotonic() + HOLE_WAIT_S
        spins = 0
        while time.monotonic() < end:
            if unpack(mm, off)[0] & TP_STATUS_USER:
                return False
            spins += 1
            if spins > 64:
                time.sleep(0.00005)
        return not unpack(mm, off)[0] & TP_STATUS_USER

    def rx_overflow(self) -> int:
        """The kernel's drops on this socket, and ring slots it took but never filled."""
        return super().rx_overflow() + self.stats["rx_ring_holes"]

    def recv(self, timeout: float | None = None) -> bytes | None:
        got = self.recv_batch(1)
        if got:
            return got[0]
        try:
            r, _, _ = select.select([self.sock], [], [], timeout)
        except (OSError, ValueError):
            raise PortClosed(self.name) from None
        if not r:
            if not interface_exists(self.ifname):
                self.close()
                raise PortClosed(f"{self.name}: interface disappeared")
            return None
        got = self.recv_batch(1)
        return got[0] if got else None

    # ---------------------------------------------------------------- transmit
    def send(self, frame: bytes) -> None:
        self.send_batch([frame])

    def send_batch(self, frames: list[bytes]) -> None:
        """Queue ``frames`` in the transmit ring and hand them to the kernel in one call."""
        if self.closed:
            raise PortClosed(self.name)
        mm, slot, n, i, base = self._mm, self.slot, self._tx_n, self._tx_i, self._tx_base
        status_of, put = _STATUS.unpack_from, _STATUS.pack_into
        room = slot - TX_DATA_OFFSET
        st = self.stats
        queued = 0
        for f in frames:
            ln = len(f)
            if ln > room:
                self._flush(queued)
                queued = 0
                super().send(f)
                continue
            off = base + i * slot
            status = status_of(mm, off)[0]
            if status != TP_STATUS_AVAILABLE and not status & TP_STATUS_WRONG_FORMAT:
                self._flush(queued)            # the ring is full: let the kernel drain it
                queued = 0
                status = status_of(mm, off)[0]
                if status != TP_STATUS_AVAILABLE and not status & TP_STATUS_WRONG_FORMAT:
                    st["tx_dropped"] += 1
                    continue
            if status & TP_STATUS_WRONG_FORMAT:    # the kernel refused the slot's last frame
                st["tx_dropped"] += 1
            start = off + TX_DATA_OFFSET
            mm[start:start + ln] = f
            struct.pack_into("=II", mm, off + 4, ln, ln)
            put(mm, off, TP_STATUS_SEND_REQUEST)
            queued += 1
            st["tx_frames"] += 1
            st["tx_bytes"] += ln
            i += 1
            if i == n:
                i = 0
        self._tx_i = i
        self._flush(queued)

    def send_some(self, frames: list[bytes]) -> int:
        """Send frames in order without waiting; returns how many were taken (sent, or lost
        as on a wire).  Fewer than ``len(frames)``: the link refuses more for now; wait for
        POLLOUT on ``fileno()`` before offering the rest (see the module docstring)."""
        if self.closed:
            raise PortClosed(self.name)
        if self._stalled is not None and not self._push_stalled():
            return 0
        room = self.slot - TX_DATA_OFFSET
        k, total = 0, len(frames)
        while k < total:
            if len(frames[k]) > room:          # too long for a ring slot: a plain send
                if RawSocketPort.send_some(self, frames[k:k + 1]) == 0:
                    return k
                k += 1
                continue
            j = k + 1
            while j < total and len(frames[j]) <= room:
                j += 1
            got = self._ring_some(frames, k, j)
            k += got
            if k < j:
                return k
        return total

    def _ring_some(self, frames: list[bytes], a: int, b: int) -> int:
        """Put ``frames[a:b]`` (each fits a slot) in the ring, one non-blocking ``send``;
        returns how many the kernel took."""
        mm, slot, n, base = self._mm, self.slot, self._tx_n, self._tx_base
        status_of, put = _STATUS.unpack_from, _STATUS.pack_into
        st = self.stats
        i = self._tx_i
        written: list[tuple[int, int]] = []        # (ring index, offset)
        for f in frames[a:b]:
            off = base + i * slot
            status = status_of(mm, off)[0]
            if status != TP_STATUS_AVAILABLE:      # still in the kernel (queued in the qdisc)
                break
            ln = len(f)
            start = off + TX_DATA_OFFSET
            mm[start:start + ln] = f
            struct.pack_into("=II", mm, off + 4, ln, ln)
            put(mm, off, TP_STATUS_SEND_REQUEST)
            written.append((i, off))
            i += 1
            if i == n:
                i = 0
        if not written:
            return 0
        lost_head = False
        try:
            self.sock.send(b"", socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as e:
            if e.errno in (errno.ENXIO, errno.ENODEV) or not interface_exists(self.ifname):
                self.close()
                raise PortClosed(self.name) from None
            lost_head = True                       # ENOBUFS, link down: the refused head is lost
        # the kernel stops at the first frame it refused, leaving it (and the rest) marked
        taken = len(written)
        for k, (_, off) in enumerate(written):
            status = status_of(mm, off)[0]
            if status == TP_STATUS_SEND_REQUEST or status & TP_STATUS_WRONG_FORMAT:
                taken = k
                lost_head = lost_head or bool(status & TP_STATUS_WRONG_FORMAT)
                break
        else:
            lost_head = False
        st["tx_frames"] += taken
        st["tx_bytes"] += sum(len(f) for f in frames[a:a + taken])
        if taken < len(written):
            head_i, head_off = written[taken]
            keep = 0 if lost_head else 1           # the refused head stays in the ring, stalled
            for _, off in written[taken + keep:]:
                put(mm, off, TP_STATUS_AVAILABLE)
            if lost_head:
                put(mm, head_off, TP_STATUS_AVAILABLE)
                st["tx_dropped"] += 1              # lost, as on a wire; the caller moves on
                i = head_i
            else:
                self._stalled = (head_off, len(frames[a + taken]))
                i = head_i + 1 if head_i + 1 < n else 0
            taken += 1
        self._tx_i = i
        return taken

    def tx_stalled(self) -> bool:
        """A frame the kernel refused is waiting in the ring: wait for POLLOUT, then call
        ``send_some`` (with more frames or none) to push it."""
        return self._stalled is not None

    def _push_stalled(self) -> bool:
        """Offer the stalled frame to the kernel again; True once it has taken it."""
        off, ln = self._stalled
        try:
            self.sock.send(b"", socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as e:
            if e.errno in (errno.ENXIO, errno.ENODEV) or not interface_exists(self.ifname):
                self.close()
                raise PortClosed(self.name) from None
        status = _STATUS.unpack_from(self._mm, off)[0]
        if status == TP_STATUS_SEND_REQUEST:
            return False
        self._stalled = None
        st = self.stats
        if status & TP_STATUS_WRONG_FORMAT:
            st["tx_dropped"] += 1
        else:
            st["tx_frames"] += 1
            st["tx_bytes"] += ln
        return True

    def _flush(self, queued: int) -> None:
        if not queued:
            return
        try:
            self.sock.send(b"")
        except OSError as e:
            if e.errno in (errno.ENXIO, errno.ENODEV) or not interface_exists(self.ifname):
                self.close()
                raise PortClosed(self.name) from None
            self.stats["tx_dropped"] += queued   # ENOBUFS, link down: lost, as on a wire
            self.stats["tx_frames"] -= queued

    def close(self) -> None:
        if not self.closed:
            mm = getattr(self, "_mm", None)
            super().close()
            if mm is not None:
                try:
                    mm.close()
                except (BufferError, ValueError):
                    pass


def open_raw_port(ifname: str, *, name: str | None = None) -> RawSocketPort:
    """A ring port on ``ifname`` when the kernel offers rings, else a plain raw socket port
    (``SAATP_PACKET_RING=0`` asks for the plain one)."""
    if os.environ.get("SAATP_PACKET_RING", "1") not in ("0", "no", "off", "false"):
        try:
            return PacketRingPort(ifname, name=name)
        except PortError as e:
            if "rings refused" not in str(e):
                raise
    return RawSocketPort(ifname, name=name)

