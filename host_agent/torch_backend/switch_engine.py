"""The SA-ATP switch allreduce engine: one SA-ATP worker per rank, and the float layer around it.

Every rank runs one :class:`host_agent.worker.Worker` (wid = rank in the group) on its process's
link to the switch (:mod:`.switch_link`: one UDP tunnel and one loop thread per process, shared
by all its groups), so the worker keeps answering late peers (result cache, helper role)
between collectives. Rank 0 sets the job up first (:mod:`.switch_job`: a switch it starts, the
one ``SAATP_SWITCH`` names, or -- for a sub-group -- the switch its world already set up).

One ``allreduce(x, op)`` = two SA-ATP iterations through the switch:

1. a *header* iteration of ``2 * world`` int32 lanes: worker r writes, in lanes r and
   world + r, the binary exponent E_r of its max |x| (:func:`host_agent.quantize.amax_exponent`)
   and its element count. The switch's sum hands every rank every rank's values, so all ranks
   agree on the global bound 2^E >= max |x| and can check the sizes, without a host exchange;
2. the *data* iteration: ``q = quantize(x, f)`` with ``f = frac_bits(E, world)`` (room for
   ``world`` contributions of up to 2^E: the switch's saturating int32 sum cannot clip), then
   the switch's sum times 2^-f (and the division by ``world`` for AVG, in float64 before the one
   rounding to float32).

Error bound per element (:meth:`SwitchAllreduceEngine.error_bound`): each contribution is
rounded to the nearest multiple of 2^-f (at most half a unit, 2^-(f+1)), the switch adds
integers exactly, so |S - sum x| <= world * 2^-(f+1); then one float32 rounding of the result
(unit roundoff u = 2^-24) of a value at most sum|x_r| + world * 2^-(f+1).
"""
from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable

import grpc
import numpy as np

from .. import constants, wire
from ..controller import Controller
from ..p4runtime import p4runtime_pb2
from ..p4runtime.client import P4RuntimeClient
from ..p4runtime.p4runtime_pb2_grpc import P4RuntimeStub
from ..p4runtime.target import P4RuntimeTarget
from ..quantize import E_NONFINITE, amax_exponent, frac_bits, quant_step_error, quantize
from ..worker import AgentConfig, Worker
from .engines import AllreduceEngine, EngineContext, SwitchEngineError, check_op
from .options import engine_options, given_switch
from .switch_job import LAYOUT_KEY, join_shared_switch, setup_given_switch
from .switch_link import open_link, release_link

_U32 = float(np.finfo(np.float32).eps) / 2  # float32 unit roundoff
# switch watchdog: a question every WATCH_PERIOD s, each answered within WATCH_TIMEOUT s; gone after
# WATCH_MISSES unanswered in a row (a refused connection at once): at most about 1.5 s
WATCH_PERIOD, WATCH_TIMEOUT, WATCH_MISSES = 0.25, 0.6, 2


@dataclass
class _Request:
    q: np.ndarray
    f: int
    done: threading.Event
    result: Any = None
    overflow: bool = False
    error: BaseException | None = None


class _Lane:
    """One SA-ATP job of the group: a worker with a job id and slots of its own, and a thread
    that runs one allreduce at a time on it. A group has ``lanes`` of them, so that as many
    allreduces (DDP's buckets) are in flight at once."""

    def __init__(self, engine: "SwitchAllreduceEngine", index: int, job: int):
        self.index, self.job = index, job
        self.cfg = AgentConfig(job=job, nworkers=engine.world, k=engine.k, pool=engine.layout["window"],
                               t_s=engine.layout["t_s"])
        self.worker = Worker(engine.rank, self.cfg, engine.loop, engine.link.send)
        self.it = 0
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=engine._lane_main, args=(self,),
                                       name=f"saatp-switch-lane{index}-r{engine.rank}", daemon=True)

    def next_iter(self) -> int:
        self.it = self.it % 0xFFFF + 1   # 1..65535, never 0
        return self.it


