"""Run a training command (the DDP example) in a Mininet host and write the runner's JSON.

    python -m emulation.net.ddp_wrap --out FILE -- python scripts/ddp_example.py --steps 20

``ok`` is the command's exit status 0; rank 0's per-step table (``step loss iter-ms``) and
its summary line are parsed into ``iters`` / ``summary``; the output's tail is kept.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

_ROW = re.compile(r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print("usage: python -m emulation.net.ddp_wrap --out FILE [--timeout S] -- COMMAND...", file=sys.stderr)
        return 2
    k = argv.index("--")
    ap = argparse.ArgumentParser(prog="python -m emulation.net.ddp_wrap")
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args(argv[:k])
    cmd = argv[k + 1:]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=a.timeout)
        rc, out = p.returncode, p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        rc, out = "timeout", (e.stdout or b"").decode(errors="replace")
    except OSError as e:
        rc, out = "failed", str(e)
    sys.stdout.write(out)
    iters = []
    for line in out.splitlines():
        m = _ROW.match(line)
        if m:
            iters.append({"iter": int(m[1]), "loss": float(m[2]), "time_s": float(m[3]) / 1000})
    summary = next((ln for ln in out.splitlines() if ln.startswith("[ddp] mean iteration")), None)
    res = {"ok": rc == 0, "rc": rc, "iters": iters, "summary": summary, "wall_s": time.monotonic() - t0,
           "rank": int(os.environ.get("RANK", -1)), "tail": out.splitlines()[-15:]}
    with open(a.out + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    os.replace(a.out + ".tmp", a.out)
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
