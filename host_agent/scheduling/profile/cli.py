"""``saatp profile``: measure a model on this machine for the given stage CPU quotas and write
the profile JSON that ``saatp plan umpipe --profile`` and ``saatp train pipeline --profile``
read."""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time

from ..interrupts import exit_143, held_interrupts
from ..pipeline import cgroups
from ..pipeline.models import build_layers, check_batch, load_model, nested_note
from ..progress import DEFAULT_STALL_S, add_stall_option, check_stall_timeout
from ..rank_processes import BACKENDS, how_ended
from ..result_files import check_result_path
from .calibrate import calibrate_split, check_calibration_batch
from .fit import fit_knee, fit_line
from .link import measure_link

DEFAULT_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)


def _machine() -> dict:
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import torch

    return dict(cpu=cpu, cores=os.cpu_count(), torch=torch.__version__, python=platform.python_version())


# the layer profiler's one process has no peers to watch it (the stall watch needs them): a
# time limit. Until 2026-11-28 reaching it ended the command in a TimeoutExpired traceback.
LAYER_TIMEOUT_S = 1800.0


def _profile_cpu(model: str, sizes, min_s: float, tmp: str) -> dict:
    """Per-layer CPU seconds, measured in a child process. With cgroups available the child
    runs in a group with the stages' high ``cpu.shares`` and no quota, so other work on the
    host delays it little (CPU seconds do not count the waits anyway)."""
    out = os.path.join(tmp, "cpu.json")
    cfg = dict(model=model, sizes=list(sizes), min_s=min_s, out=out, threads=1, cgroup=None)
    groups = cgroups.CpuQuotas(prefix=f"saatp-{os.getpid()}-profile")
    try:
        if cgroups.unavailable_reason() is None:
            cfg["cgroup"] = groups.create("layers", None)
        path = os.path.join(tmp, "cfg.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        proc = subprocess.Popen([sys.executable, "-m", "host_agent.scheduling.profile.measure", path],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            stdout, _ = proc.communicate(timeout=LAYER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"profiling the layers did not finish in {LAYER_TIMEOUT_S:g} s (process {proc.pid}: "
                               "stopped, or a model far too large to time at these sizes); it was killed") from None
        finally:
            with held_interrupts():  # a second Ctrl-C must not leave the child in its group
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        if proc.returncode == 3:  # the model itself refuses every size (measure.smallest_runnable)
            raise ValueError(stdout.strip().splitlines()[-1])
        if proc.returncode:
            # how it ended: a layer profiler killed (SIGKILL, the OOM killer) said "profiling the
            # layers failed:" and nothing more until 2026-11-28
            tail = stdout[-3000:].strip()
            raise RuntimeError(f"profiling the layers failed: its process {proc.pid} ended ({how_ended(proc.returncode)})"
                               + (f":\n{tail}" if tail else " and printed nothing"))
    finally:
        groups.remove()
    with open(out) as f:
        dev = json.load(f)
    for L in dev["layers"]:
        for kind in ("fwd", "bwd"):
            pts = sorted((int(b), t) for b, t in L[kind].items())
            L[f"fit_{kind}"] = fit_knee([p[0] for p in pts], [p[1] for p in pts])
    return dev


def cgroups_key(q: float | None) -> str:
    return "none" if q is None else f"{float(q):g}"


def run_profile(model: str, quotas: list[float | None], sizes=DEFAULT_SIZES, min_s: float = 0.03,
                link_sizes=(4 << 10, 64 << 10, 512 << 10, 2 << 20), log=print, B: int | None = None,
                calibrate_steps: int = 3, cuts: list[int] | None = None,
                stall_s: float | None = DEFAULT_STALL_S, backend: str = "gloo") -> dict:
    """Layer CPU times, link fit, and (if ``B``) a calibration inside real pipeline runs of
    ``len(quotas)`` stages on the quotas (``stall_s``: their stall limit, :mod:`..progress`);
    the link and the calibration runs use ``backend``, the one the training will use."""
    spec = load_model(model)
    layers = build_layers(spec)
    n_layers = len(layers)
    note = nested_note(spec.name, layers) if ":" in model else None  # vgg-mini's blocks are nested by design
    if note:
        log(note)
    if not 1 <= len(quotas) <= n_layers:
        raise ValueError(f"{spec.name} has {n_layers} layers (children of its nn.Sequential): "
                         f"it cannot be cut into {len(quotas)} stages")
    if cuts is not None and (len(cuts) != len(quotas) - 1 or list(cuts) != sorted(set(cuts))
                             or not all(0 < c < n_layers for c in cuts)):
        raise ValueError(f"--cuts {','.join(map(str, cuts))}: need {len(quotas) - 1} increasing cuts "
                         f"within 1..{n_layers - 1}")
    check_batch(spec, max(*sizes, B or 0))
    if any(q is not None for q in quotas):
        why = cgroups.unavailable_reason()
        if why:
            raise RuntimeError(f"CPU quotas unavailable: {why} (use --quota none and no --slow)")
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="saatp-prof-") as tmp:
        log(f"profiling {spec.name} layers (CPU seconds per op) ...")
        cpu = _profile_cpu(model, sizes, min_s, tmp)
    log("measuring activation transfer between two processes ...")
    pts = measure_link(link_sizes, backend=backend, stall_s=stall_s)
    lat, per = fit_line([p[0] for p in pts], [p[1] for p in pts])
    if cpu["min_microbatch"] > 1:
        log(f"{spec.name} trains on microbatches of {cpu['min_microbatch']} samples or more: "
            f"no plan uses smaller ones")
    prof = dict(model=model, format=2, backend=backend, sizes=cpu["sizes"], min_microbatch=cpu["min_microbatch"],
                threads=1, machine=_machine(), stage_quotas=quotas,
                cfs_period_s=cgroups.CpuQuotas().period_us / 1e6, cpu=cpu,
                link=dict(latency=lat, per_byte=per, points=pts))
    if B:
        log(f"calibrating inside real {len(quotas)}-stage pipeline runs (B={B}) ...")
        prof["calibration"] = calibrate_split(prof, model, quotas, B, cuts, steps=calibrate_steps, log=log,
                                              backend=backend, stall_s=stall_s)
    prof["seconds"] = time.time() - t0
    return prof


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="vgg-mini", help="vgg-mini, gpt-mini or MODULE:FN")
    p.add_argument("--stages", type=int, default=4, help="number of pipeline stages (default 4)")
    p.add_argument("--quota", default="auto",
                   help="CPUs per stage process (cgroup v1 quota), 'auto' = 60%% of the cores / stages, 'none' = no cgroup")
    p.add_argument("--slow", action="append", default=[], metavar="STAGE:QUOTA",
                   help="give one stage a different CPU quota (repeatable)")
    p.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                   help="microbatch sizes to time (comma-separated)")
    p.add_argument("--min-time", type=float, default=0.03,
                   help="CPU seconds per timing loop (default 0.03)")
    p.add_argument("--batch", type=int, default=64, help="minibatch size B for the calibration runs (default 64)")
    p.add_argument("--cuts", help="layer cuts for the calibration runs (default: chain DP)")
    p.add_argument("--no-calibrate", action="store_true", help="skip the calibration on real pipeline runs")
    add_stall_option(p, "stage")
    p.add_argument("--backend", default="gloo", choices=BACKENDS,
                   help="torch.distributed backend of the link measurement and the calibration runs: the one "
                        "saatp train pipeline will use (default gloo)")
    p.add_argument("--out", "--json", dest="out", required=True, metavar="FILE", help="where to write the profile")


