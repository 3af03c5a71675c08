"""Per-layer costs of the model on this machine, in the planner's units.

``profile_layers`` times each layer's forward+backward at two batch sizes (one thread, full
CPU) and fits ``alpha_l + beta_l b`` seconds; with ``1.0`` = one full CPU, a process whose
quota is ``q`` CPUs computes at speed ``~q``. The fitted line is the *work* of an op: a
process that ran ops of total work ``W`` in ``s`` seconds of compute has measured speed
``W / s`` (:func:`work`), which is what the planner sees of each process.

``workload`` turns the profile into the planner's :class:`~..workloads.Workload`:
``fwd_flops = beta`` (work per sample), weight bytes and output bytes per sample. The fixed
part ``alpha`` enters the planner's per-microbatch overhead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..workloads import Layer, Workload


@dataclass
class LayerCosts:
    alpha: np.ndarray  # s per op at one CPU
    beta: np.ndarray  # s per sample at one CPU
    param_bytes: np.ndarray
    out_bytes: np.ndarray  # per sample
    out_shapes: list[tuple[int, ...]]  # per-sample output shape of every layer
    # layers that work on their input in place (nn.ReLU(inplace=True)): they cannot take a
    # received activation as it is (a leaf that requires grad), see :func:`stage_needs_copy`
    in_place: tuple[bool, ...] = ()
    # layers whose output is not floating point (token ids through a parameter-free layer): a
    # pipeline message carries float32, so the next stage turns it back (:func:`stage_takes_ids`)
    int_out: tuple[bool, ...] = ()

    def to_dict(self) -> dict:
        return {"alpha": self.alpha.tolist(), "beta": self.beta.tolist(), "param_bytes": self.param_bytes.tolist(),
                "out_bytes": self.out_bytes.tolist(), "out_shapes": [list(s) for s in self.out_shapes],
                "in_place": [bool(v) for v in self.in_place], "int_out": [bool(v) for v in self.int_out]}

    @classmethod
    def from_dict(cls, d: dict) -> LayerCosts:
        return cls(np.array(d["alpha"]), np.array(d["beta"]), np.array(d["param_bytes"]), np.array(d["out_bytes"]),
                   [tuple(s) for s in d["out_shapes"]], tuple(bool(v) for v in d.get("in_place", ())),
                   tuple(bool(v) for v in d.get("int_out", ())))

    @property
    def n(self) -> int:
        return len(self.alpha)


def _works_in_place(layer: nn.Module, x: torch.Tensor) -> bool:
    """Whether ``layer`` fails on a leaf input that requires grad because it writes to it."""
    if not x.is_floating_point():
        return False
    try:
        layer(x.detach().requires_grad_())
    except RuntimeError as e:
        if "in-place" in str(e):
            return True
        raise
    return False


def stage_needs_copy(c: LayerCosts, layers: nn.Sequential, lo: int, hi: int) -> bool:
    """Whether a pipeline stage of layers [lo, hi) must get a copy of its input (the received
    activations; on the first stage, each microbatch): a layer that works in place reaches it before any layer with
    parameters has made a tensor of its own (parameter-free layers before it, a Flatten, may
    pass a view of the input through). The runtime makes the received activations a leaf that
    requires grad, on which an in-place op fails every rank ("a view of a leaf Variable that
    requires grad is being used in an in-place operation"; until 2026-11-28)."""
    for l in range(lo, hi):
        if l < len(c.in_place) and c.in_place[l]:
            return True
        if any(True for _ in layers[l].parameters()):
            return False
    return False


def stage_takes_ids(c: LayerCosts, lo: int) -> bool:
    """Whether a pipeline stage starting at layer ``lo`` (> 0) receives integers (token ids) that
    travelled as float32: a stage of an ``nn.Embedding`` after a parameter-free layer on the ids
    failed every rank with "Expected tensor for argument #1 'indices' to have one of the following
    scalar types: Long, Int; but got torch.FloatTensor" (until 2026-11-28)."""
    return 0 < lo <= len(c.int_out) and c.int_out[lo - 1]


def _time_layer(layer: nn.Module, x: torch.Tensor, min_s: float) -> float:
    # integer inputs (token ids into an Embedding) take no gradient; the layer's own
    # parameters still do (until 2026-11-27 (22:00 UTC) requires_grad_ on them failed the whole run)
    x = x.detach().requires_grad_() if x.is_floating_point() else x.detach()
    # a layer that works in place (nn.ReLU(inplace=True)) cannot take a leaf that requires a
    # gradient ("a leaf Variable that requires grad is being used in an in-place operation"):
    # it gets a copy, as in a whole model, where its input is the previous layer's output.
    # Until 2026-11-28 such a model (torchvision's style) failed `train groups` at start-up
    copy = _works_in_place(layer, x)
    reps, t0 = 0, time.perf_counter()
    while True:
        out = layer(x.clone() if copy else x)
        if out.requires_grad:  # a parameter-free layer on integer inputs has no backward
            out.backward(torch.ones_like(out))
        reps += 1
        el = time.perf_counter() - t0
        if el >= min_s and reps >= 3:
            return el / reps


def profile_layers(layers: nn.Sequential, x: torch.Tensor, sizes=(8, 64), min_s: float = 0.04) -> LayerCosts:
    """Fit alpha + beta b per layer from fwd+bwd times at two batch sizes ``sizes``."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        lo, hi = sizes
        times = np.zeros((2, len(layers)))
        shapes, out_bytes, in_place, int_out = [], [], [], []
        for i, b in enumerate((lo, hi)):
            h = x[:1].expand(b, *x.shape[1:]).contiguous()
            for l, layer in enumerate(layers):
                times[i, l] = min(_time_layer(layer, h, min_s) for _ in range(2))
                if i == 0:
                    in_place.append(_works_in_place(layer, h))
                with torch.no_grad():
                    h = layer(h)
                if i == 0:
                    int_out.append(not h.is_floating_point())
                    shapes.append(tuple(h.shape[1:]))
                    out_bytes.append(4.0 * int(np.prod(h.shape[1:])))
        beta = np.maximum((times[1] - times[0]) / (hi - lo), 1e-9)
        alpha = np.maximum(times[0] - beta * lo, 0.0)
        # calibrate on whole-model passes: timing layers one by one inflates the fixed part
        # (per-call overhead) and, on a loaded host, both parts; the probes and the real
        # iterations run whole stages, so their measured speeds must be in the same units
        whole = []
        for b in (lo, hi):
            h = x[:1].expand(b, *x.shape[1:]).contiguous()
            whole.append(min(_time_layer(layers, h, min_s) for _ in range(2)))
        wb = max((whole[1] - whole[0]) / (hi - lo), 1e-9)
        wa = max(whole[0] - wb * lo, 0.0)
        beta = beta * (wb / beta.sum())
        alpha = alpha * (wa / alpha.sum()) if alpha.sum() > 0 else alpha
        pb = np.array([4.0 * sum(p.numel() for p in layer.parameters()) for layer in layers])
        return LayerCosts(alpha, beta, pb, np.array(out_bytes), shapes, tuple(in_place), tuple(int_out))
    finally:
        torch.set_num_threads(threads)


def op_work(c: LayerCosts, lo: int, hi: int, b: int) -> float:
    """Work (seconds at one CPU) of a forward+backward of layers [lo, hi) on ``b`` samples."""
    return float(c.alpha[lo:hi].sum() + c.beta[lo:hi].sum() * b)


def workload(c: LayerCosts, name: str = "model") -> Workload:
    return Workload(name, tuple([Layer(f"l{i}", float(c.beta[i]), 0.0, float(c.param_bytes[i]), float(c.out_bytes[i]))
                           for i in range(c.n)]), input_bytes=0.0)
