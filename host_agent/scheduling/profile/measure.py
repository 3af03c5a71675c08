"""Time each layer of a model in this process: forward and backward of a microbatch of b
samples, for several b; the optimizer step per layer; bytes stashed for backward and sent
to the next stage, per sample.

Times are **CPU seconds** of the calling thread (``time.thread_time``), the mean over a loop
of at least ``min_s`` CPU seconds: the work an op needs, independent of a CPU quota (the cost
model turns CPU seconds into wall time with the stage's CFS budget, see
:mod:`..orders`) and little disturbed by other processes on a busy host.
"""

from __future__ import annotations

import time
from typing import Sequence

import torch
from torch import nn

from ..pipeline.models import ModelSpec, build_layers
from ..pipeline.stage import copy_input_first, writes_input


def _loop_time(fn, min_s: float, max_reps: int = 1000) -> float:
    """Mean CPU seconds of ``fn()`` over a loop of at least ``min_s`` CPU seconds."""
    fn()  # warm-up (allocations, lazy init)
    n, t0 = 0, time.thread_time()
    while True:
        fn()
        n += 1
        el = time.thread_time() - t0
        if el >= min_s or n >= max_reps:
            return el / n


def _stash_bytes(layer: nn.Module, inp: torch.Tensor) -> int:
    """Bytes autograd saves for backward in one forward of ``layer`` (a tensor saved twice is
    counted once)."""
    seen: dict[int, int] = {}

    def pack(t):
        seen[id(t)] = t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = layer(inp)
    del out
    return sum(seen.values())


def smallest_runnable(spec: ModelSpec, sizes: Sequence[int], seed: int = 0) -> int:
    """The smallest microbatch, from 1 up to the largest of ``sizes``, a training forward and
    backward of the whole model accepts (``BatchNorm`` in training mode needs 2 samples, a model
    may reshape by a fixed count). Every count is tried, not only ``sizes``: with ``--sizes 2,4``
    vgg-mini was said to train only on 2 samples or more (until 2026-11-28), and no plan had a
    microbatch of one. A model that runs on none of them is a user error, reported with
    torch's message."""
    layers = build_layers(spec, seed)
    err: Exception | None = None
    for b in range(1, max(int(x) for x in sizes) + 1):
        x, y = spec.make_batch(b, 0)
        try:
            spec.loss_sum(layers(x), y).backward()
            layers.zero_grad(set_to_none=True)
            return b
        except (RuntimeError, ValueError, IndexError) as e:  # what torch raises for a bad shape
            err = e
    raise ValueError(f"model {spec.name} trains on none of the microbatch sizes 1..{max(int(x) for x in sizes)}: {err}")


class NotOneTensor(ValueError):
    """A layer's output is not one tensor: no stage boundary may follow that layer."""


def one_tensor(y, i: int, layer: nn.Module, last: bool = False) -> torch.Tensor:
    """``y``, the output of layer ``i``; :class:`NotOneTensor` (naming the layer) unless it is a
    tensor. Every child of the model's ``nn.Sequential`` is a layer the planner may cut after,
    and what crosses a stage boundary is one tensor. The ``last`` layer's output crosses no
    boundary but goes to ``loss_sum``, and the profiler and torch's schedules take one tensor
    there too: until 2026-11-28 a head returning ``(logits, aux)`` was told to put "the layers
    that pass the tuple on" into one module, when there are none after it."""
    if isinstance(y, torch.Tensor):
        return y
    if last:
        raise NotOneTensor(
            f"layer {i} ({type(layer).__name__}), the model's last, returns a {type(y).__name__}, not a tensor: "
            f"the pipeline's last stage hands one tensor to loss_sum (the profiler times its backward from it, "
            f"torch's schedules need it); return one tensor from the model (the logits, say) and compute the "
            f"rest in loss_sum")
    raise NotOneTensor(f"layer {i} ({type(layer).__name__}) returns a {type(y).__name__}, not a tensor: a pipeline "
                       f"stage boundary must carry one tensor, and every child of the model's nn.Sequential is a "
                       f"place to cut; put the layers that pass the {type(y).__name__} on into one module that "
                       f"returns one tensor")


