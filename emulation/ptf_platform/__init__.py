"""PTF platform modules for ``saatp switch`` (pass this directory to ``ptf --platform-dir``).

``saatp_udp``: the dataplane ports are UDP tunnels, one Ethernet frame per datagram, the
other ends of ``saatp switch -i N@udp:...`` ports; no root needed::

    saatp switch prog.p4 -i 0@udp:9000:127.0.0.1:9100 -i 1@udp:9001:127.0.0.1:9101 &
    ptf --platform-dir $(python -c 'import emulation.ptf_platform as p; print(p.DIR)') \\
        --platform saatp_udp --test-dir tests/ptf -i 0@udp:9100:127.0.0.1:9000 -i 1@udp:9101:127.0.0.1:9001
"""
from pathlib import Path

DIR = str(Path(__file__).resolve().parent)
PLATFORM = "saatp_udp"
