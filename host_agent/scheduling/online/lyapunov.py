"""Drift-plus-penalty online planner (design section 2.2) and the experiment driver.

Problem: minimise the time-average batch time subject to a time-average cost budget ``C``.
We keep the virtual queue in budget units,

    Q(t+1) = max(Q(t) + c(t)/C - 1, 0),

and each slot pick the plan minimising ``V * T(u)/T_ref + Q(t) * c(u)/C`` (``T_ref`` is a
reference batch time, so ``V`` is dimensionless). Neely's bounds give an average batch time
within ``O(1/V)`` of the optimum and a queue of ``O(V)``, i.e. the budget is met up to
``O(V/horizon)``. The baselines use the same outer loop (so they meet the same budget, i.e. we
compare at matched average cost) with their own fixed structure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..workloads import Workload, workload as get_workload
from .env import EnvConfig, SyntheticEnv
from .model import Plan, SystemModel
from .search import TentativeSearch

STATIC = ("bsp", "lbbsp", "lbbsp-ema", "pipeline")  # fixed device set chosen in hindsight
ONLINE = ("bsp+lyap", "lbbsp+lyap", "pipeline+lyap")  # ablation: same outer loop as ours
METHODS = ("joint",) + STATIC + ONLINE
LABELS = {
    "joint": "Lyapunov joint DP+MP (ours)",
    "bsp": "even-split BSP, best static device set",
    "lbbsp": "LB-BSP proportional (measured speeds), best static set",
    "lbbsp-ema": "LB-BSP proportional (EMA-predicted speeds), best static set",
    "pipeline": "single pipeline, uniform layers, best static set",
    "bsp+lyap": "even-split BSP + our Lyapunov device selection",
    "lbbsp+lyap": "LB-BSP + our Lyapunov device selection",
    "pipeline+lyap": "single pipeline + our Lyapunov device selection",
}


class LyapunovPlanner:
    def __init__(self, search: TentativeSearch, V: float, budget: float, t_ref: float,
                 kind: str = "joint", ema_alpha: float = 0.5):
        if not (V >= 0 and budget > 0 and t_ref > 0):
            raise ValueError("need V >= 0, budget > 0 and t_ref > 0")
        kind = kind.replace("+lyap", "")
        if kind not in ("joint",) + STATIC:
            raise ValueError(f"unknown method {kind!r}; known: {', '.join(METHODS)}")
        self.search = search
        self.V = float(V)
        self.budget = float(budget)
        self.t_ref = float(t_ref)
        self.kind = kind
        self.Q = 0.0
        self.ema = None
        self.ema_alpha = ema_alpha

    def score(self, plan: Plan) -> float:
        return self.V * plan.batch_time / self.t_ref + self.Q * plan.cost / self.budget

    def step(self, view, slot_key=None) -> Plan:
        if self.kind == "joint":
            cands = self.search.candidates(view, slot_key)
        elif self.kind == "lbbsp-ema":
            pred = view.speed if self.ema is None else self.ema
            cands = self.search.baseline_candidates(view, "lbbsp", slot_key, ema_speed=pred)
        else:
            cands = self.search.baseline_candidates(view, self.kind, slot_key)
        if not cands:
            raise RuntimeError("no feasible plan this slot (does the model fit on any device set?)")
        best = min(cands, key=lambda p: (self.score(p), p.batch_time))
        # the EMA predictor sees the speeds measured during the slot (after the decision)
        self.ema = view.speed.copy() if self.ema is None else \
            self.ema_alpha * view.speed + (1 - self.ema_alpha) * self.ema
        return best

    def observe_cost(self, c: float) -> None:
        self.Q = max(self.Q + c / self.budget - 1.0, 0.0)


@dataclass
class Scenario:
    name: str
    workload: str = "gpt1-14"
    B: int = 128
    slots: int = 2000
    seed: int = 0
    Vs: tuple[float, ...] = (1.0, 10.0, 100.0, 1000.0)
    V_main: float = 10.0
    budget_frac: float = 0.8
    calib_slots: int = 100
    gmax: int = 4
    env: EnvConfig = field(default_factory=EnvConfig)
    description: str = ""


SCENARIOS: dict[str, Scenario] = {
    "default": Scenario("default", description="N=8 (speeds 1/.5/.25, prices ~ speed^1.2, 4 nodes of 2, "
                        "100/10 Gb/s), GPT1-14, B=128, AR(1) speeds, transient stragglers p=0.05 x[2,5], "
                        "budget 80% of the fastest plan's cost"),
    "straggler": Scenario("straggler", env=EnvConfig(persistent=((0, 3.0, 1000),)),
                          description="default plus a persistent x3 straggler on device 0 from slot 1000"),
    "vgg16": Scenario("vgg16", workload="vgg16", B=256, description="default cluster, VGG16, B=256"),
    "small": Scenario("small", slots=300, Vs=(1.0, 10.0, 100.0), calib_slots=50,
                      description="default with 300 slots (for tests)"),
}


def get_scenario(name: str, **overrides) -> Scenario:
    try:
        base = SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}") from None
    from dataclasses import replace
    return replace(base, **{k: v for k, v in overrides.items() if v is not None})


def calibrate(search: TentativeSearch, env: SyntheticEnv, n: int) -> tuple[float, float]:
    """Mean batch time and cost of the unconstrained fastest plan (the joint search's minimum
    batch time over every candidate device set) over the first ``n`` slots.

    The budget is a fraction of that cost. (The design suggested the cost of using *all*
    devices; with slow devices and costly synchronisation the fastest plan rarely uses all
    of them, and a budget derived from it would not bind.)"""
    Ts, Cs = [], []
    for t in range(min(n, env.T)):
        cands = search.candidates(env.view(t), ("calib", t))
        if not cands:
            raise RuntimeError("the model does not fit on any device set")
        p = min(cands, key=lambda p: p.batch_time)
        Ts.append(p.batch_time)
        Cs.append(p.cost)
    return float(np.mean(Ts)), float(np.mean(Cs))


def build(sc: Scenario, wl: Workload | None = None):
    wl = wl or get_workload(sc.workload)
    env = SyntheticEnv(sc.slots, sc.seed, sc.env)
    model = SystemModel(wl, sc.B)
    search = TentativeSearch(model, gmax=sc.gmax, nominal_speed=env.speed0)
    return env, model, search


def run_scenario(sc: Scenario, methods=METHODS, Vs=None, progress=None) -> dict:
    """Run every (method, V) planner over the same environment trajectory."""
    env, model, search = build(sc)
    t0 = time.perf_counter()
    t_ref, c_all = calibrate(search, env, sc.calib_slots)
    budget = sc.budget_frac * c_all
    Vs = tuple(Vs or sc.Vs)
    runs = {}
    planners = {}
    for V in Vs:
        for m in methods:
            if m in STATIC or (m != "joint" and V != sc.V_main):
                continue
            planners[(m, V)] = LyapunovPlanner(search, V, budget, t_ref, kind=m)
            runs[(m, V)] = {"T": np.zeros(sc.slots), "c": np.zeros(sc.slots), "Q": np.zeros(sc.slots),
                            "G": np.zeros(sc.slots, dtype=int), "n_active": np.zeros(sc.slots, dtype=int)}
    plans_kept = {}
    cheapest = np.zeros(sc.slots)  # the cheapest candidate plan's cost per slot: what no method can go below
    for t in range(sc.slots):
        view = env.view(t)
        cheapest[t] = min(p.cost for p in search.candidates(view, t))
        for key, pl in planners.items():
            p = pl.step(view, slot_key=t)
            pl.observe_cost(p.cost)
            r = runs[key]
            r["T"][t], r["c"][t], r["Q"][t] = p.batch_time, p.cost, pl.Q
            r["G"][t], r["n_active"][t] = len(p.groups), len(p.active)
            if key == ("joint", sc.V_main) and t in (0, sc.slots // 2, sc.slots - 1):
                plans_kept[t] = p.to_dict()
        if progress and t % 100 == 0:
            progress(t)
    for m in methods:
        if m in STATIC:
            runs[(m, sc.V_main)] = static_baseline(sc, env, search, m, budget)
    wall = time.perf_counter() - t0
    out = summarise(sc, runs, budget, t_ref, c_all, wall, plans_kept, search.evaluated)
    # a budget below every plan's cost cannot be met by any method; until 2026-11-28 the report
    # gave cost/budget 10 for every method without saying why (--budget-frac 0.05)
    out["cheapest_cost_over_budget"] = float(cheapest.mean() / budget)
    return out


def static_baseline(sc: Scenario, env: SyntheticEnv, search: TentativeSearch, kind: str,
                    budget: float) -> dict:
    """The design's matched-cost baseline: one device set for the whole run, the one with the
    smallest average batch time among the candidate sets whose average cost meets the budget
    (chosen in hindsight over the whole trajectory, which favours the baseline)."""
    sets = search.device_sets(env.nominal_view())
    base = kind.replace("-ema", "")
    Ts = np.full((len(sets), sc.slots), np.inf)
    Cs = np.full((len(sets), sc.slots), np.inf)
    ema = None
    for t in range(sc.slots):
        view = env.view(t)
        pred = None
        if kind == "lbbsp-ema":
            pred = view.speed if ema is None else ema
        for i, devs in enumerate(sets):
            p = search.baseline_plan(view, base, devs, pred)
            if p is not None:
                Ts[i, t], Cs[i, t] = p.batch_time, p.cost
        ema = view.speed.copy() if ema is None else 0.5 * view.speed + 0.5 * ema
    mT, mC = Ts.mean(axis=1), Cs.mean(axis=1)
    ok = np.isfinite(mT) & (mC <= budget)
    i = int(np.argmin(np.where(ok, mT, np.inf))) if ok.any() else int(np.argmin(mC))
    Q = np.zeros(sc.slots)
    q = 0.0
    for t in range(sc.slots):
        q = max(q + Cs[i, t] / budget - 1.0, 0.0)
        Q[t] = q
    return {"T": Ts[i], "c": Cs[i], "Q": Q, "G": np.full(sc.slots, len(sets[i]) if base != "pipeline" else 1),
            "n_active": np.full(sc.slots, len(sets[i])), "set": [int(d) for d in sets[i]]}


def summarise(sc, runs, budget, t_ref, c_all, wall, plans_kept, evaluated) -> dict:
    out = {"scenario": sc.name, "description": sc.description, "workload": sc.workload, "B": sc.B,
           "slots": sc.slots, "seed": sc.seed, "V_main": sc.V_main, "budget": budget,
           "budget_frac": sc.budget_frac, "all_devices_cost": c_all, "t_ref": t_ref,
           "wall_s": wall, "plans_evaluated": evaluated, "runs": [], "example_plans": plans_kept}
    for (m, V), r in runs.items():
        T = r["T"]
        out["runs"].append({
            "method": m, "label": LABELS[m], "V": V,
            "avg_batch_time": float(T.mean()), "avg_cost": float(r["c"].mean()),
            "cost_over_budget": float(r["c"].mean() / budget), "final_Q": float(r["Q"][-1]),
            "avg_Q": float(r["Q"].mean()), "avg_groups": float(r["G"].mean()),
            "avg_active": float(r["n_active"].mean()), "static_set": r.get("set"),
            "series": {"T": T.tolist(), "Q": r["Q"].tolist(), "c": r["c"].tolist()},
        })
    main = next(x for x in out["runs"] if x["method"] == "joint" and x["V"] == sc.V_main)
    cmp = {}
    for x in out["runs"]:
        if x["method"] == "joint":
            continue
        Tj = np.asarray(main["series"]["T"])
        Tb = np.asarray(x["series"]["T"])
        cmp[x["method"]] = {
            "avg_reduction": 1.0 - main["avg_batch_time"] / x["avg_batch_time"],
            "max_slot_reduction": float(np.max(1.0 - Tj / Tb)),
            "speedup": x["avg_batch_time"] / main["avg_batch_time"],
        }
    out["comparison"] = cmp
    return out


def get_run(result: dict, method: str, V: float | None = None) -> dict:
    V = result["V_main"] if V is None else V
    for x in result["runs"]:
        if x["method"] == method and x["V"] == V:
            return x
    raise KeyError((method, V))
