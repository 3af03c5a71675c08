"""Worker functions for the saatp backend tests (run in spawned processes).

Each scenario runs on every rank and returns a picklable summary; the launcher collects them
with hard timeouts so a broken backend can fail a test but never hang it.
"""
from __future__ import annotations

import datetime
import os
import threading
import time
import traceback

import numpy as np

from host_agent.free_ports import free_tcp_port


def free_port() -> int:
    return free_tcp_port()


def launch(scenario: str, world: int, timeout: float = 120.0, env: dict | None = None, **kw):
    """Run ``scenario`` on ``world`` spawned ranks; return {rank: result}. Ranks that do not
    report within ``timeout`` seconds are terminated and reported as ``("timeout", None)``."""
    import multiprocessing as mp
    import queue as _q

    ctx = mp.get_context("spawn")
    port = free_port()
    q = ctx.Queue()
    procs = [ctx.Process(target=_entry, args=(scenario, r, world, port, q, env or {}, kw), daemon=True)
             for r in range(world)]
    for p in procs:
        p.start()
    results = {}
    deadline = time.monotonic() + timeout
    try:
        while len(results) < world and time.monotonic() < deadline:
            try:
                rank, status, payload = q.get(timeout=0.5)
                results[rank] = (status, payload)
            except _q.Empty:
                if all(not p.is_alive() for p in procs):
                    # drain what is left, then stop waiting
                    try:
                        while True:
                            rank, status, payload = q.get(timeout=0.5)
                            results[rank] = (status, payload)
                    except _q.Empty:
                        break
    finally:
        for p in procs:
            p.join(timeout=max(0.1, min(5.0, deadline - time.monotonic())))
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(5)
                if p.is_alive():
                    p.kill()
                    p.join(5)
    for r in range(world):
        results.setdefault(r, ("timeout", None))
    return results


def _entry(scenario, rank, world, port, q, env, kw):
    os.environ.update({k: str(v) for k, v in env.items()})
    os.environ.setdefault("SAATP_LOG", "0")
    try:
        import torch

        torch.set_num_threads(1)
        payload = globals()["sc_" + scenario](rank, world, port, **kw)
        q.put((rank, "ok", payload))
    except BaseException as e:  # noqa: BLE001
        q.put((rank, "error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


def _init(backend, rank, world, port, timeout_s=60.0, pg_options=None):
    import torch.distributed as dist

    import host_agent  # noqa: F401  registers "saatp"

    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s), pg_options=pg_options)
    return dist


def rank_data(rank: int, n: int, seed: int = 1234) -> np.ndarray:
    rng = np.random.default_rng(seed + rank)
    return (rng.standard_normal(n) * 3.0).astype(np.float32)


# --------------------------------------------------------------------------------------------
def sc_allreduce_big(rank, world, port, n=1 << 20):
    """SUM of ``n`` float32 per rank, then AVG; errors against the exact (float64) result."""
    import torch

    dist = _init("saatp", rank, world, port)
    pg = dist.group.WORLD
    allv = np.stack([rank_data(r, n) for r in range(world)]).astype(np.float64)
    res = dict(engine=pg.engine.name)
    for op in ("sum", "avg"):
        x = torch.from_numpy(rank_data(rank, n))
        t0 = time.perf_counter()
        dist.all_reduce(x, op=dist.ReduceOp.AVG if op == "avg" else dist.ReduceOp.SUM)
        dt = time.perf_counter() - t0
        exact = allv.sum(axis=0) / (world if op == "avg" else 1)
        err = np.abs(x.numpy().astype(np.float64) - exact)
        bound = pg.engine.error_bound(allv, world, op)
        res[op] = dict(max_err=float(err.max()), within=bool(np.all(err <= bound)), max_bound=float(np.max(bound)),
                       worst_ratio=float(np.max(err / bound)), secs=dt, digest=float(x.double().sum()))
    dist.destroy_process_group()
    return res