class NotFloatBoundary(NotOneTensor):
    """A layer before the last outputs a tensor that is not float32: no stage boundary may
    follow it (the wire carries float32, a boundary passes gradients back)."""


class NotPerSample(NotOneTensor):
    """A layer before the last outputs a tensor whose first dimension is not the samples: no
    stage boundary may follow it (a boundary splits and sends a tensor by its first dimension)."""


def check_layer_outputs(spec: ModelSpec, b: int, seed: int = 0) -> None:
    """A forward of ``b`` and of ``b + 1`` samples, layer by layer (no gradients):
    :class:`NotOneTensor` for the first layer whose output is not one tensor,
    :class:`NotFloatBoundary` for the first but the last whose output is not float32: not
    floating point (token ids, say: until 2026-11-27 (22:00 UTC) the profiler failed on them
    with torch's "normal_kernel_cpu not implemented for 'Long'"), or another precision (a
    float64 model: the next stage got float32 and every run failed in the stages with "mat1
    and mat2 must have the same dtype" until 2026-11-28), :class:`NotPerSample` for the first
    but the last whose output's first dimension is not the sample count (a sequence-first
    transformer's ``(S, B, D)``: the runtime cuts and sends a boundary's tensor by its first
    dimension, and until 2026-11-28 the profile's calibration aborted gloo in a stage with
    "Received data size doesn't match expected size")."""
    for n in (int(b), int(b) + 1):
        _check_layer_outputs(spec, n, seed)


def _check_layer_outputs(spec: ModelSpec, b: int, seed: int) -> None:
    layers = build_layers(spec, seed)
    x, _ = spec.make_batch(int(b), 0)
    with torch.no_grad():
        for i, layer in enumerate(layers):
            x = one_tensor(layer(x), i, layer, last=i == len(layers) - 1)
            if i == len(layers) - 1:
                continue
            if x.dim() == 0 or x.shape[0] != b:
                raise NotPerSample(
                    f"layer {i} ({type(layer).__name__}) returns a tensor of shape {list(x.shape)} for {b} "
                    f"sample{'s' if b != 1 else ''}: "
                    f"every child of the model's nn.Sequential is a place to cut, and a pipeline stage boundary "
                    f"splits and sends a tensor by its first dimension, which must be the samples; put the layers "
                    f"from this one to the one that puts the samples first again into one module (or use "
                    f"batch_first=True)")
            if x.dtype == torch.float32:
                continue
            name = f"layer {i} ({type(layer).__name__}) returns a {x.dtype} tensor: every child of the model's " \
                   f"nn.Sequential is a place to cut, and a pipeline stage boundary carries"
            if not x.is_floating_point():
                raise NotFloatBoundary(
                    f"{name} floating-point activations and their gradients; put layer {i} into one module "
                    f"with the layer that turns its output into floats (an Embedding, say)")
            raise NotFloatBoundary(f"{name} float32 activations and gradients (the next stage would get float32); "
                                   f"make the model float32")


