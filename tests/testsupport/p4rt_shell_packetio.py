"""Run by test_p4runtime_shell.py with p4runtime-shell's interpreter: packet I/O and counters."""
import sys

import p4runtime_sh.shell as sh

addr, p4info_path, p4src_path = sys.argv[1:4]
sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1),
         config=sh.FwdPipeConfig(p4info_path, p4src_path), verbose=False)
pin = sh.PacketIn()
frame = bytes.fromhex("020000000002" "020000000001" "88b6") + bytes(46)
sh.PacketOut(frame, egress_port="2").send()
print("READY", flush=True)
sys.stdin.readline()                      # the test feeds a frame into port 3 now
for msg in pin.sniff(timeout=3):
    md = {m.metadata_id: int.from_bytes(m.value, "big") for m in msg.packet.metadata}
    print("PIN", msg.packet.payload.hex(), md.get(1), flush=True)
    break
ce = sh.CounterEntry("MyIngress.port_packets")
ce.index = 3
for e in ce.read():
    print("CTR", e.data.packet_count, e.data.byte_count)
sh.teardown()
print("DONE", flush=True)
