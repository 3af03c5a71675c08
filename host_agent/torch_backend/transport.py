"""Host path of the saatp backend: a full TCP mesh between the ranks of one process group.

Every rank listens on an ephemeral port, publishes ``host:port`` in the c10d store, connects to
the lower ranks and accepts the higher ones. Each connection gets a receiver thread that reads
length-prefixed messages and files them in a :class:`Mailbox` under ``(peer, key)``; because
receiving never waits for the application, blocking sends cannot deadlock against each other.

A peer that dies closes its sockets (the kernel does it for a killed process), so its receiver
thread sees EOF and every waiter on that peer gets :class:`PeerLost` at once; a peer that hangs
is caught by the caller's deadline (:class:`CommTimeout`).
"""
from __future__ import annotations

import collections
import socket
import struct
import threading
from typing import Callable
import time

_MAGIC = 0x5341_4154  # "SAAT"
_HELLO = struct.Struct("!IIII")  # magic, rank, world, nonce
_HDR = struct.Struct("!HQ")  # key length, payload length
_BYE = b"\x00saatp/bye"  # key of the goodbye message (no collective key starts with NUL)
_FAILED = b"\x00saatp/failed"  # key of "I give up, because ..." (payload: the reason)
_ACK = b"SAOK"
_MAX_PAYLOAD = 1 << 40


class CommError(RuntimeError):
    """Base class of host-path communication failures."""


class PeerLost(CommError):
    pass


class CommTimeout(CommError, TimeoutError):
    pass


class MeshClosed(CommError):
    pass


class Mailbox:
    """Messages filed by (peer, key); waiters block with a deadline."""

    def __init__(self):
        self._cv = threading.Condition()
        self._q: dict[tuple[int, bytes], collections.deque] = collections.defaultdict(collections.deque)
        self._dead: dict[int, str] = {}
        self._closed: str | None = None

    def put(self, peer: int, key: bytes, payload) -> None:
        with self._cv:
            self._q[(peer, key)].append(payload)
            self._cv.notify_all()

    def peer_failed(self, peer: int, why: str) -> None:
        with self._cv:
            self._dead.setdefault(peer, why)
            self._cv.notify_all()

    def close(self, why: str) -> None:
        with self._cv:
            if self._closed is None:
                self._closed = why
            self._cv.notify_all()

    def _wait(self, ready, peers, deadline, what):
        with self._cv:
            while True:
                got = ready()
                if got is not None:
                    return got
                if self._closed is not None:
                    raise MeshClosed(f"{what}: host-path mesh closed ({self._closed})")
                dead = [p for p in peers if p in self._dead]
                if dead and len(dead) == len(peers):
                    p = dead[0]
                    raise PeerLost(f"{what}: lost connection to rank {p} ({self._dead[p]})")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise CommTimeout(f"{what}: timed out waiting for rank(s) {list(peers)}")
                self._cv.wait(timeout=remaining if remaining is not None else 1.0)

    def get(self, peer: int, key: bytes, deadline: float | None, what: str = "recv"):
        def ready():
            q = self._q.get((peer, key))
            if q:
                item = q.popleft()
                if not q:
                    del self._q[(peer, key)]
                return item
            return None

        return self._wait(ready, [peer], deadline, what)

    def get_any(self, peers, key: bytes, deadline: float | None, what: str = "recv"):
        peers = list(peers)

        def ready():
            for p in peers:
                q = self._q.get((p, key))
                if q:
                    item = q.popleft()
                    if not q:
                        del self._q[(p, key)]
                    return p, item
            return None

        return self._wait(ready, peers, deadline, what)


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise EOFError("connection closed by peer")
        got += k
    return buf


