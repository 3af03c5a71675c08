"""An SA-ATP job on a switch, set up and torn down over P4Runtime (rank 0 of a group).

* :func:`start_switch`: no switch given — start ``saatp-switch`` (:mod:`.switch_process`) with
  ``p4src/saatp.p4`` and one UDP-tunnel port per rank on 127.0.0.1, then configure the job.
* :func:`setup_given_switch`: ``SAATP_SWITCH`` names a running switch — push the program only if
  it has no pipeline, zero the job's leftover state, configure the job, and return a function
  that deletes exactly the entries and groups written for it (the switch is not ours to stop).

The configuration itself is the project's :class:`host_agent.controller.Controller` (the same
one the harness and Mininet use) driving :class:`host_agent.p4runtime.target.P4RuntimeTarget`.
The layout every rank needs (UDP ports, K, window, T_s) is published in the c10d store under
:data:`LAYOUT_KEY`.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import grpc

from .. import constants, wire
from ..controller import Controller, JobSpec
from ..p4runtime import p4info_pb2, p4runtime_pb2 as pb
from ..p4runtime.client import P4RuntimeClient, WriteError
from ..p4runtime.codec import encode_bytes
from ..p4runtime.target import P4RuntimeTarget
from ..switch_program import saatp_program
from .engines import SwitchEngineError, SwitchEngineUnavailable
from .options import engine_options
from .switch_link import find_link
from .switch_process import SwitchProcess, free_tcp_port, free_udp_ports, installed_command

LAYOUT_KEY = "sa_atp/layout"

# the registers that hold one round's state per slot, and one job's progress
_SLOT_REGISTERS = ("s_state", "s_iter", "s_seq", "s_bitmap", "s_ts", "s_first", "s_helper", "s_ovf")
_JOB_REGISTERS = ("j_iter", "j_strag", "j_helper")
_ALREADY_EXISTS = 6  # google.rpc.Code


def connect(address: str, device_id: int = 0, timeout: float = 10.0) -> P4RuntimeClient:
    """A primary P4Runtime client. Groups of one job set themselves up at the same moment (the
    even and the odd sub-group, say), and only one controller at a time can hold election id 1:
    a refused arbitration is tried again, with back-off, until ``timeout``."""
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        try:
            return P4RuntimeClient(address, device_id=device_id, election_id=1,
                                   timeout=max(0.5, deadline - time.monotonic()))
        except grpc.RpcError as e:
            code = e.code() if callable(getattr(e, "code", None)) else None
            busy = code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.ALREADY_EXISTS) and \
                "already used" in str(e.details() if callable(getattr(e, "details", None)) else e)
            if not busy or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(0.5, 2 * delay)


def program_k(client) -> int:
    """K of the loaded program: its per-lane value registers ``s_val_0 .. s_val_{K-1}``."""
    info = client.load_p4info()
    lanes = [r for r in info.registers if r.preamble.name.rsplit(".", 1)[-1].startswith("s_val_")]
    if not lanes:
        raise SwitchEngineError("the switch program has no s_val_* registers: is it p4src/saatp.p4?")
    return len(lanes)


def check_k(client, k: int | None) -> int:
    """K of the loaded program; an error if the group asked for another (``k`` None: any K)."""
    pk = program_k(client)
    if k is not None and pk != k:
        raise ValueError(f"saatp: chunk_size (SAATP_CHUNK) = {k} but the switch program aggregates "
                         f"K = {pk} lanes per packet; set SAATP_CHUNK={pk}, or load the program for K = {k} "
                         f"(python -m host_agent.protocol.p4gen -k {k})")
    return pk


class JobTarget:
    """:class:`P4RuntimeTarget` that remembers every entry and multicast group written for the
    job, so :func:`remove_job` can delete exactly those, and that replaces an entry or group a
    previous run of the same job left behind (ALREADY_EXISTS) instead of failing."""

    def __init__(self, client):
        self.t = P4RuntimeTarget(client)
        self.entries: list[tuple[str, dict, int]] = []
        self.groups: list[int] = []

    def __getattr__(self, name):  # register, register_read, counter_read, table_modify, ...
        return getattr(self.t, name)

    @staticmethod
    def _exists(e: Exception) -> bool:
        return _ALREADY_EXISTS in getattr(e, "codes", ())

    def table_add(self, table, action, match, args=(), priority=None) -> int:
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
        try:
            self.t.mc_set_group(mgid, replicas)
        except WriteError as e:
            if not self._exists(e):
                raise
            self.t.c.multicast_group(mgid, list(replicas), "MODIFY")
            self.t._groups.add(mgid)
        if mgid not in self.groups:
            self.groups.append(mgid)


def configure(client, job: int, world: int, ports: dict[int, int], window: int, t_s: float, k: int,
              base: int | None = None, hosts: dict[int, int] | None = None) -> tuple[dict, JobTarget]:
    """Program one job with the Controller: ``job_cfg``, ``wid_port``, the job's multicast group,
    and, for ``hosts`` (world rank -> switch port; default: the job's own ports), the per-port
    host addresses. ``ports``: wid -> switch port. A job that shares a switch with the group that
    set it up passes ``hosts={}``: the hosts' addresses are that group's entries."""
    pk = check_k(client, k)
    tgt = JobTarget(client)
    ctl = Controller(tgt, constants.SWITCH_MAC, constants.SWITCH_IP)
    for w, port in sorted((ports if hosts is None else hosts).items()):
        ctl.add_host(port, constants.worker_mac(w), constants.worker_ip(w))
    ctl.configure_job(JobSpec(job=job, ports=dict(ports), nworkers=world, pool=window, t_s=t_s, mode="saatp",
                              base=base))
    return {"k": pk, "cli": ctl.cli_commands(), "nslots": ctl.nslots}, tgt


def lane_jobs(ctx, o: dict) -> list[int]:
    """The job ids of a group's lanes: its job id and the next ``lanes - 1``."""
    return [(ctx.job_id + i) % 256 for i in range(o["lanes"])]


def configure_lanes(c, ctx, o: dict, ports: dict[int, int], base: int,
                    hosts: dict[int, int] | None = None) -> tuple[dict, list[JobTarget], list[int]]:
    """Reset and configure every lane of a group (its own job id and ``2 x window`` slots each,
    from ``base`` on); host addresses once. Returns (config of lane 0, targets, job ids)."""
    per = 2 * o["window"]
    jobs = lane_jobs(ctx, o)
    cfg, tgts = None, []
    for i, job in enumerate(jobs):
        reset_job_state(c, job, base + i * per, per)
        got, tgt = configure(c, job, ctx.world_size, ports, o["window"], o["t_s"], o["k"], base=base + i * per,
                             hosts=hosts if i == 0 else {})
        cfg = cfg or got
        tgts.append(tgt)
    return cfg, tgts, jobs


def _written(tgts: list[JobTarget]) -> tuple[list, list]:
    return [e for t in tgts for e in t.entries], [g for t in tgts for g in t.groups]


# ---------------------------------------------------------------------------------------------
# one switch for a whole job: sub-groups share the switch their world set up
# ---------------------------------------------------------------------------------------------
CURRENT_SWITCH_KEY = "saatp/switch/current"   # in the root store: the switch groups may share


class _ProcessStore:
    """Stands in for the c10d store when a caller gives none (a context built by hand): claims
    and publication then coordinate the groups of this process only."""

    def __init__(self):
        self._d: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def compare_set(self, key: str, expected, desired) -> bytes:
        enc = (lambda v: v if isinstance(v, bytes) else str(v).encode())
        with self._lock:
            cur = self._d.get(key)
            if (cur is None and enc(expected) == b"") or cur == enc(expected):
                self._d[key] = cur = enc(desired)
            return cur if cur is not None else b""

    def set(self, key: str, value) -> None:
        with self._lock:
            self._d[key] = value if isinstance(value, bytes) else str(value).encode()

    def add(self, key: str, n: int) -> int:
        with self._lock:
            v = int(self._d.get(key, b"0")) + n
            self._d[key] = str(v).encode()
            return v


_PROCESS_STORE = _ProcessStore()


def root_store(store):
    """The store under every group's prefix: keys here are seen by all groups of the job."""
    if store is None:
        return _PROCESS_STORE
    while hasattr(store, "underlying_store"):
        store = store.underlying_store
    return store


class SlotClaim:
    """Switch slots held by one job, claimed in the root store so that groups sharing a switch
    get disjoint ranges; :meth:`release` gives them back when the group goes away."""

    def __init__(self, store, owner: str, nslots: int, need: int, block: int, at: int | None = None):
        self.store, self.owner = store, owner
        self.keys: list[str] = []
        nblocks = nslots // block
        want = -(-need // block)
        starts = range(0, nblocks - want + 1) if at is None else [at // block]
        for start in starts:
            got = []
            for b in range(start, start + want):
                key = f"saatp/switch/slots/{b}"
                if bytes(store.compare_set(key, "", owner)) != owner.encode():
                    break
                got.append(key)
            if len(got) == want:
                self.keys = got
                self.base = start * block
                return
            for key in got:
                store.compare_set(key, owner, "")
        raise SwitchEngineError(
            f"saatp: the switch's {nslots} slots are all held by other groups ({nblocks} blocks of {block}; "
            f"this group needs {need} = 2 x window): destroy a group, or use a smaller window (SAATP_WINDOW)")

    def release(self) -> None:
        for key in self.keys:
            try:
                self.store.compare_set(key, self.owner, "")
            except Exception:  # noqa: BLE001 - a store that is gone holds nothing
                pass
        self.keys = []


def _peek(store, key: str) -> bytes:
    """The value of ``key``, or b"" when it is not set, without blocking: c10d's ``get`` waits
    for a missing key, while ``compare_set(key, "", "")`` answers at once (it creates the key
    empty, which every reader here takes for "not set")."""
    return bytes(store.compare_set(key, "", ""))


def shared_switch(store, global_ranks: list[int], my_rank: int) -> dict | None:
    """The switch a group of ``global_ranks`` can join: one set up by a group of this job that
    contains all of them and is still alive in this process. None if there is none."""
    try:
        raw = _peek(root_store(store), CURRENT_SWITCH_KEY)
    except Exception:  # noqa: BLE001 - a store without compare_set: no sharing
        return None
    if not raw:
        return None
    world = json.loads(raw.decode())
    if not set(global_ranks) <= set(world["global_ranks"]):
        return None
    if find_link(world["grpc"], world["global_ranks"].index(global_ranks[my_rank])) is None:
        return None  # the group that set the switch up is gone from this process
    return world


def join_shared_switch(ctx, world: dict) -> tuple[dict, Callable[[], None]]:
    """Rank 0 of a group that shares ``world``'s switch: a job of its own (job id, slots,
    multicast group), no new process. Returns (layout, remove)."""
    o = engine_options(ctx)
    if o["k"] is not None and o["k"] != world["k"]:
        raise ValueError(f"saatp: chunk_size {o['k']} differs from the K = {world['k']} of the switch this "
                         f"job shares; sub-groups use the world's chunk_size")
    numbers = world.get("port_numbers") or [i + 1 for i in range(len(world["global_ranks"]))]
    ports = {r: numbers[world["global_ranks"].index(g)] for r, g in enumerate(ctx.global_ranks)}
    timeout = max(2.0, min(float(ctx.timeout_s), 30.0))
    claim = SlotClaim(root_store(getattr(ctx, 'store', None)), f"job{ctx.job_id}", world["nslots"],
                      2 * o["window"] * o["lanes"], 2 * world["window"])
    try:
        c = connect(world["grpc"], world.get("device", 0), timeout=timeout)
        try:
            cfg, tgts, jobs = configure_lanes(c, ctx, o, ports, claim.base, hosts={})
        finally:
            c.close()
    except BaseException:
        claim.release()
        raise
    layout = dict(job=ctx.job_id, jobs=jobs, world=ctx.world_size, k=cfg["k"], window=o["window"], t_s=o["t_s"],
                  grpc=world["grpc"], device=world.get("device", 0), pid=world.get("pid"), shared=True,
                  slot_base=claim.base, link=world)
    entries, groups = _written(tgts)

    def remove() -> None:
        try:
            remove_job(world["grpc"], world.get("device", 0), entries, groups, timeout=min(timeout, 5.0))
        finally:
            claim.release()
    return layout, remove


def publish_world(ctx, layout: dict, nslots: int) -> Callable[[], None]:
    """Rank 0 of a group that set a switch up: let later groups of this job share it."""
    world = dict(layout, global_ranks=list(getattr(ctx, "global_ranks", None) or range(ctx.world_size)),
                 nslots=nslots)
    world.pop("link", None)
    root = root_store(getattr(ctx, 'store', None))
    root.set(CURRENT_SWITCH_KEY, json.dumps(world))

    def withdraw() -> None:
        try:
            cur = _peek(root, CURRENT_SWITCH_KEY)
            if cur and json.loads(cur.decode()).get("grpc") == world["grpc"]:
                root.set(CURRENT_SWITCH_KEY, "")
        except Exception:  # noqa: BLE001 - the store may be gone already
            pass
    return withdraw


def remove_job(grpc_addr: str, device: int, entries: list, groups: list, timeout: float = 5.0) -> None:
    """Delete the table entries and multicast groups one job wrote (:class:`JobTarget`), newest
    first. The Controller has no "remove job" call; this undoes exactly what it wrote."""
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


def p4info_of(program: str) -> p4info_pb2.P4Info:
    """The P4Info of a P4 source program, written by ``saatp p4 check --p4runtime-files`` (the
    installed command: the host side runs the P4 front end only as a process)."""
    with tempfile.TemporaryDirectory(prefix="saatp-p4info-") as d:
        out = os.path.join(d, "p4info.binpb")
        r = subprocess.run([installed_command("saatp"), "p4", "check", program, "--p4runtime-files", out],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise SwitchEngineError(f"saatp p4 check {program} failed (status {r.returncode}): "
                                    f"{(r.stderr or r.stdout).strip()[-1500:]}")
        info = p4info_pb2.P4Info()
        info.ParseFromString(Path(out).read_bytes())
        return info


def ensure_pipeline(c, addr: str, program: str) -> bool:
    """Use the switch's pipeline if it has one; else push ``program`` (its P4Info, the P4 source
    as device config, as ``saatp switch --no-p4`` takes it). True if this call pushed it."""
    try:
        info = c.load_p4info()
        if len(info.tables) or len(info.actions):
            return False
    except grpc.RpcError as e:
        if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            raise SwitchEngineError(f"saatp: the switch given in SAATP_SWITCH does not answer P4Runtime at "
                                    f"{addr} ({e.code().name}): is it running?") from None
        # FAILED_PRECONDITION etc.: no pipeline yet
    info = p4info_of(program)
    try:
        c.set_pipeline(info, Path(program).read_bytes())
    except grpc.RpcError as e:
        raise SwitchEngineError(
            f"saatp: the switch at {addr} has no pipeline and refused {program} as device config "
            f"({e.code().name}: {e.details()}). BMv2 (simple_switch_grpc) needs the JSON p4c writes: "
            f"start it with p4src/saatp.p4 compiled by p4c (or load it over P4Runtime) first; the engine "
            f"then uses that pipeline as is") from None
    return True


def reset_job_state(c, job: int, base: int, nslots: int) -> None:
    """Zero the switch state a previous job with this id (or these slots) left in a switch that
    keeps running: the slots' round state, the job's iteration / straggler / helper registers
    and its event counters (else restarted iteration numbers look *stale*). One batched Write."""
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
    """Rank 0, ``SAATP_SWITCH`` given: returns (layout, remove); ``remove()`` deletes the job's
    entries again (the switch itself keeps running: it is not ours)."""
    o = engine_options(ctx)
    world = ctx.world_size
    # no K asked for: the switch's loaded program decides (check_k), and a switch without a
    # pipeline gets the program for constants.DEFAULT_K (its links may be real 1500-byte ones)
    program = str(o["extra"].get("program") or saatp_program(o["k"] or constants.DEFAULT_K))
    timeout = max(2.0, min(float(ctx.timeout_s), 30.0))
    ports = {w: p.port for w, p in enumerate(spec.ports)}
    c = None
    claim: SlotClaim | None = None
    try:
        try:
            c = connect(spec.grpc, spec.device, timeout=timeout)
            pushed = ensure_pipeline(c, spec.grpc, program)
            check_k(c, o["k"])  # also: is it the SA-ATP program at all (its s_val_* registers)?
            # jobs sharing one switch get disjoint slot ranges when their ids differ
            try:
                nslots = int(c._idx().get("register", "s_state").size)
            except Exception:  # noqa: BLE001 - configure() reports a program that is not SA-ATP
                nslots = constants.SWITCH_SLOTS
            per = 2 * o["window"] * o["lanes"]
            if per > nslots:
                raise ValueError(f"saatp switch engine: window {o['window']} x {o['lanes']} lanes needs "
                                 f"2 x window x lanes <= {nslots} switch slots")
            base = (ctx.job_id % (nslots // per)) * per
            # jobs of other torchrun runs are kept apart by their ids; groups of this run by claims
            claim = SlotClaim(root_store(getattr(ctx, 'store', None)), f"job{ctx.job_id}", nslots, per, per, at=base)
            cfg, tgts, jobs = configure_lanes(c, ctx, o, ports, base)
        except grpc.RpcError as e:
            code = e.code() if callable(getattr(e, "code", None)) else None
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise SwitchEngineError(f"saatp: the switch given in SAATP_SWITCH does not answer P4Runtime "
                                        f"at {spec.grpc} ({code.name}): is it running?") from None
            details = e.details() if callable(getattr(e, "details", None)) else str(e)
            raise SwitchEngineError(f"saatp: P4Runtime at {spec.grpc} (device {spec.device}) failed: "
                                    f"{getattr(code, 'name', code)}: {details}") from None
    except BaseException:
        if claim is not None:
            claim.release()
        raise
    finally:
        if c is not None:
            c.close()
    layout = dict(job=ctx.job_id, world=world, k=cfg["k"], window=o["window"], t_s=o["t_s"],
                  switch_ports=[p.switch_udp for p in spec.ports], host_ports=[p.worker_udp for p in spec.ports],
                  switch_hosts=[p.host for p in spec.ports], port_numbers=[p.port for p in spec.ports],
                  grpc=spec.grpc, device=spec.device, pid=None, given=True, pushed_pipeline=pushed,
                  slot_base=base, jobs=jobs)
    entries, groups = _written(tgts)
    withdraw = publish_world(ctx, layout, nslots)

    def remove() -> None:
        withdraw()
        try:
            remove_job(spec.grpc, spec.device, entries, groups, timeout=min(timeout, 5.0))
        finally:
            claim.release()
    return layout, remove


def start_switch(ctx) -> tuple[str, Callable[[], None]]:
    """Rank 0: start ``saatp-switch p4src/saatp.p4`` for this group's job and configure it.

    Returns ``("127.0.0.1:<grpc port>", close)``; the port layout (switch/host UDP port per worker
    id, job, K, window, T_s, switch pid) is published under :data:`LAYOUT_KEY` in the store."""
    o = engine_options(ctx)
    world = ctx.world_size
    if not 1 <= world <= wire.MAX_WORKERS:
        raise ValueError(f"saatp switch engine: 1..{wire.MAX_WORKERS} ranks per job, got {world}")
    if 2 * o["window"] * o["lanes"] > constants.SWITCH_SLOTS:
        raise ValueError(f"saatp switch engine: window {o['window']} x {o['lanes']} lanes needs "
                         f"2 x window x lanes <= {constants.SWITCH_SLOTS} switch slots")
    if o["k"] is None and not o["extra"].get("program"):
        # the widest K the path carries: the UDP tunnels on loopback take any SA-ATP packet
        o["k"] = wire.MAX_LANES
    program = str(o["extra"].get("program") or saatp_program(o["k"]))
    if not Path(program).is_file():
        raise SwitchEngineUnavailable(f"saatp: the switch program {program} does not exist")
    deadline = time.monotonic() + max(10.0, min(float(ctx.timeout_s), 120.0))
    host = constants.LOOPBACK
    for attempt in range(3):  # free ports are picked by binding; retry if one was taken meanwhile
        free = free_udp_ports(2 * world, host)
        sw_ports, host_ports = free[:world], free[world:]
        grpc_addr = f"{host}:{free_tcp_port(host)}"
        args = [program, "-L", "warn"]
        for w in range(world):
            args += ["-i", f"{w + 1}@udp:{sw_ports[w]}:{host}:{host_ports[w]}"]
        args += ["--", "--grpc-server-addr", grpc_addr]
        proc = SwitchProcess(args, o["extra"].get("switch_log"))
        claim = None
        try:
            proc.wait_ready(grpc_addr, deadline)
            claim = SlotClaim(root_store(getattr(ctx, 'store', None)), f"job{ctx.job_id}", constants.SWITCH_SLOTS,
                              2 * o["window"] * o["lanes"], 2 * o["window"])
            c = connect(grpc_addr, 0, timeout=max(1.0, deadline - time.monotonic()))
            try:
                cfg, _, jobs = configure_lanes(c, ctx, o, {w: w + 1 for w in range(world)}, claim.base)
            finally:
                c.close()
        except SwitchEngineError:
            proc.close()
            if claim is not None:
                claim.release()
            if attempt == 2 or time.monotonic() > deadline:
                raise
            continue
        except BaseException:
            proc.close()
            if claim is not None:
                claim.release()
            raise
        layout = dict(job=ctx.job_id, world=world, k=cfg["k"], window=o["window"], t_s=o["t_s"],
                      switch_ports=sw_ports, host_ports=host_ports, grpc=grpc_addr, pid=proc.pid,
                      slot_base=claim.base, jobs=jobs)
        withdraw = publish_world(ctx, layout, cfg["nslots"])
        ctx.store_set(LAYOUT_KEY, json.dumps(layout).encode())

        def close(proc=proc, claim=claim, withdraw=withdraw) -> None:
            withdraw()
            claim.release()
            proc.close()
        return grpc_addr, close
    raise SwitchEngineError("could not start the switch")  # pragma: no cover
