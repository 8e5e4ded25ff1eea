"""Model ids and how to load them: the packaged model, and local checkpoint directories."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from .errors import UnknownModel
from .pretrained import PretrainedEncoder, minilm_dir


@dataclass(frozen=True)
class ModelSpec:
    id: str
    name: str
    architecture: str
    pairs: bool  # accepts a second segment
    causal: bool
    locate: Callable[[], Path]  # the checkpoint directory used unless settings name another
    local: bool = False  # a directory the user named; its path is never put in an API answer


MODELS: dict[str, ModelSpec] = {
    "minilm": ModelSpec(
        id="minilm",
        name="all-MiniLM-L6-v2 (sentence-transformers, 6 layers x 12 heads)",
        architecture="bert",
        pairs=True,
        causal=False,
        locate=minilm_dir,
    ),
}

DEFAULT_MODEL = "minilm"


def local_id(directory: Path, taken: Iterable[str]) -> str:
    """An id for a checkpoint directory: its name in lower case, other characters than letters, digits, '.',
    '_' and '-' made '-', and '-2', '-3', ... added when another model has it ("My BERT" -> "my-bert")."""
    base = re.sub(r"[^a-z0-9._-]+", "-", directory.name.lower()).strip("-.") or "model"
    taken = set(taken)
    mid, n = base, 1
    while mid in taken:
        n += 1
        mid = f"{base}-{n}"
    return mid


def load_local(directory: Path, taken: Iterable[str]) -> tuple[ModelSpec, PretrainedEncoder]:
    """A checkpoint directory's spec and model; CheckpointError names the file when it cannot be loaded."""
    from .architectures import load_checkpoint  # the architectures import this module's neighbours

    directory = Path(directory).expanduser().resolve()
    model = load_checkpoint(directory)
    mid = local_id(directory, taken)
    cfg = model.cfg
    name = f"{directory.name} ({model.architecture}, {cfg.n_layers} layers x {cfg.n_heads} heads)"
    spec = ModelSpec(id=mid, name=name, architecture=model.architecture, pairs=model.pairs, causal=model.causal,
                     locate=lambda: directory, local=True)
    return spec, model


def open_model(name_or_path: str | Path, device: str = "cpu") -> tuple[ModelSpec, PretrainedEncoder]:
    """A known model id ("minilm") or a local checkpoint directory, loaded and moved to `device`.

    Raises UnknownModel (naming the known ids) for anything else, CheckpointError for a directory that
    does not hold a supported checkpoint."""
    key = str(name_or_path)
    if key in MODELS:
        spec = MODELS[key]
        return spec, PretrainedEncoder.from_dir(spec.locate()).to(device)
    if Path(key).expanduser().is_dir():
        spec, model = load_local(Path(key), MODELS)
        return spec, model.to(device)
    raise UnknownModel(key, list(MODELS), hint="or the path of a checkpoint directory")
