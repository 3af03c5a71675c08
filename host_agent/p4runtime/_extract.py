"""Rebuild ``_schema.py`` (the P4Runtime schema as a FileDescriptorSet).

The PyPI ``p4runtime`` wheel ships old-style generated code that no longer imports
under protobuf >= 4 ("Descriptors cannot be created directly"), and no ``.proto``
files.  Each of its ``_pb2.py`` files embeds its schema as a serialized
``FileDescriptorProto`` (the ``serialized_pb=`` argument).  This tool reads those
bytes *without importing the modules* (with :mod:`ast`) and stores them as one
``FileDescriptorSet``, written base64-encoded into ``_schema.py`` (a Python module, so it
ships with the package without package-data settings); :mod:`host_agent.p4runtime.proto`
builds message classes from it at import time with the running protobuf, so any protobuf
from 4.21 on works.

    pip download --no-deps p4runtime==1.6.0 -d /tmp/p4rt
    python -m host_agent.p4runtime._extract /tmp/p4rt/p4runtime-1.6.0-py3-none-any.whl

The schema is the P4Runtime specification's (Apache-2.0, p4lang/p4runtime).
"""
from __future__ import annotations

import ast
import base64
import sys
import zipfile
from pathlib import Path

FILES = ["p4/config/v1/p4types.proto", "p4/config/v1/p4info.proto",
         "p4/v1/p4data.proto", "p4/v1/p4runtime.proto"]


def serialized_pb(source: str) -> bytes:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg == "serialized_pb":
            return ast.literal_eval(node.value)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "AddSerializedFile":
            return ast.literal_eval(node.args[0])
    raise ValueError("no serialized descriptor found")


def extract(wheel: str, out: Path) -> bytes:
    from google.protobuf import descriptor_pb2
    fds = descriptor_pb2.FileDescriptorSet()
    with zipfile.ZipFile(wheel) as z:
        for proto in FILES:
            py = proto[:-len(".proto")] + "_pb2.py"
            fd = descriptor_pb2.FileDescriptorProto.FromString(serialized_pb(z.read(py).decode()))
            if fd.name != proto:
                raise ValueError(f"{py}: describes {fd.name}, expected {proto}")
            fds.file.append(fd)
    data = fds.SerializeToString(deterministic=True)
    b64 = base64.b64encode(data).decode()
    lines = "\n".join(f"    {b64[i:i + 96]!r}" for i in range(0, len(b64), 96))
    out.write_text(
        '"""P4Runtime 1.6.0 schema (p4types, p4info, p4data, p4runtime .proto) as a base64\n'
        "FileDescriptorSet, extracted from the PyPI ``p4runtime`` wheel by ``_extract.py``.\n"
        'Apache-2.0, from the P4Runtime specification (p4lang/p4runtime).  Do not edit."""\n\n'
        f"SCHEMA_B64 = (\n{lines}\n)\n")
    return data


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m host_agent.p4runtime._extract P4RUNTIME_WHEEL")
    dst = Path(__file__).with_name("_schema.py")
    extract(sys.argv[1], dst)
    print(f"wrote {dst}")
