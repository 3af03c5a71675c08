"""``ProcessGroupSAATP``: a pure-Python torch.distributed process group for CPU tensors.

Routing (see docs/torch-backend.md):

* ``allreduce`` with SUM or AVG on float32/float16/bfloat16 tensors goes through the group's
  allreduce engine (SA-ATP switch engine, or the host ring);
* every other collective, and allreduce with other ops or dtypes (float64, integers, complex,
  bool; MIN, MAX, PRODUCT, BAND, BOR, BXOR), goes through the host path: a TCP mesh between the
  ranks, with numpy reductions in rank order.

Collectives are queued and run in issue order on one background thread per group; each returns
an :class:`SAATPWork` at once. A failure (lost peer, timeout, bad input) completes the work with
an exception, closes the group's connections so the other ranks fail fast too, and leaves the
group unusable: every later collective fails at once with the original cause.
"""
from __future__ import annotations

import datetime
import logging
import queue
import sys
import threading
import time
from concurrent.futures import Future

import numpy as np
import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as c10d

from .engine_choice import choose_engine
from .engines import AllreduceEngine
from .ring_engine import ring_allreduce
from .options import SAATPOptions, resolve
from .transport import CommError, Mesh

log = logging.getLogger("saatp.torch_backend")

BACKEND_NAME = "saatp"
ENGINE_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_R = dist.ReduceOp.RedOpType
_UFUNCS = {
    _R.SUM: np.add,
    _R.PRODUCT: np.multiply,
    _R.MIN: np.minimum,
    _R.MAX: np.maximum,
    _R.BAND: np.bitwise_and,
    _R.BOR: np.bitwise_or,
    _R.BXOR: np.bitwise_xor,
}


class SAATPError(dist.DistBackendError):
    """A saatp collective failed (the message names the collective, the rank and the cause)."""


class SAATPTimeoutError(SAATPError):
    """A saatp collective did not finish within the process group's timeout."""


# ---------------------------------------------------------------------------------------------
# Work
# ---------------------------------------------------------------------------------------------
def _unwrap_result(fut):
    exc, outputs = fut.value()
    if exc is not None:
        raise exc
    return outputs


class SAATPWork(c10d.Work):
    """Handle of one queued collective. ``wait()`` raises the collective's error, if any;
    ``get_future()`` is a ``torch.futures.Future`` completed with the output tensors (or the error)."""

    def __init__(self, opname: str, seq: int, outputs):
        super().__init__()
        self.opname, self.seq = opname, seq
        self._outputs = outputs
        # The public future is a then() of a private one: a Python exception raised in a then()
        # callback becomes a real error of the C++ future, which is what DDP's reducer and
        # Future.wait() check. (Future.set_exception would only store the exception as a value,
        # which C++ consumers would take for a result.)
        self._base = torch.futures.Future()
        self._fut = self._base.then(_unwrap_result)
        self._done = threading.Event()
        self._exc: BaseException | None = None
        self._src = -1

    # completion (collective thread)
    def _finish(self, exc: BaseException | None = None) -> None:
        self._exc = exc
        self._base.set_result((exc, self._outputs))
        self._done.set()

    # torch Work API
    def wait(self, timeout=None) -> bool:
        secs = None
        if isinstance(timeout, datetime.timedelta) and timeout.total_seconds() > 0:
            secs = timeout.total_seconds()
        if not self._done.wait(secs):
            raise SAATPTimeoutError(f"saatp {self.opname} (#{self.seq}): Work.wait timed out after {secs:.3f} s")
        if self._exc is not None:
            raise self._exc
        return True

    def is_completed(self) -> bool:
        # the future completes first (inside _finish), then the event: either means "done"
        return self._done.is_set() or self._fut.done()

    def is_success(self) -> bool:
        return self.is_completed() and self._exc is None

    def exception(self):
        return self._exc

    def get_future(self):
        return self._fut

    def result(self):
        self.wait()
        return self._outputs

    def source_rank(self) -> int:
        return self._src

    def _source_rank(self) -> int:
        return self._src

    def synchronize(self) -> None:
        self.wait()

    def __repr__(self):
        state = "pending" if not self._done.is_set() else ("ok" if self._exc is None else f"failed: {self._exc}")
        return f"<SAATPWork {self.opname} #{self.seq} {state}>"


def _then(fut: Future, fn) -> Future:
    """A future completed with ``fn(fut.result())`` (or ``fut``'s error, or ``fn``'s)."""
    out: Future = Future()

    def done(f: Future) -> None:
        try:
            out.set_result(fn(f.result()))
        except BaseException as e:  # noqa: BLE001 - handed on to whoever waits
            out.set_exception(e)
    fut.add_done_callback(done)
    return out


