"""Hand-made saatp profiles for the profiler, planner and command tests: layers with known
CPU fits (``layer``) and a six-layer, two-stage profile (``two_stage_profile``)."""


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
