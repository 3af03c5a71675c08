"""Workloads and clusters for the scheduling planners.

Everything here is analytic (no torch): a model is a list of :class:`Layer` profiles
(FLOPs, weight bytes and activation bytes, all *per sample*), a cluster is a list of
:class:`Device` s plus pairwise link bandwidth/latency, and a straggler model yields
per-slot slowdown factors.

Units: seconds, bytes, FLOPs, FLOP/s, bytes/s; prices in $ per hour.

Public API (stable; other planners import it)
---------------------------------------------
Layers and models
    ``Layer(name, fwd_flops, bwd_flops, params, act_out, act_int=0.0)`` -- per-sample FLOPs of
    the forward / backward pass, weight bytes, bytes of the layer's output activation (what
    crosses a stage boundary after this layer) and of the internal activations it stashes.
    ``Workload(name, layers, input_bytes)`` with ``.n``, ``.fwd``/``.bwd``/``.params``/
    ``.act_out``/``.act_int`` (numpy arrays over layers), ``.segment(lo, hi)`` -> summed
    :class:`Segment`, ``.boundary_bytes(cut)`` (bytes per sample crossing a cut placed *before*
    layer ``cut``).
    Zoo: ``vgg16()``, ``resnet50()``, ``gpt(n_layer, d_model, n_head, seq, vocab)``,
    ``gpt1_14()`` (GPT-1 as 14 partitionable layers: embedding, 12 decoder blocks, LM head),
    ``workload(name)`` looks one up by name (``WORKLOADS``).
Devices and clusters
    ``Device(name, speed, memory, price, overhead=50e-6, knee=8)``; ``device.compute_time(flops,
    b)`` = ``overhead + flops * max(b, knee) / speed`` for ``b > 0`` (0 for ``b == 0``),
    vectorised over ``b``. ``DEVICE_TYPES`` holds presets (a100, v100, p100, t4, k80).
    ``Link(bandwidth, latency)``; ``link.time(nbytes)`` = ``latency + nbytes / bandwidth``.
    ``Cluster(name, devices, bandwidth[N,N], latency[N,N])``; ``Cluster.uniform(devices, bw,
    lat)``; ``cluster.link(i, j)``; ``cluster.slowed(factors)`` (speeds divided by factors);
    ``cluster(name)`` looks up presets (``CLUSTERS``).
Stragglers
    ``StragglerModel.factors(n_slots, n_devices) -> ndarray[T, N]`` of compute-time multipliers
    (>= 1 means slower). ``Persistent(device, factor, start=0, end=None)``,
    ``Transient(p, factor=(2, 5), duration=(1, 3), seed=0)``, ``TraceReplay.from_csv(path)``,
    ``Combined([...])`` (product), ``write_trace_csv(path, factors)``.
    Trace CSV format: a header ``slot,device,factor`` then one row per (slot, device) whose
    factor is not 1; ``#`` starts a comment line; slots/devices are 0-based integers.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Sequence

import numpy as np

FP32 = 4  # bytes per element used by the analytic profiles

# --------------------------------------------------------------------------------------
# layers and models


@dataclass(frozen=True)
class Layer:
    """Per-sample profile of one partitionable layer."""

    name: str
    fwd_flops: float
    bwd_flops: float
    params: float  # weight bytes
    act_out: float  # output activation bytes per sample (crosses a boundary after this layer)
    act_int: float = 0.0  # stashed internal activation bytes per sample

    def __post_init__(self) -> None:
        for f in ("fwd_flops", "bwd_flops", "params", "act_out", "act_int"):
            v = getattr(self, f)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValueError(f"layer {self.name!r}: {f} must be a finite number >= 0, got {v!r}")


@dataclass(frozen=True)
class Segment:
    """A contiguous run of layers ``[lo, hi)`` summed up (one pipeline stage)."""

    lo: int
    hi: int
    fwd_flops: float
    bwd_flops: float
    params: float
    act_in: float  # bytes per sample entering the segment
    act_out: float  # bytes per sample leaving it
    act_int: float  # stashed bytes per sample inside


@dataclass(frozen=True)
class Workload:
    name: str
    layers: tuple[Layer, ...]
    input_bytes: float = 0.0  # bytes per sample of the model input

    def __post_init__(self) -> None:
        if not self.layers:
            raise ValueError(f"workload {self.name!r} has no layers")

    @property
    def n(self) -> int:
        return len(self.layers)

    def _arr(self, f: str) -> np.ndarray:
        return np.array([getattr(l, f) for l in self.layers], dtype=float)

    @property
    def fwd(self) -> np.ndarray:
        return self._arr("fwd_flops")

    @property
    def bwd(self) -> np.ndarray:
        return self._arr("bwd_flops")

    @property
    def params(self) -> np.ndarray:
        return self._arr("params")

    @property
    def act_out(self) -> np.ndarray:
        return self._arr("act_out")

    @property
    def act_int(self) -> np.ndarray:
        return self._arr("act_int")

    def boundary_bytes(self, cut: int) -> float:
        """Bytes per sample crossing a cut placed before layer ``cut`` (0 < cut < n)."""
        if not 0 < cut < self.n:
            raise ValueError(f"cut {cut} outside 1..{self.n - 1}")
        return self.layers[cut - 1].act_out

    def segment(self, lo: int, hi: int) -> Segment:
        if not 0 <= lo < hi <= self.n:
            raise ValueError(f"bad segment [{lo}, {hi}) for {self.n} layers")
        ls = self.layers[lo:hi]
        return Segment(lo, hi,
                       fwd_flops=sum(l.fwd_flops for l in ls),
                       bwd_flops=sum(l.bwd_flops for l in ls),
                       params=sum(l.params for l in ls),
                       act_in=self.input_bytes if lo == 0 else self.layers[lo - 1].act_out,
                       act_out=ls[-1].act_out,
                       act_int=sum(l.act_int for l in ls))

    def segments(self, cuts: Sequence[int]) -> list[Segment]:
        """Split at ``cuts`` (strictly increasing, inside 1..n-1) into len(cuts)+1 stages."""
        b = [0, *cuts, self.n]
        if any(b[i] >= b[i + 1] for i in range(len(b) - 1)):
            raise ValueError(f"cuts {list(cuts)} must be strictly increasing inside 1..{self.n - 1}")
        return [self.segment(b[i], b[i + 1]) for i in range(len(b) - 1)]


def _conv(name, h, w, cin, cout, k, act_factor=1.0) -> Layer:
    """Conv (+BN/ReLU) producing an h x w x cout map from cin channels with a k x k kernel."""
    macs = h * w * cin * cout * k * k
    out = h * w * cout * FP32
    return Layer(name, 2.0 * macs, 4.0 * macs, (k * k * cin + 1) * cout * FP32, out, act_factor * out)


def vgg16(image: int = 224, classes: int = 1000) -> Workload:
    """VGG16 as 21 layers: 13 conv(+ReLU), 5 max-pools, 3 FC (Simonyan & Zisserman 2015)."""
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    layers: list[Layer] = []
    h, c = image, 3
    ci = 0
    for v in cfg:
        if v == "M":
            h2 = h // 2
            layers.append(Layer(f"pool{len([l for l in layers if l.name.startswith('pool')]) + 1}",
                                float(h * h * c), float(h * h * c), 0.0, h2 * h2 * c * FP32, 0.0))
            h = h2
        else:
            ci += 1
            layers.append(_conv(f"conv{ci}", h, h, c, v, 3))
            c = v
    dims = [h * h * c, 4096, 4096, classes]
    for i in range(3):
        macs = dims[i] * dims[i + 1]
        layers.append(Layer(f"fc{i + 1}", 2.0 * macs, 4.0 * macs, (dims[i] + 1) * dims[i + 1] * FP32,
                            dims[i + 1] * FP32, dims[i + 1] * FP32))
    return Workload("VGG16", tuple(layers), input_bytes=image * image * 3 * FP32)


def resnet50(image: int = 224, classes: int = 1000) -> Workload:
    """ResNet-50 (v1.5: stride in the 3x3) as 18 layers: stem, 16 bottleneck blocks, head."""
    layers: list[Layer] = []
    h = image // 2
    stem = _conv("stem", h, h, 3, 64, 7)
    h //= 2  # max-pool
    layers.append(replace(stem, act_out=h * h * 64 * FP32))
    cin = 64
    for si, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3))):
        for bi in range(blocks):
            stride = 2 if (bi == 0 and si > 0) else 1
            ho = h // stride
            cout = 4 * width
            parts = [_conv("", h, h, cin, width, 1), _conv("", ho, ho, width, width, 3),
                     _conv("", ho, ho, width, cout, 1)]
            if bi == 0:
                parts.append(_conv("", ho, ho, cin, cout, 1))
            layers.append(Layer(f"res{si + 2}.{bi}",
                                sum(p.fwd_flops for p in parts), sum(p.bwd_flops for p in parts),
                                sum(p.params for p in parts), ho * ho * cout * FP32,
                                sum(p.act_int for p in parts)))
            h, cin = ho, cout
    macs = cin * classes
    layers.append(Layer("head", 2.0 * macs + h * h * cin, 4.0 * macs, (cin + 1) * classes * FP32,
                        classes * FP32, cin * FP32))
    return Workload("ResNet-50", tuple(layers), input_bytes=image * image * 3 * FP32)


def gpt(n_layer: int = 12, d_model: int = 768, n_head: int = 12, seq: int = 512,
        vocab: int = 40478, name: str | None = None) -> Workload:
    """A GPT-style decoder as n_layer + 2 partitionable layers: embedding, blocks, LM head.

    Per sequence (= sample): a block's forward FLOPs are 24*s*h^2 (QKV, projection, 4h MLP)
    plus 4*s^2*h (scores and weighted sum); backward is twice that. Stashed activations
    follow Korthikanti et al. 2022 (s*h*(34 + 5*a*s/h) bytes at 2-byte precision), scaled
    to FP32.
    """
    for k, v in dict(n_layer=n_layer, d_model=d_model, n_head=n_head, seq=seq, vocab=vocab).items():
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"gpt: {k} must be a positive integer, got {v!r}")
    s, h = seq, d_model
    hid = s * h * FP32
    layers = [Layer("embed", float(2 * s * h), float(2 * s * h), float((vocab + s) * h * FP32), hid, 0.0)]
    blk_f = 24.0 * s * h * h + 4.0 * s * s * h
    blk_act = s * h * (34 + 5 * n_head * s / h) * (FP32 / 2)
    for i in range(n_layer):
        layers.append(Layer(f"block{i}", blk_f, 2 * blk_f, float((12 * h * h + 13 * h) * FP32), hid, blk_act))
    head_f = 2.0 * s * h * vocab
    layers.append(Layer("lm_head", head_f, 2 * head_f, float(h * vocab * FP32),
                        float(s * vocab * FP32), float(2 * s * vocab * FP32)))
    return Workload(name or f"GPT-{n_layer}x{d_model}", tuple(layers), input_bytes=float(s * 8))


def gpt1_14() -> Workload:
    """GPT-1 (12 blocks, h=768, 12 heads, s=512, V=40478) as 14 partitionable layers.

    This is our reading of the UMPIPE paper's "GPT1-14" (an assumption, see the design)."""
    return gpt(12, 768, 12, 512, 40478, name="GPT1-14")


