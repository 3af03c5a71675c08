"""Checks the parent of a real-process run (``saatp train groups``, ``saatp train cgp``) makes
before it starts any rank: what would otherwise fail in every rank after seconds of start-up
and be reported as "worker(s) [3] exited"."""

from __future__ import annotations

import copy

import torch
from torch import nn

from ..digits import Dataset


def check_no_lazy_parameters(model: nn.Module, model_name: str) -> None:
    """A layer whose parameters are made at its first forward (``nn.LazyLinear``, ``LazyConv2d``)
    is refused, naming it: the ranks build the model and exchange its parameters by their sizes
    before any forward; until 2026-11-28 every rank of both commands failed after start-up with
    "Attempted to use an uninitialized parameter"."""
    lazy = [f"{name} ({type(m).__name__})" if name else type(m).__name__ for name, m in model.named_modules()
            if any(isinstance(p, nn.parameter.UninitializedParameter) for p in m.parameters(recurse=False))]
    if lazy:
        raise ValueError(f"model {model_name}: layer(s) {', '.join(lazy)} make their parameters at the first forward "
                         f"(a lazy module, e.g. nn.LazyLinear): the processes exchange parameters by their sizes "
                         f"before any forward; give those layers their input sizes (nn.Linear(in_features, ...))")


def _flatten_hint(model: nn.Module, x: torch.Tensor) -> str:
    """A hint when the model's first layer is an ``nn.Linear`` taking as many features as a
    sample of ``x`` has values, but the samples are not flat (digits' ``[1, 8, 8]`` images into
    ``nn.Linear(64, ...)``): until 2026-11-28 torch's "mat1 and mat2 shapes cannot be multiplied
    (32x8 and 64x32)" alone."""
    first = next((m for m in model.modules() if not list(m.children())), None)
    per_sample = x[0].numel() if len(x) else 0
    if x.dim() > 2 and isinstance(first, nn.Linear) and first.in_features == per_sample:
        return (f"; each sample is {list(x.shape[1:])} ({per_sample} values) and the model's first layer an "
                f"nn.Linear({first.in_features}, ...): put nn.Flatten() before it")
    return ""


def check_model_on_data(model: nn.Module, data: Dataset, model_name: str, samples: int = 4) -> int:
    """One forward pass of ``samples`` training inputs, and one of test inputs, in eval mode (no
    gradient, the module's mode restored): the model must take both splits' inputs (until
    2026-11-28 test inputs it could not take failed the first accuracy, after a slot or after
    the whole run) and give one row of class scores per sample, at least as many as the labels
    need (labels ``0..C-1`` of both splits: the loss is cross-entropy on class labels). Returns
    the number of outputs; ValueError naming the model, the shapes and the labels otherwise."""
    check_no_lazy_parameters(model, model_name)  # before the forward below, which would make them
    outs = []
    was = model.training
    model.eval()
    try:
        # copies: a first layer that works in place changed the data set's first samples in the
        # parent (which then saved them for the ranks and tested on them; until 2026-11-28)
        for split, x in (("inputs", data.x_train[:samples].clone()), ("test inputs", data.x_test[:samples].clone())):
            try:
                with torch.no_grad():
                    out = model(x)
            except Exception as e:  # noqa: BLE001 - any failure of the user's forward, reported with the shapes
                # integer inputs stay integers (token ids into an nn.Embedding): uint8 images failed with
                # "Input type (unsigned char) and bias type (float) should be the same" and no hint (until 2026-11-28)
                hint = ("" if x.is_floating_point() else
                        f"; the inputs are {x.dtype} and are passed as they are (token ids for an nn.Embedding): "
                        f"inputs to other layers must be floats (x.astype(numpy.float32))")
                # a model built in another float type (.double()): until 2026-11-28 torch's "mat1 and
                # mat2 must have the same dtype" alone, though the data set's floats were made float32 here
                other = sorted({str(p.dtype) for p in model.parameters() if p.is_floating_point()}
                               - {str(x.dtype)}) if x.is_floating_point() else []
                if other:
                    hint += (f"; the model's parameters are {', '.join(other)} while a data set's float inputs are "
                             f"made torch's default dtype ({x.dtype}): build the model in {x.dtype} (without "
                             f".double() or .to(dtype)); a last layer that casts the scores is fine")
                hint += _flatten_hint(model, x)
                raise ValueError(f"model {model_name} fails on the data set's {split} (a batch of shape "
                                 f"{list(x.shape)}): {type(e).__name__}: {e}{hint}") from None
            if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != len(x):
                got = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                raise ValueError(f"model {model_name} must give one row of class scores per sample ([{len(x)}, "
                                 f"classes] for {split} of shape {list(x.shape)}), got {got}")
            outs.append(out)
        check_every_token_input(model, data, model_name)
    finally:
        model.train(was)
    out = outs[0]
    labels = torch.cat([data.y_train.reshape(-1), data.y_test.reshape(-1)])
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0:
        raise ValueError(f"data set: class labels must be >= 0, got {lo}")
    n = int(out.shape[1])
    if hi >= n:
        distinct = torch.unique(labels)
        # labels with gaps ({1, 3, 7}) are not 8 classes, but the loss takes label 7 as output 7
        what = (f"{hi + 1} classes, 0-{hi}" if len(distinct) == hi + 1 else
                f"{len(distinct)} distinct labels, {', '.join(map(str, distinct[:6].tolist()))}"
                f"{', ...' if len(distinct) > 6 else ''}; a label is the index of its output")
        raise ValueError(f"model {model_name} gives {n} outputs per sample, but the data set's labels go up to "
                         f"{hi} ({what}): its last layer needs at least {hi + 1} outputs")
    return n


