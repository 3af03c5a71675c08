"""The device behind a P4Runtime server: one pipeline (a Switch), packet I/O, digests.

:class:`Device` is what ``saatp switch`` and the gRPC server share.  It owns

* the running :class:`~emulation.v1model.switch.Switch` (or any object with the same
  control-plane API) and the lock that serialises the data plane and the control plane;
* the forwarding-pipeline config (P4Info, device config bytes, cookie);
* the CPU port: ``packet_out`` injects a controller packet at ``cpu_port`` (with the
  ``@controller_header("packet_out")`` fields prepended), frames the pipeline sends to
  ``cpu_port`` become packet-ins (the ``packet_in`` header is stripped into metadata);
* digests the program generated, handed to listeners.

What a device config may hold (P4 source, a bundle, BMv2 JSON standing for its source) is
in :mod:`emulation.p4runtime.device_config`.
"""
from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from .device_config import (DeviceConfigError, compile_device_config, compile_source, looks_like_json,
                            source_of_bmv2_json, unwrap_p4_device_config)
from .p4info import p4info_from_program

log = logging.getLogger("saatp.p4runtime")


@dataclass
class PacketIn:
    payload: bytes
    metadata: dict[str, int] = field(default_factory=dict)


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
                 compile_source: Callable[..., Any] = compile_source,
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
    def _switch_kw(self) -> dict:
        kw = dict(self.switch_kw)
        if self.cpu_port is not None:
            kw.setdefault("cpu_port", self.cpu_port)
        return kw

    def loaded_program_path(self) -> str | None:
        """The file the running program was compiled from ("" if unknown), None if none runs."""
        if self.switch is None:
            return None
        return str(getattr(getattr(self.switch, "program", None), "filename", "") or "")

    def build_switch(self, device_config: bytes) -> Any:
        """A new Switch for a device config (P4 source, bundle, BMv2 JSON, or any of these
        wrapped in a ``p4.tmp.P4DeviceConfig``)."""
        data = unwrap_p4_device_config(device_config)
        if looks_like_json(data):
            loaded = self.loaded_program_path()
            dirs = [os.getcwd()]
            if loaded and Path(loaded).is_file():
                dirs.append(str(Path(loaded).resolve().parent))
            src = source_of_bmv2_json(data, loaded=loaded, search_dirs=dirs)
            if src is None:
                log.warning("device config is BMv2 JSON; running the loaded program %s", loaded or "")
                return self.fresh_switch()
            log.warning("device config is BMv2 JSON; running its source %s", src)
            try:
                text = Path(src).read_text()
            except (OSError, UnicodeDecodeError) as e:
                raise DeviceConfigError(f"{src}: cannot read the source of the BMv2 JSON: {e}") from None
            return self.compile_source(text, src, [str(Path(src).parent)], **self._switch_kw())
        return compile_device_config(data, switch_kw=self._switch_kw(), compile_source=self.compile_source)

    def fresh_switch(self) -> Any:
        """A new Switch running the current program with empty tables (for a re-push)."""
        if self.switch is None:
            raise DeviceConfigError("no pipeline is loaded")
        cls = type(self.switch)
        try:
            return cls(self.switch.program, **self._switch_kw())
        except TypeError:
            return compile_device_config(unwrap_p4_device_config(self.device_config),
                                         switch_kw=self._switch_kw(), compile_source=self.compile_source)

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
        return self._deliver(out, digests)

    def process_batch(self, port: int, frames: Sequence[bytes]) -> list | None:
        """Run frames that arrived together on one port, taking the lock once (the switch
        process's event loop).  Returns, per frame in order, what the pipeline emitted
        (``(port, bytes)`` pairs, CPU port included) or the exception it raised, or None when
        no pipeline is loaded.  Outputs are transmitted/delivered as :meth:`process` does,
        after the lock is released; digests of the batch follow them."""
        results: list = []
        append = results.append
        with self.lock:
            sw = self.switch
            if sw is None:
                return None
            run = sw.process
            for f in frames:
                try:
                    append(run(port, f))
                except Exception as e:  # noqa: BLE001 - one bad packet must not cost the batch
                    append(e)
            digests = self._drain_digests(sw)
        cpu, transmit = self.cpu_port, self.transmit
        for out in results:
            if type(out) is list:
                for eport, data in out:
                    if eport == cpu:
                        self._packet_in(data)
                    else:
                        transmit(eport, data)
        if digests:
            self._deliver([], digests)
        return results

    def advance(self, now: float | None = None) -> list[tuple[int, bytes]]:
        """Run egress on what the switch's egress queues release by ``now`` (Switch.advance;
        nothing without queues); transmit and deliver it as :meth:`process` does."""
        with self.lock:
            sw = self.switch
            if sw is None:
                return []
            out = sw.advance(now)
            digests = self._drain_digests(sw)
        return self._deliver(out, digests)

    def _deliver(self, out: list[tuple[int, bytes]], digests: list) -> list[tuple[int, bytes]]:
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
