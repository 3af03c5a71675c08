"""The v1model architecture as BMv2's simple_switch runs it, on top of the P4 front end.

``load.py`` (file or text -> front end -> ``arch.py`` lowering -> compiled ``Program``, and a
``Switch`` around it) -> ``switch.py`` (packet flow, traffic manager, control-plane API) with
``runtime.py``, ``tables.py``, ``externs.py``, ``hashes.py``; ``bmv2_limits.py`` (what p4c's BMv2
back end refuses, checked by the loader); ``errors.py`` for run-time errors.
"""
