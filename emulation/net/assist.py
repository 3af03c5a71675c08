"""Compute assist in Mininet (SA-ATP.md §14, "reading B"): the pieces the runner and the
agents share.

A leading worker (the *helper*) computes a share φ of a persistent straggler's mini-batch
from a stored replica of the straggler's data shard and contributes it as a **virtual
worker** v = 31 − straggler from its own host; the straggler all-reduces its input minus
that part.  Every sum stays exact (``split``): the switch adds q − part and part.

How a run gets there (``saatp experiment mininet --workload saatp-assist``):

1. The warm-up iteration(s) run plain SA-ATP (or SwitchML-like for ``switchml-assist``).
   After the last one every agent writes ``ASSIST_DIR/report-RANK.json``: the compute time
   it measured for its own mini-batch (the compute model's sleep; a real system measures
   its step time the same way) and its all-reduce time.
2. :class:`Coordinator` (a thread of the runner, the job's control plane) waits for every
   report, reads the switch's choice of helper (``j_helper``) and its detection counter
   over P4Runtime, and decides with :func:`plan_assist`: the straggler is the host with
   the longest compute, its lag D the excess over the others' median T_c, and it is
   assisted only if D > 2·T_s (a shorter lag costs more than it saves, §14).  Nothing is
   taken from the command line's ``--straggler``.
3. It configures the switch (:func:`configure_switch`: ``Controller.set_assist`` over
   P4Runtime: bit v in the job's full mask, ``wid_port[job, v]`` → the helper's port), reads
   the configuration back, and writes ``ASSIST_DIR/plan.json``, which the agents wait for
   before their first counted iteration.
4. From then on the straggler computes (1 − φ) of its batch, the helper its own batch and
   then φ of the straggler's, and v all-reduces ``part`` from the helper's host.

**Results on the helper's host.** §14 adds a multicast replica (helper port, rid v) so the
virtual worker gets its own copy of every result.  On a shaped link that doubles the
helper's downlink (two copies of each result on one port: it becomes the slowest host and
sets everyone's pace), so by default (``results="local"``) the replica is left out and the
helper's agent hands every RESULT and PACK its real worker receives to the virtual worker
as well (:func:`route`): one host, one copy.  Unicast packets for v (NACKs, redirects,
shadow-copy results) still reach it through ``wid_port`` and the header's ``dst``.
``results="replica"`` keeps §14's replica, for comparison.

**The threshold.** With φ from §14 the assisted straggler still starts φ·T_c after the
others (250 ms for T_c = 500 ms and D = 1 s), which can be above T_s, so SA-ATP would evict
its rounds to a helper.  By default (``threshold="lift"``) the controller raises the job's
T_s to twice that predicted lag (:func:`lifted_threshold`, ``Controller.set_threshold``), so
the switch waits for the assisted straggler and still hands a worker later than that to a
helper; ``threshold="keep"`` leaves T_s alone.
"""
from __future__ import annotations

import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from host_agent import wire

MAX_ASSIST_WORKERS = 15          # virtual wids are 31 - straggler: they must stay above the real ones
MIN_LAG_TS = 2.0                 # assist only a lag above this many T_s (SA-ATP.md §14)
_TYPE_AT = 0                     # version (7..4) | type (3..0)
_DST_AT = wire.BYTE_FIELDS["dst"][0]


def virtual_wid(straggler: int) -> int:
    return wire.MAX_WORKERS - 1 - straggler


def phi(lag: float, t_c: float) -> float:
    """The share of the straggler's mini-batch the helper computes (SA-ATP.md §14): the
    straggler computes (1 − φ)(T_c + D), the helper T_c + φ·T_c, equal at φ = D / (2·T_c + D)."""
    if lag <= 0:
        return 0.0
    if t_c <= 0:
        raise ValueError("compute assist needs a compute time T_c > 0 (--compute-ms)")
    return lag / (2 * t_c + lag)


def split(q: np.ndarray, share: float) -> tuple[np.ndarray, np.ndarray]:
    """(q − part, part) with part = trunc(share · q): int32 vectors whose sum is exactly q."""
    q = np.asarray(q, dtype=np.int32)
    part = (q.astype(np.float64) * share).astype(np.int32)
    return q - part, part


def route(data: bytes, virtual: int, share_results: bool) -> tuple[bool, bool]:
    """Where an SA-ATP packet arriving at the helper's host goes: (to the real worker, to the
    virtual worker).  Packets addressed to v (the header's ``dst``, which the switch sets on
    every packet it sends) go to v only; with ``share_results`` the results and PACKs of the
    real worker are handed to v as well (they carry the same sums; a PACK releases only the
    rounds whose bitmap names the receiver)."""
    if len(data) < wire.HDR_LEN:
        return True, False
    if data[_DST_AT] == virtual:
        return False, True
    return True, share_results and (data[_TYPE_AT] & 0x0F) in (wire.RESULT, wire.PACK)


