"""``saatp train pipeline``: real pipeline training on one process per stage, each in its own
CPU-quota cgroup, with the measured iteration time next to the cost model's prediction.

    saatp train pipeline --model vgg-mini --stages 4 --slow 2:0.25 --schedule all --steps 15 --json out.json

Schedules: ``umpipe`` (the plan family: unequal microbatches per stage, fill-drain or 1F1B
order), ``gpipe`` / ``1f1b`` (our runtime, M equal microbatches), ``torch-gpipe`` /
``torch-1f1b`` (torch.distributed.pipelining's ScheduleGPipe / Schedule1F1B), or ``all``.
All schedules run in the same processes on the same stage split, each from the same initial
weights, interleaved step by step (the order rotating), each timed iteration right after an
untimed one of the same schedule (``--lead``).

The same budget for every method (``--candidates K``, default 3): each method measures K
candidates *chosen by the cost model* -- GPipe and 1F1B K of their best M (torch's schedules:
among the M that divide B), UMPIPE K of its best distinct plans, in each case the fastest and
then the fastest whose microbatch counts are 1.5x apart (:func:`.candidates.spread_by_count`; UMPIPE keeps
its best equal split beside an unequal best, :func:`.candidates.umpipe_candidates`) -- for
``--tune-steps`` iterations; a method's candidates within 10 % of its fastest are measured
again for as many iterations in a run-off (:func:`.tuning.runoff_picks`), and it keeps its best
median over both sessions. The winners are then measured
again in a fresh session for ``--steps`` iterations: those are the reported figures, so
picking the minimum of noisy tuning measurements favours no method. UMPIPE's family holds the
equal splits, so its tuning also measures, in our runtime, the equal split at every order and
count the baselines would measure, whichever of them the session runs
(:func:`.candidates._with_baseline_splits`): it tunes over more configurations than a baseline, and never
misses the one a baseline keeps. ``--candidates 1`` takes every
method's model choice.
The cost model comes from ``--profile FILE`` (``saatp profile``) or, without it, from a
profile measured first.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from ..interrupts import exit_143
from ..profile import cli as profile_cli
from ..profile import costs as profile_costs
from ..profile.calibrate import check_calibration_batch
from ..pipeline import cgroups, launch
from ..pipeline.models import build_layers, check_batch, load_model
from ..pipeline.torch_schedules import TORCH_SCHEDULES
from ..pipeline.worker import StageConfig
from ..progress import add_stall_option, check_stall_timeout
from ..rank_processes import BACKENDS
from ..result_files import check_result_files, keep_interrupted, plot_file, write_result_files
from ..umpipe import family
from . import candidates, drift, tuning
from .plot import plot_pipeline


TUNE_STEPS = 5  # timed iterations per candidate when tuning (--tune-steps)


def whole_number(option: str, text: str, alternative: str = "") -> int:
    """``text`` as a whole number >= 1; ValueError naming ``option`` otherwise (``--microbatches
    0`` meant ``best`` without a word until 2026-11-28)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{option} {text}: expected a whole number >= 1{' ' + alternative if alternative else ''}")
    return n


