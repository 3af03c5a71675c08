"""The SA-ATP switch allreduce engine of the ``saatp`` torch.distributed backend.

The backend (``host_agent/torch_backend``) loads this module when the switch engine is chosen
(see docs/torch-backend.md, "Protocol host_agent.sa_atp_engine must provide"):

* :func:`start_switch` (rank 0, when no switch address is given) starts ``saatp switch
  p4src/saatp.p4`` as a subprocess with one UDP-tunnel port per worker on 127.0.0.1 and
  P4Runtime on a free 127.0.0.1 port, waits until P4Runtime answers, then configures the
  job with the project's :class:`host_agent.controller.Controller` over P4Runtime
  (:class:`emulation.net.p4rt_target.P4RuntimeTarget`): per-port host addresses, ``job_cfg``
  (pool = window, T_s = straggler threshold, SA-ATP mode), ``wid_port`` and the job's
  multicast group.  The port layout goes to the other ranks through the c10d store.
* with ``SAATP_SWITCH`` given (a switch the user started; syntax in
  :func:`host_agent.torch_backend.options.parse_switch_spec`), rank 0 instead runs
  :func:`setup_given_switch` inside :func:`create_engine`: it pushes ``p4src/saatp.p4`` only if
  the switch has no pipeline (``saatp switch --no-p4``), zeroes the job's leftover state,
  configures the job with the same Controller, publishes the layout, and at close deletes the
  job's entries again; it never stops that switch.
* :func:`create_engine` (every rank) runs one :class:`host_agent.worker.Worker` (wid = rank)
  on its UDP tunnel, on a background thread with a :class:`~host_agent.clock.RealClock`, so the
  worker keeps answering late peers (result cache, helper role) between collectives.

One ``allreduce(x, op)`` = two SA-ATP iterations through the switch:

1. a *header* iteration of ``2 * world`` int32 lanes: worker r writes, in lanes r and
   world + r, the binary exponent E_r of its max |x| (``frexp``; or a code for "all zero" /
   "not finite") and its element count.  The switch's sum hands every rank every rank's
   values, so all ranks agree on the global bound 2^E >= max |x| and can check the sizes,
   without a host-side exchange;
2. the *data* iteration: ``q = quantize(x, f)`` with ``f = quantize.exp_for(2^E, world)``
   (room for ``world`` contributions of up to 2^E: the switch's saturating int32 sum cannot
   clip), then ``dequantize`` of the switch's sum (and the division by ``world`` for AVG,
   in float64 before the one rounding to float32).

Error bound per element (:meth:`SwitchAllreduceEngine.error_bound`): each contribution is
rounded to the nearest multiple of 2^-f (``numpy.rint``: at most half a unit, 2^-(f+1)), the
switch adds integers exactly, so |S - sum x| <= world * 2^-(f+1); then one float32 rounding of
the result (unit roundoff u = 2^-24) of a value at most sum|x_r| + world * 2^-(f+1).
``f`` is derived from the values passed, with the same function the engine used.
"""
from __future__ import annotations

import json
import math
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import quantize as qz
from . import wire

REPO = Path(__file__).resolve().parent.parent
PROGRAM = REPO / "p4src" / "saatp.p4"
LAYOUT_KEY = "sa_atp/layout"
SWITCH_MAC = "02:00:00:00:00:fe"
SWITCH_IP = "10.0.0.254"

# header-iteration codes (an exponent E of a finite non-zero float32 is in -148..128)
_E_ZERO = -(1 << 20)       # every element is 0
_E_NONFINITE = 1 << 20     # some element is inf or nan

_U32 = float(np.finfo(np.float32).eps) / 2  # float32 unit roundoff


class SwitchEngineError(RuntimeError):
    """The switch engine could not do its job (set-up, switch gone, bad data)."""


# ---------------------------------------------------------------------------------------------
# quantization: the exponent the engine uses, and its bound
# ---------------------------------------------------------------------------------------------
def amax_exponent(amax: float) -> int:
    """E with ``amax <= 2**E`` (frexp: amax = m * 2**E, 0.5 <= m < 1); codes for 0 and non-finite."""
    if not math.isfinite(amax):
        return _E_NONFINITE
    if amax == 0.0:
        return _E_ZERO
    return int(math.frexp(amax)[1])


