"""Options of the ``saatp`` torch.distributed backend.

Every field can be given three ways, highest precedence first:

1. a :class:`SAATPOptions` passed as ``pg_options=`` to ``init_process_group`` / ``new_group``;
2. an environment variable (listed beside each field);
3. the default below.

Only fields left at ``None`` in a passed ``SAATPOptions`` fall back to the environment, so a
partial options object is fine.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from ..protocol.layout import MAX_LANES

ENGINES = ("auto", "ring", "switch")


# ---------------------------------------------------------------------------------------------
# SAATP_SWITCH: a switch that is already running
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SwitchPort:
    """One rank's UDP tunnel to a given switch (``saatp switch -i N@udp:SWITCH_UDP:HOST:WORKER_UDP``)."""

    port: int          # the switch's port number N (``wid_port`` / multicast egress port)
    host: str          # where the switch's tunnel socket is (the worker sends there)
    switch_udp: int    # the switch's tunnel UDP port
    worker_udp: int    # the UDP port the worker binds (the switch sends there)


@dataclass(frozen=True)
class SwitchSpec:
    """A parsed ``SAATP_SWITCH``: P4Runtime address, device id, and per rank a tunnel (or None)."""

    grpc: str
    device: int = 0
    ports: tuple[SwitchPort, ...] | None = None


SWITCH_SYNTAX = ("grpc=HOST:PORT[,device=N],ports=[N@]udp:HOST:SWITCH_UDP:WORKER_UDP;... "
                 "(one ports entry per rank, in rank order; N = switch port, default rank+1)")


def _parse_int(text: str, what: str, lo: int, hi: int, where: str) -> int:
    try:
        v = int(text, 10)
    except ValueError:
        raise ValueError(f"saatp: SAATP_SWITCH {where}: {what} must be an integer, got {text!r}") from None
    if not lo <= v <= hi:
        raise ValueError(f"saatp: SAATP_SWITCH {where}: {what} must be in {lo}..{hi}, got {v}")
    return v