WORKLOADS: dict[str, Callable[[], Workload]] = {
    "vgg16": vgg16, "resnet50": resnet50, "gpt1-14": gpt1_14,
    "gpt2-small": lambda: gpt(12, 768, 12, 1024, 50257, name="GPT2-small"),
    "gpt2-medium": lambda: gpt(24, 1024, 16, 1024, 50257, name="GPT2-medium"),
}


def workload(name: str) -> Workload:
    try:
        return WORKLOADS[name.lower()]()
    except KeyError:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(sorted(WORKLOADS))}") from None


# --------------------------------------------------------------------------------------
# devices, links, clusters


@dataclass(frozen=True)
class Device:
    """A compute device. ``speed`` is the *effective* training FLOP/s at full utilisation;
    a microbatch smaller than ``knee`` samples costs as much as one of ``knee`` samples, and
    every microbatch pays ``overhead`` seconds (kernel launches, framework, P2P set-up)."""

    name: str
    speed: float  # FLOP/s
    memory: float  # bytes
    price: float  # $ per hour
    overhead: float = 50e-6  # s per microbatch
    knee: int = 8  # samples

    def __post_init__(self) -> None:
        if not (self.speed > 0 and self.memory > 0 and self.price >= 0 and self.overhead >= 0
                and self.knee >= 0):
            raise ValueError(f"device {self.name!r}: speed/memory must be > 0 and price/overhead/knee >= 0")

    @property
    def price_per_s(self) -> float:
        return self.price / 3600.0

    def compute_time(self, flops_per_sample: float, b) -> np.ndarray:
        """Time to run ``flops_per_sample`` on a microbatch of ``b`` samples (vectorised)."""
        b = np.asarray(b, dtype=float)
        t = self.overhead + flops_per_sample * np.maximum(b, self.knee) / self.speed
        return np.where(b > 0, t, 0.0)


