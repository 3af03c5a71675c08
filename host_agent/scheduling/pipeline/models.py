"""Models for pipeline training: each is an ``nn.Sequential`` whose children are the layers
the planner may cut between, plus a deterministic batch generator and a loss.

A model spec is ``vgg-mini``, ``gpt-mini`` or ``MODULE:FN``, where ``FN()`` returns a
:class:`ModelSpec` (or a tuple ``(sequential, make_batch, loss_sum)`` with the same meaning;
``sequential`` is a builder, seeded before each call, or a built ``nn.Sequential``, copied for
each run, whose weights are its own whatever the seed).
``loss_sum(output, target)`` must return the SUM of per-sample losses, so that summing the
microbatches' losses divided by B equals the minibatch mean (what gradient accumulation needs).
"""

from __future__ import annotations

import copy
import inspect
import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from ..fn_specs import load_fn


@dataclass
class ModelSpec:
    name: str
    build: Callable[[], nn.Sequential]  # deterministic given torch's seed
    make_batch: Callable[[int, int], tuple[torch.Tensor, torch.Tensor]]  # (B, step) -> (x, y)
    loss_sum: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _ce_sum(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), reduction="sum") \
        / (y[0].numel() if y.dim() > 1 else 1)


def _gen(step: int, salt: int) -> torch.Generator:
    return torch.Generator().manual_seed(1_000_003 * step + salt)


# ---- vgg-mini: VGG-style conv blocks on 3x32x32 images, 10 classes


def vgg_mini(width: int = 24) -> nn.Sequential:
    w = width
    layers: list[nn.Module] = []
    cin = 3
    for cout, pool in ((w, False), (w, True), (2 * w, False), (2 * w, True), (4 * w, False), (4 * w, True),
                       (8 * w, False), (8 * w, True)):
        layers.append(nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU()))
        if pool:
            layers.append(nn.MaxPool2d(2))
        cin = cout
    layers.append(nn.Flatten())
    layers.append(nn.Sequential(nn.Linear(8 * w * 2 * 2, 256), nn.ReLU()))
    layers.append(nn.Linear(256, 10))
    return nn.Sequential(*layers)