def parse_quota(text: str, stages: int) -> float | None:
    if text == "auto":
        return cgroups.default_quota(stages)
    if text == "none":
        return None
    try:
        q = float(text)
    except ValueError:
        raise ValueError(f"--quota {text}: expected CPUs per stage (e.g. 0.3), auto or none") from None
    if not (math.isfinite(q) and q > 0):  # nan and inf passed until 2026-11-28 (inf: a traceback)
        raise ValueError(f"--quota {text}: must be a number of CPUs > 0")
    return q


def parse_cuts(text: str) -> list[int]:
    """``--cuts``: comma-separated layer indices (whether they split the model is checked
    against its layers later); ValueError naming the option ("invalid literal for int() with
    base 10: 'a'" until 2026-11-28)."""
    try:
        return [int(c) for c in text.split(",")]
    except ValueError:
        raise ValueError(f"--cuts {text}: expected comma-separated layer indices, e.g. 3,7") from None


def parse_sizes(text: str) -> list[int]:
    """``--sizes``: comma-separated microbatch sizes, each a positive integer, at least two
    different ones; sorted, without repeats. ValueError saying what is wrong."""
    sizes = set()
    for item in text.split(","):
        if not item.strip():
            continue
        try:
            b = int(item)
        except ValueError:
            raise ValueError(f"--sizes={text}: {item.strip()!r} is not a whole number") from None
        if b < 1:
            raise ValueError(f"--sizes={text}: a microbatch size must be at least 1, not {b}")
        sizes.add(b)
    if len(sizes) < 2:
        raise ValueError(f"--sizes={text}: give at least two different sizes (the fits need two points)")
    return sorted(sizes)