def check_every_token_input(model: nn.Module, data: Dataset, model_name: str, chunk: int = 512) -> None:
    """For integer inputs (token ids), one no-grad forward pass of every sample of both splits
    (in the model's current mode): an id past an ``nn.Embedding``'s rows fails only in the
    batches that hold it, so the few samples of :func:`check_model_on_data` do not show it.
    ValueError naming the split, the samples and the largest id. Until 2026-11-28 such data
    failed every rank after start-up ("index out of range in self"), or the evaluation after the
    whole run where only the test split had one."""
    for split, x in (("inputs", data.x_train), ("test inputs", data.x_test)):
        if x.is_floating_point() or x.is_complex():
            continue
        for i in range(0, len(x), chunk):
            try:
                with torch.no_grad():
                    model(x[i:i + chunk].clone())
            except Exception as e:  # noqa: BLE001 - any failure of the user's forward, reported with the samples
                raise ValueError(f"model {model_name} fails on the data set's {split} {i}-{min(i + chunk, len(x)) - 1} "
                                 f"(of {len(x)}; integer inputs up to {int(x.max())}, an nn.Embedding needs more "
                                 f"rows than the largest id): {type(e).__name__}: {e}") from None


def least_batch(model: nn.Module, x: torch.Tensor) -> int:
    """The fewest samples the model trains on: 1, or 2 when a training-mode forward pass of one
    input fails (a batch-norm layer: "Expected more than 1 value per channel when training").
    A copy runs it, so the model's running statistics stay as they are."""
    m = copy.deepcopy(model).train()
    try:
        with torch.no_grad():
            m(x[:1].clone())
    except Exception:  # noqa: BLE001 - whatever the user's layers raise on one sample
        return 2
    return 1


def check_layers_share_no_parameter(layers: nn.Sequential, model_name: str) -> None:
    """ValueError naming the layers when two children of ``layers`` hold the same parameter
    (tied weights, e.g. an embedding and an output layer): the groups executor keeps, moves and
    updates each layer's parameters on its own, and pipelines may cut between the two. Until
    2026-11-28 such a model failed every worker at start-up ("shape '[20, 8]' is invalid for
    input of size 0")."""
    owner: dict[int, int] = {}
    for i, layer in enumerate(layers):
        for p in layer.parameters():
            j = owner.setdefault(id(p), i)
            if j != i:
                raise ValueError(f"model {model_name}: layers {j} and {i} share a parameter of shape "
                                 f"{list(p.shape)} (tied weights); saatp train groups keeps each layer's "
                                 f"parameters on its own (a pipeline may cut between them): untie them, or "
                                 f"train it with saatp train cgp")
