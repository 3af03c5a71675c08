"""The SA-ATP switch allreduce engine: one SA-ATP worker per rank, and the float layer around it.

Every rank runs one :class:`host_agent.worker.Worker` (wid = rank in the group) on its process's
link to the switch (:mod:`.switch_link`: one UDP tunnel and one loop thread per process, shared
by all its groups), so the worker keeps answering late peers (result cache, helper role)
between collectives. Rank 0 sets the job up first (:mod:`.switch_job`: a switch it starts, the
one ``SAATP_SWITCH`` names, or -- for a sub-group -- the switch its world already set up).

One ``allreduce(x, op)`` = one SA-ATP iteration through the switch, the scale agreed in-band:

* the int32 vector sent is ``[meta | q]``: ``meta`` has 3 x world lanes, in which rank r writes
  (lanes r, world + r, 2 world + r) the binary exponent E_r of its max |x|
  (:func:`host_agent.quantize.amax_exponent`), its element count, and 1 if its own values did
  not fit int32 at the scale used. The switch's sum hands every rank every rank's values;
* ``q = quantize(x, f)`` with a *speculated* ``f``: the ``f`` the previous allreduce of the same
  size on this lane ended with, one bit lower (else the lane's last one); every rank computes
  the same guess from the same history, so all ranks use the same ``f``;
* once the results are in, every rank knows ``f* = frac_bits(max E_r, world)`` (room for
  ``world`` contributions of up to 2^E: the switch's saturating int32 sum cannot clip). The
  result stands if ``f* - SCALE_SLACK <= f <= f*``; otherwise (nothing to go on yet, or the
  magnitudes moved by more than a factor 2) every rank redoes the iteration with ``f = f*``,
  which always stands. With ``quant_frac_bits`` set, ``f`` is that and never redone.
* chunk 0 carries the sizes: a rank whose sizes differ from another's gives up its iteration
  as soon as chunk 0's result is in (rather than waiting for chunks the others never send);
* the switch's sum times 2^-f (and the division by ``world`` for AVG, in float64 before the
  one rounding to float32) is written into the caller's array.

Buffers are reused between allreduces: each lane keeps its int32 send vector and float64
scratch (grown when a larger tensor comes), each worker its packet and result buffers.

Error bound per element (:meth:`SwitchAllreduceEngine.error_bound`): each contribution is
rounded to the nearest multiple of 2^-f (at most half a unit, 2^-(f+1)), the switch adds
integers exactly, so |S - sum x| <= world * 2^-(f+1) with f >= f* - SCALE_SLACK; then one
float32 rounding of the result (unit roundoff u = 2^-24) of a value at most
sum|x_r| + world * 2^-(f+1).
"""
from __future__ import annotations

import json
import math
import os
import queue
import sys
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import constants, wire
from ..controller import Controller
from ..p4runtime.client import P4RuntimeClient
from ..p4runtime.target import P4RuntimeTarget
from ..quantize import E_NONFINITE, E_ZERO, INT32_MAX, amax_exponent, frac_bits, quant_step_error
from ..worker import AgentConfig, Worker
from .engines import AllreduceEngine, EngineContext, SwitchEngineError, check_op
from .options import engine_options, given_switch
from .switch_job import LAYOUT_KEY, join_shared_switch, setup_given_switch
from .switch_link import open_link, release_link
from .switch_watch import SwitchWatch

_U32 = float(np.finfo(np.float32).eps) / 2  # float32 unit roundoff
# a speculated scale stands if it is at most this many bits below the agreed one (never above)
SCALE_SLACK = 2
_SIZE_MEMORY = 64   # (size -> f) pairs a lane remembers for its guesses