# ---------------------------------------------------------------------------------------------
# tensor <-> bytes helpers
# ---------------------------------------------------------------------------------------------
def _check_cpu(t, opname: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"saatp {opname}: expected a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise ValueError(f"saatp {opname}: the saatp backend handles CPU tensors only, got a tensor on {t.device}")
    if t.layout != torch.strided:
        raise NotImplementedError(f"saatp {opname}: {t.layout} tensors are not supported (dense CPU tensors only)")


def _raw(t: torch.Tensor) -> np.ndarray:
    """The tensor's bytes as a contiguous uint8 numpy array (any dtype)."""
    flat = t.detach().contiguous().reshape(-1)
    if flat.numel() == 0:
        return np.empty(0, dtype=np.uint8)
    return flat.view(torch.uint8).numpy()


def _fill_raw(t: torch.Tensor, data, opname: str, peer: int) -> None:
    nbytes = t.numel() * t.element_size()
    if len(data) != nbytes:
        raise SAATPError(
            f"saatp {opname}: rank {peer} sent {len(data)} bytes, expected {nbytes} "
            f"({t.numel()} x {t.dtype}); tensor shapes differ between ranks"
        )
    if nbytes:
        if isinstance(data, (bytes, memoryview)) or (isinstance(data, np.ndarray) and not data.flags.writeable):
            data = bytearray(data)
        src = torch.frombuffer(data, dtype=torch.uint8).view(t.dtype).reshape(t.shape)
        with torch.no_grad():
            t.copy_(src)


def _compute_array(t: torch.Tensor) -> np.ndarray:
    """Numpy copy of ``t`` for host-path arithmetic (bfloat16 computed in float32)."""
    x = t.detach().reshape(-1)
    if x.dtype == torch.bfloat16:
        x = x.to(torch.float32)
    return x.contiguous().numpy().copy()


def _store_back(t: torch.Tensor, arr: np.ndarray) -> None:
    if arr.dtype == np.float32 and t.dtype == torch.float32 and t.is_contiguous() and arr.size == t.numel() \
            and arr.ctypes.data == t.data_ptr():
        return  # the engine wrote the result into t's own memory
    with torch.no_grad():
        t.copy_(torch.from_numpy(np.ascontiguousarray(arr)).reshape(t.shape).to(t.dtype))


def _reduce_kind(opts, opname: str):
    op = opts.reduceOp.op
    if op == _R.PREMUL_SUM:
        raise NotImplementedError(f"saatp {opname}: ReduceOp.PREMUL_SUM is not supported by the saatp backend")
    if op != _R.AVG and op not in _UFUNCS:
        raise NotImplementedError(f"saatp {opname}: reduce op {op} is not supported by the saatp backend")
    return op


# ---------------------------------------------------------------------------------------------
# Process group
# ---------------------------------------------------------------------------------------------
def _hold_group_name(pg: c10d.ProcessGroup, rank: int, size: int) -> None:
    """torch keeps a group's name and description on the group's per-device backends
    (``ProcessGroup::setGroupName`` sets them there, ``getGroupName`` reads the first one), so a
    ProcessGroup without a backend has no name: ``group_name``, ``destroy_process_group(g)``,
    functional collectives and ``DeviceMesh`` fail with "ProcessGroup name not set". Register a
    placeholder backend for the CPU that only carries the name: every collective is a method of
    this class (``test_every_collective_is_ours`` checks that none falls through to it)."""
    holder = c10d.FakeProcessGroup._create_internal(rank, size)
    pg._register_backend(torch.device("cpu"), c10d.ProcessGroup.BackendType.CUSTOM, holder)


class ProcessGroupSAATP(c10d.ProcessGroup):
    """See the module docstring. Create it through ``init_process_group("saatp", ...)`` or
    ``new_group(backend="saatp")``; direct construction takes the same arguments as the creator."""

    def __init__(self, store, rank: int, size: int, timeout: datetime.timedelta | None = None,
                 options: SAATPOptions | dict | None = None, group_name: str = "",
                 global_ranks: list[int] | None = None):
        super().__init__(rank, size)
        _hold_group_name(self, rank, size)
        if group_name:
            self._set_group_name(group_name)
        self._rank, self._size = rank, size
        self._store = store
        self._timeout = timeout if isinstance(timeout, datetime.timedelta) else datetime.timedelta(minutes=30)
        self.options = resolve(options)
        self.given_options = options if isinstance(options, SAATPOptions) else (
            SAATPOptions(**options) if isinstance(options, dict) else None)
        self._gname = group_name or "default"
        self._global_ranks = list(global_ranks) if global_ranks else list(range(size))
        self._seqs: dict[str, int] = {}
        self._seq_lock = threading.Lock()
        self._broken: BaseException | None = None
        self._closed = False
        self._tls = threading.local()  # per lane thread: deadline of the running operation
        self._switch_closer = None
        self.engine: AllreduceEngine | None = None
        self.engine_note = ""

        tsec = self._timeout.total_seconds()
        self.mesh = Mesh(store, rank, size, tsec, self.options.host)
        self.mesh.on_peer_lost = self._on_peer_lost
        try:
            self.engine = self._make_engine(tsec)
        except BaseException:
            self.mesh.close("engine set-up failed")
            raise
        self.engine.on_failure = self._on_engine_failure
        if rank == 0 and self.options.log:
            _announce(f"saatp: group {self._gname!r} ({size} rank{'s' if size != 1 else ''}): "
                      f"allreduce engine = {self.engine.describe()}{self.engine_note}")

        # ordered execution: collectives on one thread; p2p sends and recvs on their own threads,
        # so a recv waiting for its peer never holds up a collective or a send (and vice versa);
        # receives from one peer on one tag on a thread of their own (see recv)
        self._queues: dict[str, queue.Queue] = {}
        self._threads: list[threading.Thread] = []
        with self._seq_lock:
            for lane in ("coll", "send", "recv"):
                self._lane(lane)

    # -- engine set-up ----------------------------------------------------------------------------
    def _make_engine(self, tsec: float) -> AllreduceEngine:
        chosen = choose_engine(self._store, self._rank, self._size, tsec, self.options, self.mesh,
                               self._current_deadline, self._global_ranks)
        self.engine_note = chosen.note
        self._switch_closer = chosen.close_switch
        return chosen.engine

    # -- plumbing -----------------------------------------------------------------------------------
    def _current_deadline(self) -> float | None:
        return getattr(self._tls, "deadline", None)

    def _op_timeout(self, opts) -> float:
        t = getattr(opts, "timeout", None)
        if isinstance(t, datetime.timedelta) and t.total_seconds() > 0:
            return t.total_seconds()
        return self._timeout.total_seconds()

    # a channel's lane (receives from one peer on one tag) idle this long ends, and starts again
    # on its next operation: a program that receives on a new tag every step left one thread per
    # tag until the group shut down (until 2026-11-28)
    lane_idle_s = 5.0

    def _lane(self, name: str, retire: bool = False) -> queue.Queue:
        """The queue of lane ``name``, its thread started on first use (the caller holds
        ``_seq_lock``); with ``retire`` the thread ends after :attr:`lane_idle_s` without work."""
        q = self._queues.get(name)
        if q is None:
            q = self._queues[name] = queue.Queue()
            th = threading.Thread(target=self._run, args=(q, name if retire else None),
                                  name=f"saatp-{name}-{self._gname}-r{self._rank}", daemon=True)
            self._threads.append(th)
            th.start()
        return q

    def _submit(self, opname: str, fn, outputs, opts=None, lane: str = "coll", work: SAATPWork | None = None,
                channel: str = ""):
        """Queue ``fn`` on ``lane`` (operations of one lane are numbered together), on its own
        thread for each ``channel``: operations of one channel run in issue order."""
        # collectives are numbered on their own: all ranks issue the same collectives in the same
        # order, but not the same point-to-point operations
        tmo = self._op_timeout(opts)
        with self._seq_lock:
            self._seqs[lane] = seq = self._seqs.get(lane, 0) + 1
            q = None if self._closed else self._lane(lane + channel, retire=bool(channel))
            work = work or SAATPWork(opname, seq, outputs)
            work.seq = seq
            if q is not None:  # under the lock: a lane retires only with its queue empty (_run)
                q.put((opname, seq, fn, work, tmo))
        if q is None:
            work._finish(SAATPError(f"saatp {opname}: process group {self._gname!r} has been shut down"))
        return work

    def _run(self, q: queue.Queue, retire: str | None = None) -> None:
        while True:
            try:
                item = q.get(timeout=self.lane_idle_s if retire else None)
            except queue.Empty:
                with self._seq_lock:  # _submit puts under this lock: nothing can arrive unseen
                    if q.empty() and self._queues.get(retire) is q:
                        del self._queues[retire]
                        self._threads.remove(threading.current_thread())
                        return
                continue
            if item is None:
                return
            opname, seq, fn, work, tmo = item
            if self._broken is not None:
                work._finish(SAATPError(
                    f"saatp {opname}: process group {self._gname!r} is unusable after an earlier failure: {self._broken}"))
                continue
            deadline = time.monotonic() + tmo
            self._tls.deadline = deadline
            try:
                pending = fn(seq, deadline, work)
            except BaseException as e:  # noqa: BLE001 - every failure goes to the Work
                self._finish_failed(opname, seq, work, e, tmo)
                continue
            if isinstance(pending, Future):  # still running in the engine: finish when it does
                pending.add_done_callback(lambda f, a=(opname, seq, work, tmo): self._finish_later(f, *a))
                continue
            work._finish(None)

    def _finish_failed(self, opname: str, seq: int, work: SAATPWork, e: BaseException, tmo: float) -> None:
        exc = self._wrap(opname, seq, e, tmo)
        # a collective that failed half-way leaves the ranks out of step: abort the group
        self._fail(exc)
        work._finish(exc)

    def _finish_later(self, fut: Future, opname: str, seq: int, work: SAATPWork, tmo: float) -> None:
        e = fut.exception()
        if e is not None:
            self._finish_failed(opname, seq, work, e, tmo)
        else:
            work._finish(None)

    def _wrap(self, opname: str, seq: int, e: BaseException, tmo: float) -> BaseException:
        if isinstance(e, (NotImplementedError, TypeError, ValueError, SAATPError)) and not isinstance(e, CommError):
            return e
        where = f"saatp {opname} (#{seq}) failed on rank {self._rank} of group {self._gname!r}"
        if isinstance(e, TimeoutError):
            exc = SAATPTimeoutError(f"{where}: timed out after {tmo:.1f} s (process group timeout): {e}")
        else:
            exc = SAATPError(f"{where}: {type(e).__name__}: {e}")
        exc.__cause__ = e
        return exc

    def _fail(self, exc: BaseException) -> None:
        if self._broken is None:
            self._broken = exc
            # closing our connections makes every peer fail fast instead of waiting for its timeout
            self.mesh.close(f"rank {self._rank} aborted after: {exc}", failure=str(exc))
            if self.engine is not None:
                try:
                    self.engine.abort(str(exc))
                except Exception:  # noqa: BLE001
                    log.debug("engine abort failed", exc_info=True)

    # -- failure detection: a peer or the switch is gone -> every pending and later op fails ----------
    def _on_peer_lost(self, peer: int, why: str, orderly: bool) -> None:
        if orderly or self._closed:
            return  # a peer that shut down on purpose fails only what waits for it
        gpeer = self._global_ranks[peer] if peer < len(self._global_ranks) else peer
        self._fail(SAATPError(f"saatp: rank {peer} (global rank {gpeer}) of group {self._gname!r} is gone: {why}"))

    def _on_engine_failure(self, why: str) -> None:
        if not self._closed:
            self._fail(SAATPError(f"saatp: group {self._gname!r}: {why}"))

    def _key(self, seq: int, part: str = "") -> bytes:
        return f"c:{seq}:{part}".encode()

    def _peers(self):
        return [p for p in range(self._size) if p != self._rank]

    # -- identity -----------------------------------------------------------------------------------
    def getBackendName(self) -> str:
        return BACKEND_NAME

    def _get_backend_name(self) -> str:
        return BACKEND_NAME

    def name(self) -> str:
        return BACKEND_NAME

    def set_timeout(self, timeout) -> None:
        self._timeout = timeout

    def shutdown(self) -> None:
        with self._seq_lock:
            if self._closed:
                return
            self._closed = True
            queues = list(getattr(self, "_queues", {}).values())
        for q in queues:
            q.put(None)
        self.mesh.close("process group shut down", orderly=True)
        try:
            if self.engine is not None:
                self.engine.close()
        finally:
            if self._switch_closer is not None:
                closer, self._switch_closer = self._switch_closer, None
                closer()
            # wait for the lanes (they end at the None queued above; an operation still waiting on
            # the closed mesh fails at once). A daemon lane that still completes or drops a Work
            # (its future and tensors are C++) while the interpreter finalizes is stopped by Python
            # half-way through C++ code, which aborts the process ("terminate called without an
            # active exception", SIGABRT) after all its work was done: a CGP run on this backend
            # lost a rank so about once in ten runs
            me = threading.current_thread()
            for th in list(getattr(self, "_threads", [])):
                if th is not me:
                    th.join(2.0)

    def abort(self) -> None:
        self._fail(SAATPError("process group aborted"))
        self.shutdown()

    # -- allreduce -------------------------------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        opts = opts if opts is not None else c10d.AllreduceOptions()
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        if len(tensors) != 1:
            raise ValueError(f"saatp allreduce: expects exactly one tensor per call, got {len(tensors)}")
        t = tensors[0]
        _check_cpu(t, "allreduce")
        op = _reduce_kind(opts, "allreduce")
        self._check_op_dtype("allreduce", op, t.dtype)

        def run(seq, deadline, work):
            return self._allreduce_tensor(t, op, seq, deadline)

        return self._submit("allreduce", run, [t], opts)

    def allreduce_coalesced(self, tensors, opts=None):
        opts = opts if opts is not None else c10d.AllreduceCoalescedOptions()
        if not tensors:
            raise ValueError("saatp allreduce_coalesced: empty tensor list")
        for t in tensors:
            _check_cpu(t, "allreduce_coalesced")
            if t.dtype != tensors[0].dtype:
                raise ValueError("saatp allreduce_coalesced: all tensors must have the same dtype")
        op = _reduce_kind(opts, "allreduce_coalesced")
        self._check_op_dtype("allreduce_coalesced", op, tensors[0].dtype)

        def run(seq, deadline, work):
            flat = torch.cat([t.detach().reshape(-1) for t in tensors])

            def scatter_back(_=None):
                off = 0
                with torch.no_grad():
                    for t in tensors:
                        t.copy_(flat[off:off + t.numel()].reshape(t.shape))
                        off += t.numel()
            pending = self._allreduce_tensor(flat, op, seq, deadline)
            if pending is None:
                return scatter_back()
            return _then(pending, scatter_back)

        return self._submit("allreduce_coalesced", run, list(tensors), opts)

    @staticmethod
    def _check_op_dtype(opname, op, dtype) -> None:
        if op == _R.AVG and not (dtype.is_floating_point or dtype.is_complex):
            raise NotImplementedError(f"saatp {opname}: ReduceOp.AVG needs a floating-point tensor, got {dtype}")
        if op in (_R.BAND, _R.BOR, _R.BXOR) and (dtype.is_floating_point or dtype.is_complex):
            raise NotImplementedError(f"saatp {opname}: bitwise reduce op {op} needs an integer or bool tensor, got {dtype}")
        if op in (_R.MIN, _R.MAX) and dtype.is_complex:
            raise NotImplementedError(f"saatp {opname}: {op} is undefined for complex tensors")

    def _allreduce_tensor(self, t: torch.Tensor, op, seq: int, deadline: float) -> Future | None:
        """Allreduce ``t`` in place. An engine that takes work asynchronously (``submit``, the
        switch engine's lanes) returns at once with a future; the collective thread goes on with
        the next operation, so several allreduces (DDP's buckets) are in flight together."""
        if t.numel() == 0:
            return None
        if t.dtype in ENGINE_DTYPES and op in (_R.SUM, _R.AVG):
            x = t.detach().reshape(-1).to(torch.float32).contiguous().numpy()
            kind = "avg" if op == _R.AVG else "sum"
            submit = getattr(self.engine, "submit", None)
            if submit is not None:  # the result comes back in x (t's memory, or a float32 copy)
                return _then(submit(x, kind, deadline, out=x), lambda out: _store_back(t, out))
            _store_back(t, self.engine.allreduce(x, kind))
            return None
        arr = _compute_array(t)
        ufunc = np.add if op == _R.AVG else _UFUNCS[op]
        out = ring_allreduce(self.mesh, self._key(seq, "ar"), arr, ufunc, deadline, "allreduce")
        if op == _R.AVG:
            out = out / self._size
        _store_back(t, out)

    # -- host-path collectives --------------------------------------------------------------------------
    def broadcast(self, tensors, opts=None):
        opts = opts if opts is not None else c10d.BroadcastOptions()
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        self._check_root(opts.rootRank, "broadcast")
        if len(tensors) != 1:
            raise ValueError(f"saatp broadcast: expects exactly one tensor per call, got {len(tensors)}")
        t = tensors[0]
        _check_cpu(t, "broadcast")
        root = opts.rootRank

        def run(seq, deadline, work):
            key = self._key(seq)
            if self._rank == root:
                data = _raw(t)
                for p in self._peers():
                    self.mesh.send(p, key, data, "broadcast")
            else:
                _fill_raw(t, self.mesh.recv(root, key, deadline, "broadcast"), "broadcast", root)

        return self._submit("broadcast", run, [t], opts)

    def _exchange(self, opname, key, send_for, deadline):
        """Send ``send_for(p)`` (bytes-like or None) to every peer p; return {p: bytes received}."""
        for p in self._peers():
            data = send_for(p)
            if data is not None:
                self.mesh.send(p, key, data, opname)
        return {p: self.mesh.recv(p, key, deadline, opname) for p in self._peers()}

    def allgather(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else c10d.AllgatherOptions()
        if len(input_tensors) != 1 or len(output_tensors) != 1:
            raise ValueError("saatp allgather: expects one input tensor and one output list per call")
        inp, outs = input_tensors[0], output_tensors[0]
        _check_cpu(inp, "allgather")
        if len(outs) != self._size:
            raise ValueError(f"saatp allgather: output list has {len(outs)} tensors, group size is {self._size}")
        for o in outs:
            _check_cpu(o, "allgather")

        def run(seq, deadline, work):
            mine = _raw(inp)
            got = self._exchange("allgather", self._key(seq), lambda p: mine, deadline)
            got[self._rank] = mine.tobytes()
            for r, o in enumerate(outs):
                _fill_raw(o, got[r], "allgather", r)

        return self._submit("allgather", run, output_tensors, opts)

    def _allgather_base(self, output, input, opts=None):
        opts = opts if opts is not None else c10d.AllgatherOptions()
        _check_cpu(output, "all_gather_into_tensor")
        _check_cpu(input, "all_gather_into_tensor")
        if output.numel() != input.numel() * self._size or output.dtype != input.dtype:
            raise ValueError(f"saatp all_gather_into_tensor: output must hold {self._size} x {input.numel()} "
                             f"elements of {input.dtype}, got {output.numel()} of {output.dtype}")

        def run(seq, deadline, work):
            mine = _raw(input)
            got = self._exchange("all_gather_into_tensor", self._key(seq), lambda p: mine, deadline)
            got[self._rank] = mine.tobytes()
            n = input.numel()
            flat = torch.empty(output.numel(), dtype=output.dtype)
            for r in range(self._size):
                _fill_raw(flat[r * n:(r + 1) * n], got[r], "all_gather_into_tensor", r)
            with torch.no_grad():
                output.copy_(flat.reshape(output.shape))

        return self._submit("all_gather_into_tensor", run, [output], opts)

    def _reduce_np(self, opname, op, arrays_in_rank_order):
        ufunc = np.add if op == _R.AVG else _UFUNCS[op]
        acc = arrays_in_rank_order[0].copy()
        for a in arrays_in_rank_order[1:]:
            ufunc(acc, a, out=acc)
        if op == _R.AVG:
            acc = acc / self._size
        return acc

    def _np_from(self, data, like: torch.Tensor, opname: str, peer: int) -> np.ndarray:
        tmp = torch.empty_like(like, memory_format=torch.contiguous_format)
        _fill_raw(tmp, data, opname, peer)
        return _compute_array(tmp)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else c10d.ReduceScatterOptions()
        if len(output_tensors) != 1 or len(input_tensors) != 1:
            raise ValueError("saatp reduce_scatter: expects one output tensor and one input list per call")
        out, ins = output_tensors[0], input_tensors[0]
        _check_cpu(out, "reduce_scatter")
        if len(ins) != self._size:
            raise ValueError(f"saatp reduce_scatter: input list has {len(ins)} tensors, group size is {self._size}")
        for t in ins:
            _check_cpu(t, "reduce_scatter")
            if t.numel() != out.numel():
                raise ValueError("saatp reduce_scatter: every input tensor must have the output's size")
        op = _reduce_kind(opts, "reduce_scatter")
        self._check_op_dtype("reduce_scatter", op, out.dtype)

        def run(seq, deadline, work):
            got = self._exchange("reduce_scatter", self._key(seq), lambda p: _raw(ins[p]), deadline)
            arrays = [_compute_array(ins[r].to(out.dtype)) if r == self._rank
                      else self._np_from(got[r], out, "reduce_scatter", r) for r in range(self._size)]
            _store_back(out, self._reduce_np("reduce_scatter", op, arrays))

        return self._submit("reduce_scatter", run, [out], opts)

    def _reduce_scatter_base(self, output, input, opts=None):
        opts = opts if opts is not None else c10d.ReduceScatterOptions()
        _check_cpu(output, "reduce_scatter_tensor")
        _check_cpu(input, "reduce_scatter_tensor")
        if input.numel() != output.numel() * self._size or input.dtype != output.dtype:
            raise ValueError(f"saatp reduce_scatter_tensor: input must hold {self._size} x {output.numel()} "
                             f"elements of {output.dtype}, got {input.numel()} of {input.dtype}")
        op = _reduce_kind(opts, "reduce_scatter_tensor")
        self._check_op_dtype("reduce_scatter_tensor", op, output.dtype)
        m = output.numel()

        def run(seq, deadline, work):
            flat = input.detach().contiguous().reshape(-1)
            ins = [flat[r * m:(r + 1) * m] for r in range(self._size)]
            got = self._exchange("reduce_scatter_tensor", self._key(seq), lambda p: _raw(ins[p]), deadline)
            arrays = [_compute_array(ins[r]) if r == self._rank
                      else self._np_from(got[r], ins[r], "reduce_scatter_tensor", r) for r in range(self._size)]
            _store_back(output, self._reduce_np("reduce_scatter_tensor", op, arrays))

        return self._submit("reduce_scatter_tensor", run, [output], opts)

    def reduce(self, tensors, opts=None):
        opts = opts if opts is not None else c10d.ReduceOptions()
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        if len(tensors) != 1:
            raise ValueError(f"saatp reduce: expects exactly one tensor per call, got {len(tensors)}")
        t = tensors[0]
        _check_cpu(t, "reduce")
        self._check_root(opts.rootRank, "reduce")
        op = _reduce_kind(opts, "reduce")
        self._check_op_dtype("reduce", op, t.dtype)
        root = opts.rootRank

        def run(seq, deadline, work):
            key = self._key(seq)
            if self._rank != root:
                self.mesh.send(root, key, _raw(t), "reduce")
                return
            got = {p: self.mesh.recv(p, key, deadline, "reduce") for p in self._peers()}
            arrays = [_compute_array(t) if r == root else self._np_from(got[r], t, "reduce", r)
                      for r in range(self._size)]
            _store_back(t, self._reduce_np("reduce", op, arrays))

        return self._submit("reduce", run, [t], opts)

    def gather(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else c10d.GatherOptions()
        root = opts.rootRank
        self._check_root(root, "gather")
        if len(input_tensors) != 1:
            raise ValueError("saatp gather: expects exactly one input tensor")
        inp = input_tensors[0]
        _check_cpu(inp, "gather")
        if self._rank == root:
            if len(output_tensors) != 1 or len(output_tensors[0]) != self._size:
                raise ValueError(f"saatp gather: the root needs a list of {self._size} output tensors")
            outs = output_tensors[0]
        else:
            if output_tensors and any(len(o) for o in output_tensors):
                raise ValueError("saatp gather: only the root rank may pass output tensors")
            outs = []

        def run(seq, deadline, work):
            key = self._key(seq)
            if self._rank != root:
                self.mesh.send(root, key, _raw(inp), "gather")
                return
            for r in range(self._size):
                data = _raw(inp).tobytes() if r == root else self.mesh.recv(r, key, deadline, "gather")
                _fill_raw(outs[r], data, "gather", r)

        return self._submit("gather", run, output_tensors, opts)

    def scatter(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else c10d.ScatterOptions()
        root = opts.rootRank
        self._check_root(root, "scatter")
        if len(output_tensors) != 1:
            raise ValueError("saatp scatter: expects exactly one output tensor")
        out = output_tensors[0]
        _check_cpu(out, "scatter")
        if self._rank == root:
            if len(input_tensors) != 1 or len(input_tensors[0]) != self._size:
                raise ValueError(f"saatp scatter: the root needs a list of {self._size} input tensors")
            ins = input_tensors[0]
        else:
            if input_tensors and any(len(i) for i in input_tensors):
                raise ValueError("saatp scatter: only the root rank may pass input tensors")
            ins = []

        def run(seq, deadline, work):
            key = self._key(seq)
            if self._rank == root:
                for p in self._peers():
                    self.mesh.send(p, key, _raw(ins[p]), "scatter")
                _fill_raw(out, _raw(ins[root]).tobytes(), "scatter", root)
            else:
                _fill_raw(out, self.mesh.recv(root, key, deadline, "scatter"), "scatter", root)

        return self._submit("scatter", run, [out], opts)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else c10d.AllToAllOptions()
        if len(output_tensors) != self._size or len(input_tensors) != self._size:
            raise ValueError(f"saatp all_to_all: needs {self._size} input and {self._size} output tensors")
        for t in list(output_tensors) + list(input_tensors):
            _check_cpu(t, "all_to_all")

        def run(seq, deadline, work):
            got = self._exchange("all_to_all", self._key(seq), lambda p: _raw(input_tensors[p]), deadline)
            got[self._rank] = _raw(input_tensors[self._rank]).tobytes()
            for r in range(self._size):
                _fill_raw(output_tensors[r], got[r], "all_to_all", r)

        return self._submit("all_to_all", run, list(output_tensors), opts)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        opts = opts if opts is not None else c10d.AllToAllOptions()
        _check_cpu(output, "all_to_all_single")
        _check_cpu(input, "all_to_all_single")
        n = self._size

        def splits(t, sizes, what):
            if not sizes:
                if t.shape[0] % n if t.dim() else True:
                    raise ValueError(f"saatp all_to_all_single: {what} dim 0 ({t.shape[0] if t.dim() else 0}) "
                                     f"is not divisible by the group size {n}")
                sizes = [t.shape[0] // n] * n
            if len(sizes) != n or sum(sizes) != t.shape[0]:
                raise ValueError(f"saatp all_to_all_single: {what} split sizes {list(sizes)} do not match "
                                 f"dim 0 = {t.shape[0]} and group size {n}")
            return list(torch.split(t, list(sizes), dim=0))

        ins = splits(input, list(input_split_sizes), "input")
        outs_tmp = [o.contiguous() for o in splits(output, list(output_split_sizes), "output")]

        def run(seq, deadline, work):
            got = self._exchange("all_to_all_single", self._key(seq), lambda p: _raw(ins[p]), deadline)
            got[self._rank] = _raw(ins[self._rank]).tobytes()
            pieces = []
            for r in range(n):
                _fill_raw(outs_tmp[r], got[r], "all_to_all_single", r)
                pieces.append(outs_tmp[r])
            with torch.no_grad():
                output.copy_(torch.cat(pieces, dim=0))

        return self._submit("all_to_all_single", run, [output], opts)

    def barrier(self, opts=None):
        opts = opts if opts is not None else c10d.BarrierOptions()
        token = np.zeros(1, dtype=np.uint8)

        def run(seq, deadline, work):
            self._exchange("barrier", self._key(seq), lambda p: token, deadline)

        return self._submit("barrier", run, [], opts)

    # torch's Python front end calls these names (all_gather_into_tensor, reduce_scatter_tensor,
    # all_to_all_single); the C++ side and older torch call the underscored ones
    def all_gather_single(self, output, input, opts=None):
        return self._allgather_base(output, input, opts)

    def reduce_scatter_single(self, output, input, opts=None):
        return self._reduce_scatter_base(output, input, opts)

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        if isinstance(opts, datetime.timedelta):
            o = c10d.AllToAllOptions()
            o.timeout = opts
            opts = o
        return self.alltoall_base(output, input, output_split_sizes, input_split_sizes, opts)

    # -- point to point -------------------------------------------------------------------------------------
    def send(self, tensors, dstRank: int, tag: int = 0):
        if len(tensors) != 1:
            raise ValueError("saatp send: expects exactly one tensor")
        t = tensors[0]
        _check_cpu(t, "send")
        self._check_peer(dstRank, "send")
        data = _raw(t).copy()  # snapshot now: the caller may reuse the tensor after isend returns

        def run(seq, deadline, work):
            self.mesh.send(dstRank, f"p:{tag}".encode(), data, "send")

        return self._submit("send", run, [t], None, lane="send")

    def recv(self, tensors, srcRank: int, tag: int = 0):
        if len(tensors) != 1:
            raise ValueError("saatp recv: expects exactly one tensor")
        t = tensors[0]
        _check_cpu(t, "recv")
        self._check_peer(srcRank, "recv")

        def run(seq, deadline, work):
            _fill_raw(t, self.mesh.recv(srcRank, f"p:{tag}".encode(), deadline, "recv"), "recv", srcRank)
            work._src = srcRank

        # one thread per (peer, tag): receives posted from two peers complete as their messages
        # arrive, as on gloo. On one thread for all, a receive waited for its message before any
        # later one could complete, and a pipeline stage that posts its receives up front (from
        # the previous stage, then from the next) hung: 1F1B with more microbatches than stages
        # on 3 stages, every saatp profile --backend saatp of 3 stages or more (until 2026-11-28)
        return self._submit("recv", run, [t], None, lane="recv", channel=f"-from{srcRank}-tag{tag}")

    def recv_anysource(self, tensors, tag: int = 0):
        if len(tensors) != 1:
            raise ValueError("saatp recv: expects exactly one tensor")
        t = tensors[0]
        _check_cpu(t, "recv")

        def run(seq, deadline, work):
            src, data = self.mesh.recv_any(f"p:{tag}".encode(), deadline, "recv")
            _fill_raw(t, data, "recv", src)
            work._src = src

        return self._submit("recv", run, [t], None, lane="recv")

    def _check_root(self, root: int, opname: str) -> None:
        if not (0 <= root < self._size):
            raise ValueError(f"saatp {opname}: root rank {root} is outside the group (size {self._size})")

    def _check_peer(self, peer: int, opname: str) -> None:
        if not (0 <= peer < self._size) or peer == self._rank:
            raise ValueError(f"saatp {opname}: peer rank {peer} is invalid for rank {self._rank} "
                             f"of a group of size {self._size}")

    # -- explicitly unsupported -----------------------------------------------------------------------------
    def _unsupported(self, name: str):
        raise NotImplementedError(
            f"saatp backend: collective '{name}' is not implemented (supported: allreduce, "
            f"allreduce_coalesced, broadcast, allgather, all_gather_into_tensor, reduce_scatter, "
            f"reduce_scatter_tensor and their coalesced forms, reduce, gather, scatter, all_to_all, "
            f"all_to_all_single, barrier, send, recv)")

    # -- coalesced forms: the pieces in order on the collective lane, one Work for all -------------
    def _coalesced(self, opname: str, works, outputs, opts=None):
        works = list(works)

        def run(seq, deadline, work):
            for w in works:  # the lane runs in order: every piece has finished by now
                w.wait()
        return self._submit(opname, run, outputs, opts)

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        if len(output_lists) != len(input_list):
            raise ValueError("saatp allgather_coalesced: one output list per input tensor")
        works = [self.allgather([outs], [inp], opts) for outs, inp in zip(output_lists, input_list)]
        return self._coalesced("allgather_coalesced", works, [t for outs in output_lists for t in outs], opts)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        if len(outputs) != len(inputs):
            raise ValueError("saatp all_gather_into_tensor_coalesced: as many outputs as inputs")
        works = [self._allgather_base(o, i, opts) for o, i in zip(outputs, inputs)]
        return self._coalesced("all_gather_into_tensor_coalesced", works, list(outputs), opts)

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        return self.allgather_into_tensor_coalesced(outputs, inputs, opts)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        if len(outputs) != len(inputs):
            raise ValueError("saatp reduce_scatter_tensor_coalesced: as many outputs as inputs")
        works = [self._reduce_scatter_base(o, i, opts) for o, i in zip(outputs, inputs)]
        return self._coalesced("reduce_scatter_tensor_coalesced", works, list(outputs), opts)

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        return self.reduce_scatter_tensor_coalesced(outputs, inputs, opts)

    def monitored_barrier(self, *a, **k):
        self._unsupported("monitored_barrier")

    def _start_coalescing(self, *a, **k):
        self._unsupported("coalescing (_start_coalescing)")

    def _end_coalescing(self, *a, **k):
        self._unsupported("coalescing (_end_coalescing)")

    def split_group(self, *a, **k):
        self._unsupported("split_group")

    def merge_remote_group(self, *a, **k):
        self._unsupported("merge_remote_group")


_announced: set[str] = set()


def _announce(msg: str) -> None:
    log.info(msg)
    if msg not in _announced:
        _announced.add(msg)
        print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------------
def _inherited_options():
    """Options of the default group when it is a saatp group (``job_id`` not inherited)."""
    try:
        if dist.is_initialized():
            world = dist.group.WORLD
            if isinstance(world, ProcessGroupSAATP) and world.given_options is not None:
                import dataclasses

                return dataclasses.replace(world.given_options, job_id=None)
    except Exception:  # noqa: BLE001 - inheritance is a convenience only
        pass
    return None


def _create_pg(dist_opts, backend_options):
    """Creator for ``Backend.register_backend(..., extended_api=True)``. A ``new_group`` without
    ``pg_options`` inherits the default group's options."""
    if backend_options is None:
        backend_options = _inherited_options()
    return ProcessGroupSAATP(
        dist_opts.store,
        dist_opts.group_rank,
        dist_opts.group_size,
        dist_opts.timeout,
        backend_options,
        group_name=str(getattr(dist_opts, "group_id", "") or ""),
        global_ranks=list(getattr(dist_opts, "global_ranks_in_group", None) or []),
    )


def register() -> bool:
    """Register the ``saatp`` backend with torch.distributed (idempotent). Returns True when the
    backend is registered after the call."""
    if not dist.is_available():
        return False
    if BACKEND_NAME.upper() in dist.Backend._plugins:
        return True
    dist.Backend.register_backend(BACKEND_NAME, _create_pg, extended_api=True, devices=["cpu"])
    return True
