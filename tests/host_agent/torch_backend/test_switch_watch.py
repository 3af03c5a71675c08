"""The switch watchdog on its own: stop() ends its thread at once, also in the middle of a
question the switch does not answer; a switch that refuses connections is reported gone."""

from __future__ import annotations

import socket
import threading
import time

from host_agent.free_ports import free_tcp_port
from host_agent.torch_backend.switch_watch import SwitchWatch


def _silent_server():
    """A TCP listener that accepts and never answers: a gRPC question to it waits for its time-out."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    conns = []

    def accept():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            conns.append(c)
    threading.Thread(target=accept, daemon=True).start()
    return srv, conns, f"127.0.0.1:{srv.getsockname()[1]}"


def test_stop_cancels_a_question_in_flight_and_ends_the_thread():
    srv, conns, addr = _silent_server()
    gone = []
    try:
        w = SwitchWatch(addr, gone.append, period=0.02, timeout=30.0)
        time.sleep(0.5)  # the first question is out, and unanswered
        assert w.thread.is_alive()
        t0 = time.monotonic()
        w.stop()
        took = time.monotonic() - t0
        assert not w.thread.is_alive(), "the watchdog's thread outlived stop()"
        assert took < 5.0, f"stop() waited {took:.1f} s: the question in flight was not cancelled"
        assert gone == []  # stopping is not a verdict
    finally:
        srv.close()
        for c in conns:
            c.close()


def test_a_refused_connection_is_a_switch_gone():
    port = free_tcp_port("127.0.0.1")  # nothing listens there
    gone = threading.Event()
    why = []

    def on_gone(w):
        why.append(w)
        gone.set()
    w = SwitchWatch(f"127.0.0.1:{port}", on_gone, describe=", process 4242", period=0.05, timeout=0.5)
    try:
        assert gone.wait(10.0), "the watchdog did not report a switch that refuses connections"
        assert "is gone" in why[0] and "UNAVAILABLE" in why[0] and "process 4242" in why[0], why
        w.thread.join(2.0)
        assert not w.thread.is_alive()  # one verdict, then it ends
        assert len(why) == 1
    finally:
        w.stop()
