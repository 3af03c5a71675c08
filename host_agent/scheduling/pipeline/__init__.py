"""Pipeline-parallel training on real processes: unequal microbatches per stage.

* :mod:`.models` -- the built-in models (``vgg-mini``, ``gpt-mini``) as ``nn.Sequential``,
  ``MODULE:FN`` loading, deterministic batches.
* :mod:`.orders` -- per-stage op orders (fill-drain, 1F1B family) for unequal microbatch
  plans, found by an event simulation of the cost model; predicted time and memory peak.
* :mod:`.wire` -- tensors with a small shape header over ``torch.distributed`` send/recv.
* :mod:`.stage` -- one stage process: re-chunking, forward/backward, gradient accumulation.
* :mod:`.torch_schedules` -- torch.distributed.pipelining's ScheduleGPipe/Schedule1F1B baseline.
* :mod:`.cgroups` -- per-process cgroup v1 CPU quotas (heterogeneous "devices" on one host).
* :mod:`.launch` -- start one process per stage, collect measured iteration times.
* :mod:`.reference` -- single-process training on the same batches (the correctness check).

``saatp train pipeline`` lives in :mod:`host_agent.scheduling.train.cli` (it also needs the
profiler and the planners, which build on this package).
"""
