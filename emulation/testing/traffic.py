"""Offered load for the switch process: a paced sender and a flood process.

:func:`send_paced` sends frames at a given rate (bursts of 16, sleeping until each burst is
due; rate 0 = as fast as the sender can), the sender of ``scripts/bench_switchd.py`` and of
the overload soak (``emulation/testing/soak.py``).

``python -m emulation.testing.traffic --port SPEC --rate PPS --seconds S --dst IP,IP...``
is a *flooder*: a process of its own (so it does not share a GIL with the agents it
disturbs) that opens one frame port (``udp:LOCAL:HOST:REMOTE`` or an interface name, see
``host_agent.channels``; interfaces get a plain packet socket, whose every ``send()`` the
kernel either accepts or refuses), sends IPv4/UDP frames to the given destinations in
turn, and prints one line ``flood: {JSON}`` with its port's counters when it stops (after
``--seconds``, or on SIGTERM/SIGINT).  ``tx_frames`` is what the kernel accepted, i.e. what
was offered to the switch; ``tx_dropped`` what the sender's own kernel refused (ENOBUFS).
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable, Sequence

FLOOD_PREFIX = "flood: "
FLOOD_DPORT = 7777          # not an SA-ATP or ring port: plain IPv4 forwarding at the switch


def send_paced(send: Callable[[bytes], object], frames: Sequence[bytes], rate: float, *, burst: int = 16,
               stop: Callable[[], bool] | None = None) -> float:
    """Send ``frames`` in order at ``rate`` frames/s (0: no pacing); returns the seconds taken.

    A send that raises ``OSError`` (ENOBUFS: the sender outran its own queue) is retried every
    0.5 ms until it goes; ``stop()`` is asked between bursts."""
    t0 = time.perf_counter()
    for i in range(0, len(frames), burst):
        if stop is not None and stop():
            break
        if rate:
            delay = t0 + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        for f in frames[i:i + burst]:
            while True:
                try:
                    send(f)
                    break
                except OSError:
                    time.sleep(0.0005)
    return time.perf_counter() - t0


def flood_frames(src_mac: str, src_ip: str, dst_mac: str, dst_ips: Sequence[str], payload: int = 64,
                 n: int = 256) -> list[bytes]:
    """``n`` IPv4/UDP frames from (src_mac, src_ip) to ``dst_ips`` in turn, ``payload`` bytes each."""
    from host_agent import wire
    tpls = [wire.FrameTemplate(src_mac, dst_mac, src_ip, ip, FLOOD_DPORT, FLOOD_DPORT) for ip in dst_ips]
    return [tpls[i % len(tpls)].frame(i.to_bytes(4, "big") + bytes(max(0, payload - 4))) for i in range(n)]


def open_sender(spec: str):
    """A frame port for sending: UDP tunnel spec, or an interface (plain packet socket)."""
    from host_agent.channels import open_port
    from host_agent.channels.raw import RawSocketPort
    if spec.startswith("udp:"):
        return open_port(spec)
    return RawSocketPort(spec)


def flood(spec: str, frames: Sequence[bytes], rate: float, seconds: float,
          stopped: Callable[[], bool] = lambda: False) -> dict:
    """Send ``frames`` round and round on port ``spec`` for ``seconds``; the port's counters."""
    port = open_sender(spec)
    t0 = time.monotonic()
    end = t0 + seconds
    sent_batches = 0
    try:
        batch = list(frames)
        while time.monotonic() < end and not stopped():
            send_paced(port.send, batch, rate, stop=lambda: stopped() or time.monotonic() >= end)
            sent_batches += 1
        st = dict(port.stats)
    finally:
        port.close()
    return {"port": spec, "seconds": round(time.monotonic() - t0, 3), "tx_frames": int(st.get("tx_frames", 0)),
            "tx_dropped": int(st.get("tx_dropped", 0))}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulation.testing.traffic", description="flood one frame port")
    ap.add_argument("--port", required=True, help="udp:LOCAL:HOST:REMOTE or an interface name")
    ap.add_argument("--rate", type=float, default=0.0, help="frames/s (0: as fast as possible)")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--dst", required=True, help="destination IPv4 addresses, comma-separated")
    ap.add_argument("--src-mac", default="02:00:00:00:0f:01")
    ap.add_argument("--src-ip", default="10.0.15.1")
    ap.add_argument("--dst-mac", default="02:00:00:00:00:fe")
    ap.add_argument("--payload", type=int, default=64)
    a = ap.parse_args(argv)
    stop = {"now": False}

    def on_signal(_s, _f):
        stop["now"] = True
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    frames = flood_frames(a.src_mac, a.src_ip, a.dst_mac, a.dst.split(","), a.payload)
    print("flood: ready", flush=True)
    out = flood(a.port, frames, a.rate, a.seconds, lambda: stop["now"])
    print(FLOOD_PREFIX + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
