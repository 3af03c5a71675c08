"""Device configs as controllers for BMv2 send them: BMv2 JSON, raw or in a serialized
``p4.tmp.P4DeviceConfig`` built exactly as the p4lang tutorials' ``p4runtime_lib`` does
(``bmv2.buildDeviceConfig`` + ``switch.SetForwardingPipelineConfig``), standing for the
P4 program it was compiled from."""
from __future__ import annotations

import io
import json
import shutil
import zipfile

import grpc
import pytest

from emulation.p4runtime.device import Device
from emulation.p4runtime.device_config import (DeviceConfigError, program_named_in_bmv2_json,
                                               source_of_bmv2_json, unwrap_p4_device_config)
from emulation.p4runtime.p4info import p4info_from_program
from emulation.p4runtime.server import P4RuntimeServer
from emulation.v1model.load import load_switch
from host_agent.match import Lpm
from host_agent.p4runtime import p4config_pb2
from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.client import P4RuntimeClient
from testsupport import paths

ROUTER = paths.P4SRC / "basic_router.p4"


def bmv2_json(program: str) -> bytes:
    """The top of what p4c-bm2-ss writes (``program`` is the source path p4c was given)."""
    doc = {"header_types": [{"name": "scalars_0", "id": 0, "fields": []}], "headers": [],
           "program": program, "__meta__": {"version": [2, 23], "compiler": "https://github.com/p4lang/p4c"}}
    return json.dumps(doc, indent=2).encode("utf-8")


def tutorial_device_config(json_path) -> bytes:
    """p4runtime_lib: P4DeviceConfig(reassign=True, device_data=<the JSON file>), serialized."""
    device_config = p4config_pb2.P4DeviceConfig()
    device_config.reassign = True
    with open(json_path) as f:
        device_config.device_data = f.read().encode("utf-8")
    return device_config.SerializeToString()


def tutorial_set_pipeline(client: P4RuntimeClient, p4info, device_config: bytes) -> None:
    """p4runtime_lib's SwitchConnection.SetForwardingPipelineConfig, field by field."""
    request = pb.SetForwardingPipelineConfigRequest()
    request.election_id.low = 1
    request.device_id = client.device_id
    config = request.config
    config.p4info.CopyFrom(p4info)
    config.p4_device_config = device_config
    request.action = pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    client.stub.SetForwardingPipelineConfig(request, timeout=30)


@pytest.fixture
def exercise(tmp_path, monkeypatch):
    """A tutorial exercise directory after ``make``: basic.p4 and build/basic.json; cwd is there."""
    shutil.copy(ROUTER, tmp_path / "basic.p4")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "basic.json").write_bytes(bmv2_json("basic.p4"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def serve():
    servers, clients = [], []

    def start(device: Device) -> P4RuntimeClient:
        srv = P4RuntimeServer(device, "127.0.0.1:0").start()
        servers.append(srv)
        c = P4RuntimeClient(srv.address, device_id=device.device_id, election_id=1)
        clients.append(c)
        return c
    yield start
    for c in clients:
        c.close()
    for s in servers:
        s.stop(0)


P4INFO = p4info_from_program(load_switch(str(ROUTER)))


def _routes(client: P4RuntimeClient, device: Device) -> None:
    """The pipeline is live: a route goes in and forwards a frame."""
    client.index = None
    client.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000002, 32)}, "MyIngress.ipv4_forward",
                  {"dstAddr": 0x020000000002, "port": 2})
    assert len(client.read_table("MyIngress.ipv4_lpm")) == 1
    assert device.switch.table("MyIngress.ipv4_lpm").entries()


def test_the_wrapped_form_is_recognised_and_other_forms_pass_through():
    js = bmv2_json("basic.p4")
    wrapped = p4config_pb2.P4DeviceConfig(reassign=True, device_data=js).SerializeToString()
    assert wrapped[:1] == b"\x08"   # what older servers choked on ("unexpected character '\x08'")
    assert unwrap_p4_device_config(wrapped) == js
    src = ROUTER.read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("main.p4", src)
    for data in (js, src, buf.getvalue(), b""):
        assert unwrap_p4_device_config(data) == data
    assert program_named_in_bmv2_json(js) == "basic.p4"
    assert program_named_in_bmv2_json(b"{not json") is None


