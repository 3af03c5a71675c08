"""Message classes of ``p4/tmp/p4config.proto``: ``p4.tmp.P4DeviceConfig``, BMv2's device config.

Clients written for ``simple_switch_grpc`` (the p4lang tutorials' ``p4runtime_lib`` among
them) send ``p4_device_config`` as this message serialized, with the BMv2 JSON in
``device_data``.  The schema is P4Runtime-PI's (``proto/p4/tmp/p4config.proto``)::

    message P4DeviceConfig {
      bool reassign = 1;
      message Extras { map<string, string> kv = 1; }
      Extras extras = 2;
      bytes device_data = 3;
    }

No ``.proto`` file or generated code ships with any wheel we use, so the schema is written
here with protobuf's descriptor API and registered like the others (see ``proto.py``).
"""
from google.protobuf import descriptor_pb2 as _d

from .proto import build_file as _build_file

_F = _d.FieldDescriptorProto


def _schema() -> _d.FileDescriptorProto:
    fd = _d.FileDescriptorProto(name="p4/tmp/p4config.proto", package="p4.tmp", syntax="proto3")
    cfg = fd.message_type.add(name="P4DeviceConfig")
    extras = cfg.nested_type.add(name="Extras")
    kv_entry = extras.nested_type.add(name="KvEntry")
    kv_entry.options.map_entry = True
    kv_entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL, json_name="key")
    kv_entry.field.add(name="value", number=2, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL, json_name="value")
    extras.field.add(name="kv", number=1, type=_F.TYPE_MESSAGE, label=_F.LABEL_REPEATED, json_name="kv",
                     type_name=".p4.tmp.P4DeviceConfig.Extras.KvEntry")
    cfg.field.add(name="reassign", number=1, type=_F.TYPE_BOOL, label=_F.LABEL_OPTIONAL, json_name="reassign")
    cfg.field.add(name="extras", number=2, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL, json_name="extras",
                  type_name=".p4.tmp.P4DeviceConfig.Extras")
    cfg.field.add(name="device_data", number=3, type=_F.TYPE_BYTES, label=_F.LABEL_OPTIONAL,
                  json_name="deviceData")
    return fd


globals().update(_build_file(_schema(), __name__))
