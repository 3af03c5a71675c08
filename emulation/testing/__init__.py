"""Packet-level testing of P4 programs on ``saatp switch`` (see ``docs/packet-testing.md``).

* :mod:`.switch_process` starts the switch process with UDP-tunnel or interface ports;
* :mod:`.packets` sends and checks scapy packets on named ports (``send``, ``expect``,
  ``expect_no_packet``), and :mod:`.pytest_plugin` gives pytest tests a ``p4_switch`` fixture;
* :mod:`.netns` makes a network namespace with veth pairs (root), and :mod:`.ptf_runner`
  runs PTF tests against the switch, on veths or through our PTF platform
  (:mod:`emulation.ptf_platform`, UDP tunnels, no root).
"""