GB = 1e9
DEVICE_TYPES: dict[str, Device] = {
    # Assumed figures (not measurements): effective training throughput (about half of the
    # FP32/TF32 peak), memory, on-demand cloud price; 0.4 ms per microbatch and stage for the
    # framework, kernel launches and the P2P hand-shake; larger GPUs need larger microbatches
    # to fill their SMs (knee).
    "a100": Device("a100", 60e12, 40 * GB, 3.67, overhead=0.4e-3, knee=16),
    "v100": Device("v100", 14e12, 16 * GB, 2.48, overhead=0.4e-3, knee=8),
    "p100": Device("p100", 8e12, 16 * GB, 1.46, overhead=0.4e-3, knee=4),
    "t4": Device("t4", 4e12, 16 * GB, 0.53, overhead=0.4e-3, knee=4),
    "k80": Device("k80", 2.5e12, 12 * GB, 0.45, overhead=0.4e-3, knee=2),
}


def device(kind: str, **overrides) -> Device:
    try:
        d = DEVICE_TYPES[kind.lower()]
    except KeyError:
        raise ValueError(f"unknown device type {kind!r}; known: {', '.join(DEVICE_TYPES)}") from None
    return replace(d, **overrides) if overrides else d


@dataclass(frozen=True)
class Link:
    bandwidth: float  # bytes/s
    latency: float = 0.0  # s

    def __post_init__(self) -> None:
        if not (self.bandwidth > 0 and self.latency >= 0):
            raise ValueError(f"link needs bandwidth > 0 and latency >= 0, got {self}")

    def time(self, nbytes) -> np.ndarray:
        nbytes = np.asarray(nbytes, dtype=float)
        return np.where(nbytes > 0, self.latency + nbytes / self.bandwidth, 0.0)


