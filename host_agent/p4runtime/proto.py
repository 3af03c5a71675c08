"""P4Runtime message classes built at import time from the schema in ``_schema.py``.

Why not the PyPI ``p4runtime`` wheel: its generated code predates protobuf 4 and fails
to import under the upb runtime.  ``_schema.py`` holds the same schema (P4Runtime
1.6.0, a superset of spec v1.4) as a ``FileDescriptorSet`` extracted from that wheel by
``_extract.py``; here it is registered in protobuf's default descriptor pool and the
message classes are built by the running protobuf (``internal.builder``, the mechanism
that modern ``protoc`` output itself uses), so nothing depends on the protoc version
that generated code was made with.  Dependencies ``google/protobuf/any.proto`` and
``google/rpc/status.proto`` come from protobuf and googleapis-common-protos.

Use the thin modules ``p4runtime_pb2``, ``p4info_pb2``, ``p4data_pb2``, ``p4types_pb2``
and ``p4runtime_pb2_grpc`` beside this file.  ``p4config_pb2`` (``p4.tmp.P4DeviceConfig``,
not part of the wheel) is written with the descriptor API and registered by :func:`build_file`.
"""
from __future__ import annotations

import base64
import threading
from typing import Any

from google.protobuf import any_pb2  # noqa: F401  (registers google/protobuf/any.proto)
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.internal import builder as _builder
from google.rpc import status_pb2  # noqa: F401  (registers google/rpc/status.proto)

_lock = threading.Lock()
_built: dict[str, dict[str, Any]] = {}


def build(proto_name: str, module_name: str) -> dict[str, Any]:
    """Register the schema once and return the namespace of ``proto_name``'s classes."""
    with _lock:
        if proto_name not in _built:
            from ._schema import SCHEMA_B64
            fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode("".join(SCHEMA_B64)))
            for fd in fds.file:  # in dependency order
                if fd.name not in _built:
                    _built[fd.name] = _register(fd, module_name_for(fd.name))
        return _built[proto_name]


def build_file(fd: descriptor_pb2.FileDescriptorProto, module_name: str) -> dict[str, Any]:
    """Register one schema file written with the descriptor API; the namespace of its classes."""
    with _lock:
        if fd.name not in _built:
            _built[fd.name] = _register(fd, module_name)
        return _built[fd.name]


def _register(fd: descriptor_pb2.FileDescriptorProto, module_name: str) -> dict[str, Any]:
    pool = descriptor_pool.Default()
    try:
        desc = pool.FindFileByName(fd.name)
    except KeyError:
        desc = pool.AddSerializedFile(fd.SerializeToString())
    ns: dict[str, Any] = {}
    _builder.BuildMessageAndEnumDescriptors(desc, ns)
    _builder.BuildTopDescriptorsAndMessages(desc, module_name, ns)
    ns["DESCRIPTOR"] = desc
    return ns


def module_name_for(proto_name: str) -> str:
    stem = proto_name.rsplit("/", 1)[1][:-len(".proto")]
    return f"{__package__}.{stem}_pb2"
