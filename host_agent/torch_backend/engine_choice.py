"""Which allreduce engine a group uses, agreed through the group's store.

Rank 0 decides (``engine`` option: ``ring``, ``switch``, or ``auto`` = switch when it can run
here), allocates the SA-ATP job id, and for the switch engine starts or sets up the switch;
the other ranks read the decision and the switch address from the store. A failure on rank 0
is published too, so every rank raises the same error instead of waiting for a timeout.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Callable

from . import switch_engine, switch_job
from .engines import AllreduceEngine, EngineContext, SwitchEngineUnavailable
from .options import SAATPOptions
from .ring_engine import HostRingEngine
from .switch_process import SWITCH_COMMAND, installed_command

_CHOICE_KEY = "saatp/engine/choice"
_ADDR_KEY = "saatp/engine/switch_addr"
_ERROR = "error:"


def switch_available(options: SAATPOptions | None = None) -> tuple[bool, str]:
    """(True, "") when the switch engine can run here: a switch is given, or the ``saatp-switch``
    command is installed (the switch program is generated when the repository's is missing);
    else (False, why)."""
    if options is not None and options.switch:
        return True, ""
    try:
        installed_command(SWITCH_COMMAND)
    except SwitchEngineUnavailable as e:
        return False, str(e)
    return True, ""


@dataclass
class EngineChoice:
    engine: AllreduceEngine
    note: str = ""                                     # why auto chose what it chose
    close_switch: Callable[[], None] | None = None     # rank 0: stops the switch it started


def _store_get(store, key: str, timeout_s: float) -> bytes:
    store.wait([key], datetime.timedelta(seconds=max(timeout_s, 0.001)))
    return store.get(key)


def _read(store, key: str, timeout_s: float) -> str:
    raw = _store_get(store, key, timeout_s).decode()
    if raw.startswith(_ERROR):
        raise SwitchEngineUnavailable(raw[len(_ERROR):])
    return raw


def _decide(store, rank: int, opts: SAATPOptions, tsec: float, global_ranks: list[int]) -> tuple[str, int, str]:
    """(engine name, job id, note), the same on every rank. ``shared``: the switch engine on the
    switch an earlier group of this job set up (a sub-group costs no new switch)."""
    if rank != 0:
        choice, job = _read(store, _CHOICE_KEY, tsec).split(":")
        return choice, int(job), ""
    choice, note = opts.engine, ""
    if choice in ("auto", "switch") and switch_job.shared_switch(store, global_ranks, rank) is not None:
        choice = "shared"
    elif choice in ("auto", "switch"):
        ok, why = switch_available(opts)
        if choice == "switch" and not ok:
            msg = f"saatp: engine='switch' was requested but the switch engine cannot run here: {why}"
            store.set(_CHOICE_KEY, (_ERROR + msg).encode())
            raise SwitchEngineUnavailable(msg)
        if choice == "auto":
            choice = "switch" if ok else "ring"
            note = "" if ok else f" (auto: {why.splitlines()[0] if why else 'switch engine unavailable'})"
    job_id = opts.job_id
    if job_id is None:
        try:  # one counter for every group of the job: groups sharing a switch get distinct ids
            lanes = opts.lanes if choice in ("switch", "shared") else 1   # a job id per lane
            job_id = (int(switch_job.root_store(store).add("saatp/job_counter", lanes)) - lanes) % 256
        except Exception:  # noqa: BLE001 - a store without a shared counter: job 0
            job_id = 0
    store.set(_CHOICE_KEY, f"{choice}:{job_id}".encode())
    return choice, job_id, note


def choose_engine(store, rank: int, size: int, tsec: float, opts: SAATPOptions, mesh,
                  deadline: Callable[[], float | None], global_ranks: list[int]) -> EngineChoice:
    choice, job_id, note = _decide(store, rank, opts, tsec, global_ranks)
    if choice == "ring":
        return EngineChoice(HostRingEngine(mesh, deadline), note)
    ctx = EngineContext(
        rank=rank, world_size=size, timeout_s=tsec, job_id=job_id, switch_addr=opts.switch,
        options=opts, global_ranks=global_ranks, host=opts.host, store=store,
        store_set=lambda k, v: store.set("saatp/engine/x/" + k, v),
        store_get=lambda k: _store_get(store, "saatp/engine/x/" + k, tsec),
        deadline=deadline,
    )
    if choice == "shared":
        world = switch_job.shared_switch(store, global_ranks, rank) or {}
        if not world:
            raise SwitchEngineUnavailable(
                f"saatp: rank {rank} has no link to the switch its group shares (was the group that set it "
                f"up destroyed?)")
        ctx.switch_addr = world["grpc"]
        return EngineChoice(switch_engine.create_engine(ctx, shared=world), note)
    close = None
    if rank == 0:
        if ctx.switch_addr is None:
            try:
                addr, close = switch_job.start_switch(ctx)
            except BaseException as e:
                store.set(_ADDR_KEY, f"{_ERROR}saatp: starting the switch failed: {e}".encode())
                raise
            ctx.switch_addr = str(addr)
        store.set(_ADDR_KEY, ctx.switch_addr.encode())
    else:
        ctx.switch_addr = _read(store, _ADDR_KEY, tsec)
    try:
        return EngineChoice(switch_engine.create_engine(ctx), note, close)
    except BaseException:
        if close is not None:
            close()
        raise
