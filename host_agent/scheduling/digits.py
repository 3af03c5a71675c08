"""scikit-learn's handwritten digits (1797 8x8 images, 10 classes) and a small CNN for them:
the real data set and model of ``saatp train groups`` and ``saatp train cgp``.

``load(seed)`` returns a :class:`Dataset` (float32 images ``[n, 1, 8, 8]``, standardised,
int64 labels), split 80/20 into train and test with a seeded permutation. ``cnn()`` is an
``nn.Sequential`` whose children are the layers a pipeline may be cut between.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass

import torch
from torch import nn

from .fn_specs import load_fn, spec_of


@dataclass
class Dataset:
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    name: str = "digits"

    def __post_init__(self) -> None:
        for split, x, y in (("training", self.x_train, self.y_train), ("test", self.x_test, self.y_test)):
            if len(x) != len(y):  # until 2026-11-28 the message named neither the split nor the lengths
                raise ValueError(f"data set: the {split} split has {len(x)} inputs and {len(y)} labels: one label "
                                 f"per sample")
        if len(self.x_train) == 0:
            raise ValueError("data set: empty training split")
        if len(self.x_test) == 0:  # the runs' accuracy is on the test split: it came out as NaN
            raise ValueError("data set: empty test split (x_test, y_test): the runs measure test accuracy on it")
        # what a user's arrays often are (numpy: float64 features, int32 labels) made what the
        # models and the loss take: float inputs in torch's default dtype, int64 class labels
        for name in ("x_train", "x_test"):
            x = _as_tensor(name, getattr(self, name))
            if x.is_floating_point() and not bool(torch.isfinite(x).all()):
                # a missing value (NaN) made every loss NaN: the runs ended at chance accuracy
                # without a word (until 2026-11-28)
                rows = torch.nonzero(~torch.isfinite(x.reshape(len(x), -1)).all(dim=1)).flatten().tolist()
                raise ValueError(f"data set: {name} holds NaN or infinite values ({len(rows)} of {len(x)} samples, "
                                 f"the first {rows[:5]}): every loss would be NaN; fill or drop them")
            setattr(self, name, x.to(torch.get_default_dtype()) if x.is_floating_point() else x)
        for name in ("y_train", "y_test"):
            y = _as_tensor(name, getattr(self, name))
            if y.is_floating_point():
                # whole numbers in floats are class labels as numpy.loadtxt or pandas give them
                # (refused until 2026-11-28); a fraction is not a class
                frac = ~torch.isfinite(y) | (y != torch.round(y))
                if bool(frac.any()):
                    i = int(torch.nonzero(frac.reshape(-1))[0])
                    raise ValueError(f"data set: {name} must hold integer class labels 0..C-1, got {y.dtype} with "
                                     f"{float(y.reshape(-1)[i]):g} (sample {i}; {int(frac.sum())} of {y.numel()} are "
                                     f"not whole numbers): the runs train a classifier (cross-entropy on class "
                                     f"labels), not a regression")
            elif y.dtype == torch.bool:  # a binary label: False/True are classes 0/1
                y = y.to(torch.int64)
            if y.dim() != 1:  # the loss takes one class per sample: [n, 1] failed in every rank
                raise ValueError(f"data set: {name} must be one class label per sample (shape [n]), got shape "
                                 f"{list(y.shape)}")
            setattr(self, name, y.to(torch.int64))


def _as_tensor(name: str, value) -> torch.Tensor:
    """``value`` as a tensor; ValueError naming the split and what it holds when torch cannot
    take it (text labels, object arrays). Until 2026-11-28 scikit-learn's iris with its class
    names as labels failed with a TypeError traceback ("can't convert np.ndarray of type
    numpy.str_")."""
    try:
        return torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError):
        held = getattr(value, "dtype", None) or type(value).__name__
        hint = (": class labels are integers 0..C-1 (text labels can be mapped, e.g. with scikit-learn's "
                "LabelEncoder)" if name.startswith("y") else ": inputs are numbers")
        raise ValueError(f"data set: {name} holds {held}, which torch cannot make a tensor of{hint}") from None


def load(seed: int = 0, test_fraction: float = 0.2) -> Dataset:
    try:
        from sklearn.datasets import load_digits
    except ImportError as e:  # pragma: no cover - a dev dependency
        raise RuntimeError("the digits data set needs scikit-learn (pip install scikit-learn)") from e
    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1)
    x = (x - x.mean()) / x.std()  # standardised pixels: plain SGD trains the CNN from the first steps
    y = torch.tensor(d.target, dtype=torch.int64)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    n_test = int(round(len(x) * test_fraction))
    te, tr = perm[:n_test], perm[n_test:]
    return Dataset(x[tr].contiguous(), y[tr].contiguous(), x[te].contiguous(), y[te].contiguous())