def plan_assist(compute_s: dict[int, float], t_s: float, *, switch_helper: int | None = None,
                detect: int | None = None, min_lag_ts: float = MIN_LAG_TS) -> dict[str, Any]:
    """Decide compute assist from what the job measured: each rank's compute time of one
    mini-batch, the switch's helper choice and detection count.  Returns the plan the agents
    follow (``assist`` false with a ``reason`` when there is nothing worth doing)."""
    n = len(compute_s)
    plan: dict[str, Any] = {"assist": False, "compute_s": {str(r): round(c, 4) for r, c in sorted(compute_s.items())},
                            "switch_helper": switch_helper, "switch_detect": detect}
    if n < 2:
        return plan | {"reason": "one worker"}
    if n > MAX_ASSIST_WORKERS:
        return plan | {"reason": f"{n} workers: the virtual wids (31 - straggler) need at most "
                                 f"{MAX_ASSIST_WORKERS}"}
    straggler = max(compute_s, key=lambda r: (compute_s[r], -r))
    others = [c for r, c in compute_s.items() if r != straggler]
    t_c = statistics.median(others)
    lag = compute_s[straggler] - t_c
    plan.update(straggler=straggler, lag_s=round(lag, 4), t_c_s=round(t_c, 4))
    if t_c <= 0:
        return plan | {"reason": "no compute to share (T_c = 0: give --compute-ms)"}
    if lag <= min_lag_ts * t_s:
        return plan | {"reason": f"lag {lag * 1000:.0f} ms is not above {min_lag_ts:g}·T_s = "
                                 f"{min_lag_ts * t_s * 1000:.0f} ms"}
    if switch_helper is not None and 0 <= switch_helper < n and switch_helper != straggler:
        helper, source = switch_helper, "the switch's helper"
    else:
        helper = min((r for r in compute_s if r != straggler), key=lambda r: (compute_s[r], r))
        source = "the fastest worker (the switch chose no helper)"
    f = phi(lag, t_c)
    return plan | {"assist": True, "helper": helper, "helper_source": source, "virtual": virtual_wid(straggler),
                   "phi": f,
                   # what the model predicts: the straggler and v start φ·T_c after the others
                   "predicted_lag_s": round(f * t_c, 4)}


def write_json(path: Path, obj: Any) -> None:
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    os.replace(tmp, path)


def report_path(d: Path | str, rank: int) -> Path:
    return Path(d) / f"report-{rank}.json"


def plan_path(d: Path | str) -> Path:
    return Path(d) / "plan.json"


def lifted_threshold(t_s: float, predicted_lag: float) -> float:
    """The switch's T_s once assist runs: at least twice the residual lag the plan predicts,
    never lower than before.  A round that waits for the assisted straggler is then waited
    for, as SwitchML does, instead of evicted; a worker later than that is still handed to a
    helper.  (Evicting a round a few hundred ms late costs more than the wait on a shaped
    link: the helper's port carries the partials and the late data on top of its results.)"""
    return max(t_s, 2 * predicted_lag)


def configure_switch(ctl, job: int, plan: dict[str, Any], results: str = "local",
                     threshold: str = "lift") -> dict[str, Any]:
    """Program the assist of ``plan`` on the switch through the SA-ATP controller
    (``Controller.set_assist``: full mask, ``wid_port`` of v → the helper's port, and the
    multicast replica (helper port, rid v), which ``results="local"`` takes out again);
    ``threshold="lift"`` raises the job's T_s (``Controller.set_threshold``) to
    :func:`lifted_threshold` in the modes that detect stragglers."""
    spec = ctl.jobs[job]
    v, port = plan["virtual"], spec.ports[plan["helper"]]
    ctl.set_assist(job, v, port)
    if results == "local":
        reps = [(spec.ports[w], w) for w in range(spec.nworkers)]
        if spec.fixed_helper is not None:
            reps.append((spec.ports[spec.fixed_helper], spec.fixed_helper))
        ctl.sw.mc_set_group(spec.mgid, reps)
    out = {"virtual": v, "helper_port": port, "mgid": spec.mgid, "results": results}
    if spec.mode != "switchml":      # SwitchML-like never detects: T_s means nothing there
        out["t_s"] = spec.t_s
    if threshold == "lift" and spec.mode != "switchml" and spec.t_s is not None:
        new = lifted_threshold(spec.t_s, plan["predicted_lag_s"])
        if new > spec.t_s:
            ctl.set_threshold(job, new)
            out["t_s"] = new
    return out


