"""Planners for training on heterogeneous clusters.

* :mod:`host_agent.scheduling.workloads` -- analytic layer profiles (VGG16, ResNet-50,
  GPT-style transformers), devices, links, clusters and straggler models.
* :mod:`host_agent.scheduling.costmodel` -- the pipeline cost model: the unequal-microbatch
  fill-drain recurrence (vectorised over a population axis), GPipe / 1F1B list schedules,
  data-parallel synchronisation times.
* :mod:`host_agent.scheduling.umpipe` -- UMPIPE: DGAP / TiDGAP and its baselines
  (``saatp plan umpipe``).
* ``online`` (Lyapunov joint DP+MP planner) and ``cgp`` (cooperative grouping) live beside.
"""
