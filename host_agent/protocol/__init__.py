"""The SA-ATP protocol, written once.

``layout`` holds the header's field table and the constants derived from it; ``codec`` (the
struct/numpy fast path), ``scapy_layer``, ``framing`` (Ethernet/IPv4/UDP) and ``p4gen`` (the
switch program) are all built from that table.  ``host_agent.wire`` gathers the names the
agents use into one import.
"""