def sc_collectives(rank, world, port):
    """Every host-path collective, checked against its definition."""
    import torch

    dist = _init("saatp", rank, world, port)
    out = {}
    # allreduce, non-engine routes
    for name, op, dtype, expect in [
        ("max_i64", dist.ReduceOp.MAX, torch.int64, lambda: float(world - 1)),
        ("min_f32", dist.ReduceOp.MIN, torch.float32, lambda: 0.0),
        ("prod_f64", dist.ReduceOp.PRODUCT, torch.float64, lambda: float(np.prod(np.arange(1, world + 1)))),
        ("sum_i32", dist.ReduceOp.SUM, torch.int32, lambda: float(sum(range(world)))),
        ("sum_f64", dist.ReduceOp.SUM, torch.float64, lambda: float(sum(range(world)))),
    ]:
        base = rank + 1 if name == "prod_f64" else rank
        t = torch.full((5, 3), base, dtype=dtype)
        dist.all_reduce(t, op=op)
        out[name] = bool(torch.all(t == torch.tensor(expect(), dtype=dtype)))
    t = torch.full((4,), 1 << rank, dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.BOR)
    out["bor"] = bool(torch.all(t == (1 << world) - 1))
    # engine route, avg of float16 and bfloat16
    for dt in (torch.float16, torch.bfloat16):
        t = torch.full((7,), float(rank), dtype=dt)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        out[f"avg_{dt}"] = bool(torch.allclose(t.float(), torch.full((7,), (world - 1) / 2), atol=1e-2))
    # broadcast
    t = torch.arange(6, dtype=torch.float64).reshape(2, 3) * (rank + 1)
    dist.broadcast(t, src=world - 1)
    out["broadcast"] = bool(torch.equal(t, torch.arange(6, dtype=torch.float64).reshape(2, 3) * world))
    # all_gather / all_gather_into_tensor
    outs = [torch.zeros(3, dtype=torch.int16) for _ in range(world)]
    dist.all_gather(outs, torch.full((3,), rank, dtype=torch.int16))
    out["all_gather"] = all(bool(torch.all(o == r)) for r, o in enumerate(outs))
    big = torch.zeros(world * 2)
    getattr(dist, "all_gather_single", dist.all_gather_into_tensor)(big, torch.tensor([rank, rank + 0.5]))
    out["all_gather_into_tensor"] = bool(torch.equal(
        big, torch.tensor([v for r in range(world) for v in (r, r + 0.5)], dtype=torch.float32)))
    # reduce_scatter / reduce_scatter_tensor
    res = torch.zeros(2)
    dist.reduce_scatter(res, [torch.full((2,), float(rank * 10 + j)) for j in range(world)])
    out["reduce_scatter"] = bool(torch.all(res == sum(r * 10 + rank for r in range(world))))
    res = torch.zeros(3, dtype=torch.int64)
    getattr(dist, "reduce_scatter_single", dist.reduce_scatter_tensor)(res, torch.arange(3 * world, dtype=torch.int64) + rank, op=dist.ReduceOp.MAX)
    out["reduce_scatter_tensor"] = bool(torch.equal(res, torch.arange(3 * rank, 3 * rank + 3) + world - 1))
    # reduce
    t = torch.full((4,), float(rank + 1), dtype=torch.float64)
    dist.reduce(t, dst=0)
    out["reduce"] = bool(torch.all(t == world * (world + 1) / 2)) if rank == 0 else True
    # gather / scatter
    gl = [torch.zeros(2, dtype=torch.int64) for _ in range(world)] if rank == 1 else None
    dist.gather(torch.tensor([rank, -rank]), gl, dst=1)
    out["gather"] = all(bool(torch.equal(g, torch.tensor([r, -r]))) for r, g in enumerate(gl)) if rank == 1 else True
    so = torch.zeros(3)
    dist.scatter(so, [torch.full((3,), float(r * r)) for r in range(world)] if rank == 0 else None, src=0)
    out["scatter"] = bool(torch.all(so == rank * rank))
    # all_to_all / all_to_all_single
    outs = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_to_all(outs, [torch.tensor([rank * 100 + j]) for j in range(world)])
    out["all_to_all"] = [int(o) for o in outs] == [r * 100 + rank for r in range(world)]
    o1 = torch.zeros(world, dtype=torch.float32)
    dist.all_to_all_single(o1, torch.arange(world, dtype=torch.float32) + 10 * rank)
    out["all_to_all_single"] = o1.tolist() == [10.0 * r + rank for r in range(world)]
    # objects (uses allgather + broadcast of byte tensors)
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "s": "x" * rank})
    out["all_gather_object"] = objs == [{"rank": r, "s": "x" * r} for r in range(world)]
    bl = [f"hello from {rank}", rank]
    dist.broadcast_object_list(bl, src=0)
    out["broadcast_object_list"] = bl == ["hello from 0", 0]
    # send / recv in a ring, async, with tags
    right, left = (rank + 1) % world, (rank - 1) % world
    rb = torch.zeros(3)
    reqs = [dist.irecv(rb, src=left, tag=7), dist.isend(torch.full((3,), float(rank)), dst=right, tag=7)]
    for r in reqs:
        r.wait()
    out["send_recv"] = bool(torch.all(rb == left))
    if rank == 0:
        t = torch.zeros(1)
        src = dist.recv(t)  # any source
        out["recv_anysource"] = (src == int(t.item()) == world - 1)
    elif rank == world - 1:
        dist.send(torch.tensor([float(rank)]), dst=0)
    # barrier and async work object
    dist.barrier()
    w = dist.all_reduce(torch.ones(3), async_op=True)
    fut = w.get_future()
    out["future"] = bool(torch.all(fut.wait()[0] == world)) and w.is_completed() and w.is_success()
    # sub-groups
    even = dist.new_group([r for r in range(world) if r % 2 == 0])
    odd = dist.new_group([r for r in range(world) if r % 2 == 1])
    g = even if rank % 2 == 0 else odd
    t = torch.full((3,), float(rank))
    dist.all_reduce(t, group=g)
    members = [r for r in range(world) if r % 2 == rank % 2]
    out["subgroup"] = bool(torch.all(t == float(sum(members))))
    # the coalesced list form
    outs = [[torch.zeros(2) for _ in range(world)]]
    dist.all_gather_coalesced(outs, [torch.full((2,), float(rank))])
    out["all_gather_coalesced"] = [t.tolist() for t in outs[0]] == [[float(r)] * 2 for r in range(world)]
    # unsupported collective / op: clear NotImplementedError naming it (not torch's fallback text)
    msgs = []
    for call in (lambda: g._start_coalescing(torch.device("cpu")),
                 lambda: dist.all_reduce(torch.ones(2), op=dist._make_nccl_premul_sum(2.0))):
        try:
            call()
            msgs.append("no error")
        except NotImplementedError as e:
            msgs.append(f"NotImplementedError: {e}")
        except Exception as e:  # noqa: BLE001
            msgs.append(f"{type(e).__name__}: {e}")
    out["unsupported_msgs"] = msgs
    dist.barrier()
    dist.destroy_process_group()
    return out


