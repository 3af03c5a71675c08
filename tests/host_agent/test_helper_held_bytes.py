"""The helper role's bytes held (accumulators and results, SA-ATP §7 statistics) are a
running sum, kept right through new rounds, results (its own and the switch's copies) and
the forgetting of old iterations -- checked against the sum over every round it holds."""
from __future__ import annotations

import numpy as np

from host_agent import wire
from host_agent.helper import HelperRole

K, N, POOL = 16, 3, 4


def _brute(role: HelperRole) -> int:
    return sum(8 * K + (4 * K if r.result is not None else 0) for r in role.rounds.values())


def test_held_bytes_follow_rounds_results_and_gc():
    sent: list[bytes] = []
    role = HelperRole(wid=0, job=1, nworkers=N, k=K, pool=POOL, send=sent.append)
    vals = np.ones(K, dtype=np.int64)
    peak = 0
    for it in (1, 2, 3, 4):
        for seq in range(12):
            # the switch's partial (workers 0 and 1), then the straggler's redirected data
            h = wire.Header(type=wire.PARTIAL, job=1, wid=wire.SWITCH_WID, nworkers=N, helper=0,
                            slot=seq % POOL, seq=seq, iter=it, klog2=K.bit_length() - 1,
                            bitmap=0b011, flags=wire.F_PAYLOAD)
            role.on_partial(h, vals, 100)
            if seq % 3:
                d = h.copy(type=wire.DATA, wid=2, bitmap=0b100, flags=wire.F_PAYLOAD | wire.F_REDIRECT)
                role.on_redirect_data(d, vals, 100)
            assert role._held == _brute(role)
            peak = max(peak, _brute(role))
        # a result the switch finished, kept for late requests
        r = wire.Header(type=wire.RESULT, job=1, wid=wire.SWITCH_WID, nworkers=N, slot=0, seq=50,
                        iter=it, klog2=K.bit_length() - 1, flags=wire.F_PAYLOAD)
        role.on_result_copy(r, vals, 100)
        assert role._held == _brute(role)
        peak = max(peak, _brute(role))
    # rounds two or more iterations old were forgotten, and their bytes with them
    assert {it for it, _ in role.rounds} == {3, 4}
    assert role.stats.peak_bytes == peak
    assert role.stats.hresults == 4 * 8 and role.stats.conflicts == 0
