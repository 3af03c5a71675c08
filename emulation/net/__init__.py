"""Mininet topologies and experiments with P4 switches (``saatp switch`` or BMv2).

* :mod:`.p4switch`  Mininet node classes :class:`SaatpSwitch` and :class:`Bmv2Switch`;
* :mod:`.commands`  their command lines (pure functions, no Mininet needed);
* :mod:`.topo`      topology descriptions: one switch with N workers, two racks under a
  spine, and the p4lang tutorials' ``topology.json`` (with per-switch runtime JSON);
* :mod:`.hostsetup` offloads off, IPv6 off, static ARP, CPU limits;
* :mod:`.agent`     the per-host workloads (ring all-reduce, UDP echo) run inside hosts;
* :mod:`.runner`    ``saatp experiment mininet``.

Mininet comes from the distribution (``apt install mininet``), not from PyPI; see
:func:`emulation.net.mn.import_mininet`.
"""
