"""Whether a profile still describes the host: the tuning session's measurements of the
configurations the profile's calibration ran, compared with the calibration's, and the final
predictions rescaled when the profile is stale."""

from __future__ import annotations

import statistics

from ..costmodel import equal_sizes
from .candidates import BASELINES

DRIFT_PCT = 10.0  # the host's change of speed since the profile beyond which it is stale


def timed_as_calibrated(warmup: int, lead: int) -> bool:
    """Whether a session's iterations are timed as the profile's calibration times them (after a
    warm-up, each right after an untimed one of the same plan: ``calibrate.calibrate``'s
    ``warmup=1, lead=1``), so that :func:`host_drift` compares like with like. With ``--warmup 0
    --lead 0`` a candidate's first iteration is its first ever (buffers allocated, torch's
    schedules set up), and until 2026-11-28 a fresh profile was called stale ("this host ran the
    profile's calibration configurations 198.2% slower ...: run saatp profile again") and the
    predictions rescaled by it."""
    return warmup >= 1 and lead >= 1


def host_drift(prof: dict, B: int, cuts, rows: list[dict], *, quotas, backend: str) -> dict | None:
    """How much faster (< 0) or slower this session ran the configurations the profile's
    calibration measured (:func:`calibration_label`: our GPipe/1F1B, UMPIPE's equal splits and
    torch's schedules at the same B, split, M, CPU quotas and backend; until
    2026-11-28 other quotas or another backend counted too, and a run at 0.3 CPU on a profile
    taken at 0.5 was told the host ran 68 % slower and to profile again): the median of measured
    over measured, no model involved. A profile describes the host when it was taken: on this
    VM a stage's 16-sample ops needed 14-23 % less CPU than a profile taken 10 hours earlier
    said (its 4-sample ops -17..+6 %), and that stale profile ranked microbatch counts wrongly
    (docs/pipeline-runtime.md). None when no configuration matches.

    ``stale``: most of the compared measurements moved the same way, each outside every
    iteration time the calibration measured for its configuration and by more than
    :data:`DRIFT_PCT`, and their median by more than that too. The calibration times each
    configuration 3 times: a model of a few milliseconds per iteration runs some iterations
    at full speed and some throttled (4 and 34 ms for one configuration), and comparing
    medians alone called a fresh profile 38-60 % off."""
    cal = prof.get("calibration") or {}
    if (not cal.get("points") or int(cal.get("B", -1)) != int(B) or list(cal.get("cuts") or []) != list(cuts)
            or cal.get("quotas") != list(quotas) or prof.get("backend", "gloo") != backend):
        return None
    then = {p["label"]: p for p in cal["points"]}
    for alias, label in SAME_CONFIGURATION.items():  # one configuration measured twice: both measurements
        if alias in then:
            pts = [then.pop(alias)] + ([then[label]] if label in then else [])
            its = [x for q in pts for x in (q.get("iterations_s") or [q["measured_s"]])]
            then[label] = dict(label=label, measured_s=statistics.median(its), iterations_s=its)
    pairs = []
    seen = set()
    for r in rows:
        label = calibration_label(r, B)
        p = then.get(label)
        # one measurement once: a session measures a configuration once for every row that runs
        # it (UMPIPE's equal split and the baseline's M, :func:`.cli._session`), and until 2026-11-28
        # each row counted again in the median and the majority (a 5-stage MLP's tuning: 4
        # measurements counted as "8 of 8 outside the calibration's range")
        key = measurement_key(r, label)
        if p is None or key in seen:
            continue
        seen.add(key)
        its = p.get("iterations_s") or [p["measured_s"]]
        rel = r["measured_s"] / p["measured_s"] - 1
        out = r["measured_s"] < min(its) or r["measured_s"] > max(its)
        pairs.append((label, rel, (1 if rel > 0 else -1) if out and abs(rel) * 100 > DRIFT_PCT else 0))
    if not pairs:
        return None
    med = statistics.median(x for _, x, _ in pairs) * 100
    moved = [m for *_, m in pairs]
    way = 1 if med > 0 else -1
    return dict(median_pct=med, configurations=list(dict.fromkeys(lb for lb, *_ in pairs)),
                compared=len(pairs), moved=sum(1 for m in moved if m == way),
                stale=abs(med) > DRIFT_PCT and sum(1 for m in moved if m == way) > len(pairs) / 2)


