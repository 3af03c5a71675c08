"""Wall-clock transports: kernel UDP sockets and frame ports, driven by RealClock."""
import threading

import numpy as np

from host_agent import wire
from host_agent.clock import RealClock
from host_agent.transport import FramePortTransport, UdpSocketTransport


def test_udp_socket_transport_loopback():
    loop = RealClock()
    a = UdpSocketTransport(loop, ("127.0.0.1", 0), ("127.0.0.1", 9))
    b = UdpSocketTransport(loop, ("127.0.0.1", 0), a.local)
    a.switch = b.local
    got_a, got_b = [], []
    a.set_receiver(got_a.append)
    b.set_receiver(lambda d: (got_b.append(d), b.send(d[::-1])))
    msg = wire.pack(wire.Header(type=wire.PROBE, seq=7, iter=3))
    a.send(msg)
    try:
        assert loop.run(until=lambda: got_a, timeout=5.0)
    finally:
        a.close()
        b.close()
    assert got_b == [msg] and got_a == [msg[::-1]]


def test_agents_over_frame_ports_with_embedded_switch(saatp_program):
    """Two workers on wall-clock time, frame ports (in-memory) to a switch thread."""
    from host_agent.channels.memory import MemoryPort
    from host_agent.controller import Controller, JobSpec
    from emulation.harness import load_switch
    from host_agent.worker import AgentConfig, Worker

    sw = load_switch(saatp_program)
    ctl = Controller(sw)
    loop = RealClock()
    cfg = AgentConfig(job=0, nworkers=2, pool=4, t_s=0.5)
    sw_side, workers, transports = {}, [], []
    for w in range(2):
        port = w + 1
        host, sw_end = MemoryPort.pair(f"h{w}", f"s{w}")
        sw_side[port] = sw_end
        mac, ip = f"02:00:00:00:00:0{port}", f"10.0.0.{port}"
        ctl.add_host(port, mac, ip)
        tr = FramePortTransport(loop, host, wire.FrameTemplate(mac, ctl.switch_mac, ip,
                                                               ctl.switch_ip))
        wk = Worker(w, cfg, loop, tr.send)
        tr.set_receiver(wk.on_message)
        workers.append(wk)
        transports.append(tr)
    ctl.configure_job(JobSpec(job=0, ports={0: 1, 1: 2}, nworkers=2, pool=4, t_s=0.5))
    stop = threading.Event()

    def switch_loop():
        while not stop.is_set():
            for port, end in sw_side.items():
                fr = end.recv(0.002)
                if fr is not None:
                    for eport, data in sw.process(port, fr):
                        sw_side[eport].send(data)

    th = threading.Thread(target=switch_loop, daemon=True)
    th.start()
    rng = np.random.default_rng(0)
    qs = [rng.integers(-100, 100, size=cfg.k * 10, dtype=np.int32) for _ in range(2)]  # 10 chunks
    try:
        for wk, q in zip(workers, qs):
            wk.start(1, q, 0)
        assert loop.run(until=lambda: all(w.done for w in workers), timeout=60.0)
    finally:
        stop.set()
        th.join(2.0)
        for tr in transports:
            tr.close()
    for wk in workers:
        np.testing.assert_array_equal(wk.result()[0], qs[0] + qs[1])
    assert ctl.counters(0)["complete"] == 10
