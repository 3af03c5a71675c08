import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from host_agent import quantize as qz


def test_roundtrip_precision():
    x = np.linspace(-3, 3, 1001)
    q, clipped = qz.quantize(x, 20)
    assert not clipped and q.dtype == np.int32
    assert np.max(np.abs(qz.dequantize(q, 20, np.float64) - x)) <= 2.0 ** -21


def test_clipping_detected():
    q, clipped = qz.quantize(np.array([1e10, -1e10, np.nan, 1.0]), 0)
    assert clipped
    assert q.tolist() == [qz.INT32_MAX, qz.INT32_MIN, 0, 1]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=8),
       st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=8))
def test_sat_add_matches_clipped_int64(a, b):
    n = min(len(a), len(b))
    a, b = np.array(a[:n], np.int32), np.array(b[:n], np.int32)
    s, c = qz.sat_add(a, b)
    ref = a.astype(np.int64) + b
    assert c == bool((ref > qz.INT32_MAX).any() or (ref < qz.INT32_MIN).any())
    np.testing.assert_array_equal(s, np.clip(ref, qz.INT32_MIN, qz.INT32_MAX))


@pytest.mark.parametrize("n", [1, 2, 7, 32])
@pytest.mark.parametrize("amax", [1e-6, 0.3, 1.0, 1234.5])
def test_exp_for_leaves_room_for_n_contributions(n, amax):
    f = qz.exp_for(amax, n)
    assert n * amax * 2.0 ** f < 2 ** 31
    assert n * amax * 2.0 ** (f + 2) >= 2 ** 31   # and is not wastefully small


def test_adaptive_scale_is_deterministic_and_backs_off():
    a, b = qz.AdaptiveScale(n=4, f=10), qz.AdaptiveScale(n=4, f=10)
    assert a.after_result(2.5) == b.after_result(2.5)
    f = a.f
    assert a.on_overflow() == f - 3
    assert a.overflows == 1