def cnn(width: int = 32) -> nn.Sequential:
    """Conv-conv-pool-conv-pool-linear-linear for 1x8x8 inputs (6 cuttable layers)."""
    w = width
    m = nn.Sequential(
        nn.Sequential(nn.Conv2d(1, w, 3, padding=1), nn.ReLU()),
        nn.Sequential(nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
        nn.Sequential(nn.Conv2d(2 * w, 2 * w, 3, padding=1), nn.ReLU()),
        nn.Sequential(nn.Conv2d(2 * w, 4 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten()),
        nn.Sequential(nn.Linear(4 * w * 2 * 2, 128), nn.ReLU()),
        nn.Linear(128, 10),
    )
    for mod in m.modules():  # He initialisation: with torch's default the ReLU stack barely trains
        if isinstance(mod, (nn.Conv2d, nn.Linear)):
            nn.init.kaiming_normal_(mod.weight, nonlinearity="relu")
            nn.init.zeros_(mod.bias)
    return m


def loss_sum(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(out, y, reduction="sum")


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """On a copy of ``x``: a first layer that works in place (``nn.LeakyReLU(inplace=True)``)
    changed the test split at every evaluation (until 2026-11-28)."""
    model.eval()
    acc = float((model(x.clone()).argmax(dim=1) == y).float().mean())
    model.train()
    return acc


def bn_batches(x: torch.Tensor, batch: int) -> list[torch.Tensor]:
    """``x`` in batches of ``batch`` samples (copies) for estimating batch-norm statistics, none
    of one sample: a last batch of one is joined to the one before (a batch-norm layer in
    training mode does not take one sample; until 2026-11-28 a training split of 257 samples,
    or any 256k + 1, failed every evaluation of a model with ``BatchNorm1d`` with "Expected
    more than 1 value per channel when training", ending the run)."""
    starts = list(range(0, len(x), batch))
    if len(starts) > 1 and len(x) - starts[-1] == 1:
        starts.pop()
    return [x[a:b].clone() for a, b in zip(starts, starts[1:] + [len(x)])]


def accuracy_of(model: nn.Module, w: torch.Tensor, data: Dataset, batch: int = 256) -> float:
    """Test accuracy of ``model`` with the parameter vector ``w``. The trainers exchange
    parameters only, so a model with batch-norm layers has no running statistics for ``w``:
    they are estimated first from the training split (a forward pass in training mode with a
    cumulative average, as ``torch.optim.swa_utils.update_bn`` does for averaged weights)."""
    nn.utils.vector_to_parameters(w, model.parameters())
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats for m in model.modules()):
        estimate_bn(model, bn_batches(data.x_train, batch))
    return accuracy(model, data.x_test, data.y_test)


def estimate_bn(model: nn.Module, batches: list[torch.Tensor]) -> None:
    """The batch-norm layers' running statistics of ``model`` as it is evaluated: a cumulative
    average over ``batches`` in training mode (``torch.optim.swa_utils.update_bn``) but with
    dropout off, and any other random draw from a fixed seed, leaving the caller's random state
    as it was. With ``update_bn`` a dropout layer before a batch-norm one drew its masks from the
    parent's random stream (until 2026-11-28): the same parameters evaluated five times gave
    accuracies 0.18-0.22 on wine, so two methods with the same weights (the same plans in
    ``train groups``) reported different accuracies, and every accuracy carried that noise."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    momenta = {m: m.momentum for m in bns}
    was_training = model.training
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average
    model.train()
    for m in model.modules():
        if isinstance(m, nn.modules.dropout._DropoutNd):
            m.eval()
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(0)
            for x in batches:
                model(x)
    finally:
        for m, mom in momenta.items():
            m.momentum = mom
        model.train(was_training)


def _call(spec: str, what: str):
    """``FN()`` of the ``MODULE:FN`` ``spec``; ValueError naming ``what`` when FN needs arguments
    (until 2026-11-28 a TypeError with a traceback: "needs_arg() missing 1 required positional
    argument")."""
    fn = load_fn(spec, what)
    try:
        inspect.signature(fn).bind()
    except TypeError:
        raise ValueError(f"{what} {spec!r}: FN must be callable with no arguments, it takes "
                         f"{inspect.signature(fn)}") from None
    except ValueError:  # no signature to check (some built-ins): call it as it is
        pass
    return fn()


def save_for_ranks(data: Dataset, out_dir: str) -> str:
    """``data`` saved as ``out_dir/data.pt`` for the rank processes (:func:`load_saved`): they
    train on the data set the parent evaluates on, whatever the data function does. Until
    2026-11-28 every rank called a ``MODULE:FN`` itself, so a split without a seed (a
    ``train_test_split`` without ``random_state``) gave every process a split of its own, and
    the parent's test samples were training samples of the workers."""
    path = os.path.join(out_dir, "data.pt")
    torch.save((data.x_train, data.y_train, data.x_test, data.y_test), path)
    return path


def load_saved(path: str) -> Dataset:
    return Dataset(*torch.load(path))


def model_from(spec: str) -> nn.Module:
    """``digits-cnn`` or ``MODULE:FN`` returning an ``nn.Module`` (an ``nn.Sequential`` for pipelines)."""
    if spec == "digits-cnn":
        return cnn()
    m = _call(spec, "model")
    # a list of modules, also as an nn.ModuleList (which has no forward of its own), is the
    # nn.Sequential of its items, as the pipelines take it: until 2026-11-28 train cgp failed with
    # 'Module [ModuleList] is missing the required "forward" function' and train groups refused it
    if isinstance(m, (list, tuple)) or type(m) is nn.ModuleList:
        bad = [f"{i} ({type(x).__name__})" for i, x in enumerate(m) if not isinstance(x, nn.Module)]
        if bad:
            raise ValueError(f"model {spec!r}: item {', '.join(bad)} of its list is not an nn.Module")
        m = nn.Sequential(*m)
    if not isinstance(m, nn.Module):
        raise ValueError(f"model {spec!r}: FN() must return an nn.Module, got {type(m).__name__}")
    return m


def built_as_ranks_build(spec: str, seed: int, sequential: bool = False) -> nn.Module:
    """``spec``'s model built as the ranks build theirs (``torch.manual_seed(seed)`` first), for
    the parent's evaluations: the runs exchange parameters only, so a buffer the model draws
    at random (a fixed random projection) is the ranks' only when it is drawn from the same
    seed. Until 2026-11-28 the parent built its model unseeded (``train cgp``) or with seed 1
    (``train groups``, ranks 0): a random-features model trained to 0.97 on wine was reported
    at 0.33 (chance) throughout."""
    torch.manual_seed(int(seed))
    return sequential_from(spec) if sequential else model_from(spec)


def sequential_from(spec: str) -> nn.Sequential:
    """:func:`model_from` for the groups executor, whose pipelines cut between the children of
    an ``nn.Sequential``: :func:`as_sequential` of it."""
    return as_sequential(model_from(spec), spec)


def as_sequential(m: nn.Module, spec: str) -> nn.Sequential:
    """``m`` as the groups executor cuts it. Any module other than an ``nn.Sequential`` (a
    ``class Net(nn.Module)`` with its own ``forward``) is one layer that no pipeline can cut:
    ``nn.Sequential(m)``, which the planners run as data-parallel replicas only
    (:func:`uncut_note` says so to the user)."""
    if not isinstance(m, nn.Sequential):
        return nn.Sequential(m)
    if len(m) < 1:
        raise ValueError(f"model {spec}: an empty nn.Sequential has no layers to train")
    return m


def uncut_note(spec: str, m: nn.Module) -> str | None:
    """The note for a model (``m``, as :func:`model_from` built it) that :func:`as_sequential`
    takes as one layer, else None."""
    if isinstance(m, nn.Sequential):
        return None
    return (f"note: model {spec} is a {type(m).__name__}, not an nn.Sequential: train groups runs it as one "
            "layer, so every plan is data-parallel replicas (no pipeline can cut it; the pipeline and "
            "HetPipe-style baselines run it whole on one process of each group). Return an nn.Sequential "
            "(or a list of modules) whose children are the layers, to let the planners cut it")


def dataset_from(spec: str, seed: int = 0) -> Dataset:
    """``digits`` or ``MODULE:FN`` returning a :class:`Dataset` or ``(x_train, y_train, x_test, y_test)``."""
    if spec == "digits":
        return load(seed)
    d = _call(spec, "data set")
    if isinstance(d, Dataset):
        return d
    if isinstance(d, (tuple, list)) and len(d) == 4:
        return Dataset(*d, name=spec)
    raise ValueError(f"data set {spec!r}: FN() must return a Dataset or (x_train, y_train, x_test, y_test)")


def dataset_arg(dataset, what: str = "dataset"):
    """A data set as a library call takes it (``train_cgp``'s ``dataset``, ``GroupsConfig.data``)
    in the form the runs use: a name (``"digits"``, ``"MODULE:FN"``) or a :class:`Dataset`; an
    importable top-level function becomes its name and ``(x_train, y_train, x_test, y_test)`` a
    Dataset, as for the model. Until 2026-11-28 a function failed with "argument of type
    'function' is not iterable" (in ``train_cgp``, and in ``groups.executor.run`` until later that
    day) and a tuple of numpy arrays with "The truth value of an array ... is ambiguous"."""
    if isinstance(dataset, (str, Dataset)):
        return dataset
    if isinstance(dataset, (tuple, list)) and len(dataset) == 4:
        return Dataset(*dataset, name="data")
    if callable(dataset):
        return spec_of(dataset, what)
    raise ValueError(f"{what} must be 'digits', 'MODULE:FN', an importable top-level function, a digits.Dataset or "
                     f"(x_train, y_train, x_test, y_test), got {type(dataset).__name__}")


def dataset_of(dataset: str | Dataset, seed: int = 0) -> Dataset:
    """The :class:`Dataset` of :func:`dataset_arg`'s result (a name is loaded: :func:`dataset_from`)."""
    return dataset if isinstance(dataset, Dataset) else dataset_from(dataset, seed)