class SwitchAllreduceEngine(AllreduceEngine):
    """The group's SA-ATP workers (wid = rank), one per lane, and the float layer around them."""

    name = "switch"

    def __init__(self, ctx: EngineContext, layout: dict):
        super().__init__(ctx.world_size)
        o = engine_options(ctx)
        self.ctx = ctx
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
        # the process's link to the switch (one tunnel and loop thread for every group of this
        # process); a group that shares its world's switch finds the world's ports in "link"
        world = layout.get("link") or layout
        grank = ctx.global_ranks[ctx.rank] if ctx.global_ranks else ctx.rank
        world_rank = world["global_ranks"].index(grank) if "link" in layout else ctx.rank
        self.link = open_link(layout["grpc"], world_rank, world)
        self.loop = self.link.loop
        self.lanes = [_Lane(self, i, job) for i, job in enumerate(layout.get("jobs") or [layout["job"]])]
        for lane in self.lanes:
            self.link.attach(lane.job, lane.worker.on_message)
            lane.thread.start()
        self._aborted: str | None = None
        self._closed = False
        self.calls = 0
        self.last_f: int | None = None
        self.on_close: Callable[[], None] | None = None  # rank 0: remove the job / stop sharing
        self._watch_stop = threading.Event()
        if layout.get("grpc") and os.environ.get("SAATP_SWITCH_WATCH", "1") != "0":
            threading.Thread(target=self._watch_switch, name=f"saatp-switch-watch-r{self.rank}", daemon=True).start()

    @property
    def cfg(self) -> AgentConfig:
        return self.lanes[0].cfg

    # -- on the link's loop thread --------------------------------------------------------------
    @staticmethod
    def _start_on_loop(lane: _Lane, it: int, req: _Request) -> None:
        def done(_it, sums, ovf):
            req.result = np.array(sums, dtype=np.int32, copy=True)
            req.overflow = bool(ovf)
            req.done.set()
        try:
            lane.worker.start(it, req.q, req.f, on_done=done)
        except BaseException as e:  # noqa: BLE001
            req.error = e
            req.done.set()

    # -- one SA-ATP iteration, on a lane's thread -----------------------------------------------------
    def _iteration(self, lane: _Lane, q: np.ndarray, f: int, what: str, deadline: float) -> np.ndarray:
        if self._aborted:
            raise SwitchEngineError(f"switch engine aborted: {self._aborted}")
        req = _Request(np.ascontiguousarray(q, dtype=np.int32), int(f), threading.Event())
        it = lane.next_iter()
        self.loop.call_soon_threadsafe(self._start_on_loop, lane, it, req)
        while not req.done.wait(timeout=min(0.1, max(0.0, deadline - time.monotonic()))):
            if self._aborted:
                raise SwitchEngineError(f"switch engine aborted: {self._aborted}")
            if not self.link.alive():
                raise SwitchEngineError(f"the switch link's loop stopped: {self.link.crashed!r}")
            if time.monotonic() >= deadline:
                raise TimeoutError(self._timeout_message(lane, it, what))
        if req.error is not None:
            raise req.error
        if req.overflow:
            raise SwitchEngineError(f"SA-ATP {what} iteration {it}: the switch reports an int32 overflow "
                                    f"with f = {f} (ranks disagree on the scale?)")
        return req.result

    def _timeout_message(self, lane: _Lane, it: int, what: str) -> str:
        st = lane.worker.stats
        cur = lane.worker.cur
        prog = ""
        if cur is not None and cur.it == it:
            prog = f"{int(cur.have.sum())}/{cur.c} chunk results in, {int(cur.released.sum())} released; "
        return (f"SA-ATP {what} iteration {it} of job {lane.job} not complete: no results from the "
                f"switch at {self.layout.get('grpc', '?')} for some chunks (switch gone, or a rank "
                f"missing; {prog}worker sent {st.data_sent} DATA, {st.probes} probes, got {st.results} "
                f"results){self._diagnose(lane)}")

    def _diagnose(self, lane: _Lane) -> str:
        """Helper statistics and, if the switch still runs, its counters (for timeout messages)."""
        parts = []
        hs = lane.worker.helper.stats
        if hs.partials or hs.straggler_contribs:
            parts.append(f"as helper: {hs.partials} partials, {hs.straggler_contribs} straggler contributions, "
                         f"{hs.hresults} hresults, {hs.nacks} nacks, {hs.packs} packs, {hs.exp_mismatch} exp "
                         f"mismatches, {hs.conflicts} conflicts")
        pid = self.layout.get("pid")
        if (pid or self.layout.get("given")) and os.environ.get("SAATP_SWITCH_DIAG", "1") != "0":
            try:
                if pid:
                    os.kill(int(pid), 0)
                c = P4RuntimeClient(self.layout["grpc"], device_id=int(self.layout.get("device", 0)),
                                    election_id=None, timeout=2.0, arbitrate=False)
                try:
                    cnt = Controller(P4RuntimeTarget(c), nslots=constants.SWITCH_SLOTS).counters(lane.job)
                finally:
                    c.close()
                parts.append("switch counters " + ", ".join(f"{k}={v}" for k, v in cnt.items()))
            except Exception as e:  # noqa: BLE001 - diagnostics only
                parts.append(f"switch not readable ({type(e).__name__})")
        return ("; " + "; ".join(parts)) if parts else ""

    # -- lanes ------------------------------------------------------------------------------------
    def _lane_main(self, lane: _Lane) -> None:
        while True:
            task = lane.tasks.get()
            if task is None:
                return
            x, op, deadline, fut = task
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(self._allreduce_on(lane, x, op, deadline))
            except BaseException as e:  # noqa: BLE001 - the caller gets it
                fut.set_exception(e)

    # -- engine protocol ------------------------------------------------------------------------
    def submit(self, x: np.ndarray, op: str = "sum", deadline: float | None = None) -> Future:
        """Start an allreduce on the next lane; the future gets the float32 result. Every rank
        submits in the same order, so the i-th allreduce of every rank runs on lane i mod L."""
        check_op(op)
        if self._closed:
            raise SwitchEngineError("switch engine is closed")
        x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
        lane = self.lanes[self.calls % len(self.lanes)]
        self.calls += 1
        if deadline is None:
            deadline = time.monotonic() + self.timeout_s
        fut: Future = Future()
        lane.tasks.put((x, op, deadline, fut))
        return fut

    def allreduce(self, x: np.ndarray, op: str = "sum") -> np.ndarray:
        return self.submit(x, op, self.deadline_fn()).result()

    def _allreduce_on(self, lane: _Lane, x: np.ndarray, op: str, deadline: float) -> np.ndarray:
        n, world = x.size, self.world
        amax = float(np.max(np.abs(x))) if n else 0.0
        # header iteration: every rank's max-exponent and size, through the switch
        hdr = np.zeros(2 * world, dtype=np.int32)
        hdr[self.rank] = amax_exponent(amax)
        hdr[world + self.rank] = n
        got = self._iteration(lane, hdr, 0, "header", deadline)
        exps, sizes = got[:world].tolist(), got[world:].tolist()
        if len(set(sizes)) != 1:
            raise ValueError(f"saatp allreduce: tensor sizes differ between ranks: {sizes}")
        if E_NONFINITE in exps:
            bad = [r for r, e in enumerate(exps) if e == E_NONFINITE]
            raise ValueError(f"saatp allreduce: rank(s) {bad} hold inf/nan values, which the switch's "
                             f"fixed-point sum cannot carry")
        if n == 0:
            return x.copy()
        f = frac_bits(max(exps), world, self.fixed_f)
        self.last_f = f
        q, clipped = quantize(x, f)
        if clipped:
            raise ValueError(f"saatp allreduce: values up to {amax:g} do not fit int32 with "
                             f"quant_frac_bits = {f}; lower SAATP_QUANT_BITS or leave it unset")
        # The header's exp byte stays 0: every rank already knows f from the header iteration,
        # and a PARTIAL evicted by a helper's FLUSH carries the FLUSH's exp (0, helper.py _flush),
        # so a non-zero exp would make the helper drop every straggler contribution of such a
        # round as "another scale" (exp_mismatch) and the round would never complete.
        s = self._iteration(lane, q, 0, "data", deadline)
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
        if check_op(op) == "avg":
            bound = bound / world
        return bound + float(np.finfo(np.float32).tiny)

    def describe(self) -> str:
        jobs = ",".join(str(lane.job) for lane in self.lanes)
        return (f"switch (SA-ATP job {jobs} at {self.layout.get('grpc', '?')}, K={self.k}, "
                f"window={self.cfg.pool}, {len(self.lanes)} lane(s), T_s={self.cfg.t_s * 1e3:g} ms)")

    def abort(self, why: str = "the process group failed") -> None:
        self._aborted = self._aborted or why

    # -- switch watchdog ------------------------------------------------------------------------
    def _watch_switch(self) -> None:
        """Ask the switch for its P4Runtime capabilities every WATCH_PERIOD s: a refused connection,
        or WATCH_MISSES answers missing in a row, means the switch is gone -- the group fails at
        once (``on_failure``) instead of at the collective's timeout."""
        addr = self.layout.get("grpc")
        channel = grpc.insecure_channel(addr)
        stub = P4RuntimeStub(channel)
        misses = 0
        try:
            while not self._watch_stop.wait(WATCH_PERIOD):
                try:
                    stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=WATCH_TIMEOUT)
                    misses = 0
                    continue
                except grpc.RpcError as e:
                    code = e.code() if callable(getattr(e, "code", None)) else None
                    misses = WATCH_MISSES if code == grpc.StatusCode.UNAVAILABLE else misses + 1
                    detail = getattr(code, "name", str(code))
                if misses >= WATCH_MISSES and not self._watch_stop.is_set():
                    why = (f"the switch at {addr} is gone (P4Runtime: {detail}"
                           f"{', process ' + str(self.layout['pid']) if self.layout.get('pid') else ''})")
                    self.abort(why)
                    cb = self.on_failure
                    if cb is not None:
                        cb(why)
                    return
        finally:
            channel.close()

    def close(self) -> None:
        self._watch_stop.set()
        if self._closed:
            return
        self._closed = True
        self.abort("the engine was closed")
        for lane in self.lanes:
            lane.tasks.put(None)
        for lane in self.lanes:
            lane.thread.join(2.0)
            self.link.detach(lane.job)
        release_link(self.link)
        remove, self.on_close = self.on_close, None
        if remove is not None:
            # a switch that is not ours keeps running; only this job's entries go
            try:
                remove()
            except Exception as e:  # noqa: BLE001 - closing must not fail on a gone switch
                print(f"saatp: job {self.cfg.job}: could not remove its configuration from the switch at "
                      f"{self.layout.get('grpc')}: {e}", file=sys.stderr, flush=True)


def create_engine(ctx: EngineContext, shared: dict | None = None) -> SwitchAllreduceEngine:
    """Every rank: the worker of ``ctx.rank`` on its process's link to the switch.

    Rank 0 first sets the job up -- on the switch of ``shared`` (a sub-group joining the switch
    its world set up: :func:`join_shared_switch`), or on the one ``SAATP_SWITCH`` names
    (:func:`setup_given_switch`) -- and publishes the layout (or its failure) in the store."""
    spec = None if shared is not None else given_switch(ctx, wire.MAX_WORKERS)  # same error on every rank
    remove = None
    if (spec is not None or shared is not None) and ctx.rank == 0:
        try:
            layout, remove = (join_shared_switch(ctx, shared) if shared is not None
                              else setup_given_switch(ctx, spec))
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
