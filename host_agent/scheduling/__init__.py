"""Planners for training on heterogeneous clusters.

* :mod:`host_agent.scheduling.workloads` -- analytic layer profiles (VGG16, ResNet-50,
  GPT-style transformers), devices, links, clusters and straggler models.
* :mod:`host_agent.scheduling.costmodel` -- the pipeline cost model: the unequal-microbatch
  fill-drain recurrence (vectorised over a population axis), GPipe / 1F1B list schedules,
  data-parallel synchronisation times.
* :mod:`host_agent.scheduling.umpipe` -- UMPIPE: DGAP / TiDGAP and its baselines
  (``saatp plan umpipe``).
* :mod:`host_agent.scheduling.orders` -- per-stage op orders (fill-drain, 1F1B family) for
  unequal-microbatch plans: event simulation, predicted time, stashed-memory peak.
* :mod:`host_agent.scheduling.pipeline` -- the runtime that executes such plans, one process
  per stage over torch.distributed; ``train`` holds ``saatp train pipeline``.
* :mod:`host_agent.scheduling.profile` -- measured cost models (``saatp profile``).
* ``online`` (Lyapunov joint DP+MP planner) and ``cgp`` (cooperative grouping, with
  ``train_cgp`` for real runs, ``saatp train cgp``) live beside.
* :mod:`host_agent.scheduling.groups` -- the executor of joint DP+MP plans on real processes
  with trace-driven CPU quotas (``saatp train groups``).
* :mod:`host_agent.scheduling.digits` -- scikit-learn's digits and a small CNN for real runs.
* Shared by the real-process runs: :mod:`~host_agent.scheduling.rank_processes` (the ranks,
  their command line and their TCP store), :mod:`~host_agent.scheduling.run_options` (quota
  trace, backend, cgroups: config fields and command-line options),
  :mod:`~host_agent.scheduling.fn_specs` (``MODULE:FN`` names) and
  :mod:`~host_agent.scheduling.result_files` (``--json`` / ``--plot``).
"""