def frac_bits(e_max: int, world: int, fixed: int | None = None) -> int:
    """The fixed-point exponent f for a job of ``world`` contributions bounded by 2**e_max:
    ``quantize.exp_for`` (n * 2**e_max * 2**f < 2**30, so neither a contribution nor the switch's
    sum can clip), or the configured ``quant_frac_bits``."""
    if fixed is not None:
        return int(fixed)
    if e_max == _E_ZERO:
        return qz.EXP_MAX
    return qz.exp_for(math.ldexp(1.0, e_max), world, headroom=1.0)


def quant_step_error(f: int) -> float:
    """Largest |rint(x * 2**f) / 2**f - x| of one quantized value: half a unit of 2**-f."""
    return math.ldexp(0.5, -f)


# ---------------------------------------------------------------------------------------------
# switch process (rank 0)
# ---------------------------------------------------------------------------------------------
def _free_udp_ports(n: int) -> list[int]:
    socks, out = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            out.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return out


def _free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _host_mac(wid: int) -> str:
    return "02:00:00:00:01:%02x" % (wid + 1)


def _host_ip(wid: int) -> str:
    return "10.0.1.%d" % (wid + 1)


def _opts(ctx) -> dict:
    o = ctx.options
    return dict(k=int(getattr(o, "chunk_size", 64) or 64), window=int(getattr(o, "window", 32) or 32),
                t_s=float(getattr(o, "straggler_ms", 50.0) or 50.0) / 1000.0,
                frac_bits=getattr(o, "quant_frac_bits", None),
                extra=dict(getattr(o, "extra", {}) or {}))


# ``python -m emulation.switchd ARGS`` plus a watcher thread: if the rank that started the switch
# dies (even by SIGKILL) the switch stops itself (SIGTERM to itself = switchd's clean stop), so a
# killed rank 0 never leaves an orphaned switch behind.
_SWITCH_MAIN = (
    "import os, signal, sys, threading, time\n"
    "parent = int(sys.argv[1])\n"
    "def watch():\n"
    "    while os.getppid() == parent:\n"
    "        time.sleep(0.5)\n"
    "    os.kill(os.getpid(), signal.SIGTERM)\n"
    "threading.Thread(target=watch, daemon=True).start()\n"
    "from emulation.switchd import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


class _SwitchProcess:
    """One ``saatp switch`` subprocess; :meth:`close` stops exactly it."""

    def __init__(self, argv: list[str], log_path: str | None):
        self.log = open(log_path, "wb") if log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                     cwd=str(REPO), start_new_session=True)
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def close(self) -> None:
        with self._lock:
            p = self.proc
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGTERM)
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)
                except ProcessLookupError:
                    pass
            if self.log not in (None, subprocess.DEVNULL):
                self.log.close()
                self.log = None


def _wait_grpc(proc: _SwitchProcess, addr: str, deadline: float, log_path: str | None) -> None:
    import grpc
    while True:
        if proc.proc.poll() is not None:
            tail = ""
            if log_path and os.path.exists(log_path):
                tail = Path(log_path).read_text(errors="replace")[-800:]
            raise SwitchEngineError(f"saatp switch exited with status {proc.proc.returncode} before "
                                    f"P4Runtime answered on {addr}: {tail.strip()}")
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"saatp switch: P4Runtime on {addr} did not answer in time")
        ch = grpc.insecure_channel(addr)
        try:
            grpc.channel_ready_future(ch).result(timeout=min(0.5, left))
            return
        except grpc.FutureTimeoutError:
            continue
        finally:
            ch.close()


def _program_k(client) -> int:
    """K of the loaded program: its per-lane value registers ``s_val_0 .. s_val_{K-1}``."""
    info = client.load_p4info()
    lanes = [r for r in info.registers if r.preamble.name.rsplit(".", 1)[-1].startswith("s_val_")]
    if not lanes:
        raise SwitchEngineError("the switch program has no s_val_* registers: is it p4src/saatp.p4?")
    return len(lanes)


