"""Test checkpoints (made once per session) and transformers' eager reference on them."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="session")
def references(checkpoint_dirs):
    """kind -> (transformers tokenizer, eager model) on the same checkpoint directory."""
    import transformers
    out = {}
    for kind, directory in checkpoint_dirs.items():
        tok = transformers.AutoTokenizer.from_pretrained(str(directory))
        model = transformers.AutoModel.from_pretrained(str(directory), attn_implementation="eager")
        out[kind] = (tok, model.eval())
    return out


def hf_maps(reference, text: str, pair: str | None = None) -> tuple[list[int], torch.Tensor]:
    """transformers' token ids and attention weights (L, H, T, T) of one input run alone."""
    tok, model = reference
    batch = tok(text, pair, return_tensors="pt", truncation=False, padding=False)
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
    return batch["input_ids"][0].tolist(), torch.stack([a[0] for a in out.attentions])