DEFAULT_BATCH = 64  # --batch without a profile's calibration B
DEFAULT_STAGES = 4  # --stages without a profile


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="vgg-mini", help="vgg-mini, gpt-mini or MODULE:FN (default vgg-mini)")
    p.add_argument("--stages", type=int, default=None,
                   help=f"pipeline stages (default: the --profile's, else {DEFAULT_STAGES})")
    p.add_argument("--schedule", action="append", choices=candidates.SCHEDULES + ("all",), default=None,
                   help="repeatable; default umpipe")
    p.add_argument("--quota", default=None,
                   help="CPUs per stage (cgroup v1 quota); 'auto' = 60%% of the cores / stages, 'none' = no cgroups "
                        "(default: the --profile's quotas, else auto)")
    p.add_argument("--slow", action="append", default=[], metavar="STAGE:QUOTA",
                   help="give one stage a different CPU quota, e.g. 2:0.2 (repeatable)")
    p.add_argument("--batch", type=int, default=None,
                   help=f"minibatch size B (default: the --profile's calibration B, what saatp plan umpipe "
                        f"--profile plans for; else {DEFAULT_BATCH})")
    p.add_argument("--steps", type=int, default=15, help="timed iterations per schedule, reported (default 15)")
    p.add_argument("--candidates", type=int, default=3,
                   help="candidates per method, the model's best, measured in a tuning session (default 3; "
                        "1 = every method takes its model choice, no tuning session)")
    p.add_argument("--tune-steps", type=int, default=TUNE_STEPS,
                   help=f"timed iterations per candidate when tuning (default {TUNE_STEPS})")
    p.add_argument("--lead", type=int, default=1,
                   help="untimed iterations of a schedule right before each timed one (default 1)")
    p.add_argument("--warmup", type=int, default=1, help="untimed iterations first (default 1)")
    p.add_argument("--microbatches", default="best", help="M for the baselines, or 'best' (tuned as above)")
    p.add_argument("--mmax", type=int, default=16, help="most microbatches per stage (default 16)")
    p.add_argument("--profile", metavar="FILE", help="profile from saatp profile (default: profile now)")
    p.add_argument("--cuts", help="layer cuts, comma-separated (default: the calibration's, else chain DP)")
    p.add_argument("--memory-limit", type=float, metavar="MB", help="per-stage memory limit for plans")
    p.add_argument("--backend", default="gloo", choices=BACKENDS, help="torch.distributed backend (default gloo)")
    p.add_argument("--seed", type=int, default=0)
    add_stall_option(p, "stage")
    p.add_argument("--json", metavar="OUT", help="write everything as JSON")
    p.add_argument("--plot", metavar="PNG", help="plot the reported iteration times per method and step, with the "
                   "model's predictions and its error over every measured configuration")


