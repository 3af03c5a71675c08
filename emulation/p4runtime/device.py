"""The device behind a P4Runtime server: one pipeline (a Switch), packet I/O, digests.

:class:`Device` is what ``saatp switch`` and the gRPC server share.  It owns

* the running :class:`~emulation.v1model.switch.Switch` (or any object with the same
  control-plane API) and the lock that serialises the data plane and the control plane;
* the forwarding-pipeline config (P4Info, device config bytes, cookie);
* the CPU port: ``packet_out`` injects a controller packet at ``cpu_port`` (with the
  ``@controller_header("packet_out")`` fields prepended), frames the pipeline sends to
  ``cpu_port`` become packet-ins (the ``packet_in`` header is stripped into metadata);
* digests the program generated, handed to listeners.

The device config of ``SetForwardingPipelineConfig`` carries the P4 program: the P4
source text itself, or a bundle (a zip or tar archive) holding the main program and its
includes; the main file is ``main.p4``, or the only ``.p4`` file at the top level, or
the one a top-level ``MAIN`` file names.
"""
from __future__ import annotations

import io
import tarfile
import tempfile
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Sequence


class DeviceConfigError(ValueError):
    """The device config cannot be turned into a pipeline."""


@dataclass
class PacketIn:
    payload: bytes
    metadata: dict[str, int] = field(default_factory=dict)


def _compile_source(text: str, filename: str, include_dirs: Sequence[str], **kw: Any) -> Any:
    from emulation.v1model.switch import Switch
    return Switch.from_source(text, filename=filename, include_dirs=list(include_dirs), **kw)


def _bundle_main(names: list[str]) -> str | None:
    top = [n for n in names if "/" not in n.strip("/")]
    if "main.p4" in top:
        return "main.p4"
    p4s = [n for n in top if n.endswith(".p4")]
    if len(p4s) == 1:
        return p4s[0]
    return None


def compile_device_config(data: bytes, *, switch_kw: dict | None = None,
                          compile_source: Callable[..., Any] = _compile_source) -> Any:
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


