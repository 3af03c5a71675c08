"""Hand-made saatp profiles for the profiler, planner and command tests: layers with known
CPU fits (``layer``), a six-layer, two-stage profile (``two_stage_profile``) and a six-layer
``MODULE:FN`` user model with such a profile of it (``six_layer_profile``)."""

import json


def layer(fa, fb, knee=0.0, out=100.0, stash=400.0, params=1000.0):
    """A profiled layer: forward ``fa + fb b`` CPU seconds (b >= knee), backward twice that."""
    mk = lambda a, b: dict(alpha=a, beta=b, knee=knee, max_rel_err=0.0)
    return dict(name="L", fit_fwd=mk(fa, fb), fit_bwd=mk(2 * fa, 2 * fb), opt=1e-4, param_bytes=params,
                out_bytes_per_sample=out, stash_bytes_per_sample=stash, fwd={}, bwd={})


def two_stage_profile():
    """Six layers (two five times heavier) for stages of 0.5 and 0.25 CPU."""
    layers = [layer(1e-4, w * 1e-4) for w in (1, 5, 1, 1, 5, 1)]
    return dict(model="toy", format=2, cfs_period_s=0.01, cpu=dict(overhead=1e-4, layers=layers),
                link=dict(latency=1e-3, per_byte=1e-9), stage_quotas=[0.5, 0.25])


SIX_LAYERS = '''
import torch
from torch import nn


def model():
    return (lambda: nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 12), nn.ReLU(), nn.Linear(12, 12),
                                  nn.Linear(12, 3)),
            lambda B, step: (torch.randn(B, 6, generator=torch.Generator().manual_seed(step)),
                             torch.randint(0, 3, (B,), generator=torch.Generator().manual_seed(step))),
            lambda out, y: nn.functional.cross_entropy(out, y, reduction="sum"))
'''


def six_layer_module(tmp_path, monkeypatch) -> str:
    """:data:`SIX_LAYERS` as an importable module in ``tmp_path`` (the working directory);
    returns its ``MODULE:FN``."""
    (tmp_path / "saatp_six_layers_xyz.py").write_text(SIX_LAYERS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "saatp_six_layers_xyz:model"


def six_layer_profile(tmp_path, monkeypatch, **fields):
    """:func:`six_layer_module` and a two-stage profile of it (quotas 0.5 and 0.25) with
    ``fields`` added, written to ``tmp_path/prof.json``; returns the model and the path."""
    model = six_layer_module(tmp_path, monkeypatch)
    path = tmp_path / "prof.json"
    path.write_text(json.dumps(dict(two_stage_profile(), model=model, **fields)))
    return model, path