@dataclass
class _Request:
    q: np.ndarray
    f: int
    done: threading.Event
    on_chunk: Callable[[int, np.ndarray], BaseException | None] | None = None
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
        self.f_by_size: dict[int, int] = {}   # f* of the last allreduce of each size
        self.f_last: int | None = None
        self._q = np.empty(0, dtype=np.int32)
        self._f64 = np.empty(0, dtype=np.float64)
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=engine._lane_main, args=(self,),
                                       name=f"saatp-switch-lane{index}-r{engine.rank}", daemon=True)

    def next_iter(self) -> int:
        self.it = self.it % 0xFFFF + 1   # 1..65535, never 0
        return self.it

    def send_vector(self, m: int) -> np.ndarray:
        """The lane's int32 send buffer, ``m`` lanes long (reused; grown when needed)."""
        if self._q.size < m:
            self._q = np.empty(max(m, 2 * self._q.size), dtype=np.int32)
        return self._q[:m]

    def scratch(self, n: int) -> np.ndarray:
        if self._f64.size < n:
            self._f64 = np.empty(max(n, 2 * self._f64.size), dtype=np.float64)
        return self._f64[:n]

    def guess_f(self, n: int) -> int | None:
        """The scale to try for ``n`` elements (the same on every rank: the same history)."""
        f = self.f_by_size.get(n, self.f_last)
        return None if f is None else f - 1

    def remember_f(self, n: int, f: int) -> None:
        self.f_by_size.pop(n, None)
        self.f_by_size[n] = f
        while len(self.f_by_size) > _SIZE_MEMORY:
            del self.f_by_size[next(iter(self.f_by_size))]
        self.f_last = f


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
        if o["k"] is not None and layout["k"] != o["k"]:
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
        self.rounds = 0      # SA-ATP chunks (switch rounds) run, redone iterations included
        self.redone = 0      # iterations redone because the speculated scale did not stand
        self.on_close: Callable[[], None] | None = None  # rank 0: remove the job / stop sharing
        self._watch: SwitchWatch | None = None
        if layout.get("grpc") and os.environ.get("SAATP_SWITCH_WATCH", "1") != "0":
            self._watch = SwitchWatch(layout["grpc"], self._switch_gone, name=f"saatp-switch-watch-r{self.rank}",
                                      describe=f", process {layout['pid']}" if layout.get("pid") else "")

    @property
    def cfg(self) -> AgentConfig:
        return self.lanes[0].cfg

    # -- on the link's loop thread --------------------------------------------------------------
    @staticmethod
    def _start_on_loop(lane: _Lane, it: int, req: _Request) -> None:
        def done(_it, sums, ovf):
            req.result = sums            # a view of the worker's result buffer (see Worker.start)
            req.overflow = bool(ovf)
            req.done.set()

        def chunk(seq, vals):
            err = req.on_chunk(seq, vals)
            if err is not None:          # give up at once; every rank finds the same error
                lane.worker.cancel()
                req.error = err
                req.done.set()
        try:
            lane.worker.start(it, req.q, req.f, on_done=done, on_chunk=chunk if req.on_chunk else None)
        except BaseException as e:  # noqa: BLE001
            req.error = e
            req.done.set()

    # -- one SA-ATP iteration, on a lane's thread -----------------------------------------------------
    def _iteration(self, lane: _Lane, q: np.ndarray, f: int, what: str, deadline: float,
                   on_chunk=None) -> tuple[np.ndarray, bool]:
        """Run one SA-ATP iteration of ``q`` on ``lane``: (the int32 sums, a view of the worker's
        result buffer to use before the lane's next iteration; whether a chunk overflowed)."""
        if self._aborted:
            raise SwitchEngineError(f"switch engine aborted: {self._aborted}")
        req = _Request(q, int(f), threading.Event(), on_chunk)
        self.rounds += max(1, -(-len(q) // self.k))
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
        return req.result, req.overflow

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
            x, op, deadline, out, fut = task
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(self._allreduce_on(lane, x, op, deadline, out))
            except BaseException as e:  # noqa: BLE001 - the caller gets it
                fut.set_exception(e)

    # -- engine protocol ------------------------------------------------------------------------
    def submit(self, x: np.ndarray, op: str = "sum", deadline: float | None = None,
               out: np.ndarray | None = None) -> Future:
        """Start an allreduce on the next lane; the future gets the float32 result, written into
        ``out`` when given (a float32 array of x's size, ``x`` itself is fine), else into a new
        array. Every rank submits in the same order, so the i-th allreduce of every rank runs on
        lane i mod L."""
        check_op(op)
        if self._closed:
            raise SwitchEngineError("switch engine is closed")
        x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
        lane = self.lanes[self.calls % len(self.lanes)]
        self.calls += 1
        if deadline is None:
            deadline = time.monotonic() + self.timeout_s
        if out is not None and (out.dtype != np.float32 or out.size != x.size or not out.flags.c_contiguous
                                or not out.flags.writeable):
            raise ValueError("saatp switch engine: out must be a writeable contiguous float32 array of x's size")
        fut: Future = Future()
        lane.tasks.put((x, op, deadline, None if out is None else out.reshape(-1), fut))
        return fut

    def allreduce(self, x: np.ndarray, op: str = "sum") -> np.ndarray:
        return self.submit(x, op, self.deadline_fn()).result()

    def _allreduce_on(self, lane: _Lane, x: np.ndarray, op: str, deadline: float,
                      out: np.ndarray | None = None) -> np.ndarray:
        n, world, rank = x.size, self.world, self.rank
        m = 3 * world                                   # meta lanes: exponents, sizes, clipped
        amax = max(float(x.max()), -float(x.min())) if n else 0.0
        e_own = amax_exponent(amax)
        fixed = self.fixed_f is not None
        f = self.fixed_f if fixed else lane.guess_f(n)
        if f is None:      # nothing to go on yet: a scale for |x| <= 1 (the same on every rank)
            f = frac_bits(0, world)
        for attempt in (1, 2):
            v = lane.send_vector(m + n)
            v[:m] = 0
            v[rank] = e_own
            v[world + rank] = n
            v[2 * world + rank] = self._quantize_into(v[m:], x, f, e_own, lane)

            def check_sizes(seq, vals):
                if seq == 0:
                    sizes = vals[world:2 * world].tolist()
                    if len(set(sizes)) != 1:
                        return ValueError(f"saatp allreduce: tensor sizes differ between ranks: {sizes}")
                return None
            s, ovf = self._iteration(lane, v, 0, "data", deadline,
                                     on_chunk=check_sizes if 2 * world <= self.k else None)
            # (the header's exp byte stays 0: a PARTIAL evicted by a helper's FLUSH carries the
            # FLUSH's exp (0, helper.py _flush), so a non-zero exp would make the helper drop
            # every straggler contribution of such a round as "another scale" (exp_mismatch))
            exps = s[:world].tolist()
            sizes = s[world:2 * world].tolist()
            clipped = [r for r, c in enumerate(s[2 * world:m].tolist()) if c]
            if len(set(sizes)) != 1:
                raise ValueError(f"saatp allreduce: tensor sizes differ between ranks: {sizes}")
            if E_NONFINITE in exps:
                bad = [r for r, e in enumerate(exps) if e == E_NONFINITE]
                raise ValueError(f"saatp allreduce: rank(s) {bad} hold inf/nan values, which the switch's "
                                 f"fixed-point sum cannot carry")
            if n == 0:
                return x.copy() if out is None else out
            best = frac_bits(max(exps), world, self.fixed_f)
            if fixed:
                if clipped:
                    raise ValueError(f"saatp allreduce: values of rank(s) {clipped} do not fit int32 with "
                                     f"quant_frac_bits = {f}; lower SAATP_QUANT_BITS or leave it unset")
                if ovf:
                    raise SwitchEngineError(f"SA-ATP iteration: the switch reports an int32 overflow with "
                                            f"quant_frac_bits = {f}; lower SAATP_QUANT_BITS or leave it unset")
                break
            if best - SCALE_SLACK <= f <= best and not clipped and not ovf:
                break
            if attempt == 2:   # cannot happen: f = best leaves room for every contribution
                raise SwitchEngineError(f"SA-ATP iteration with the agreed scale f = {f} did not stand "
                                        f"(clipped on ranks {clipped}, overflow {ovf})")
            self.redone += 1
            f = best
        lane.remember_f(n, best)   # the agreed scale, not the one used: guesses do not drift
        self.last_f = f
        # x <- S * 2^-f (/ world), computed in float64 and rounded to float32 once
        y = lane.scratch(n)
        np.multiply(s[m:m + n], np.ldexp(1.0, -f), out=y)
        if op == "avg":
            y /= world
        if out is None:
            out = np.empty(n, dtype=np.float32)
        np.copyto(out, y, casting="same_kind")
        return out

    @staticmethod
    def _quantize_into(q: np.ndarray, x: np.ndarray, f: int, e_own: int, lane: _Lane) -> int:
        """``q <- rint(x * 2^f)``; returns 1 if ``x`` does not fit int32 at that scale (``q`` is
        then zero: this attempt will be redone, or fail, on every rank)."""
        if e_own == E_NONFINITE or (e_own != E_ZERO and math.ldexp(1.0, e_own + f) > INT32_MAX):
            # |x| may reach 2^e_own: check exactly before casting
            y = lane.scratch(len(x))
            if e_own != E_NONFINITE:
                np.multiply(x, np.float64(math.ldexp(1.0, f)), out=y)
                np.rint(y, out=y)
                if float(np.max(np.abs(y))) <= INT32_MAX:
                    np.copyto(q, y, casting="unsafe")
                    return 0
            q[:] = 0
            return 1
        y = lane.scratch(len(x))
        np.multiply(x, np.float64(math.ldexp(1.0, f)), out=y)   # exact: a power-of-two scale
        np.rint(y, out=y)                           # round half to even, as quantize() does
        np.copyto(q, y, casting="unsafe")           # |y| < 2^31: exact
        return 0

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
        if self.fixed_f is None:
            f -= SCALE_SLACK                      # a speculated scale may stand this much lower
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
    def _switch_gone(self, why: str) -> None:
        """The watchdog's verdict (on its thread): fail the group now."""
        self.abort(why)
        cb = self.on_failure
        if cb is not None:
            cb(why)

    def close(self) -> None:
        if self._watch is not None:
            self._watch.stop()
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
