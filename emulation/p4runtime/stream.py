"""The ``StreamChannel`` RPC: a reader thread takes the controller's messages (arbitration
first, then packet-outs and digest acks); the RPC's generator sends what is queued for the
stream (arbitration replies, packet-ins, digest lists, stream errors) until either side ends."""
from __future__ import annotations

import logging
import queue
import threading
from typing import Any, Callable, Iterator

import grpc
from google.rpc import code_pb2

from .arbitration import Arbiter, Stream
from .errors import P4RTError, abort

log = logging.getLogger("saatp.p4runtime")


def serve_stream(request_iterator: Iterator[Any], context: Any, arbiter: Arbiter,
                 packet_out: Callable[[Any, Stream], None]) -> Iterator[Any]:
    out: queue.Queue = queue.Queue()
    stream: Stream | None = None
    done = threading.Event()

    def reader() -> None:
        nonlocal stream
        try:
            for req in request_iterator:
                kind = req.WhichOneof("update")
                if kind is None:
                    # no update set: ignored without a reply, before arbitration too, as BMv2's
                    # server (PI) does. Older p4lang/tutorials p4runtime_lib sends one in
                    # switch.py's PacketIn() and takes the next stream response for the PacketIn.
                    continue
                if kind == "arbitration":
                    got = arbiter.arbitrate(req.arbitration, stream, out, context)
                    if isinstance(got, P4RTError):
                        out.put(got)
                        return
                    stream = got
                elif stream is None:
                    out.put(P4RTError(code_pb2.FAILED_PRECONDITION,
                                      "the first stream message must be an arbitration update"))
                    return
                elif kind == "packet":
                    packet_out(req.packet, stream)
                elif kind == "digest_ack":
                    pass  # lists are not retransmitted, so acks need no bookkeeping
                else:
                    stream.send_error(code_pb2.UNIMPLEMENTED, f"stream message {kind!r} not supported")
        except grpc.RpcError:
            pass
        except Exception as e:  # noqa: BLE001 - never let a reader thread die silently
            log.exception("stream reader failed")
            out.put(P4RTError(code_pb2.INTERNAL, f"internal error: {e}"))
        finally:
            done.set()
            out.put(None)

    t = threading.Thread(target=reader, name="p4rt-stream", daemon=True)
    t.start()
    try:
        while True:
            try:
                item = out.get(timeout=0.5)
            except queue.Empty:
                if not context.is_active():
                    break
                continue
            if item is None:
                if done.is_set():
                    break
                continue
            if isinstance(item, P4RTError):
                abort(context, item)
            yield item
    finally:
        if stream is not None:
            arbiter.leave(stream)
