"""`attnscope generate` (the installed command, in a process of its own) and `Model.generate` of the Python API,
against transformers' generate on the tiny random decoders."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import transformers

import attnscope
from tests.model.test_dtype import BF16

from .test_commands import attnscope_cli, in_process

PROMPT = "Hello world, attention is"


def greedy(directory, n: int) -> list[int]:
    tok = transformers.AutoTokenizer.from_pretrained(str(directory))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(directory), attn_implementation="eager",
                                                              dtype=torch.float32).eval()
    ids = tok(PROMPT, return_tensors="pt").input_ids
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=n, do_sample=False)[0, ids.shape[1]:].tolist()


def test_the_command_prints_transformers_greedy_continuation(llama_dirs):
    directory = llama_dirs["qwen2"]
    expected = greedy(directory, 10)
    tok = transformers.AutoTokenizer.from_pretrained(str(directory))
    done = attnscope_cli("generate", PROMPT, "--model", directory, "--max-new-tokens", "10", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert [t["id"] for t in answer["tokens"]] == expected
    assert answer["continuation"] == tok.decode(expected) == "".join(t["display"] for t in answer["tokens"])
    assert answer["stopped"] == ("length" if len(expected) == 10 else "end")
    assert all(len(t["top"]) == 5 and t["top"][0]["probability"] >= t["probability"] for t in answer["tokens"])
    assert f"{len(expected)} tokens from tiny-qwen2" in done.stderr
    plain = attnscope_cli("generate", PROMPT, "--model", directory, "--max-new-tokens", "10")
    assert plain.returncode == 0 and plain.stdout == answer["continuation"] + "\n"


@pytest.mark.parametrize(("args", "words"), [
    (["--model", "minilm"], "has no LM head, which generation needs"),
    (["--max-new-tokens", "0"], "give a whole number from 1 to 256"),
    (["--max-new-tokens", "60"], "exceed the model's limit of 64; ask for at most"),
    (["--top-p", "0"], "give a number above 0 and at most 1"),
    (["--temperature", "-1"], "give a number at least 0"),
    (["--dtype", "float16"], "argument --dtype: invalid choice: 'float16' (choose from 'float32', 'bfloat16')"),
])
def test_refusals_say_what_to_change(args, words, checkpoint_dirs, capsys):
    argv = ["generate", PROMPT, "--model", checkpoint_dirs["gpt2"], *args]
    if args[0] == "--model":
        argv = ["generate", PROMPT, *args]
    code, err = in_process(argv, capsys)
    assert code == 2 and "Traceback" not in err, err
    assert words in err.strip().splitlines()[-1]  # one line (after argparse's usage for its own refusals)


def test_the_python_api_yields_tokens_with_their_attention(checkpoint_dirs):
    model = attnscope.load(checkpoint_dirs["gpt2"])
    expected = greedy(checkpoint_dirs["gpt2"], 6)
    tokens = list(model.generate(PROMPT, 6))
    assert [t.id for t in tokens] == expected
    prompt = len(model.encode(PROMPT))
    reference = transformers.AutoModelForCausalLM.from_pretrained(str(checkpoint_dirs["gpt2"]),
                                                                  attn_implementation="eager").eval()
    with torch.no_grad():
        out = reference(torch.tensor([model.encode(PROMPT).ids + expected]), output_attentions=True)
    for t in tokens:
        assert t.attention is not None and t.attention.dtype == np.float32
        assert t.attention.shape == (model.info.layers, model.info.heads, t.index + 1) and t.index >= prompt
        rows = np.stack([layer[0, :, t.index, : t.index + 1].numpy() for layer in out.attentions])
        assert np.abs(t.attention - rows).max() <= 1e-5
    with pytest.raises(TypeError, match="no LM head"):
        next(attnscope.load("minilm").generate(PROMPT))
    with pytest.raises(ValueError, match="limit of 64"):
        next(model.generate(PROMPT, 200))


@pytest.mark.skipif(not BF16, reason="this CPU has no bfloat16 arithmetic (tests/model/test_dtype.py)")
def test_dtype_bfloat16_in_the_commands_and_the_python_api(llama_dirs, tmp_path, capsys):
    """--dtype and load(dtype=) reach the model: float32 maps that differ from the float32 model's by bfloat16's
    rounding (tests/model/test_dtype.py holds them to transformers' bfloat16), and generation in bfloat16."""
    directory = llama_dirs["gemma2"]
    code, err = in_process(["attention", PROMPT, "--model", directory, "--dtype", "bfloat16",
                            "--out", tmp_path / "half.npz"], capsys)
    assert code == 0, err
    half = np.load(tmp_path / "half.npz")["maps"]
    full = attnscope.load(directory).attention(PROMPT).maps
    assert half.dtype == np.float32 and half.shape == full.shape
    assert 0 < np.abs(half - full).max() <= 0.1
    code, err = in_process(["generate", PROMPT, "--model", directory, "--dtype", "bfloat16", "--max-new-tokens",
                            "3", "--json"], capsys)
    assert code == 0, err
    model = attnscope.load(directory, dtype="bfloat16")
    assert model.pretrained.dtype == torch.bfloat16
    assert len(list(model.generate(PROMPT, 3))) == 3