def read_back(client, job: int, mgid: int, virtual: int) -> dict[str, Any]:
    """What the switch holds for the assist, read over P4Runtime: the job's full mask
    (``job_cfg``'s action data), v's ``wid_port`` entry, the job's multicast group."""
    out: dict[str, Any] = {}
    idx = client._idx()
    for e in client.read_table("job_cfg"):
        key = [int.from_bytes(m.exact.value, "big") for m in e.match]
        if key == [job]:
            act = idx.actions.get(e.action.action.action_id)
            names = {p.id: p.name for p in act.params} if act is not None else {}
            out["job_cfg"] = {names.get(p.param_id, str(p.param_id)): int.from_bytes(p.value, "big")
                              for p in e.action.action.params}
            out["full_mask"] = out["job_cfg"].get("full")
    for e in client.read_table("wid_port"):
        key = [int.from_bytes(m.exact.value, "big") for m in e.match]
        if key == [job, virtual]:
            out["wid_port"] = int.from_bytes(e.action.action.params[0].value, "big")
    out["mc_group"] = client.read_multicast_groups().get(mgid)
    return out


class Coordinator(threading.Thread):
    """The job's control plane during an assist run (a thread of the runner): waits for the
    agents' reports, decides (:func:`plan_assist`), programs the switch and publishes the plan
    (``plan.json``).  Always publishes a plan (``assist: false`` with the reason when it
    cannot assist), so that no agent waits forever."""

    def __init__(self, directory: Path | str, nranks: int, t_s: float, *, controller=None, client=None,
                 job: int = 0, results: str = "local", threshold: str = "lift", timeout: float = 120.0,
                 decide: Callable[..., dict] = plan_assist):
        super().__init__(daemon=True, name="assist-coordinator")
        self.dir = Path(directory)
        self.n = nranks
        self.t_s = t_s
        self.ctl = controller
        self.client = client
        self.job = job
        self.results = results
        self.threshold = threshold
        self.timeout = timeout
        self.decide = decide
        self.stop_event = threading.Event()
        self.plan: dict[str, Any] | None = None

    def _reports(self) -> dict[int, dict]:
        out = {}
        for r in range(self.n):
            try:
                out[r] = json.loads(report_path(self.dir, r).read_text())
            except (OSError, json.JSONDecodeError):
                pass
        return out

    def run(self) -> None:
        t0 = time.monotonic()
        reps: dict[int, dict] = {}
        while not self.stop_event.is_set() and time.monotonic() - t0 < self.timeout:
            reps = self._reports()
            if len(reps) == self.n:
                break
            self.stop_event.wait(0.01)
        t_all = time.monotonic()
        if len(reps) < self.n:
            plan = {"assist": False, "reason": f"{self.n - len(reps)} of {self.n} agents did not report"}
        else:
            plan = self._decide(reps)
        plan["reports_wait_s"] = round(t_all - t0, 3)
        plan["decide_s"] = round(time.monotonic() - t_all, 3)
        plan["published"] = time.time()
        self.plan = plan
        write_json(plan_path(self.dir), plan)

    def _decide(self, reps: dict[int, dict]) -> dict[str, Any]:
        helper = detect = None
        if self.ctl is not None:
            try:
                helper = self.ctl.job_state(self.job)["helper"]
                events = self.ctl.counters(self.job)
                detect = events["detect"]
            except Exception as e:  # noqa: BLE001 - decide without the switch's view
                helper, detect = None, f"unreadable: {e}"
        plan = self.decide({r: float(x["compute_s"]) for r, x in reps.items()}, self.t_s,
                           switch_helper=helper, detect=detect if isinstance(detect, int) else None)
        if isinstance(detect, int):
            plan["events_at_plan"] = events        # the switch's counters after the warm-up
        if not plan.get("assist"):
            return plan
        if self.ctl is None:
            return plan | {"assist": False, "reason": "no controller to program the switch"}
        try:
            plan["switch"] = configure_switch(self.ctl, self.job, plan, self.results, self.threshold)
            if self.client is not None:
                plan["switch"]["read_back"] = read_back(self.client, self.job, plan["switch"]["mgid"],
                                                        plan["virtual"])
        except Exception as e:  # noqa: BLE001 - the agents carry on without assist
            return plan | {"assist": False, "reason": f"programming the switch failed: {type(e).__name__}: {e}"}
        return plan


def wait_for_plan(directory: Path | str, wait: Callable[[Callable[[], bool], float], Any],
                  timeout: float) -> dict[str, Any]:
    """An agent's side: wait (``wait(until, timeout)``, e.g. the agent's event loop, so it
    keeps answering late peers) for ``plan.json``; a plan saying no assist if none comes."""
    p = plan_path(directory)
    wait(p.exists, timeout)
    try:
        return json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return {"assist": False, "reason": f"no plan within {timeout:g} s"}