class Mesh:
    """Full TCP mesh among ``world`` ranks; rendezvous through a c10d store."""

    def __init__(self, store, rank: int, world: int, timeout_s: float, host: str = "127.0.0.1"):
        self.rank, self.world = rank, world
        self.mailbox = Mailbox()
        self._socks: dict[int, socket.socket] = {}
        self._send_locks: dict[int, threading.Lock] = {}
        self._threads: list[threading.Thread] = []
        self._closed: str | None = None  # why the mesh closed (as Mailbox keeps it)
        self._left: set[int] = set()   # peers that said goodbye before closing
        self._failed: dict[int, str] = {}  # peers that said why they failed before closing
        # called (peer, why, orderly) from a reader thread when a peer's connection ends
        self.on_peer_lost: Callable[[int, str, bool], None] | None = None
        if world > 1:
            self._connect(store, timeout_s, host)

    # -- set-up -------------------------------------------------------------------------------
    def _connect(self, store, timeout_s: float, host: str) -> None:
        import os

        deadline = time.monotonic() + timeout_s
        lsock = socket.create_server((host, 0), backlog=self.world)
        try:
            port = lsock.getsockname()[1]
            nonce = int.from_bytes(os.urandom(4), "big")
            store.set(f"saatp/mesh/{self.rank}", f"{host}:{port}:{nonce}")
            # connect to every lower rank
            for peer in range(self.rank):
                self._add(peer, self._dial(store, peer, deadline))
            # accept every higher rank
            pending = set(range(self.rank + 1, self.world))
            while pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise CommTimeout(
                        f"saatp rendezvous: rank {self.rank} timed out waiting for rank(s) {sorted(pending)} to connect"
                    )
                lsock.settimeout(remaining)
                try:
                    sock, _ = lsock.accept()
                except socket.timeout:
                    continue
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                try:
                    magic, prank, pworld, pnonce = _HELLO.unpack(_recv_exact(sock, _HELLO.size))
                except (OSError, EOFError):
                    sock.close()
                    continue
                if magic != _MAGIC or pnonce != nonce or prank not in pending or pworld != self.world:
                    sock.close()  # a stranger or a stale peer; ignore it
                    continue
                try:
                    sock.sendall(_ACK)
                except OSError:
                    sock.close()
                    continue
                sock.settimeout(None)
                pending.discard(prank)
                self._add(prank, sock)
        except BaseException:
            self.close("rendezvous failed")
            raise
        finally:
            lsock.close()

    def _dial(self, store, peer: int, deadline: float) -> socket.socket:
        """Connect to ``peer`` and complete the hello/ack handshake. The address is re-read from
        the store on every attempt, so a stale entry (an earlier group) is replaced in time."""
        import datetime

        key = f"saatp/mesh/{peer}"
        delay, last = 0.01, "no attempt"
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CommTimeout(f"saatp rendezvous: rank {self.rank} could not connect to rank {peer}: {last}")
            try:
                store.wait([key], datetime.timedelta(seconds=max(0.001, remaining)))
                phost, pport, pnonce = store.get(key).decode().rsplit(":", 2)
                # the peer acks only once it reaches its accept loop (after dialling its own lower
                # ranks), so wait for the ack up to the deadline, not less: a retry would leave a
                # dead duplicate in its backlog
                sock = socket.create_connection((phost, int(pport)), timeout=max(0.001, remaining))
                try:
                    sock.sendall(_HELLO.pack(_MAGIC, self.rank, self.world, int(pnonce)))
                    if bytes(_recv_exact(sock, len(_ACK))) != _ACK:
                        raise OSError("bad handshake reply")
                except BaseException:
                    sock.close()
                    raise
                sock.settimeout(None)
                return sock
            except (OSError, EOFError, ValueError) as e:
                last = f"{type(e).__name__}: {e}"
            except Exception as e:  # noqa: BLE001 - store wait timed out (DistStoreError) etc.
                raise CommTimeout(f"saatp rendezvous: rank {self.rank} found no address for rank {peer}: {e}") from None
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.5)

    def _add(self, peer: int, sock: socket.socket) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socks[peer] = sock
        self._send_locks[peer] = threading.Lock()
        t = threading.Thread(target=self._reader, args=(peer, sock), name=f"saatp-rx-{self.rank}<-{peer}", daemon=True)
        self._threads.append(t)
        t.start()

    def _reader(self, peer: int, sock: socket.socket) -> None:
        try:
            while True:
                klen, plen = _HDR.unpack(_recv_exact(sock, _HDR.size))
                if plen > _MAX_PAYLOAD:
                    raise ValueError(f"bad message length {plen}")
                key = bytes(_recv_exact(sock, klen))
                payload = _recv_exact(sock, plen)
                if key == _BYE:
                    self._left.add(peer)
                    continue
                if key == _FAILED:
                    self._failed[peer] = bytes(payload).decode(errors="replace")
                    continue
                self.mailbox.put(peer, key, payload)
        except (OSError, EOFError, ValueError, struct.error) as e:
            orderly = peer in self._left
            if orderly:
                why = "it shut its process group down"
            elif peer in self._failed:
                why = f"it failed: {self._failed[peer]}"
            elif isinstance(e, EOFError):
                why = "connection closed: the process died or aborted"
            else:
                why = f"{type(e).__name__}: {e}"
            if self._closed:
                why = "mesh closed locally"
            self.mailbox.peer_failed(peer, why)
            cb = self.on_peer_lost
            if cb is not None and not self._closed:
                cb(peer, why, orderly)

    # -- data ---------------------------------------------------------------------------------
    def send(self, peer: int, key: bytes, payload, what: str = "send") -> None:
        """Send one message (``payload``: bytes-like, e.g. a contiguous numpy array)."""
        if self._closed:
            # with the reason: a send racing a peer loss must still say which peer was lost
            raise MeshClosed(f"{what}: host-path mesh is closed ({self._closed})")
        sock = self._socks.get(peer)
        if sock is None:
            raise ValueError(f"{what}: rank {peer} is not a peer of rank {self.rank} (world {self.world})")
        mv = memoryview(payload).cast("B")
        try:
            with self._send_locks[peer]:
                sock.sendall(_HDR.pack(len(key), mv.nbytes) + key)
                if mv.nbytes:
                    sock.sendall(mv)
        except OSError as e:
            raise PeerLost(f"{what}: lost connection to rank {peer} ({type(e).__name__}: {e})") from None

    def recv(self, peer: int, key: bytes, deadline: float | None, what: str = "recv") -> bytearray:
        return self.mailbox.get(peer, key, deadline, what)

    def recv_any(self, key: bytes, deadline: float | None, what: str = "recv"):
        peers = [p for p in range(self.world) if p != self.rank]
        return self.mailbox.get_any(peers, key, deadline, what)

    def close(self, why: str = "closed", orderly: bool = False, failure: str | None = None) -> None:
        """Close every connection. ``orderly``: say goodbye first, so peers know this rank left on
        purpose (shut down) and did not die; ``failure``: tell peers why this rank gives up."""
        if self._closed:
            return
        note = (_BYE, b"") if orderly else ((_FAILED, failure.encode()) if failure else None)
        if note is not None:
            for peer in list(self._socks):
                try:
                    self.send(peer, note[0], note[1], "goodbye")
                except CommError:
                    pass
        self._closed = why or "closed"
        self.mailbox.close(why)
        for sock in self._socks.values():
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                sock.close()
            except OSError:
                pass