def profile_layers(spec: ModelSpec, sizes: Sequence[int], min_s: float = 0.05, seed: int = 0) -> dict:
    """Per layer: forward/backward seconds at each size, optimizer-step seconds, parameter bytes,
    output and stash bytes per sample."""
    layers = build_layers(spec, seed)
    out: list[dict] = [dict(name=type(l).__name__, fwd={}, bwd={}) for l in layers]
    # a layer that changes its input in place gets a copy, as a stage starting with it does
    # (until 2026-11-28 a ReLU(inplace=True) failed with "a leaf Variable that requires grad is
    # being used in an in-place operation")
    for layer, writes in zip(layers, writes_input(list(layers), spec.make_batch(2, 0)[0])):
        if writes:
            copy_input_first(layer)
    for b in sizes:
        x, _ = spec.make_batch(int(b), 0)
        h = x
        for i, layer in enumerate(layers):
            inp = h.detach()
            if inp.is_floating_point():
                inp.requires_grad_()
            y = one_tensor(layer(inp), i, layer, last=i == len(layers) - 1)
            g = torch.randn_like(y)

            def fwd(layer=layer, inp=inp):
                layer(inp)  # with autograd recording, as in a training forward

            def fwd_bwd(layer=layer, inp=inp, g=g):
                layer(inp).backward(g)

            tf = _loop_time(fwd, min_s)
            # an output that needs no gradient (a layer without trainable parameters on integer
            # input: uint8 images to floats; frozen layers) has no backward, as in the stages
            # (stage.run_iteration); until 2026-11-28 the profiler failed on it with "element 0
            # of tensors does not require grad"
            tfb = _loop_time(fwd_bwd, min_s) if y.requires_grad else tf
            out[i]["fwd"][int(b)] = tf
            out[i]["bwd"][int(b)] = max(tfb - tf, 1e-7)
            if b == sizes[-1]:
                out[i]["out_bytes_per_sample"] = y.detach().numel() * 4 / b
                out[i]["stash_bytes_per_sample"] = _stash_bytes(layer, inp) / b
            layer.zero_grad(set_to_none=True)
            h = y.detach()
    for i, layer in enumerate(layers):
        out[i]["param_bytes"] = sum(p.numel() * p.element_size() for p in layer.parameters())
        # frozen parameters (requires_grad=False) have no gradient and no momentum, and the
        # optimizer step skips them; buffers (BatchNorm's statistics, a fixed positional table)
        # are held once. Until 2026-11-28 the planners counted every parameter three times and
        # no buffer, and the optimizer step was timed over frozen parameters too
        # (costs.static_bytes)
        params = [p for p in layer.parameters() if p.requires_grad]
        out[i]["trainable_bytes"] = sum(p.numel() * p.element_size() for p in params)
        out[i]["buffer_bytes"] = sum(b.numel() * b.element_size() for b in layer.buffers())
        if params:
            for p in params:
                p.grad = torch.zeros_like(p)
            opt = torch.optim.SGD(params, lr=1e-9, momentum=0.9)
            out[i]["opt"] = _loop_time(opt.step, min_s / 2)
        else:
            out[i]["opt"] = 0.0
    return dict(layers=out)


def microbatch_overhead(min_s: float = 0.2) -> float:
    """CPU seconds of fixed per-microbatch work outside the layers in a stage process:
    slicing, the autograd bookkeeping of a tiny forward + backward, the loss of one sample.
    (A lower bound: in a running pipeline the calibration measures about ten times this.)"""
    lin = nn.Linear(1, 1)
    x = torch.randn(4, 1)

    def step():
        inp = x[1:3].detach().requires_grad_()
        out = lin(inp)
        torch.cat([out, out]).sum().backward()

    return _loop_time(step, min_s)


def main(argv: list[str] | None = None) -> int:
    """``python -m host_agent.scheduling.profile.measure CONFIG.json``: profile in this process
    (after joining ``cgroup`` if given) and write ``out``."""
    import json
    import sys

    from ..pipeline import cgroups
    from ..pipeline.models import load_model

    args = sys.argv[1:] if argv is None else argv
    with open(args[0]) as f:
        cfg = json.load(f)
    if cfg.get("cgroup"):
        cgroups.join(cfg["cgroup"])
    torch.set_num_threads(int(cfg.get("threads", 1)))
    spec = load_model(cfg["model"])
    try:
        least = smallest_runnable(spec, cfg["sizes"])
    except ValueError as e:
        print(e, file=sys.stderr)
        return 3
    sizes = [int(b) for b in cfg["sizes"] if int(b) >= least]
    if len(sizes) < 2:
        print(f"model {spec.name} trains only on microbatches of {sizes}: the profile needs two sizes "
              f"(give --sizes up to the minibatch)", file=sys.stderr)
        return 3
    try:
        check_layer_outputs(spec, least)  # before timing anything
    except NotOneTensor as e:
        print(f"model {spec.name}: {e}", file=sys.stderr)
        return 3
    res = profile_layers(spec, sizes, cfg["min_s"])
    res["min_microbatch"], res["sizes"] = least, sizes
    res["overhead"] = microbatch_overhead(max(0.2, cfg["min_s"]))
    with open(cfg["out"], "w") as f:
        json.dump(res, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