def _print(out: dict) -> None:
    la = out.get("load_average") or {}
    before, after = la.get("before_1_5_15"), la.get("after_1_5_15")
    # "load average {'before_1_5_15': [4.39, 2.11, 1.8], 'after_1_5_15': [...]}" until 2026-11-28
    load = (f", load average (1, 5, 15 min) {', '.join(f'{x:.2f}' for x in before)} before the sessions, "
            f"{', '.join(f'{x:.2f}' for x in after)} after" if before and after else "")
    print(f"{out['model']}: {out['stages']} stages, B={out['B']}, cuts {out['cuts']}, CPU quotas "
          f"{['none' if q is None else q for q in out['quotas']]}{load}")
    if out.get("tuning"):
        ro = set(out["tuning"].get("runoff") or [])
        print(f"tuning ({out['candidates']} candidates per method, {out['tune_steps']} iterations each"
              + (f"; * = in the run-off, {2 * out['tune_steps']} iterations" if ro else "") + "):")
        w = max([22] + [len(r["label"]) for r in out["tuning"]["runs"]])  # "umpipe #4 fill-drain M=13" is 25
        for r in out["tuning"]["runs"]:
            # an unequal plan's microbatches: its label alone ("umpipe #2 fill-drain") did not say
            # what was measured until 2026-11-28
            mb = "  " + family.rows_text(r["rows"]) if r.get("rows") and r.get("equal") is False else ""
            print(f"  {r['label']:{w}s}{'*' if r['label'] in ro else ' '}{r['measured_s'] * 1e3:8.1f} ms  "
                  f"(model {r['predicted_s'] * 1e3:7.1f} ms, {r['error_pct']:+5.1f}%){mb}")
        c = out["tuning"].get("umpipe_choice")
        if c:
            print(f"  UMPIPE kept {c[c['kept']]}: {c['unequal']} was faster than its equal split {c['equal']} in "
                  f"{c['unequal_steps_won']}/{c['steps']} paired steps (sign test p = {c['sign_test_p']:.3g}; "
                  f"an unequal plan needs p <= {tuning.SIGN_TEST_P}"
                  + (f"; with {c['steps']} paired steps none can pass: --tune-steps {tuning.sign_test_steps()} or more"
                     if tuning.sign_test_p(c['steps'], c['steps']) > tuning.SIGN_TEST_P else "") + ")")
    k = (out.get("tuning") or {}).get("rescaled")
    if k:
        print(f"  the profile is stale: the tuning session ran its calibration configurations "
              f"{abs(k['median_pct']):.1f}% {'faster' if k['median_pct'] < 0 else 'slower'} (median; {k['moved']} of "
              f"{k['compared']} outside the calibration's range); the predictions below are the model's x "
              f"{k['factor']:.3f}, " + ("its error on those configurations in the tuning session" if
                                       k.get("from_model_error") else "the drift")
              + " (the model's own: predicted_profile_s in the JSON)")
    w = max([22] + [len(r["label"]) for r in out["summary"]["runs"]])  # a longer label shifted its row
    print(f"{'schedule':{w}s} {'measured ms':>12s} {'q1..q3 ms':>15s} {'predicted ms':>13s} {'error':>7s}  "
          f"microbatches")
    for r in out["summary"]["runs"]:
        mb = family.rows_text(r["rows"]) if r["rows"] else f"{r['M']} equal"
        sp = r["spread"]
        print(f"{r['label']:{w}s} {r['measured_s'] * 1e3:12.1f} {sp['q1_s'] * 1e3:7.1f}..{sp['q3_s'] * 1e3:<7.1f} "
              f"{r['predicted_s'] * 1e3:13.1f} {r['error_pct']:+6.1f}%  {mb}")
    d = out.get("host_drift")
    if d and d.get("stale", abs(d["median_pct"]) > drift.DRIFT_PCT):
        print(f"warning: this host ran the profile's calibration configurations "
              f"({', '.join(dict.fromkeys(d['configurations']))}) "
              f"{abs(d['median_pct']):.1f}% {'faster' if d['median_pct'] < 0 else 'slower'} (median"
              + (f"; {d['moved']} of {d['compared']} measurements outside the calibration's range"
                 if "compared" in d else "")
              + f") than when {out.get('profile') or 'the profile'} was taken: the cost model's microbatch "
              f"choices may be wrong; run saatp profile again")
    v = out["summary"].get("umpipe_vs_best_baseline")
    if v:
        print(f"UMPIPE {v['umpipe_s'] * 1e3:.1f} ms vs best baseline {v['baseline']} {v['baseline_s'] * 1e3:.1f} ms: "
              f"{v['speedup_pct']:+.1f}% (paired per step: median {v['paired_median_pct']:+.1f}%, faster in "
              f"{v['steps_won']}/{v['steps']} steps)"
              + (f" -- UMPIPE's plan is {v['baseline']}'s configuration, measured once: a tie"
                 if v.get("same_configuration")
                 else " -- UMPIPE's plan is an equal split" if v.get("umpipe_equal") else ""))


def _session(costs, args, runs: list[dict], steps: int, quotas) -> list[dict]:
    """Measure ``runs`` in one interleaved session. Runs with the same :func:`tuning.run_key` are
    measured once and share the measurement: two measurements of one configuration differed
    by up to 5 % in one session here, and reporting that as one method beating the other
    would be noise."""
    keys = [tuning.run_key(r) for r in runs]
    unique = list(dict.fromkeys(keys))
    first = {k: next(r for r, kr in zip(runs, keys) if kr == k) for k in unique}
    cfg = StageConfig(model=args.model, cuts=costs.info["cuts"], B=args.batch, steps=steps,
                      warmup=args.warmup, schedule="ours", backend=args.backend, seed=args.seed,
                      lead=args.lead, rotate=True,
                      runs=[{k: v for k, v in first[key].items() if k in ("schedule", "rows", "orders", "M", "label")}
                            for key in unique])
    n = len(unique) * (args.warmup + steps * (1 + args.lead))
    shared = f" ({len(runs) - len(unique)} identical to another, measured once)" if len(unique) < len(runs) else ""
    print(f"running {len(unique)} schedule(s){shared} x ({args.warmup} + {steps} x {1 + args.lead}) iterations ...",
          flush=True)
    got = dict(zip(unique, launch.run(cfg, quotas=list(quotas), timeout_s=max(600.0, 3.0 * n),
                                       stall_s=args.stall_timeout)["runs"]))
    return [got[k] for k in keys]


