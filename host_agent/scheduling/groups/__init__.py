"""An executor for joint data+model-parallel plans on real processes (``saatp train groups``).

* :mod:`.plan` -- executable plans (groups = pipelines or single processes, layer bounds,
  shares) and the layer moves a re-plan needs.
* :mod:`.sampler` -- uneven data assignment: each group's share of every global batch.
* :mod:`.allreduce` -- the weighted all-reduce of gradients between group leaders.
* :mod:`.costs` -- measured per-layer costs, the planner's workload and the work of an op.
* :mod:`.quotas` -- per-process CPU quotas replayed from a straggler trace (cgroup v1).
* :mod:`.planner` -- the Lyapunov planner and the baselines on measured estimates, with
  migration costs.
* :mod:`.worker` / :mod:`.executor` -- the processes and their controller.
* :mod:`.cli`, :mod:`.plot` -- the command and its plots.
"""

__all__ = ["GroupsConfig", "run"]


def __getattr__(name: str):
    """``from host_agent.scheduling.groups import GroupsConfig, run`` (the executor's library
    call, as ``train_cgp`` is CGP's; until 2026-11-28 only from :mod:`.executor`), loaded on
    first use."""
    if name in __all__:
        from . import executor
        return getattr(executor, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