def _parse_hostport(text: str, where: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not (0 < int(port) < 65536):
        raise ValueError(f"saatp: SAATP_SWITCH {where}: the P4Runtime address must be host:port, got {text!r}")
    return text


def parse_switch_spec(text: str) -> SwitchSpec:
    """Parse ``SAATP_SWITCH`` (:data:`SWITCH_SYNTAX`); a bare ``host:port`` is ``grpc=host:port``
    without tunnels. Raises ``ValueError`` naming the bad part."""
    text = text.strip()
    if "=" not in text:
        return SwitchSpec(grpc=_parse_hostport(text, "address"))
    items: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        key, sep, val = part.partition("=")
        key = key.strip().lower()
        if not sep or not key:
            raise ValueError(f"saatp: SAATP_SWITCH part {part!r} is not key=value; syntax: {SWITCH_SYNTAX}")
        if key not in ("grpc", "device", "ports"):
            raise ValueError(f"saatp: SAATP_SWITCH part {part!r}: unknown key {key!r} "
                             f"(known: grpc, device, ports); syntax: {SWITCH_SYNTAX}")
        if key in items:
            raise ValueError(f"saatp: SAATP_SWITCH: key {key!r} given twice")
        items[key] = val.strip()
    if "grpc" not in items:
        raise ValueError(f"saatp: SAATP_SWITCH {text!r}: missing grpc=HOST:PORT (the switch's P4Runtime "
                         f"address); syntax: {SWITCH_SYNTAX}")
    grpc = _parse_hostport(items["grpc"], "grpc=")
    device = _parse_int(items["device"], "device", 0, (1 << 64) - 1, "device=") if "device" in items else 0
    ports = None
    if "ports" in items:
        entries = [e.strip() for e in items["ports"].split(";")]
        if entries and entries[-1] == "":
            entries.pop()  # a trailing ';'
        if not entries:
            raise ValueError(f"saatp: SAATP_SWITCH ports=: no entries; syntax: {SWITCH_SYNTAX}")
        out = []
        for r, e in enumerate(entries):
            where = f"ports entry {r} ({e!r})"
            num, at, tunnel = e.rpartition("@")
            swport = _parse_int(num.strip(), "the switch port N of N@", 0, 510, where) if at else r + 1
            kind, colon, rest = tunnel.partition(":")
            if kind.strip().lower() != "udp" or not colon:
                raise ValueError(f"saatp: SAATP_SWITCH {where}: must be [N@]udp:HOST:SWITCH_UDP:WORKER_UDP")
            fields = rest.rsplit(":", 2)
            if len(fields) != 3 or not fields[0]:
                raise ValueError(f"saatp: SAATP_SWITCH {where}: must be [N@]udp:HOST:SWITCH_UDP:WORKER_UDP")
            host = fields[0].strip("[]")
            sw = _parse_int(fields[1], "SWITCH_UDP", 1, 65535, where)
            wk = _parse_int(fields[2], "WORKER_UDP", 1, 65535, where)
            out.append(SwitchPort(swport, host, sw, wk))
        for what, vals in (("switch port", [p.port for p in out]), ("WORKER_UDP", [p.worker_udp for p in out])):
            dup = sorted({v for v in vals if vals.count(v) > 1})
            if dup:
                raise ValueError(f"saatp: SAATP_SWITCH ports=: {what} {dup[0]} used by more than one rank")
        ports = tuple(out)
    return SwitchSpec(grpc=grpc, device=device, ports=ports)


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return int(raw, 0)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None


def _env_float(name: str) -> float | None:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not a number") from None


def _env_str(name: str) -> str | None:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    return raw.strip()


# (field name, environment variable, parser, default)
_FIELDS = (
    ("engine", "SAATP_ENGINE", _env_str, "auto"),
    ("chunk_size", "SAATP_CHUNK", _env_int, None),
    ("window", "SAATP_WINDOW", _env_int, 32),
    ("straggler_ms", "SAATP_STRAGGLER_MS", _env_float, 50.0),
    ("lanes", "SAATP_LANES", _env_int, 2),
    ("quant_frac_bits", "SAATP_QUANT_BITS", _env_int, None),
    ("switch", "SAATP_SWITCH", _env_str, None),
    ("job_id", "SAATP_JOB_ID", _env_int, None),
    ("host", "SAATP_HOST", _env_str, "127.0.0.1"),
    ("log", "SAATP_LOG", _env_int, 1),
)


@dataclass
class SAATPOptions:
    """Backend options (``None`` = take the environment variable, else the default).

    engine           SAATP_ENGINE        ``auto`` (switch if the ``saatp-switch`` command and the
                                         switch program are installed, else ring), ``ring`` or
                                         ``switch``
    chunk_size       SAATP_CHUNK         K: elements per SA-ATP chunk / packet (a power of two up to
                                         1024); None = the widest the path carries: 1024 on the UDP
                                         tunnels of a switch the engine starts, the loaded program's
                                         K on a given switch (else 256)
    window           SAATP_WINDOW        P: switch slots per job = chunks in flight per worker (32)
    straggler_ms     SAATP_STRAGGLER_MS  T_s: straggler threshold in milliseconds (50)
    lanes            SAATP_LANES         switch engine: allreduces in flight at once, each on a job
                                         (id, 2 x window slots) of its own (2)
    quant_frac_bits  SAATP_QUANT_BITS    fixed-point fractional bits for int32 quantization;
                                         None = the engine chooses per tensor from max |x|
    switch           SAATP_SWITCH        a running switch (:func:`parse_switch_spec`):
                                         ``grpc=HOST:PORT[,device=N],ports=[N@]udp:HOST:SUDP:WUDP;...``
                                         (one tunnel per rank); None = start one for the job on
                                         the embedded P4 target (switch engine)
    job_id           SAATP_JOB_ID        SA-ATP job id on the switch (0..255); None = allocate
    host             SAATP_HOST          address the host-path TCP mesh binds (127.0.0.1)
    log              SAATP_LOG           1 = print the engine choice on rank 0; 0 = quiet
    """

    engine: str | None = None
    chunk_size: int | None = None
    window: int | None = None
    straggler_ms: float | None = None
    lanes: int | None = None
    quant_frac_bits: int | None = None
    switch: str | None = None
    job_id: int | None = None
    host: str | None = None
    log: int | None = None
    # free-form extra settings handed unchanged to the switch engine
    extra: dict = field(default_factory=dict)

    def resolved(self) -> "SAATPOptions":
        """A copy with every ``None`` field filled from the environment or the default, validated."""
        out = dataclasses.replace(self, extra=dict(self.extra))
        for name, env, parse, default in _FIELDS:
            if getattr(out, name) is None:
                val = parse(env)
                setattr(out, name, default if val is None else val)
        out.validate()
        return out

    def validate(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"saatp: engine must be one of {ENGINES}, got {self.engine!r}")
        if self.chunk_size is not None and (not isinstance(self.chunk_size, int) or self.chunk_size <= 0
                                            or self.chunk_size & (self.chunk_size - 1)
                                            or self.chunk_size > MAX_LANES):
            raise ValueError(f"saatp: chunk_size (K) must be a power of two in 1..{MAX_LANES}, "
                             f"got {self.chunk_size!r}")
        if not isinstance(self.window, int) or self.window <= 0:
            raise ValueError(f"saatp: window must be a positive integer, got {self.window!r}")
        if not isinstance(self.lanes, int) or not 1 <= self.lanes <= 16:
            raise ValueError(f"saatp: lanes must be an integer in 1..16, got {self.lanes!r}")
        if not (self.straggler_ms > 0):
            raise ValueError(f"saatp: straggler_ms must be > 0, got {self.straggler_ms!r}")
        if self.quant_frac_bits is not None and not (0 <= self.quant_frac_bits <= 30):
            raise ValueError(f"saatp: quant_frac_bits must be in 0..30, got {self.quant_frac_bits!r}")
        if self.job_id is not None and not (0 <= self.job_id <= 255):
            raise ValueError(f"saatp: job_id must be in 0..255, got {self.job_id!r}")
        if self.switch is not None:
            parse_switch_spec(self.switch)  # ValueError naming the bad part


def resolve(options) -> SAATPOptions:
    """Accept ``None``, a :class:`SAATPOptions` or a ``dict`` of field values."""
    if options is None:
        return SAATPOptions().resolved()
    if isinstance(options, SAATPOptions):
        return options.resolved()
    if isinstance(options, dict):
        known = {f.name for f in dataclasses.fields(SAATPOptions)}
        bad = sorted(set(options) - known)
        if bad:
            raise ValueError(f"saatp: unknown option(s) {bad}; known: {sorted(known)}")
        return SAATPOptions(**options).resolved()
    raise TypeError(
        f"saatp: pg_options must be a host_agent.torch_backend.SAATPOptions or a dict, got {type(options).__name__}"
    )


def engine_options(ctx) -> dict:
    """The switch engine's settings from a resolved :class:`SAATPOptions` on ``ctx.options``."""
    o = ctx.options
    k = getattr(o, "chunk_size", None)
    return dict(k=int(k) if k else None, window=int(getattr(o, "window", 32) or 32),
                lanes=int(getattr(o, "lanes", 2) or 2),
                t_s=float(getattr(o, "straggler_ms", 50.0) or 50.0) / 1000.0,
                frac_bits=getattr(o, "quant_frac_bits", None),
                extra=dict(getattr(o, "extra", {}) or {}))


def given_switch(ctx, max_workers: int) -> SwitchSpec | None:
    """The parsed ``SAATP_SWITCH`` (``options.switch``), checked against the group; None if not given."""
    text = getattr(ctx.options, "switch", None)
    if not text:
        return None
    spec = parse_switch_spec(text)
    if spec.ports is None:
        raise ValueError(f"saatp: SAATP_SWITCH={text!r} gives no ports=: the switch engine needs each rank's "
                         f"UDP tunnel to the switch; syntax: {SWITCH_SYNTAX}")
    if len(spec.ports) != ctx.world_size:
        raise ValueError(f"saatp: SAATP_SWITCH ports= lists {len(spec.ports)} tunnel(s) but the group has "
                         f"{ctx.world_size} ranks (one entry per rank, in rank order)")
    if not 1 <= ctx.world_size <= max_workers:
        raise ValueError(f"saatp switch engine: 1..{max_workers} ranks per job, got {ctx.world_size}")
    return spec