def _keep_tuning(args: argparse.Namespace, e: BaseException, part: dict, phase: str = "final session") -> None:
    """The final session or the run-off (``phase``) was interrupted (Ctrl-C, SIGTERM) or failed
    (a stage exited or hung): write what the tuning session measured to ``--json``, marked
    ``interrupted`` or ``failed`` (with ``error``, the message's first line), and say so. With
    no session finished (``part["tuning"]`` None: the tuning session, or the only one) the file
    records the run with no measurements: until 2026-11-28 it was not written, and a result an
    earlier run had left at that path read as this run's (as train cgp and train groups do)."""
    what, verb = (("the tuning session's measurements", "are") if part.get("tuning") is not None else
                  ("no session had finished: the run's record, with no measurements,", "is"))
    if isinstance(e, RuntimeError):
        part.update(failed=phase, error=(str(e).splitlines() or [""])[0])
        keep_interrupted("saatp train pipeline", args.json, part, "", what, happened=f"the {phase} failed", verb=verb)
    else:
        part.update(interrupted=phase)
        keep_interrupted("saatp train pipeline", args.json, part, f" during the {phase}", what, verb=verb)


def run_quotas(args: argparse.Namespace) -> list[float | None]:
    """The stages' CPU quotas, and ``args.stages`` set when not given: with ``--profile`` and
    neither given, the profile's stage count and quotas (``--slow`` overriding stages), what
    ``plan umpipe --profile`` plans for; else ``--stages`` (default 4) and ``--quota`` (default
    auto). Until 2026-11-28 a run on a 3-stage profile at 0.4/0.2/0.4 CPU without ``--stages``
    and ``--quota`` ran 4 stages at ``auto`` quotas, with a note."""
    prof_q = None
    if args.profile and (args.stages is None or args.quota is None):
        got = profile_costs.load(args.profile).get("stage_quotas")
        prof_q = list(got) if isinstance(got, list) and got else None
    if args.stages is None:
        args.stages = len(prof_q) if prof_q else DEFAULT_STAGES
    if args.quota is None and prof_q and len(prof_q) == args.stages:
        given = cgroups.stage_quotas(args.stages, None, args.slow)
        return [q if q is not None else b for q, b in zip(given, prof_q)]
    quota = "auto" if args.quota is None else args.quota
    return cgroups.stage_quotas(args.stages, profile_cli.parse_quota(quota, args.stages), args.slow)