class _JobTarget:
    """The Controller's control-plane calls over P4Runtime (a
    :class:`emulation.net.p4rt_target.P4RuntimeTarget`) that also remembers every entry and
    multicast group written for the job, so :func:`remove_job` can delete exactly those, and
    that replaces an entry or group a previous run of the same job left behind (ALREADY_EXISTS)
    instead of failing."""

    _ALREADY_EXISTS = 6  # google.rpc.Code

    def __init__(self, client):
        from emulation.net.p4rt_target import P4RuntimeTarget
        self.t = P4RuntimeTarget(client)
        self.entries: list[tuple[str, dict, int]] = []
        self.groups: list[int] = []

    def __getattr__(self, name):  # register, register_read, counter_read, table_modify, ...
        return getattr(self.t, name)

    def _exists(self, e: Exception) -> bool:
        return self._ALREADY_EXISTS in getattr(e, "codes", ())

    def table_add(self, table, action, match, args=(), priority=None) -> int:
        from emulation.p4runtime.client import WriteError
        m = self.t._match(table, match)
        try:
            h = self.t.table_add(table, action, m, args, priority)
        except WriteError as e:
            if not self._exists(e):
                raise
            self.t.c.modify(table, m, action, self.t._params(action, args), priority or 0)
            h = self.t._next
            self.t._next += 1
            self.t._entries[h] = (table, m, priority or 0)
        self.entries.append((table, m, priority or 0))
        return h

    def mc_set_group(self, mgid, replicas) -> None:
        from emulation.p4runtime.client import WriteError
        try:
            self.t.mc_set_group(mgid, replicas)
        except WriteError as e:
            if not self._exists(e):
                raise
            self.t.c.multicast_group(mgid, list(replicas), "MODIFY")
            self.t._groups.add(mgid)
        if mgid not in self.groups:
            self.groups.append(mgid)


def _check_k(c, k: int) -> int:
    pk = _program_k(c)
    if pk != k:
        raise ValueError(f"saatp: chunk_size (SAATP_CHUNK) = {k} but the switch program aggregates "
                         f"K = {pk} lanes per packet; set SAATP_CHUNK={pk} or regenerate the program "
                         f"(scripts/gen_saatp_p4.py)")
    return pk


def _configure(c, job: int, world: int, ports: dict[int, int], window: int, t_s: float, k: int,
               base: int | None = None) -> tuple[dict, _JobTarget]:
    from .controller import Controller, JobSpec
    pk = _check_k(c, k)
    tgt = _JobTarget(c)
    ctl = Controller(tgt, SWITCH_MAC, SWITCH_IP)
    for w, port in sorted(ports.items()):
        ctl.add_host(port, _host_mac(w), _host_ip(w))
    ctl.configure_job(JobSpec(job=job, ports=dict(ports), nworkers=world, pool=window, t_s=t_s, mode="saatp",
                              base=base))
    return {"k": pk, "cli": ctl.cli_commands(), "nslots": ctl.nslots}, tgt


def configure_job(grpc_addr: str, job: int, world: int, ports: dict[int, int], window: int, t_s: float,
                  k: int, timeout: float = 10.0) -> dict:
    """Configure one SA-ATP job on the switch at ``grpc_addr`` with the project's Controller over
    P4Runtime. ``ports``: wid -> switch port. Returns {"k": program K, "cli": commands}."""
    from emulation.net.control import connect
    c = connect(grpc_addr, 0, timeout=timeout)
    try:
        cfg, _ = _configure(c, job, world, ports, window, t_s, k)
        return cfg
    finally:
        c.close()


def remove_job(grpc_addr: str, device: int, entries: list, groups: list, timeout: float = 5.0) -> None:
    """Delete the table entries and multicast groups one job wrote (``_JobTarget``), newest first.
    The Controller has no "remove job" call; this undoes exactly what it wrote for the job."""
    from emulation.net.control import connect
    c = connect(grpc_addr, device, timeout=timeout)
    try:
        c.load_p4info()
        errors = []
        for table, m, prio in reversed(entries):
            try:
                c.delete(table, m, prio)
            except Exception as e:  # noqa: BLE001 - delete what can be deleted
                errors.append(f"{table}: {e}")
        for mgid in groups:
            try:
                c.multicast_group(mgid, [], "DELETE")
            except Exception as e:  # noqa: BLE001
                errors.append(f"multicast group {mgid}: {e}")
        if errors:
            raise SwitchEngineError("removing the job from the switch: " + "; ".join(errors))
    finally:
        c.close()