def run(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, exit_143)  # run finally blocks: remove our cgroups
    try:
        quotas = cgroups.stage_quotas(args.stages, parse_quota(args.quota, args.stages), args.slow)
        cgroups.check_settable(quotas)  # below 0.1 CPU was raised to it without a word
        note = cgroups.oversubscribed(quotas)
        if note:
            print(note, flush=True)
        sizes = parse_sizes(args.sizes)
        cuts = parse_cuts(args.cuts) if args.cuts else None
        if cuts is not None and args.no_calibrate:  # it was dropped without a word (2026-11-28)
            raise ValueError("--cuts is the split of the calibration runs: it does nothing with --no-calibrate (the "
                             "profile records no split; saatp train pipeline takes --cuts too)")
        check_stall_timeout(args.stall_timeout)
        check_result_path("--out", args.out)  # before the profiling, not after it
        if args.batch < 1 or not (math.isfinite(args.min_time) and args.min_time > 0):
            # --batch 0 skipped the calibration without a word, a negative one failed after the
            # layers and the link were measured (2026-11-28)
            raise ValueError(f"--batch must be >= 1 and --min-time > 0 seconds, got {args.batch} and "
                             f"{args.min_time:g}")
        if not args.no_calibrate:
            check_calibration_batch(args.batch)  # before the layers and the link are timed
        prof = run_profile(args.model, quotas, sizes, args.min_time, B=None if args.no_calibrate else args.batch,
                           cuts=cuts, stall_s=args.stall_timeout, backend=args.backend)
    except (ValueError, RuntimeError) as e:
        print(f"saatp profile: {e}", file=sys.stderr)
        return 2
    with open(args.out, "w") as f:
        json.dump(prof, f, indent=1)
    L = prof["cpu"]["layers"]
    tot = sum(x["fwd"][str(sizes[-1])] + x["bwd"][str(sizes[-1])] for x in L)
    print(f"{len(L)} layers, fwd+bwd of b={sizes[-1]}: {tot * 1e3:.1f} ms CPU, per-microbatch overhead "
          f"{prof['cpu']['overhead'] * 1e6:.0f} us CPU (tight loop)")
    print(f"link: {prof['link']['latency'] * 1e6:.0f} us + {prof['link']['per_byte'] * 1e9:.2f} ns/byte")
    cal = prof.get("calibration")
    if cal:
        print(f"calibration (cuts {cal['cuts']}, B={cal['B']}, quotas {cal['quotas']}): CPU per op inside the pipeline")
        for s, st in enumerate(cal["stages"]):
            f, b = st["fwd"], st["bwd"]
            print(f"  stage {s}: fwd {f['alpha'] * 1e3:.2f} + {f['beta'] * 1e3:.3f}*b ms, bwd {b['alpha'] * 1e3:.2f} + "
                  f"{b['beta'] * 1e3:.3f}*b ms (b: samples per microbatch, at least the knee, {f['knee']:g}), per "
                  f"iteration {st['tail'] * 1e3:.2f} ms")
        # what the two model figures are was not said until 2026-11-28
        print(f"  predicted vs measured iteration times (nothing fitted to them): rms error "
              f"{cal['rms_rel_err'] * 100:.1f}%, max {cal['max_abs_rel_err'] * 100:.1f}%; model: the layers' tight-loop "
              f"times -> calibrated (the error is the calibrated one's)")
        for p in cal["points"]:
            print(f"  {p['label']:15s} measured {p['measured_s'] * 1e3:7.1f} ms  model {p['before_s'] * 1e3:7.1f} -> "
                  f"{p['after_s'] * 1e3:7.1f} ms ({(p['after_s'] / p['measured_s'] - 1) * 100:+.1f}%)")
    print(f"wrote {args.out} ({prof['seconds']:.0f} s)")
    return 0