def rescale_for_drift(runs: list[dict], drift: dict | None, tuned: list[dict] | None = None,
                      B: int = 0) -> dict | None:
    """When the tuning session found the profile stale (:func:`host_drift`: the host ran the
    calibration's own configurations more than :data:`DRIFT_PCT` faster or slower, most of
    them outside the calibration's range), the final session's predictions are the model's
    times scaled by the model's error on those configurations in the tuning session (``tuned``,
    :func:`.tuning.summarize`'s rows: the median of measured over predicted, each measurement once);
    ``predicted_profile_s`` keeps the model's own. The layers' curves stay the profile's, the
    host's speed is the one measured minutes before; the final session's measurements are not
    used. On 2026-11-28 a profile of gpt-mini, taken a minute before, predicted 1F1B at M = 4
    at 140.5 ms, which the calibration had measured at 139.3 (three iterations: 139-159 ms) and
    the training session at 118-121 ms (+16.5 %). The factor was first the drift itself
    (measured now over measured by the calibration); a digits MLP profiled under a load of 6,
    whose model stood within 1 % of the session while its calibration runs had been slow, was
    then scaled by 0.72 to a 28 % error. Without ``tuned`` rows of those configurations the
    drift is the factor. Returns what was done (None: not stale, nothing changed)."""
    if not drift or not drift.get("stale"):
        return None
    seen, errs = set(), []
    for r in tuned or []:
        label = calibration_label(r, B)
        key = measurement_key(r, label)
        if label in drift["configurations"] and key not in seen and r.get("predicted_s"):
            seen.add(key)
            errs.append(r["measured_s"] / r["predicted_s"])
    factor = statistics.median(errs) if errs else 1 + drift["median_pct"] / 100
    for r in runs:
        r["predicted_profile_s"] = r["predicted_s"]
        r["predicted_s"] = r["predicted_s"] * factor
    return dict(factor=factor, median_pct=drift["median_pct"], configurations=drift["configurations"],
                compared=drift["compared"], moved=drift["moved"], from_model_error=bool(errs))


def measurement_key(r: dict, label: str | None) -> tuple:
    """One measurement of a session, whichever rows share it (:func:`.cli._session` measures a
    configuration once for every row that runs it)."""
    return label, r["measured_s"], tuple(r.get("iterations_s") or ())


# our runtime's 1F1B at M = 1 is its GPipe at M = 1 (F then B on every stage): the calibration
# times it under both labels, and a session measures it once. Until 2026-11-28 a session's M = 1
# was compared with the GPipe label's three iterations alone: a held-out CNN's calibration timed
# it at 22.1 ms as GPipe and 9.8 ms as 1F1B, and every run on that fresh profile was told the
# host ran 51 % faster and to profile again
SAME_CONFIGURATION = {"1f1b M=1": "gpipe M=1"}


def calibration_label(r: dict, B: int) -> str | None:
    """The label the calibration gives the configuration a measured row ran (``1f1b M=4``,
    ``torch-gpipe M=2``): a baseline's own, or an equal split UMPIPE measured (until 2026-11-28
    only our GPipe's and 1F1B's rows were compared, and a session of UMPIPE against torch's
    schedules, which ran 15 % faster than the profile's calibration a minute before, was not
    told)."""
    if r["family"] in BASELINES:
        label = r["label"] if r["label"].startswith(r["family"] + " M=") else None
        return SAME_CONFIGURATION.get(label, label) if r["family"] in ("gpipe", "1f1b") else label
    rows = r.get("rows")
    if r["family"] == "umpipe" and rows and all(list(x) == equal_sizes(B, len(rows[0])) for x in rows):
        label = f"{'gpipe' if r.get('kind') == 'fill-drain' else '1f1b'} M={len(rows[0])}"
        return SAME_CONFIGURATION.get(label, label)
    return None
