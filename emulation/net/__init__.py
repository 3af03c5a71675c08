"""Mininet topologies and experiments with P4 switches (``saatp switch`` or BMv2).

* :mod:`.p4switch`  Mininet node classes :class:`SaatpSwitch` and :class:`Bmv2Switch`;
* :mod:`.commands`  their command lines (pure functions, no Mininet needed);
* :mod:`.topo`      topology descriptions: one switch with N workers, two racks under a
  spine, and the p4lang tutorials' ``topology.json`` (with per-switch runtime JSON);
* :mod:`.hostsetup` offloads off, IPv6 off, static ARP, CPU limits;
* :mod:`.control`   P4Runtime programming (the tutorials' runtime JSON, pipelines, counters);
* (the SA-ATP controller's switch calls over P4Runtime live in :mod:`host_agent.p4runtime.target`);
* :mod:`.session`   :class:`NetSession`: start, program, run agents, stop, check leftovers;
* :mod:`.agent`     the per-host workloads (SA-ATP worker, ring all-reduce, UDP echo);
* :mod:`.ddp_wrap`  the DDP example in a host, with the runner's JSON result;
* :mod:`.runner`    ``saatp experiment mininet``.

Mininet comes from the distribution (``apt install mininet``), not from PyPI; see
:func:`emulation.net.mn.import_mininet`.
"""