@dataclass(frozen=True, eq=False)
class Cluster:
    name: str
    devices: tuple[Device, ...]
    bandwidth: np.ndarray  # [N, N] bytes/s (diagonal ignored)
    latency: np.ndarray  # [N, N] s

    def __post_init__(self) -> None:
        n = len(self.devices)
        if n == 0:
            raise ValueError("a cluster needs at least one device")
        bw = np.asarray(self.bandwidth, dtype=float)
        lat = np.asarray(self.latency, dtype=float)
        if bw.shape != (n, n) or lat.shape != (n, n):
            raise ValueError(f"cluster {self.name!r}: bandwidth/latency must be {n}x{n}")
        off = ~np.eye(n, dtype=bool)
        if np.any(bw[off] <= 0) or np.any(lat < 0):
            raise ValueError(f"cluster {self.name!r}: bandwidth must be > 0 and latency >= 0")
        object.__setattr__(self, "bandwidth", bw)
        object.__setattr__(self, "latency", lat)

    @property
    def n(self) -> int:
        return len(self.devices)

    @classmethod
    def uniform(cls, devices: Sequence[Device], bandwidth: float, latency: float = 0.0,
                name: str = "cluster") -> "Cluster":
        n = len(devices)
        return cls(name, tuple(devices), np.full((n, n), float(bandwidth)), np.full((n, n), float(latency)))

    @classmethod
    def two_level(cls, devices: Sequence[Device], node_of: Sequence[int], intra: Link, inter: Link,
                  name: str = "cluster") -> "Cluster":
        """Devices on the same node talk over ``intra``, others over ``inter``."""
        node = np.asarray(node_of)
        same = node[:, None] == node[None, :]
        return cls(name, tuple(devices), np.where(same, intra.bandwidth, inter.bandwidth),
                   np.where(same, intra.latency, inter.latency))

    def link(self, i: int, j: int) -> Link:
        return Link(float(self.bandwidth[i, j]), float(self.latency[i, j]))

    def slowed(self, factors: Iterable[float]) -> "Cluster":
        """A copy whose device speeds are divided by ``factors`` (one per device, > 0)."""
        f = np.asarray(list(factors), dtype=float)
        if f.shape != (self.n,) or np.any(~(f > 0)):
            raise ValueError(f"need {self.n} positive slowdown factors, got {f}")
        devs = tuple(replace(d, speed=d.speed / x) for d, x in zip(self.devices, f))
        return Cluster(self.name, devs, self.bandwidth, self.latency)

    def subset(self, idx: Sequence[int]) -> "Cluster":
        idx = list(idx)
        return Cluster(self.name, tuple(self.devices[i] for i in idx),
                       self.bandwidth[np.ix_(idx, idx)], self.latency[np.ix_(idx, idx)])