def test_tutorial_controller_on_a_switch_started_with_build_json(exercise, serve):
    """run_exercise.py starts the switch with build/basic.json (saatp switch runs basic.p4
    beside it); the controller then pushes P4DeviceConfig(JSON): the loaded program stays."""
    device = Device(device_id=0)
    device.load_program(load_switch(str(exercise / "basic.p4")))
    client = serve(device)
    tutorial_set_pipeline(client, P4INFO, tutorial_device_config(exercise / "build" / "basic.json"))
    assert device.p4info == P4INFO
    _routes(client, device)


def test_tutorial_controller_on_a_switch_without_program_loads_the_named_source(exercise, serve):
    """``--no-p4``: the JSON names basic.p4, found where the switch runs; it is compiled."""
    device = Device(device_id=0)
    client = serve(device)
    tutorial_set_pipeline(client, P4INFO, tutorial_device_config(exercise / "build" / "basic.json"))
    assert device.switch is not None and device.switch.program.filename == str(exercise / "basic.p4")
    _routes(client, device)
    # the raw JSON (newer p4runtime_lib) takes the same path
    tutorial_set_pipeline(client, P4INFO, (exercise / "build" / "basic.json").read_bytes())
    _routes(client, device)


def test_missing_source_is_invalid_argument_naming_what_was_tried(exercise, serve):
    (exercise / "basic.p4").unlink()
    device = Device(device_id=0)
    client = serve(device)
    with pytest.raises(grpc.RpcError) as e:
        tutorial_set_pipeline(client, P4INFO, tutorial_device_config(exercise / "build" / "basic.json"))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    msg = e.value.details()
    assert "BMv2 JSON compiled from 'basic.p4'" in msg and str(exercise / "basic.p4") in msg
    assert device.switch is None


def test_the_p4info_still_has_to_match_the_program(exercise, serve):
    device = Device(device_id=0)
    client = serve(device)
    bad = type(P4INFO).FromString(P4INFO.SerializeToString())
    bad.tables[0].preamble.name = "MyIngress.elsewhere"
    with pytest.raises(grpc.RpcError) as e:
        tutorial_set_pipeline(client, bad, tutorial_device_config(exercise / "build" / "basic.json"))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "not in the program" in e.value.details()


def test_wrapped_p4_source_compiles(serve):
    device = Device(device_id=0)
    client = serve(device)
    wrapped = p4config_pb2.P4DeviceConfig(device_data=ROUTER.read_bytes()).SerializeToString()
    tutorial_set_pipeline(client, P4INFO, wrapped)
    _routes(client, device)


def test_source_lookup_rules(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.p4").write_text("// a")
    js = bmv2_json("sub/a.p4")
    # named path under a search dir, then the file name alone under another
    assert source_of_bmv2_json(js, loaded=None, search_dirs=[tmp_path]) == str(tmp_path / "sub" / "a.p4")
    assert source_of_bmv2_json(js, loaded=None, search_dirs=[tmp_path / "sub"]) == str(tmp_path / "sub" / "a.p4")
    # the loaded program, by file name, or when the JSON names none
    assert source_of_bmv2_json(js, loaded="/elsewhere/a.p4", search_dirs=[]) is None
    assert source_of_bmv2_json(b'{"headers": []}', loaded="", search_dirs=[tmp_path]) is None
    # another program than the loaded one, when it is on disk, is that program
    other = bmv2_json(str(tmp_path / "sub" / "a.p4"))
    assert source_of_bmv2_json(other, loaded="/x/b.p4", search_dirs=[]) == str(tmp_path / "sub" / "a.p4")
    with pytest.raises(DeviceConfigError, match="naming no \"program\""):
        source_of_bmv2_json(b'{"headers": []}', loaded=None, search_dirs=[tmp_path])
