"""Counter names the switch program and its controller share.

The generator (:mod:`.p4gen`) declares one ``c_<name>`` counter per job for each of
:data:`EVENT_COUNTERS` and a ``DROP_<NAME>`` index into ``c_drop`` for each of
:data:`DROP_REASONS` (in this order); the controller reads them back by the same names.
"""
from __future__ import annotations

# per-job events (counter arrays indexed by job id), described in p4src/SA-ATP.md section 4
EVENT_COUNTERS = ("complete", "evict", "detect", "redirect", "dup", "nack", "stale",
                  "violation", "overflow")
# why the switch dropped a packet: index into the c_drop counter array
DROP_REASONS = ("parse", "version", "klog2", "length", "job", "slot", "wid", "type", "noroute")
DROP_COUNTER_SIZE = 16
if len(DROP_REASONS) > DROP_COUNTER_SIZE:
    raise ValueError("more drop reasons than c_drop has entries")
