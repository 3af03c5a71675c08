"""The ``p4_device_config`` of SetForwardingPipelineConfig, turned into a pipeline.

This target runs P4 source, so the device config carries the program:

* the P4 source text itself;
* a bundle (a zip or tar archive) of the main program and its includes; the main file is
  ``main.p4``, or the only ``.p4`` file at the top level, or the one a top-level ``MAIN``
  file names;
* BMv2 JSON (what controllers written for ``simple_switch_grpc`` send), raw or wrapped in a
  serialized ``p4.tmp.P4DeviceConfig`` (``device_data``; the p4lang tutorials'
  ``p4runtime_lib`` sends this form).  The JSON is not run: it stands for the P4 program
  it was compiled from, which must be at hand (see :func:`source_of_bmv2_json`).
"""
from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Sequence

from google.protobuf.message import DecodeError

from emulation.v1model.load import switch_from_source
from host_agent.p4runtime.p4config_pb2 import P4DeviceConfig


class DeviceConfigError(ValueError):
    """The device config cannot be turned into a pipeline."""


def compile_source(text: str, filename: str, include_dirs: Sequence[str], **kw: Any) -> Any:
    """The default compiler: P4 source -> a fresh v1model Switch."""
    return switch_from_source(text, filename, list(include_dirs), **kw)


# ------------------------------------------------------------------ P4DeviceConfig
# first bytes of a serialized P4DeviceConfig: the tag of field 1 (varint), 2 or 3 (bytes);
# none of them starts P4 source, JSON, a zip or a tar archive
_P4_DEVICE_CONFIG_TAGS = (0x08, 0x12, 0x1A)


def unwrap_p4_device_config(data: bytes) -> bytes:
    """``device_data`` if ``data`` is a serialized ``p4.tmp.P4DeviceConfig``, else ``data``."""
    if not data or data[0] not in _P4_DEVICE_CONFIG_TAGS:
        return data
    try:
        msg = P4DeviceConfig.FromString(data)
    except DecodeError:
        return data
    return msg.device_data


# ------------------------------------------------------------------ BMv2 JSON
def looks_like_json(data: bytes) -> bool:
    return data.lstrip()[:1] == b"{"


def program_named_in_bmv2_json(data: bytes) -> str | None:
    """The ``"program"`` member p4c writes into BMv2 JSON (the source path it was given)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    prog = doc.get("program") if isinstance(doc, dict) else None
    return prog if isinstance(prog, str) and prog else None


def source_of_bmv2_json(data: bytes, *, loaded: str | None, search_dirs: Sequence[str | Path]) -> str | None:
    """Which P4 source a BMv2 JSON stands for: ``None`` for the program already loaded
    (``loaded``: its path, or ``""`` when its path is unknown), else the path of the source
    file found.

    p4c names the source in the JSON (``"program": "basic.p4"``, as it was given on p4c's
    command line, so relative to where p4c ran).  It is looked for as named and by its file
    name, under each of ``search_dirs`` (the switch's working directory, where the tutorials
    start both, and the directory of the loaded program, whose ``build/NAME.json`` sits
    beside it).  A JSON naming the loaded program, or no program, is the loaded program.
    Raises :class:`DeviceConfigError` naming what was tried when nothing fits.
    """
    named = program_named_in_bmv2_json(data)
    if loaded is not None and (named is None or Path(named).name == Path(loaded).name):
        return None
    tried: list[str] = []
    if named is not None:
        cands = [Path(named)] if os.path.isabs(named) else \
            [Path(d) / n for d in search_dirs for n in dict.fromkeys((named, Path(named).name))]
        for cand in cands:
            tried.append(str(cand))
            if cand.is_file():
                return str(cand)
    if loaded is not None:
        return None   # a JSON naming another program that is nowhere here: the P4Info check decides
    if named is None:
        raise DeviceConfigError("the device config is BMv2 JSON naming no \"program\", and no program is "
                                "loaded: this target needs the P4 source (send it, or a zip/tar bundle, as "
                                "p4_device_config, or start the switch with the program)")
    raise DeviceConfigError(f"the device config is BMv2 JSON compiled from {named!r}, and no program is "
                            f"loaded; this target runs the P4 source, which was not found (tried "
                            f"{', '.join(tried)}): start the switch with the program or send the P4 source")


# ------------------------------------------------------------------ P4 source and bundles
def _bundle_main(names: list[str]) -> str | None:
    top = [n for n in names if "/" not in n.strip("/")]
    if "main.p4" in top:
        return "main.p4"
    p4s = [n for n in top if n.endswith(".p4")]
    if len(p4s) == 1:
        return p4s[0]
    return None


def compile_device_config(data: bytes, *, switch_kw: dict | None = None,
                          compile_source: Callable[..., Any] = compile_source) -> Any:
    """Turn a device config (P4 source or a zip/tar bundle) into a fresh Switch."""
    kw = dict(switch_kw or {})
    if not data:
        raise DeviceConfigError("the device config is empty")
    if data[:4] == b"PK\x03\x04" or _is_tar(data):
        with tempfile.TemporaryDirectory(prefix="saatp-p4bundle-") as tmp:
            names = _extract_bundle(data, Path(tmp))
            main = None
            if "MAIN" in names:
                main = (Path(tmp) / "MAIN").read_text().strip()
            main = main or _bundle_main(names)
            if not main or not (Path(tmp) / main).is_file():
                raise DeviceConfigError(
                    "bundle: cannot tell the main program; name it main.p4 or list it in a MAIN file")
            path = Path(tmp) / main
            return compile_source(path.read_text(), str(path), [str(path.parent), tmp], **kw)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DeviceConfigError("the device config is neither P4 source (UTF-8 text) nor a zip/tar bundle") from None
    if text.lstrip().startswith("{"):
        raise DeviceConfigError("the device config looks like BMv2 JSON; this target needs the P4 source "
                                "(or a zip/tar bundle of it) as p4_device_config")
    return compile_source(text, "<device_config>.p4", [], **kw)


def _is_tar(data: bytes) -> bool:
    try:
        with tarfile.open(fileobj=io.BytesIO(data)):
            return True
    except (tarfile.TarError, EOFError, OSError):
        return False


def _extract_bundle(data: bytes, dst: Path) -> list[str]:
    names: list[str] = []

    def safe(name: str) -> Path:
        p = PurePosixPath(name)
        if p.is_absolute() or ".." in p.parts:
            raise DeviceConfigError(f"bundle: unsafe member name {name!r}")
        return dst / p

    if data[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for info in z.infolist():
                if info.is_dir():
                    continue
                target = safe(info.filename)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(z.read(info))
                names.append(info.filename)
    else:
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            for m in t.getmembers():
                if not m.isfile():
                    continue
                target = safe(m.name)
                target.parent.mkdir(parents=True, exist_ok=True)
                f = t.extractfile(m)
                target.write_bytes(f.read() if f else b"")
                names.append(m.name)
    return [n.lstrip("./") if n.startswith("./") else n for n in names]
