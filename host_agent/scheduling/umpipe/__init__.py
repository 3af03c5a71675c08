"""UMPIPE: unequal microbatch partitions for pipeline parallelism, planned by DGAP/TiDGAP.

``DGAP(pop, gens, seed=...).run(costs) -> Result``; baselines in :mod:`.baselines`;
named scenarios in :mod:`.scenarios`; ``saatp plan umpipe`` in :mod:`.cli`.
"""

from .dgap import DGAP, Result, equal_seeds, repair_row  # noqa: F401
