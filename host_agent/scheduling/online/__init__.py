"""Online joint DP+MP planner (Lyapunov drift-plus-penalty), ``saatp plan lyapunov``.

* :mod:`.lp` -- water-filling data split (closed form and exact with caps), integer rounding.
* :mod:`.model` -- the system model: stage/group/sync times, cost, the communication-aware
  layer DP.
* :mod:`.env` -- a seeded synthetic dynamic environment (AR(1) speeds and bandwidths,
  transient and persistent stragglers, prices).
* :mod:`.search` -- tentative search over device sets, group counts, groupings, chain orders
  and microbatch sizes; the baselines' fixed structures; an exhaustive reference for small N.
* :mod:`.lyapunov` -- the planner (virtual cost queue), scenarios and the experiment driver.
"""

from .lp import round_shares, waterfill, waterfill_closed_form
from .lyapunov import LyapunovPlanner, Scenario, get_scenario, run_scenario
from .model import GroupPlan, Plan, SlotView, SystemModel
from .search import TentativeSearch

__all__ = ["round_shares", "waterfill", "waterfill_closed_form", "LyapunovPlanner", "Scenario",
           "get_scenario", "run_scenario", "GroupPlan", "Plan", "SlotView", "SystemModel", "TentativeSearch"]
