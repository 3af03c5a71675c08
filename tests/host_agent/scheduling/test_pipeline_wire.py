"""The pipeline runtime's message format: one float32 buffer, header then payload."""

import pytest
import torch

from host_agent.scheduling.pipeline.wire import HEADER, MAX_EXACT, pack, unpack


def test_pack_round_trip_keeps_start_shape_and_values():
    t = torch.randn(3, 4, 5, dtype=torch.float64)
    buf = pack(t, 17)
    assert buf.dtype == torch.float32 and buf.numel() == HEADER + t.numel()
    start, dims, got = unpack(buf)
    assert start == 17 and dims == [3, 4, 5]
    assert torch.equal(got, t.to(torch.float32))


def test_pack_is_a_copy():
    t = torch.ones(2, 2)
    buf = pack(t, 0)
    t += 1  # a later in-place change of the activation does not reach the message
    assert torch.equal(unpack(buf)[2], torch.ones(2, 2))


def test_large_starts_and_dims_are_exact_below_the_float32_limit():
    t = torch.zeros(1, 3)
    assert unpack(pack(t, MAX_EXACT - 1))[0] == MAX_EXACT - 1
    with pytest.raises(ValueError, match="exact in float32"):
        pack(t, MAX_EXACT)


def test_too_many_dims_are_refused():
    with pytest.raises(ValueError, match="at most"):
        pack(torch.zeros([1] * (HEADER - 1)), 0)


@pytest.mark.parametrize("corrupt", [
    lambda b: b.__setitem__(1, 0.0),  # ndim 0
    lambda b: b.__setitem__(1, 9.0),  # ndim beyond the header
    lambda b: b.__setitem__(2, 4.0),  # dims that do not describe the buffer
    lambda b: b.__setitem__(0, 2.5),  # a start that is not an index
    lambda b: b.__setitem__(0, -1.0),
])
def test_a_header_that_does_not_describe_the_buffer_is_an_error(corrupt):
    buf = pack(torch.zeros(3, 2), 5)
    corrupt(buf)
    with pytest.raises(RuntimeError, match="bad pipeline message header"):
        unpack(buf)
