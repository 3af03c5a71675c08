"""Emulation side of saatp: the embedded P4 target, the switch process, topologies, experiments."""