def _ensure_pipeline(c, addr: str, program: str) -> bool:
    """Use the switch's pipeline if it has one; else push ``program`` (P4Info from the embedded
    front end, the P4 source as device config, as ``saatp switch --no-p4`` takes it). Returns
    True if this call pushed it."""
    import grpc
    try:
        info = c.load_p4info()
        if len(info.tables) or len(info.actions):
            return False
    except grpc.RpcError as e:
        if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            raise SwitchEngineError(f"saatp: the switch given in SAATP_SWITCH does not answer P4Runtime at "
                                    f"{addr} ({e.code().name}): is it running?") from None
        # FAILED_PRECONDITION etc.: no pipeline yet
    from emulation.net.control import p4info_for_source
    info = p4info_for_source(program)
    try:
        c.set_pipeline(info, Path(program).read_bytes())
    except grpc.RpcError as e:
        raise SwitchEngineError(
            f"saatp: the switch at {addr} has no pipeline and refused {program} as device config "
            f"({e.code().name}: {e.details()}). BMv2 (simple_switch_grpc) needs the JSON p4c writes: "
            f"start it with p4src/saatp.p4 compiled by p4c (or load it over P4Runtime) first; the engine "
            f"then uses that pipeline as is") from None
    return True


_SLOT_REGISTERS = ("s_state", "s_iter", "s_seq", "s_bitmap", "s_ts", "s_first", "s_helper", "s_ovf")
_JOB_REGISTERS = ("j_iter", "j_strag", "j_helper")


def _reset_job_state(c, job: int, base: int, nslots: int) -> None:
    """Zero the switch state a previous job with this id (or these slots) left in a switch that
    keeps running: the slots' round state (the values are overwritten when a round opens), the
    job's iteration / straggler / helper registers and its event counters. Without this, the
    restarted iteration numbers look *stale* to the switch. One batched P4Runtime Write."""
    from emulation.p4runtime import p4runtime_pb2 as pb
    from emulation.p4runtime.server import encode_bytes
    idx = c._idx()
    updates = []

    def reg(name, index):
        r = idx.get("register", name)
        ent = pb.Entity()
        e = ent.register_entry
        e.register_id = r.preamble.id
        e.index.index = index
        e.data.bitstring = encode_bytes(0)
        updates.append(c.update("MODIFY", ent))
    for name in _SLOT_REGISTERS:
        for g in range(base, base + nslots):
            reg(name, g)
    for name in _JOB_REGISTERS:
        reg(name, job)
    for cnt in idx.p4info.counters:
        if cnt.preamble.name.rsplit(".", 1)[-1] == "c_drop" or cnt.size <= job:
            continue  # c_drop is per drop reason, not per job
        ent = pb.Entity()
        ent.counter_entry.counter_id = cnt.preamble.id
        ent.counter_entry.index.index = job
        ent.counter_entry.data.packet_count = 0
        ent.counter_entry.data.byte_count = 0
        updates.append(c.update("MODIFY", ent))
    c.write(updates)