def pack_bits(fields: Sequence[tuple[int, int]]) -> bytes:
    """Concatenate (value, width) MSB first; the total width must be whole bytes."""
    total = sum(w for _, w in fields)
    if total % 8:
        raise ValueError(f"header of {total} bits is not a whole number of bytes")
    acc = 0
    for v, w in fields:
        acc = (acc << w) | (v & ((1 << w) - 1))
    return acc.to_bytes(total // 8, "big") if total else b""


def unpack_bits(data: bytes, widths: Sequence[int]) -> list[int]:
    total = sum(widths)
    acc = int.from_bytes(data[:total // 8], "big")
    out = []
    shift = total
    for w in widths:
        shift -= w
        out.append((acc >> shift) & ((1 << w) - 1))
    return out


class Device:
    """One P4 device: a pipeline, its lock, packet I/O through the CPU port."""

    def __init__(self, *, device_id: int = 1, cpu_port: int | None = None,
                 transmit: Callable[[int, bytes], None] | None = None,
                 compile_source: Callable[..., Any] = _compile_source,
                 switch_kw: dict | None = None):
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.transmit = transmit or (lambda port, frame: None)
        self.compile_source = compile_source
        self.switch_kw = dict(switch_kw or {})
        self.lock = threading.RLock()
        self.switch: Any = None
        self.p4info: Any = None
        self.device_config: bytes = b""
        self.cookie: int | None = None
        self.packet_in_listeners: list[Callable[[PacketIn], None]] = []
        self.digest_listeners: list[Callable[[str, dict[str, int]], None]] = []
        self.pipeline_listeners: list[Callable[[], None]] = []

    # ----------------------------------------------------------- pipeline
    def build_switch(self, device_config: bytes) -> Any:
        kw = dict(self.switch_kw)
        if self.cpu_port is not None:
            kw.setdefault("cpu_port", self.cpu_port)
        return compile_device_config(device_config, switch_kw=kw, compile_source=self.compile_source)

    def fresh_switch(self) -> Any:
        """A new Switch running the current program with empty tables (for a re-push)."""
        if self.switch is None:
            raise DeviceConfigError("no pipeline is loaded")
        cls = type(self.switch)
        try:
            kw = dict(self.switch_kw)
            if self.cpu_port is not None:
                kw.setdefault("cpu_port", self.cpu_port)
            return cls(self.switch.program, **kw)
        except TypeError:
            return self.build_switch(self.device_config)

    def install(self, switch: Any, p4info: Any, device_config: bytes, cookie: int | None) -> None:
        with self.lock:
            self.switch = switch
            self.p4info = p4info
            self.device_config = device_config
            self.cookie = cookie
        for cb in list(self.pipeline_listeners):
            cb()

    def load_program(self, switch: Any, device_config: bytes = b"") -> None:
        """Install a program given at start-up (``saatp switch PROGRAM.p4``)."""
        from .p4info import p4info_from_program
        self.install(switch, p4info_from_program(switch), device_config, None)

    # --------------------------------------------------------- data plane
    def process(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """Run one frame; transmit what leaves on front-panel ports, deliver CPU packets."""
        with self.lock:
            sw = self.switch
            if sw is None:
                return []
            out = sw.process(port, frame)
            digests = self._drain_digests(sw)
        front = []
        for eport, data in out:
            if self.cpu_port is not None and eport == self.cpu_port:
                self._packet_in(data)
            else:
                front.append((eport, data))
                self.transmit(eport, data)
        for name, values in digests:
            for cb in list(self.digest_listeners):
                cb(name, values)
        return front

    def _drain_digests(self, sw: Any) -> list[tuple[str, dict[str, int]]]:
        lst = getattr(sw, "digests", None)
        if not lst:
            return []
        got = list(lst)
        lst.clear()
        out = []
        for d in got:
            if isinstance(d, tuple) and len(d) == 3:
                out.append((d[0], dict(d[2])))
            elif isinstance(d, tuple) and len(d) == 2:
                out.append((d[0], dict(d[1])))
        return out

    def _header(self, which: str) -> Any:
        if self.p4info is None:
            return None
        for c in self.p4info.controller_packet_metadata:
            if c.preamble.name == which:
                return c
        return None

    def _packet_in(self, data: bytes) -> None:
        hdr = self._header("packet_in")
        meta: dict[str, int] = {}
        payload = data
        if hdr is not None:
            widths = [m.bitwidth for m in hdr.metadata]
            nbytes = sum(widths) // 8
            vals = unpack_bits(data, widths)
            meta = {m.name: v for m, v in zip(hdr.metadata, vals)}
            payload = data[nbytes:]
        pin = PacketIn(payload, meta)
        for cb in list(self.packet_in_listeners):
            cb(pin)

    def packet_out(self, payload: bytes, metadata: dict[str, int] | None = None) -> list[tuple[int, bytes]]:
        """Inject a controller packet at the CPU port; returns the frames sent to ports."""
        if self.cpu_port is None:
            raise DeviceConfigError("no CPU port: start the switch with --cpu-port N to use packet-out")
        metadata = dict(metadata or {})
        hdr = self._header("packet_out")
        data = payload
        if hdr is not None:
            fields = []
            for m in hdr.metadata:
                v = int(metadata.pop(m.name, 0))
                if v >> m.bitwidth:
                    raise ValueError(f"packet_out metadata {m.name}: {v} does not fit in {m.bitwidth} bits")
                fields.append((v, m.bitwidth))
            if metadata:
                raise ValueError(f"unknown packet_out metadata {sorted(metadata)}")
            data = pack_bits(fields) + payload
        elif metadata:
            raise ValueError("the program has no @controller_header(\"packet_out\") header")
        return self.process(self.cpu_port, data)
