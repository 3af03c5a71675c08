"""Run by test_p4runtime_shell.py with p4runtime-shell's own interpreter (another venv)."""
import sys

import p4runtime_sh.shell as sh
from p4runtime_sh.global_options import global_options
from p4runtime_sh.p4runtime import P4RuntimeWriteException

addr, p4info_path, p4src_path, canonical = sys.argv[1:5]
global_options["canonical_bytestrings"] = canonical == "1"
sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1),
         config=sh.FwdPipeConfig(p4info_path, p4src_path), verbose=False)
te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.ipv4_forward")
te.match["hdr.ipv4.dstAddr"] = "10.0.2.2/32"
te.action["dstAddr"] = "02:00:00:00:02:02"
te.action["port"] = "2"
te.insert()
te2 = sh.TableEntry("ipv4_lpm")(action="ipv4_forward")
te2.match["hdr.ipv4.dstAddr"] = "10.0.0.0/8"
te2.action["dstAddr"] = "02:00:00:00:00:01"
te2.action["port"] = "1"
te2.insert()
for e in sh.TableEntry("MyIngress.ipv4_lpm").read():
    print("READ", e.match["hdr.ipv4.dstAddr"].lpm.prefix_len, e.action["port"].value.hex())
try:
    te.insert()
except P4RuntimeWriteException as e:
    print("DUP", str(e).replace("\n", " "))
mcg = sh.MulticastGroupEntry(1).add(1, 1).add(2, 1)
mcg.insert()
for g in sh.MulticastGroupEntry(1).read():
    print("MC", sorted((r.egress_port, r.instance) for r in g.replicas))
sh.teardown()
print("DONE")