def run(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, exit_143)  # run finally blocks: remove our cgroups
    try:
        spec = load_model(args.model)
        given_stages = args.stages is not None
        quotas = run_quotas(args)
        cgroups.check_settable(quotas)  # below 0.1 CPU was raised to it without a word
        note = cgroups.oversubscribed(quotas)
        if note:
            print(note, flush=True)
        schedules = list(dict.fromkeys(s for x in (args.schedule or ["umpipe"])
                                       for s in (candidates.SCHEDULES if x == "all" else (x,))))
        M = None if args.microbatches == "best" else whole_number("--microbatches", args.microbatches, "or best")
        if M is not None and schedules == ["umpipe"]:
            # it sets the baselines' M; until 2026-11-28 it was dropped without a word when none ran
            print(f"note: --microbatches {M} sets the baselines' count; --schedule umpipe alone runs none "
                  "(UMPIPE's plans choose their own microbatches)", flush=True)
        if args.batch is None:
            # the profile's B, as plan umpipe --profile takes it: until 2026-11-28 a run on a
            # profile of B = 10 trained B = 64 without a word while plan umpipe planned for 10
            cal = (profile_costs.load(args.profile).get("calibration") or {}) if args.profile else {}
            B = cal.get("B") if isinstance(cal, dict) else None
            args.batch = B if isinstance(B, int) and B >= 1 else DEFAULT_BATCH
        # each named with its value: "--steps, --batch, --mmax, --candidates and --tune-steps must be
        # >= 1, --lead and --warmup >= 0" until 2026-11-28 left the user to find which one was wrong
        for option, value, least in (("--steps", args.steps, 1), ("--batch", args.batch, 1), ("--mmax", args.mmax, 1),
                                     ("--candidates", args.candidates, 1), ("--tune-steps", args.tune_steps, 1),
                                     ("--lead", args.lead, 0), ("--warmup", args.warmup, 0)):
            if value < least:
                raise ValueError(f"{option} {value}: expected a whole number >= {least}")
        check_stall_timeout(args.stall_timeout)
        family.check_memory_limit(args.memory_limit)
        cuts = profile_cli.parse_cuts(args.cuts) if args.cuts else None
        if cuts is not None and len(cuts) + 1 != args.stages:
            # "cuts [1, 2, 3] do not split 6 layers into 3 stages" until 2026-11-28, the 3 being the
            # profile's stage count, which the command had not named
            raise ValueError(f"--cuts {args.cuts} makes {len(cuts) + 1} stages, this run has {args.stages} ("
                             + ("--stages" if given_stages else f"without --stages: the --profile's stage count, else "
                                f"{DEFAULT_STAGES}") + ")")
        check_result_files(args.json, args.plot)  # a missing directory lost the result with a traceback
        profile_costs.check_not_the_profile(args.profile, json=args.json, plot=args.plot and plot_file(args.plot))
        check_batch(spec, args.batch)
        if M is not None:  # before the profiling (without --profile, tens of seconds), not after it
            candidates.check_microbatches(M, [s for s in schedules if s != "umpipe"], args.batch, args.stages)
        if args.profile:
            prof = profile_costs.load(args.profile)
            if prof["model"] != args.model:
                raise ValueError(f"{args.profile} profiles {prof['model']}, not {args.model}")
            layers = build_layers(spec)
            n_prof = len(prof["cpu"].get("layers") or [])
            if n_prof != len(layers):
                raise ValueError(f"{args.profile} profiles {n_prof} layers of {prof['model']}, "
                                 f"the model has {len(layers)} now: run saatp profile again")
            changed = profile_costs.changed_layers(prof, layers)
            if changed:
                print(f"note: {args.profile} profiled another {args.model} ({'; '.join(changed[:3])}"
                      f"{'; ...' if len(changed) > 3 else ''}): its times are not this model's; run saatp profile "
                      f"again", flush=True)
        else:
            check_calibration_batch(args.batch)  # before the layers and the link are timed
            # calibrated on the run's own split (--cuts): a calibration on another split is not
            # used, and until 2026-11-27 (22:00 UTC) it silently left the predictions uncalibrated
            try:
                prof = profile_cli.run_profile(args.model, quotas, B=args.batch, cuts=cuts,
                                               stall_s=args.stall_timeout, backend=args.backend)
            except (KeyboardInterrupt, SystemExit, RuntimeError) as e:
                if args.json:  # the run's record, not an earlier run's result at that path (until 2026-11-28)
                    _keep_tuning(args, e, dict(model=args.model, stages=args.stages, B=args.batch, quotas=quotas,
                                               cuts=cuts, backend=args.backend, candidates=args.candidates,
                                               tune_steps=args.tune_steps, profile=None, plan=None, tuning=None,
                                               summary=None, left_out=[], seed=args.seed), "profiling")
                raise
        least = profile_costs.least_microbatch(prof, args.batch)
        try:
            # a split whose stage cannot fit the memory limit whatever the plan is not taken
            costs = profile_costs.build(prof, args.batch, quotas, cuts,
                                        limit_bytes=args.memory_limit * 2**20 if args.memory_limit else None,
                                        mmax=args.mmax)
        except (KeyError, TypeError, IndexError, AttributeError) as e:
            if not args.profile:
                raise
            raise ValueError(f"{args.profile}: not a complete saatp profile ({type(e).__name__}: {e})") from None
        cal = prof.get("calibration")
        if (args.profile or cal) and not costs.info.get("calibrated"):
            what = args.profile or "the profile"
            why = ("has no calibration" if not cal else
                   f"was calibrated on {len(cal.get('stages', []))} stages split at {cal.get('cuts')}, this run has "
                   f"{args.stages} split at {costs.info['cuts']}"
                   + (" (a stage of that split cannot fit --memory-limit)" if cuts is None and args.memory_limit
                      and not profile_costs.fits_at_all(prof, cal.get("cuts", []), args.stages, args.batch,
                                                        args.memory_limit * 2**20, args.mmax) else ""))
            print(f"note: {what} {why}: the predictions use the layers' tight-loop times (uncalibrated, "
                  f"errors of tens of per cent); saatp profile with these stages calibrates them"
                  + (f" (--cuts {','.join(map(str, costs.info['cuts']))})" if cuts is None and args.memory_limit
                     else ""), flush=True)
        if args.profile and prof.get("backend", "gloo") != args.backend:
            print(f"note: {args.profile} measured its link and calibration runs with {prof.get('backend', 'gloo')}, "
                  f"this run uses {args.backend}: saatp profile --backend {args.backend} measures them as this run "
                  f"sends", flush=True)
        if args.profile and prof.get("stage_quotas") is not None and list(prof["stage_quotas"]) != list(quotas):
            # plan umpipe --profile plans for the profile's quotas: a run that left out --quota or
            # --slow ran other quotas than the plan's without a word (until 2026-11-28)
            print(f"note: this run's CPU quotas {quotas} are not those {args.profile} was measured with "
                  f"({prof['stage_quotas']}, what saatp plan umpipe --profile plans for); --quota and --slow set "
                  f"them", flush=True)
        cal_B = cal.get("B") if isinstance(cal, dict) else None
        if args.profile and isinstance(cal_B, int) and cal_B != args.batch:
            # as for the quotas: a run of --batch 16 on a profile calibrated at B = 12 planned for 16
            # while plan umpipe --profile planned for 12, without a word (until 2026-11-28)
            print(f"note: --batch {args.batch} is not the B={cal_B} {args.profile} was calibrated at (what saatp plan "
                  f"umpipe --profile plans for; its --batch {args.batch} plans for this run)"
                  + (f"; microbatches above {cal_B} samples are predicted beyond what the calibration measured"
                     if args.batch > cal_B else ""), flush=True)
        limit = [args.memory_limit * 2**20] * args.stages if args.memory_limit else None
        t0 = time.time()
        fam = family.plan(costs, mmax=args.mmax, limit=limit, seed=args.seed, dual_check=False,
                          top=4 * max(args.candidates, 1))  # spread_by_count picks from these
        plan_s = time.time() - t0
        runs = candidates.candidate_runs(costs, fam, schedules, args.candidates, args.mmax, M, limit)
        if not runs:
            raise ValueError("no schedule fits the memory limits" if limit else "no schedule has a feasible plan")
        left = [s for s in schedules if s not in {r["family"] for r in runs}]
        why = []
        if left:
            # the model's least microbatch was not named: B=5 on 3 stages with a BatchNorm left
            # torch-1f1b out (M=5 is its only count) "as torch-1f1b needs M >= the stage count"
            why = ([f"torch's schedules need M dividing B and at most --mmax {args.mmax}, torch-1f1b also "
                    f"M >= the stage count"] if set(left) & set(TORCH_SCHEDULES) else []) + (
                [f"microbatches of at least {least} samples (the model's least)"] if least > 1 else []) + (
                ["the memory limits"] if limit else [])
            print(f"note: left out {', '.join(left)}: no microbatch count fits ({'; '.join(why)})", flush=True)
        load = [round(x, 2) for x in os.getloadavg()]
        tuned_out, phase = None, "final session"
        try:
            if len({r["family"] for r in runs}) < len(runs):  # some method has several candidates: tune
                phase = "tuning session"
                tuned = _session(costs, args, runs, args.tune_steps, quotas)
                phase = "final session"
                tuned_out = first = tuning.summarize(runs, tuned)  # what an interrupted run-off keeps
                contenders = tuning.runoff_contenders(runs, first["runs"])
                picks = tuning.finalist_candidates(runs, contenders)  # as tuning.runoff_picks
                if picks:  # the run-off: a method's near-equal finalists measured again, all methods alike
                    print(f"run-off: {tuning.runoff_line(runs, picks)} within {tuning.RUNOFF_WITHIN:.0%} of their "
                          f"method's fastest, {args.tune_steps} iterations more each", flush=True)
                    phase = "run-off"
                    tuned = tuning.merge_runoff(tuned, picks, _session(costs, args, [runs[i] for i in picks],
                                                                args.tune_steps, quotas))
                    phase = "final session"
                tuned_out = tuning.summarize(runs, tuned)
                tuned_out["runoff"] = [runs[i]["label"] for i in picks]
                tuned_out["first_round_s"] = {r["label"]: r["measured_s"] for r in first["runs"]}
                tuned_out["finalists"] = {f: [runs[i]["label"] for i in idx] for f, idx in contenders.items()}
                runs, tuned_out["umpipe_choice"] = tuning.keep_tuned(runs, tuned_out["runs"], contenders)
                if args.profile and drift.timed_as_calibrated(args.warmup, args.lead):
                    tuned_out["rescaled"] = drift.rescale_for_drift(runs, drift.host_drift(
                        prof, args.batch, costs.info["cuts"], tuned_out["runs"], quotas=quotas, backend=args.backend),
                        tuned_out["runs"], args.batch)
            elif args.tune_steps != TUNE_STEPS:
                print(f"note: --tune-steps {args.tune_steps} is unused: every method has one candidate "
                      f"(--candidates {args.candidates}), so nothing is tuned", flush=True)
            final = _session(costs, args, runs, args.steps, quotas)
        except (KeyboardInterrupt, SystemExit, RuntimeError) as e:
            # keep the tuning session's measurements (minutes of them): until 2026-11-28 a Ctrl-C
            # or a failed stage in the final session lost them
            if args.json:
                _keep_tuning(args, e, dict(model=args.model, stages=args.stages, B=args.batch, quotas=quotas,
                                           cuts=costs.info["cuts"], backend=args.backend, candidates=args.candidates,
                                           tune_steps=args.tune_steps, profile=args.profile, plan=fam.public(),
                                           tuning=tuned_out, summary=None, left_out=left, seed=args.seed), phase)
            raise
        load.extend(round(x, 2) for x in os.getloadavg())
    except (ValueError, RuntimeError) as e:
        print(f"saatp train pipeline: {e}", file=sys.stderr)
        return 2
    out = dict(model=args.model, stages=args.stages, B=args.batch, quotas=quotas, cuts=costs.info["cuts"],
               backend=args.backend, steps=args.steps, warmup=args.warmup, lead=args.lead,
               candidates=args.candidates, tune_steps=args.tune_steps, machine=prof.get("machine"),
               calibrated=costs.info.get("calibrated"), profile=args.profile, plan_seconds=plan_s,
               load_average=dict(before_1_5_15=load[:3], after_1_5_15=load[3:]),
               plan=fam.public(), tuning=tuned_out, summary=tuning.summarize(runs, final), left_out=left,
               # what chose the candidates and left schedules out (until 2026-11-28 the JSON said
               # which were left out, not why, and nothing of a memory limit)
               left_out_because=why, memory_limit_mb=args.memory_limit, mmax=args.mmax, microbatches=M,
               seed=args.seed)
    if args.profile and not drift.timed_as_calibrated(args.warmup, args.lead):
        out["host_drift"] = None
        print(f"note: with --warmup {args.warmup} and --lead {args.lead} the iterations are not timed as the "
              f"profile's calibration timed them (each after an untimed one of the same plan, after a warm-up), so "
              f"whether the host still runs as when {args.profile} was taken is not checked", flush=True)
    elif args.profile:  # a profile made now is not stale
        out["host_drift"] = drift.host_drift(prof, args.batch, costs.info["cuts"],
                                       (tuned_out or {}).get("runs", []) + out["summary"]["runs"], quotas=quotas,
                                       backend=args.backend)
    _print(out)
    write_result_files(out, args.json, args.plot, plot_pipeline)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="saatp train pipeline", description=__doc__.split("\n")[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