def _vgg_batch(B: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = _gen(step, 1)
    return torch.randn(B, 3, 32, 32, generator=g), torch.randint(0, 10, (B,), generator=g)


# ---- gpt-mini: token + position embedding, pre-LN transformer blocks, LM head


class Embedding(nn.Module):
    def __init__(self, vocab: int, seq: int, h: int):
        super().__init__()
        self.tok = nn.Embedding(vocab, h)
        self.pos = nn.Parameter(torch.randn(seq, h) * 0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.tok(idx) + self.pos[: idx.shape[1]]


class Block(nn.Module):
    """Pre-LN transformer block with causal self-attention (no dropout: deterministic)."""

    def __init__(self, h: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.mlp = nn.Sequential(nn.Linear(h, 4 * h), nn.GELU(), nn.Linear(4 * h, h))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
        q, k, v = (z.view(b, t, self.heads, h // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(h // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, h)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class Head(nn.Module):
    def __init__(self, h: int, vocab: int):
        super().__init__()
        self.ln = nn.LayerNorm(h)
        self.out = nn.Linear(h, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.ln(x))


GPT_MINI = dict(vocab=512, seq=32, h=128, heads=4, blocks=6)


def gpt_mini(vocab: int = GPT_MINI["vocab"], seq: int = GPT_MINI["seq"], h: int = GPT_MINI["h"],
             heads: int = GPT_MINI["heads"], blocks: int = GPT_MINI["blocks"]) -> nn.Sequential:
    return nn.Sequential(Embedding(vocab, seq, h), *[Block(h, heads) for _ in range(blocks)], Head(h, vocab))


def _gpt_batch(B: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = _gen(step, 2)
    toks = torch.randint(0, GPT_MINI["vocab"], (B, GPT_MINI["seq"] + 1), generator=g)
    return toks[:, :-1].contiguous(), toks[:, 1:].contiguous()


BUILTIN = {
    "vgg-mini": ModelSpec("vgg-mini", vgg_mini, _vgg_batch, _ce_sum),
    "gpt-mini": ModelSpec("gpt-mini", gpt_mini, _gpt_batch, _ce_sum),
}


def load_model(spec: str) -> ModelSpec:
    """``vgg-mini``, ``gpt-mini`` or ``MODULE:FN``; raises ValueError with the reason."""
    if spec in BUILTIN:
        return BUILTIN[spec]
    if ":" not in spec:
        raise ValueError(f"unknown model {spec!r}: use {', '.join(BUILTIN)} or MODULE:FN")
    fn = load_fn(spec, "model")
    if not callable(fn):
        raise ValueError(f"model {spec!r}: {spec.split(':', 1)[1]} is {fn!r:.60} ({type(fn).__name__}), not a function "
                         f"returning a ModelSpec or (sequential|builder, make_batch, loss_sum)")
    try:
        # FN is called without arguments: one that needs some failed with a TypeError's
        # traceback until 2026-11-28
        inspect.signature(fn).bind()
    except TypeError as e:
        raise ValueError(f"model {spec!r}: {spec.split(':', 1)[1]} is called without arguments ({e}): give it "
                         f"defaults or wrap it in a function of none") from None
    except ValueError:  # no signature to read (a builtin): call it as it is
        pass
    got = fn()
    if isinstance(got, ModelSpec) or (isinstance(got, tuple) and len(got) == 3):
        # a ModelSpec whose build is a built model was called as a builder until 2026-11-28:
        # "Sequential.forward() missing 1 required positional argument" (a list: "'list' object is
        # not callable"), as tracebacks; it is a built model as in the tuple form
        name, (seq, batch, loss) = ((got.name, (got.build, got.make_batch, got.loss_sum)) if isinstance(got, ModelSpec)
                                    else (spec, got))
        if isinstance(seq, (nn.Module, list, tuple)):
            # a built model (an nn.Sequential or a list of modules): every build is a fresh copy
            # of it as FN returned it (the runs of a session each train their own copy; handing
            # out the object itself made them all train one set of weights). Its weights are
            # FN's, whatever the seed. A built list failed with "'list' object is not callable"
            # until 2026-11-28.
            pristine = copy.deepcopy(seq)
            return ModelSpec(name, lambda: copy.deepcopy(pristine), batch, loss)
        if not callable(seq):
            raise ValueError(f"{spec}() returned {seq!r:.60} ({type(seq).__name__}) as the model: expected an nn.Sequential, "
                             f"a list of modules or a function building one")
        return got if isinstance(got, ModelSpec) else ModelSpec(spec, seq, batch, loss)
    raise ValueError(f"{spec}() must return a ModelSpec or (sequential|builder, make_batch, loss_sum)")


def build_layers(spec: ModelSpec, seed: int = 0) -> nn.Sequential:
    """The model with deterministic initial weights (every stage process builds the same)."""
    torch.manual_seed(seed)
    m = spec.build()
    if isinstance(m, (list, tuple, nn.ModuleList)):
        bad = [f"{i} ({type(x).__name__})" for i, x in enumerate(m) if not isinstance(x, nn.Module)]
        if bad:
            raise ValueError(f"model {spec.name}: item {', '.join(bad)} of its list is not an nn.Module")
        m = nn.Sequential(*m)
    if not isinstance(m, nn.Sequential):
        raise ValueError(f"model {spec.name} must be an nn.Sequential or a list of modules, got {type(m).__name__}")
    _check_no_shared_parameters(spec.name, m)
    return m


def nested_note(name: str, layers: nn.Sequential) -> str | None:
    """The note for a model whose layers include an ``nn.Sequential`` (or ``nn.ModuleList``) of
    their own: only the model's own children are places to cut, so each such layer stays whole
    on one stage; None when there is none. Until 2026-11-28 the profiler said "5 layers" of a
    model of 11 modules in nested ``nn.Sequential`` s, and nothing of where it could cut."""
    nested = [f"{i} ({type(x).__name__} of {len(x)})" for i, x in enumerate(layers)
              if isinstance(x, (nn.Sequential, nn.ModuleList))]
    if not nested:
        return None
    return (f"note: model {name}: layer{'s' if len(nested) > 1 else ''} {', '.join(nested)} "
            f"{'are' if len(nested) > 1 else 'is'} nested: only the children of the model's nn.Sequential "
            f"({len(layers)} layers) are places to cut, so each nested one stays whole on one stage; unpack it "
            f"into the model's nn.Sequential (nn.Sequential(*inner, ...)) to let the planner cut inside it")


def _check_no_shared_parameters(name: str, layers: nn.Sequential) -> None:
    """ValueError naming two layers that hold the same parameter (tied weights: an embedding
    and its output head). Every child is a place to cut, and each stage process trains its own
    copy of its layers: until 2026-11-28 tied layers on two stages trained apart, without a
    word."""
    owner: dict[int, tuple[int, str]] = {}
    for i, layer in enumerate(layers):
        for pname, p in layer.named_parameters():
            j, jname = owner.setdefault(id(p), (i, pname))
            if j != i:
                raise ValueError(
                    f"model {name}: layers {j} ({type(layers[j]).__name__}) and {i} ({type(layer).__name__}) share a "
                    f"parameter ({jname} and {pname}): every child of the model's nn.Sequential is a place to cut, "
                    f"and each pipeline stage trains its own copy of its layers' parameters (tied weights would "
                    f"train apart); put the layers that share it into one module")


def check_batch(spec: ModelSpec, B: int) -> None:
    """ValueError unless ``make_batch(B, 0)`` is an (input, target) pair of tensors of ``B``
    samples each (their first dimension): the stages slice both by sample; and unless
    ``loss_sum`` of the model's output on two of them is one floating-point tensor. A make_batch that
    returned fewer samples failed the pipeline's first run with "bad pipeline message header"
    in the stages' logs (and the profiler timed its layers on the wrong sizes) until 2026-11-28."""
    got = spec.make_batch(B, 0)
    if not (isinstance(got, (tuple, list)) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)):
        kind = (f"a {type(got).__name__} of {len(got)}" if isinstance(got, (tuple, list))
                else f"a {type(got).__name__}")
        raise ValueError(f"model {spec.name}: make_batch({B}, 0) must return (input, target) tensors, not {kind}")
    for what, t in zip(("input", "target"), got):
        n = t.shape[0] if t.dim() else 0
        if n != B:
            raise ValueError(f"model {spec.name}: make_batch({B}, 0) returned an {what} of {n} samples (shape "
                             f"{tuple(t.shape)}), not {B}: the first dimension is the sample")
    # loss_sum must give one number: per-sample losses failed every stage's first iteration
    # with "only one element tensors can be converted to Python scalars" (2026-11-28)
    x, y = got
    layers = build_layers(spec)
    layers.eval()  # as the stages' shape probe: no BatchNorm statistics, no one-sample refusal
    with torch.no_grad():
        out = x[:2]
        for i, layer in enumerate(layers):  # layer by layer, to name the one that fails
            try:
                out = layer(out)
            except (RuntimeError, TypeError, ValueError, IndexError) as e:  # torch's message alone until 2026-11-28
                raise ValueError(f"model {spec.name}: the model fails on make_batch({B}, 0)'s input ({_what(x)}): "
                                 f"{type(e).__name__}: {e} (in layer {i}, {type(layer).__name__}"
                                 + _not_one_tensor(layers, i, out) + ")") from None
        try:
            loss = spec.loss_sum(out, y[:2])
        except (RuntimeError, TypeError, ValueError, IndexError) as e:
            raise ValueError(f"model {spec.name}: loss_sum fails on the model's output ({_what(out)}) and "
                             f"make_batch({B}, 0)'s target ({_what(y)}): {type(e).__name__}: {e}") from None
    if not (isinstance(loss, torch.Tensor) and loss.numel() == 1 and loss.is_floating_point()):
        kind = (f"a tensor of shape {tuple(loss.shape)} and type {loss.dtype}" if isinstance(loss, torch.Tensor)
                else f"a {type(loss).__name__}")
        raise ValueError(f"model {spec.name}: loss_sum(output, target) must return one floating-point tensor "
                         f"(the sum of the per-sample losses), not {kind}")


def _not_one_tensor(layers: nn.Sequential, i: int, got) -> str:
    """Why layer ``i`` may have failed: the layer before it returned a tuple or another object,
    not one tensor (a bare ``nn.LSTM``, whose ``(output, (h, c))`` the next layer could not
    take: "tuple indices must be integers or slices, not tuple", naming no layer, until
    2026-11-28). Empty when it returned a tensor."""
    if i == 0 or isinstance(got, torch.Tensor):
        return ""
    return (f", whose input, the output of layer {i - 1} ({type(layers[i - 1]).__name__}), is a {type(got).__name__}, "
            f"not one tensor: every child of the model's nn.Sequential is a place to cut, and a stage boundary "
            f"carries one tensor; wrap layer {i - 1} in a module that returns the tensor the next layer needs "
            f"(for an nn.LSTM, its output: lstm(x)[0])")


def _what(t) -> str:
    return f"shape {tuple(t.shape)}, {t.dtype}" if isinstance(t, torch.Tensor) else f"a {type(t).__name__}"


def draw_batch(spec: ModelSpec, B: int, step: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``make_batch(B, step)`` on torch's global random stream seeded from ``(seed, step)``, and
    the stream put back afterwards: every stage process draws the step's batch itself (stage 0
    uses the inputs, the last stage the targets), and a make_batch that draws from the global
    stream got other values on a stage whose layers had drawn from it (a Dropout), so inputs
    and targets no longer belonged together, without a word (until 2026-11-28)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1_000_003 * seed + step)
        return spec.make_batch(B, step)


def cut(layers: nn.Sequential, cuts: list[int]) -> list[nn.Sequential]:
    """Stage modules: layers [0, cuts[0]), [cuts[0], cuts[1]), ..., [cuts[-1], L)."""
    bounds = [0, *cuts, len(layers)]
    if any(b <= a for a, b in zip(bounds, bounds[1:])):
        raise ValueError(f"cuts {cuts} must be increasing within 1..{len(layers) - 1}")
    return [nn.Sequential(*list(layers)[a:b]) for a, b in zip(bounds, bounds[1:])]
