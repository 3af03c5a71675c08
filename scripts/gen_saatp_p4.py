#!/usr/bin/env python3
"""Generate the SA-ATP switch program (``p4src/saatp.p4``) for a given number of lanes K.

    python scripts/gen_saatp_p4.py                 # K=256 (constants.DEFAULT_K) -> p4src/saatp.p4
    python scripts/gen_saatp_p4.py -k 256 -o /tmp/saatp256.p4 --slots 2048

A thin command line over :mod:`host_agent.protocol.p4gen`, which holds the generator (an
installed package can use it as ``python -m host_agent.protocol.p4gen``).
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from host_agent.constants import SAATP_P4  # noqa: E402
from host_agent.protocol.p4gen import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(default_output=str(SAATP_P4)))
