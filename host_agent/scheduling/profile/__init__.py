"""Measured cost models: ``saatp profile`` times each layer's forward and backward on this
machine (per CPU quota), the activation transfer between processes and the optimizer step,
fits the cost model's parameters and writes a JSON file the planners read.

* :mod:`.measure` -- timing of layers, optimizer and stash sizes in one process.
* :mod:`.link` -- point-to-point transfer times between two processes.
* :mod:`.fit` -- per-layer curve ``alpha + beta * max(b, knee)`` and link fits.
* :mod:`.costs` -- profile file -> layer cuts + :class:`~..costmodel.PipelineCosts`.
* :mod:`.cli` -- ``saatp profile``.
"""
