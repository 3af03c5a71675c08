"""``saatp train pipeline``: the top layer over :mod:`..pipeline` (runtime), :mod:`..profile`
(measured cost models) and :mod:`..umpipe` (plan family)."""