def sc_kill_rank(rank, world, port, victim=1, timeout_s=20.0, ddp=False):
    """``victim`` dies (SIGKILL) after a few good steps; the others must get an exception, quickly."""
    import signal

    import torch

    dist = _init("saatp", rank, world, port, timeout_s=timeout_s)
    model = None
    if ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP

        torch.manual_seed(0)
        model = DDP(torch.nn.Linear(32, 4))
    for step in range(3):
        if ddp:
            model(torch.randn(8, 32)).sum().backward()
        else:
            dist.all_reduce(torch.ones(1000))
    dist.barrier()
    if rank == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.2)
    t0 = time.monotonic()
    try:
        for _ in range(5):
            if ddp:
                model(torch.randn(8, 32)).sum().backward()
            else:
                dist.all_reduce(torch.ones(1000))
        return dict(raised=False, secs=time.monotonic() - t0, msg="")
    except Exception as e:  # noqa: BLE001
        return dict(raised=True, secs=time.monotonic() - t0, msg=f"{type(e).__name__}: {e}")


def sc_hang_rank(rank, world, port, victim=1, timeout_s=3.0):
    """``victim`` stays alive but never joins the next collective: the others time out."""
    import torch

    dist = _init("saatp", rank, world, port, timeout_s=timeout_s)
    dist.all_reduce(torch.ones(10))
    if rank == victim:
        time.sleep(timeout_s + 2.0)  # alive (sockets open) until the others have timed out
        return dict(raised=None, secs=0.0, msg="victim")
    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(10))
        return dict(raised=False, secs=time.monotonic() - t0, msg="")
    except Exception as e:  # noqa: BLE001
        return dict(raised=True, secs=time.monotonic() - t0, msg=f"{type(e).__name__}: {e}")


def make_model():
    import torch

    torch.manual_seed(42)
    return torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Tanh(), torch.nn.Linear(32, 10))