def setup_given_switch(ctx, spec) -> tuple[dict, Callable[[], None]]:
    """Rank 0, ``SAATP_SWITCH`` given: push the pipeline if the switch has none, configure this
    group's job with the Controller, and return (layout, remove) where ``remove()`` deletes the
    job's entries again (the switch itself keeps running: it is not ours)."""
    import grpc

    from emulation.net.control import connect
    o = _opts(ctx)
    world = ctx.world_size
    program = str(o["extra"].get("program", PROGRAM))
    timeout = max(2.0, min(float(ctx.timeout_s), 30.0))
    ports = {w: p.port for w, p in enumerate(spec.ports)}
    c = None
    try:
        try:
            c = connect(spec.grpc, spec.device, timeout=timeout)
            pushed = _ensure_pipeline(c, spec.grpc, program)
            _check_k(c, o["k"])  # also: is it the SA-ATP program at all (its s_val_* registers)?
            # jobs sharing one switch get disjoint slot ranges when their ids differ
            try:
                nslots = int(c._idx().get("register", "s_state").size)
            except Exception:  # noqa: BLE001 - _configure reports a program that is not SA-ATP
                nslots = 1024
            per = 2 * o["window"]
            if per > nslots:
                raise ValueError(f"saatp switch engine: window {o['window']} needs 2*window <= {nslots} switch slots")
            base = (ctx.job_id % (nslots // per)) * per
            _reset_job_state(c, ctx.job_id, base, per)
            cfg, tgt = _configure(c, ctx.job_id, world, ports, o["window"], o["t_s"], o["k"], base=base)
        except grpc.RpcError as e:
            code = e.code() if callable(getattr(e, "code", None)) else None
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise SwitchEngineError(f"saatp: the switch given in SAATP_SWITCH does not answer P4Runtime "
                                        f"at {spec.grpc} ({code.name}): is it running?") from None
            details = e.details() if callable(getattr(e, "details", None)) else str(e)
            raise SwitchEngineError(f"saatp: P4Runtime at {spec.grpc} (device {spec.device}) failed: "
                                    f"{getattr(code, 'name', code)}: {details}") from None
    finally:
        if c is not None:
            c.close()
    layout = dict(job=ctx.job_id, world=world, k=cfg["k"], window=o["window"], t_s=o["t_s"],
                  switch_ports=[p.switch_udp for p in spec.ports], host_ports=[p.worker_udp for p in spec.ports],
                  switch_hosts=[p.host for p in spec.ports], port_numbers=[p.port for p in spec.ports],
                  grpc=spec.grpc, device=spec.device, pid=None, given=True, pushed_pipeline=pushed,
                  slot_base=base)
    entries, groups = list(tgt.entries), list(tgt.groups)
    return layout, lambda: remove_job(spec.grpc, spec.device, entries, groups, timeout=min(timeout, 5.0))


def start_switch(ctx) -> tuple[str, Callable[[], None]]:
    """Rank 0: start ``saatp switch p4src/saatp.p4`` for this group's job and configure it.

    Returns ``("127.0.0.1:<grpc port>", close)``; the port layout (switch/host UDP port per worker
    id, job, K, window, T_s, switch pid) is published under ``sa_atp/layout`` in the store."""
    o = _opts(ctx)
    world = ctx.world_size
    if not 1 <= world <= 32:
        raise ValueError(f"saatp switch engine: 1..32 ranks per job, got {world}")
    if 2 * o["window"] > 1024:
        raise ValueError(f"saatp switch engine: window {o['window']} needs 2*window <= 1024 switch slots")
    program = str(o["extra"].get("program", PROGRAM))
    deadline = time.monotonic() + max(10.0, min(float(ctx.timeout_s), 120.0))
    for attempt in range(3):  # free ports are picked by binding; retry if one was taken meanwhile
        free = _free_udp_ports(2 * world)
        sw_ports, host_ports = free[:world], free[world:]
        grpc_port = _free_tcp_port()
        grpc_addr = f"127.0.0.1:{grpc_port}"
        argv = [sys.executable, "-c", _SWITCH_MAIN, str(os.getpid()), program, "-L", "warn"]
        for w in range(world):
            argv += ["-i", f"{w + 1}@udp:{sw_ports[w]}:127.0.0.1:{host_ports[w]}"]
        argv += ["--", "--grpc-server-addr", grpc_addr]
        log_path = o["extra"].get("switch_log")
        proc = _SwitchProcess(argv, log_path)
        try:
            _wait_grpc(proc, grpc_addr, deadline, log_path)
            cfg = configure_job(grpc_addr, ctx.job_id, world, {w: w + 1 for w in range(world)},
                                o["window"], o["t_s"], o["k"], timeout=max(1.0, deadline - time.monotonic()))
        except SwitchEngineError:
            proc.close()
            if attempt == 2 or time.monotonic() > deadline:
                raise
            continue
        except BaseException:
            proc.close()
            raise
        layout = dict(job=ctx.job_id, world=world, k=cfg["k"], window=o["window"], t_s=o["t_s"],
                      switch_ports=sw_ports, host_ports=host_ports, grpc=grpc_addr, pid=proc.pid)
        ctx.store_set(LAYOUT_KEY, json.dumps(layout).encode())
        return grpc_addr, proc.close
    raise SwitchEngineError("could not start the switch")  # pragma: no cover


# ---------------------------------------------------------------------------------------------
# per-rank engine
# ---------------------------------------------------------------------------------------------
@dataclass
class _Request:
    q: np.ndarray
    f: int
    done: threading.Event
    result: Any = None
    overflow: bool = False
    error: BaseException | None = None


class SwitchAllreduceEngine:
    """One SA-ATP worker (wid = rank) and the float layer around it (module docstring)."""

    name = "switch"

    def __init__(self, ctx, layout: dict):
        from emulation.ports import UdpTunnelPort

        from .clock import RealClock
        from .transport import FramePortTransport
        from .worker import AgentConfig, Worker

        o = _opts(ctx)
        self.world = ctx.world_size
        self.rank = ctx.rank
        self.deadline_fn = getattr(ctx, "deadline", lambda: None)
        self.timeout_s = float(ctx.timeout_s)
        self.fixed_f = o["frac_bits"]
        if layout["world"] != self.world or layout["job"] != ctx.job_id:
            raise SwitchEngineError(f"switch layout is for job {layout['job']} of {layout['world']} ranks, "
                                    f"this group is job {ctx.job_id} of {self.world}")
        if layout["k"] != o["k"]:
            raise ValueError(f"saatp: chunk_size {o['k']} on rank {self.rank} but the switch uses K = {layout['k']}")
        self.k = layout["k"]
        self.layout = layout
        self.cfg = AgentConfig(job=ctx.job_id, nworkers=self.world, k=self.k, pool=layout["window"],
                               t_s=layout["t_s"])
        self.loop = RealClock()
        w = self.rank
        sw_host = (layout.get("switch_hosts") or ["127.0.0.1"] * self.world)[w]
        self.port = UdpTunnelPort(layout["host_ports"][w], sw_host, layout["switch_ports"][w])
        tpl = wire.FrameTemplate(_host_mac(w), SWITCH_MAC, _host_ip(w), SWITCH_IP)
        self.transport = FramePortTransport(self.loop, self.port, tpl)
        self.worker = Worker(w, self.cfg, self.loop, self.transport.send)
        self.transport.set_receiver(self.worker.on_message)
        self._it = 0
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self.loop.add_reader(self._wake_r, self._on_wake)
        self._stop = False
        self._aborted: str | None = None
        self._pending: _Request | None = None
        self.calls = 0
        self.last_f: int | None = None
        self.on_close: Callable[[], None] | None = None  # rank 0, given switch: remove the job
        self._thread = threading.Thread(target=self._run, name=f"saatp-switch-engine-r{w}", daemon=True)
        self._thread.start()

    # -- worker thread --------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self.loop.run(lambda: self._stop)
        except BaseException as e:  # noqa: BLE001 - a crash of the loop fails the pending call
            req = self._pending
            if req is not None and not req.done.is_set():
                req.error = SwitchEngineError(f"worker loop crashed: {type(e).__name__}: {e}")
                req.done.set()

    def _on_wake(self) -> None:
        try:
            self._wake_r.recv(4096)
        except OSError:
            pass
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return
            if item is None:
                self._stop = True
                return
            it, req = item
            self._pending = req

            def done(_it, sums, ovf, req=req):
                req.result = np.array(sums, dtype=np.int32, copy=True)
                req.overflow = bool(ovf)
                req.done.set()
            try:
                self.worker.start(it, req.q, req.f, on_done=done)
            except BaseException as e:  # noqa: BLE001
                req.error = e
                req.done.set()

    def _post(self, item) -> None:
        self._inbox.put(item)
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    # -- one SA-ATP iteration ---------------------------------------------------------------------
    def _next_iter(self) -> int:
        self._it = self._it % 0xFFFF + 1   # 1..65535, never 0
        return self._it

    def _iteration(self, q: np.ndarray, f: int, what: str) -> np.ndarray:
        if self._aborted:
            raise SwitchEngineError(f"switch engine aborted: {self._aborted}")
        req = _Request(np.ascontiguousarray(q, dtype=np.int32), int(f), threading.Event())
        it = self._next_iter()
        self._post((it, req))
        deadline = self.deadline_fn()
        if deadline is None:
            deadline = time.monotonic() + self.timeout_s
        while not req.done.wait(timeout=min(0.25, max(0.0, deadline - time.monotonic()))):
            if self._aborted:
                raise SwitchEngineError(f"switch engine aborted: {self._aborted}")
            if not self._thread.is_alive():
                raise SwitchEngineError("the worker thread stopped")
            if time.monotonic() >= deadline:
                st = self.worker.stats
                cur = self.worker.cur
                if cur is not None and cur.it == it:
                    have = int(cur.have.sum())
                    rel = int(cur.released.sum())
                    prog = f"{have}/{cur.c} chunk results in, {rel} released; "
                else:
                    prog = ""
                diag = self._diagnose()
                raise TimeoutError(
                    f"SA-ATP {what} iteration {it} of job {self.cfg.job} not complete: no results from the "
                    f"switch at {self.layout.get('grpc', '?')} for some chunks (switch gone, or a rank "
                    f"missing; {prog}worker sent {st.data_sent} DATA, {st.probes} probes, got {st.results} results){diag}")
        if req.error is not None:
            raise req.error
        if req.overflow:
            raise SwitchEngineError(f"SA-ATP {what} iteration {it}: the switch reports an int32 overflow "
                                    f"with f = {f} (ranks disagree on the scale?)")
        return req.result

    def _diagnose(self) -> str:
        """Helper statistics and, if the switch still runs, its counters (for timeout messages)."""
        parts = []
        hs = self.worker.helper.stats
        if hs.partials or hs.straggler_contribs:
            parts.append(f"as helper: {hs.partials} partials, {hs.straggler_contribs} straggler contributions, "
                         f"{hs.hresults} hresults, {hs.nacks} nacks, {hs.packs} packs, {hs.exp_mismatch} exp mismatches, {hs.conflicts} conflicts")
        pid = self.layout.get("pid")
        if (pid or self.layout.get("given")) and os.environ.get("SAATP_SWITCH_DIAG", "1") != "0":
            try:
                if pid:
                    os.kill(int(pid), 0)
                from emulation.net.p4rt_target import P4RuntimeTarget
                from emulation.p4runtime.client import P4RuntimeClient

                from .controller import Controller
                c = P4RuntimeClient(self.layout["grpc"], device_id=int(self.layout.get("device", 0)),
                                    election_id=None, timeout=2.0, arbitrate=False)
                try:
                    cnt = Controller(P4RuntimeTarget(c), nslots=1024).counters(self.cfg.job)
                finally:
                    c.close()
                parts.append("switch counters " + ", ".join(f"{k}={v}" for k, v in cnt.items()))
            except Exception as e:  # noqa: BLE001 - diagnostics only
                parts.append(f"switch not readable ({type(e).__name__})")
        return ("; " + "; ".join(parts)) if parts else ""

    # -- engine protocol ------------------------------------------------------------------------
    def allreduce(self, x: np.ndarray, op: str = "sum") -> np.ndarray:
        if op not in ("sum", "avg"):
            raise ValueError(f"switch engine: op must be 'sum' or 'avg', got {op!r}")
        x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
        n, world = x.size, self.world
        self.calls += 1
        amax = float(np.max(np.abs(x))) if n else 0.0
        # header iteration: every rank's max-exponent and size, through the switch
        hdr = np.zeros(2 * world, dtype=np.int32)
        hdr[self.rank] = amax_exponent(amax)
        hdr[world + self.rank] = n
        got = self._iteration(hdr, 0, "header")
        exps, sizes = got[:world].tolist(), got[world:].tolist()
        if len(set(sizes)) != 1:
            raise ValueError(f"saatp allreduce: tensor sizes differ between ranks: {sizes}")
        if _E_NONFINITE in exps:
            bad = [r for r, e in enumerate(exps) if e == _E_NONFINITE]
            raise ValueError(f"saatp allreduce: rank(s) {bad} hold inf/nan values, which the switch's "
                             f"fixed-point sum cannot carry")
        if n == 0:
            return x.copy()
        f = frac_bits(max(exps), world, self.fixed_f)
        self.last_f = f
        q, clipped = qz.quantize(x, f)
        if clipped:
            raise ValueError(f"saatp allreduce: values up to {amax:g} do not fit int32 with "
                             f"quant_frac_bits = {f}; lower SAATP_QUANT_BITS or leave it unset")
        # The header's exp byte stays 0: every rank already knows f from the header iteration,
        # and a PARTIAL evicted by a helper's FLUSH carries the FLUSH's exp (0, helper.py _flush),
        # so a non-zero exp would make the helper drop every straggler contribution of such a
        # round as "another scale" (exp_mismatch) and the round would never complete.
        s = self._iteration(q, 0, "data")
        out = np.ldexp(s.astype(np.float64), -f)
        if op == "avg":
            out /= world
        return out.astype(np.float32)

    def error_bound(self, values, world: int | None = None, op: str = "sum") -> np.ndarray:
        world = self.world if world is None else int(world)
        v = np.asarray(values, dtype=np.float64)
        if v.ndim == 2:
            if v.shape[0] != world:
                raise ValueError(f"error_bound: values has {v.shape[0]} rows, expected world={world}")
            abs_sum = np.abs(v).sum(axis=0)
            amax = float(np.max(np.abs(v))) if v.size else 0.0
        else:
            abs_sum = np.abs(v)
            # sum_r |x_r| >= max_r |x_r|: a larger amax gives a smaller f, a larger (safe) bound
            amax = float(np.max(abs_sum)) if v.size else 0.0
        f = frac_bits(amax_exponent(amax), world, self.fixed_f)
        qerr = world * quant_step_error(f)        # world contributions, each rounded once
        bound = qerr + _U32 * (abs_sum + qerr)    # one float32 rounding of the result
        if op == "avg":
            bound = bound / world
        elif op != "sum":
            raise ValueError(f"error_bound: op must be 'sum' or 'avg', got {op!r}")
        return bound + float(np.finfo(np.float32).tiny)

    def describe(self) -> str:
        return f"switch (SA-ATP job {self.cfg.job}, K={self.k}, window={self.cfg.pool}, T_s={self.cfg.t_s * 1e3:g} ms)"

    def abort(self) -> None:
        self._aborted = self._aborted or "the process group failed"

    def close(self) -> None:
        if self._stop and not self._thread.is_alive():
            return
        self._post(None)
        self._thread.join(2.0)
        try:
            self.transport.close()
        except Exception:  # noqa: BLE001
            pass
        self.port.close()
        self._wake_r.close()
        self._wake_w.close()
        remove, self.on_close = self.on_close, None
        if remove is not None:
            # a given switch keeps running (it is not ours); only this job's entries go
            try:
                remove()
            except Exception as e:  # noqa: BLE001 - closing must not fail on a gone switch
                print(f"saatp: job {self.cfg.job}: could not remove its configuration from the switch at "
                      f"{self.layout.get('grpc')}: {e}", file=sys.stderr, flush=True)


def _given_switch(ctx):
    """The parsed ``SAATP_SWITCH`` (options.switch), checked against the group; None if not given."""
    text = getattr(ctx.options, "switch", None)
    if not text:
        return None
    from .torch_backend.options import SWITCH_SYNTAX, parse_switch_spec
    spec = parse_switch_spec(text)
    if spec.ports is None:
        raise ValueError(f"saatp: SAATP_SWITCH={text!r} gives no ports=: the switch engine needs each rank's "
                         f"UDP tunnel to the switch; syntax: {SWITCH_SYNTAX}")
    if len(spec.ports) != ctx.world_size:
        raise ValueError(f"saatp: SAATP_SWITCH ports= lists {len(spec.ports)} tunnel(s) but the group has "
                         f"{ctx.world_size} ranks (one entry per rank, in rank order)")
    if not 1 <= ctx.world_size <= 32:
        raise ValueError(f"saatp switch engine: 1..32 ranks per job, got {ctx.world_size}")
    return spec


def create_engine(ctx) -> SwitchAllreduceEngine:
    """Every rank: the worker of ``ctx.rank`` on its UDP tunnel to the switch.

    With ``SAATP_SWITCH`` given, rank 0 first sets the job up on that switch
    (:func:`setup_given_switch`) and publishes the layout (or its failure) in the store."""
    spec = _given_switch(ctx)  # the same ValueError on every rank for a bad spec
    remove = None
    if spec is not None and ctx.rank == 0:
        try:
            layout, remove = setup_given_switch(ctx, spec)
        except BaseException as e:
            ctx.store_set(LAYOUT_KEY, json.dumps({"error": f"{type(e).__name__}: {e}"}).encode())
            raise
        ctx.store_set(LAYOUT_KEY, json.dumps(layout).encode())
    raw = ctx.store_get(LAYOUT_KEY)
    try:
        layout = json.loads(bytes(raw).decode())
    except ValueError:
        raise SwitchEngineError(f"bad switch layout in the store: {bytes(raw)[:100]!r}") from None
    if "error" in layout:
        raise SwitchEngineError(f"saatp: rank 0 could not set the job up on the switch: {layout['error']}")
    try:
        eng = SwitchAllreduceEngine(ctx, layout)
    except BaseException:
        if remove is not None:
            try:
                remove()
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
        raise
    eng.on_close = remove
    # every worker's socket is bound before anybody sends: a first DATA is never lost to a
    # closed port (it would be recovered by a probe, but only after an RTO)
    ctx.allgather_bytes("sa_atp/ready", b"1")
    return eng
