"""The P4Runtime message classes import on a fresh interpreter, with either protobuf backend."""
from __future__ import annotations

import os
import subprocess
import sys
import pytest

from testsupport import p4rt_paths

REPO = p4rt_paths.REPO

SNIPPET = """
from google.protobuf import text_format, json_format, any_pb2
from google.rpc import status_pb2
from host_agent.p4runtime import p4runtime_pb2 as pb, p4info_pb2 as p4i, p4data_pb2, p4types_pb2
from host_agent.p4runtime.p4runtime_pb2_grpc import P4RuntimeStub, METHODS
e = pb.Error(canonical_code=3, message="m")
a = any_pb2.Any(); a.Pack(e)
st = status_pb2.Status(code=2, details=[a])
back = pb.Error(); status_pb2.Status.FromString(st.SerializeToString()).details[0].Unpack(back)
assert back.message == "m"
i = text_format.Parse('tables { preamble { id: 1 name: "t" } match_fields { id: 1 match_type: LPM } }', p4i.P4Info())
assert i.tables[0].match_fields[0].match_type == p4i.MatchField.LPM
assert json_format.MessageToDict(i)["tables"][0]["preamble"]["name"] == "t"
assert pb.Update.Type.Value("INSERT") == 1 and len(METHODS) == 6
print("ok", type(pb.WriteRequest).__module__)
"""


@pytest.mark.parametrize("impl", [None, "python"])
def test_stubs_import_in_fresh_interpreter(impl):
    env = dict(os.environ)
    env.pop("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", None)
    if impl:
        env["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = impl
    r = subprocess.run([sys.executable, "-c", SNIPPET], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok")


def test_schema_covers_the_spec_messages():
    from host_agent.p4runtime import p4info_pb2 as p4i
    from host_agent.p4runtime import p4runtime_pb2 as pb
    names = {f.name for f in pb.Entity.DESCRIPTOR.fields}
    assert {"table_entry", "counter_entry", "direct_counter_entry", "register_entry",
            "packet_replication_engine_entry", "digest_entry", "meter_entry"} <= names
    assert {f.name for f in p4i.Table.DESCRIPTOR.fields} >= {"match_fields", "action_refs", "is_const_table",
                                                            "direct_resource_ids", "idle_timeout_behavior"}
    assert pb.DESCRIPTOR.package == "p4.v1" and pb.DESCRIPTOR.name == "p4/v1/p4runtime.proto"