GBPS = 1e9 / 8  # bytes/s in one Gb/s


def _hetero4() -> Cluster:
    return Cluster.uniform([device("a100"), device("v100"), device("p100"), device("t4")],
                           25 * GBPS, 20e-6, name="hetero-4x")


def _homo4() -> Cluster:
    return Cluster.uniform([device("v100")] * 4, 25 * GBPS, 20e-6, name="homo-4x")


def _hetero8() -> Cluster:
    kinds = ["a100", "a100", "v100", "v100", "p100", "p100", "t4", "t4"]
    return Cluster.two_level([device(k) for k in kinds], [0, 0, 1, 1, 2, 2, 3, 3],
                             Link(100 * GBPS, 5e-6), Link(10 * GBPS, 30e-6), name="hetero-8x")


CLUSTERS: dict[str, Callable[[], Cluster]] = {"hetero-4x": _hetero4, "homo-4x": _homo4, "hetero-8x": _hetero8}


def cluster(name: str) -> Cluster:
    try:
        return CLUSTERS[name.lower()]()
    except KeyError:
        raise ValueError(f"unknown cluster {name!r}; known: {', '.join(CLUSTERS)}") from None


# --------------------------------------------------------------------------------------
# stragglers


class StragglerModel:
    """Yields compute-time multipliers per slot and device (1 = nominal, 3 = three times slower)."""

    def factors(self, n_slots: int, n_devices: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def _check(n_slots: int, n_devices: int) -> None:
        if not (isinstance(n_slots, (int, np.integer)) and n_slots >= 0
                and isinstance(n_devices, (int, np.integer)) and n_devices >= 1):
            raise ValueError(f"need n_slots >= 0 and n_devices >= 1, got {n_slots}, {n_devices}")


@dataclass(frozen=True)
class Persistent(StragglerModel):
    device: int
    factor: float
    start: int = 0
    end: int | None = None  # exclusive; None = forever

    def factors(self, n_slots: int, n_devices: int) -> np.ndarray:
        self._check(n_slots, n_devices)
        if not 0 <= self.device < n_devices or not self.factor > 0:
            raise ValueError(f"persistent straggler: device {self.device} / factor {self.factor} invalid")
        f = np.ones((n_slots, n_devices))
        f[self.start:self.end, self.device] = self.factor
        return f


@dataclass(frozen=True)
class Transient(StragglerModel):
    """Each slot, each device not already straggling starts an episode with probability ``p``;
    the episode's factor is uniform in ``factor`` and lasts a uniform integer number of slots in
    ``duration`` (inclusive)."""

    p: float
    factor: tuple[float, float] = (2.0, 5.0)
    duration: tuple[int, int] = (1, 3)
    seed: int = 0

    def factors(self, n_slots: int, n_devices: int) -> np.ndarray:
        self._check(n_slots, n_devices)
        if not (0 <= self.p <= 1 and 0 < self.factor[0] <= self.factor[1]
                and 1 <= self.duration[0] <= self.duration[1]):
            raise ValueError(f"transient straggler parameters invalid: {self}")
        rng = np.random.default_rng(self.seed)
        f = np.ones((n_slots, n_devices))
        busy_until = np.zeros(n_devices, dtype=int)
        for t in range(n_slots):
            start = (rng.random(n_devices) < self.p) & (busy_until <= t)
            for d in np.flatnonzero(start):
                k = int(rng.integers(self.duration[0], self.duration[1] + 1))
                f[t:t + k, d] = rng.uniform(*self.factor)
                busy_until[d] = t + k
        return f


def read_slot_csv(path: str, values: Sequence[str]) -> tuple[str, list[tuple[int, int, float]]]:
    """Rows of a trace CSV ``slot,device,VALUE`` (``#`` comments and blank lines skipped),
    where VALUE is one of ``values`` (the header names it). Returns (VALUE, [(slot, device,
    value)]); ValueError with ``path:line`` on a bad header or row (values must be finite and
    > 0)."""
    want = " or ".join(f"'slot,device,{v}'" for v in values)
    # utf-8-sig: a spreadsheet's "CSV UTF-8" starts with a byte-order mark, which made the
    # header read '\ufeffslot,device,quota' and be refused (until 2026-11-28)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            lines = [(i + 1, ln) for i, ln in enumerate(fh) if ln.strip() and not ln.lstrip().startswith("#")]
    except (OSError, UnicodeDecodeError) as e:
        # named as the trace (until 2026-11-28 "[Errno 2] No such file or directory: 't.csv'", and
        # a binary file the codec's message alone, naming no file)
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ValueError(f"trace {path}: cannot be read as a CSV file ({why})") from None
    if not lines:
        raise ValueError(f"{path}: empty trace (expected header {want})")
    header = [c.strip().lower() for c in lines[0][1].split(",")]
    # the columns are found by name, in any order: a held-out trace written 'device,slot,factor'
    # was refused until 2026-11-28
    kinds = [c for c in header if c in values]
    if len(header) != 3 or len(set(header)) != 3 or not {"slot", "device"} <= set(header) or len(kinds) != 1:
        raise ValueError(f"{path}:{lines[0][0]}: header must be {want} (the columns in any order), got "
                         f"{lines[0][1].strip()!r}")
    kind = kinds[0]
    cols = [header.index("slot"), header.index("device"), header.index(kind)]
    rows: list[tuple[int, int, float]] = []
    for lineno, ln in lines[1:]:
        parts = next(csv.reader([ln]))
        try:
            if len(parts) != 3:
                raise ValueError("need 3 fields")
            s, d = (_whole(parts[c], name) for c, name in zip(cols, ("slot", "device")))
            x = float(parts[cols[2]])
            if s < 0 or d < 0 or not (x > 0 and math.isfinite(x)):
                raise ValueError(f"slot/device must be >= 0 and {kind} > 0")
        except ValueError as e:
            raise ValueError(f"{path}:{lineno}: bad trace row {ln.strip()!r}: {e}") from None
        rows.append((s, d, x))
    return kind, rows


def _whole(text: str, name: str) -> int:
    """A slot or device number: a whole number, also written as a float ('3.0', as a spreadsheet
    or pandas may write it; refused with int()'s "invalid literal" until 2026-11-28)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {text.strip()!r}") from None
    if not (math.isfinite(v) and v == int(v)):
        raise ValueError(f"{name} must be a whole number, got {text.strip()!r}")
    return int(v)


@dataclass(frozen=True)
class TraceReplay(StragglerModel):
    """Replays recorded factors; slots past the end wrap around when ``loop`` else are 1."""

    entries: tuple[tuple[int, int, float], ...]  # (slot, device, factor)
    loop: bool = False

    @property
    def length(self) -> int:
        return 1 + max((s for s, _, _ in self.entries), default=-1)

    @classmethod
    def from_csv(cls, path: str, loop: bool = False) -> "TraceReplay":
        _, rows = read_slot_csv(path, ("factor",))
        return cls(tuple(rows), loop)

    def factors(self, n_slots: int, n_devices: int) -> np.ndarray:
        self._check(n_slots, n_devices)
        f = np.ones((n_slots, n_devices))
        L = self.length
        for s, d, x in self.entries:
            if d >= n_devices:
                raise ValueError(f"trace names device {d} but the cluster has {n_devices}")
            if self.loop and L > 0:
                f[s::L, d] = x
            elif s < n_slots:
                f[s, d] = x
        return f


@dataclass(frozen=True)
class Combined(StragglerModel):
    models: tuple[StragglerModel, ...] = field(default_factory=tuple)

    def factors(self, n_slots: int, n_devices: int) -> np.ndarray:
        self._check(n_slots, n_devices)
        f = np.ones((n_slots, n_devices))
        for m in self.models:
            f = f * m.factors(n_slots, n_devices)
        return f


def write_trace_csv(path: str, factors: np.ndarray) -> None:
    """Record a [T, N] factor matrix in the trace CSV format (rows only where factor != 1)."""
    f = np.asarray(factors, dtype=float)
    if f.ndim != 2:
        raise ValueError("factors must be a [slots, devices] matrix")
    with open(path, "w", newline="") as fh:
        fh.write("# saatp straggler trace: compute-time multipliers, unlisted = 1\n")
        fh.write("slot,device,factor\n")
        for s, d in zip(*np.nonzero(f != 1.0)):
            fh.write(f"{int(s)},{int(d)},{float(f[s, d])!r}\n")
