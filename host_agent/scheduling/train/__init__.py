"""``saatp train pipeline``: the top layer over :mod:`..pipeline` (runtime), :mod:`..profile`
(measured cost models) and :mod:`..umpipe` (plan family).

:mod:`.candidates` chooses what each method measures, :mod:`.tuning` chooses among the
measurements (run-off, sign test) and summarises them, :mod:`.drift` tells a stale profile,
and :mod:`.cli` runs the sessions and prints."""
