"""LPM lookups through the per-table result cache agree with a brute-force longest-prefix
model while entries are added, deleted and modified between lookups."""
from __future__ import annotations

import random

import pytest

from emulation.v1model import tables as T
from host_agent.match import Exact, Lpm


def _table(two_keys: bool) -> T.Table:
    keys = [T.KeyInfo("dst", "lpm", 16)]
    if two_keys:
        keys = [T.KeyInfo("vrf", "exact", 2)] + keys
    acts = [T.ActionInfo("fwd", 0, [("port", 9)], lambda port: None, False, False),
            T.ActionInfo("NoAction", 1, [], lambda: None, False, False)]
    return T.Table("t", keys, acts, ("NoAction", []), size=4096)


@pytest.mark.parametrize("two_keys", [False, True])
@pytest.mark.parametrize("cache_max", [3, T.LPM_CACHE_MAX])
def test_lpm_cache_matches_model(monkeypatch, two_keys, cache_max):
    monkeypatch.setattr(T, "LPM_CACHE_MAX", cache_max)
    rng = random.Random(cache_max + two_keys)
    t = _table(two_keys)
    model: dict[tuple, tuple[int, int]] = {}        # (vrf, prefix, plen) -> (handle, port)
    for step in range(1500):
        r = rng.random()
        if r < 0.15:
            plen = rng.randint(0, 16)
            prefix = rng.getrandbits(16) >> (16 - plen) << (16 - plen) if plen else 0
            vrf = rng.randrange(2) if two_keys else 0
            if (vrf, prefix, plen) in model:
                continue
            port = rng.randrange(1, 500)
            m = {"dst": Lpm(prefix, plen)}
            if two_keys:
                m["vrf"] = Exact(vrf)
            model[(vrf, prefix, plen)] = (t.add(m, "fwd", [port]), port)
        elif r < 0.22 and model:
            k = rng.choice(sorted(model))
            t.delete(model.pop(k)[0])
        elif r < 0.27 and model:
            k = rng.choice(sorted(model))
            port = rng.randrange(1, 500)
            t.modify(model[k][0], "fwd", [port])
            model[k] = (model[k][0], port)
        else:
            vrf = rng.randrange(2) if two_keys else 0
            dst = rng.getrandbits(16) if rng.random() < 0.5 else rng.choice([0, 0xFFFF, 0x8000])
            best = None
            for (v, prefix, plen), (_h, port) in model.items():
                covers = v == vrf and (plen == 0 or dst >> (16 - plen) == prefix >> (16 - plen))
                if covers and (best is None or plen > best[0]):
                    best = (plen, port)
            _fn, args, hit, _idx = t.lookup((vrf, dst) if two_keys else dst)[:4]
            if best is None:
                assert not hit
            else:
                assert hit and list(args) == [best[1]], (step, dst, best)
        assert len(t._lpm_cache) <= cache_max