def make_batch(rank: int, step: int, batch: int = 16):
    """Synthetic classification data: 10 class prototypes plus noise (MNIST-like shapes, 8x8)."""
    import torch

    g = torch.Generator().manual_seed(1000 * step + rank)
    protos = torch.Generator().manual_seed(7)
    centers = torch.randn(10, 64, generator=protos)
    y = torch.randint(0, 10, (batch,), generator=g)
    x = centers[y] + 0.5 * torch.randn(batch, 64, generator=g)
    return x, y


def sc_ddp(rank, world, port, backend="saatp", steps=8, lr=0.1, straggler=-1, delay=0.0, bounds=True, hook=None):
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist = _init(backend, rank, world, port)
    model = DDP(make_model(), bucket_cap_mb=0.004)  # small buckets: several allreduces per step
    if hook == "fp16":  # a comm hook chains .then() on the Work's future
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        model.register_comm_hook(dist.group.WORLD, default_hooks.fp16_compress_hook)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    params = [p for p in model.module.parameters()]
    step_bounds, losses, times = [], [], []
    for step in range(steps):
        x, y = make_batch(rank, step)
        t0 = time.perf_counter()
        if bounds and backend == "saatp":
            # per-element bound of the engine on this step's gradient average: needs sum_r |g_r|
            local = torch.autograd.grad(F.cross_entropy(model.module(x), y), params)
            abs_sum = torch.cat([g.detach().abs().reshape(-1) for g in local]).double()
            dist.all_reduce(abs_sum)  # float64: exact host path
            step_bounds.append(float(np.max(dist.group.WORLD.engine.error_bound(abs_sum.numpy(), world, "avg"))))
        if rank == straggler:
            time.sleep(delay)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        lt = loss.detach().clone()
        dist.all_reduce(lt, op=dist.ReduceOp.AVG)
        losses.append(float(lt))
    flat = torch.cat([p.detach().reshape(-1) for p in params]).numpy().copy()
    dist.barrier()
    dist.destroy_process_group()
    return dict(params=flat, bounds=step_bounds, losses=losses, times=times)


def run_ranks(world, fn, timeout=60.0):
    """Run fn(rank) on ``world`` threads; return results (exceptions are returned, not raised).
    Used by the in-process tests; fails (never hangs) if a rank does not finish in time."""
    out = [None] * world
    done = [False] * world

    def body(r):
        try:
            out[r] = fn(r)
        except BaseException as e:  # noqa: BLE001
            out[r] = e
        done[r] = True

    ths = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(world)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(timeout)
    assert all(done), f"ranks did not finish within {timeout} s: {done}"
    return out


# --------------------------------------------------------------------------------------------
def sc_named_groups(rank, world, port, backend="saatp"):
    """What needs a group's name: group_name, functional collectives, DeviceMesh + DTensor,
    destroying and re-creating sub-groups."""
    import torch
    import torch.distributed._functional_collectives as fc
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    dist = _init(backend, rank, world, port)
    out = {"world_name": str(dist.group.WORLD.group_name)}
    x = torch.full((6,), float(rank + 1))
    y = fc.all_reduce(x, "sum", dist.group.WORLD)
    out["functional_sum"] = torch.as_tensor(fc.wait_tensor(y)).tolist()
    mesh = init_device_mesh("cpu", (world,))
    full = torch.arange(4.0 * world).reshape(2 * world, 2)
    dt = distribute_tensor(full, mesh, [Shard(0)])
    out["shard_rows"] = list(dt.to_local().shape)
    rep = dt.redistribute(mesh, [Replicate()])
    out["replicated_ok"] = bool(torch.equal(rep.to_local(), full))
    names = []
    for _ in range(3):  # destroy and re-create a sub-group of every rank
        g = dist.new_group(list(range(world)))
        t = torch.ones(3)
        dist.all_reduce(t, group=g)
        names.append((str(g.group_name), t.tolist()))
        dist.destroy_process_group(g)
    out["subgroups"] = names
    dist.destroy_process_group()
    return out


def sc_fsdp2(rank, world, port, backend="saatp", steps=3):
    """FSDP2 (fully_shard) on a small model; returns the full parameters after ``steps``."""
    import torch
    from torch.distributed.fsdp import fully_shard

    dist = _init(backend, rank, world, port)
    model = make_model()
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        xb, yb = make_batch(rank, step)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()
    params = [p.full_tensor().detach().numpy().astype(np.float64).ravel() for p in model.parameters()]
    dist.destroy_process_group()
    return np.concatenate(params)
