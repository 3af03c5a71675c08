"""The pipeline runtime's message format: a tensor's float32 values as they are, received into
a buffer of the plan's size whose last value is a sentinel until written."""

import datetime
import multiprocessing as mp

import pytest
import torch
import torch.distributed as dist

from host_agent.scheduling.pipeline.wire import SENTINEL_BITS, Buffers, Inbox, armed, as_message, check_full
from host_agent.scheduling.rank_processes import free_port


def test_a_contiguous_float32_tensor_is_sent_as_it_is_and_others_as_float32_copies():
    t = torch.randn(3, 4)
    assert as_message(t).data_ptr() == t.data_ptr()  # no copy: what made our stages slower than torch's
    d = torch.randn(3, 4, dtype=torch.float64)
    assert as_message(d).dtype == torch.float32 and torch.equal(as_message(d), d.to(torch.float32))
    nc = torch.randn(4, 3).t()
    got = as_message(nc)
    assert got.is_contiguous() and torch.equal(got, nc)
    g = torch.randn(2, 2, requires_grad=True) * 2
    assert not as_message(g).requires_grad


def test_the_sentinel_is_a_nan_no_arithmetic_produces():
    buf = armed(torch.zeros(5))
    assert torch.isnan(buf[-1]) and torch.equal(buf[:4], torch.zeros(4))
    with pytest.raises(RuntimeError, match="shorter than"):
        check_full(buf, 3, "x")
    quiet = torch.tensor([0.0]) / torch.tensor([0.0])  # a NaN computed: quiet, another bit pattern
    assert int(quiet.view(torch.int32)) != SENTINEL_BITS
    buf[-1] = quiet
    check_full(buf, 3, "x")  # a computed NaN is a value like any other


def test_buffers_are_kept_per_key_and_replaced_when_the_size_changes():
    b = Buffers()
    first = b.take(("r", 1, 0), 10)
    assert b.take(("r", 1, 0), 10) is first
    assert b.take(("r", 1, 1), 10) is not first
    assert b.take(("r", 1, 0), 12).numel() == 12


def _pair(rank: int, port: int, send_counts: list[int], q) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=30))
    try:
        if rank == 0:
            for i, n in enumerate(send_counts):
                dist.send(torch.full((n, 2), float(i + 1)), 1, tag=1)
        else:
            box = Inbox(0, 1, [(0, 2), (2, 3)], (2,), Buffers())  # the plan: samples 0-1, then 2-4
            try:
                got = box.take(0, 5)
                box.close()
                q.put(("ok", got.tolist()))
            except RuntimeError as e:
                q.put(("error", str(e)))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _run_pair(send_counts: list[int]):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_pair, args=(r, port, send_counts, q)) for r in range(2)]
    for p in procs:
        p.start()
    got = q.get(timeout=60)
    for p in procs:
        p.join(60)
    return got


def test_an_inbox_receives_the_plans_messages_and_refuses_a_short_one():
    """gloo writes a shorter message into a larger buffer without a word: the sentinel in the
    buffer's last value names it."""
    assert _run_pair([2, 3]) == ("ok", [[1.0, 1.0]] * 2 + [[2.0, 2.0]] * 3)
    kind, msg = _run_pair([2, 2])  # the second message holds 2 samples, the plan says 3
    assert kind == "error" and "message from rank 0 is shorter than samples 2..4 of shape [2] (6 values)" in msg
