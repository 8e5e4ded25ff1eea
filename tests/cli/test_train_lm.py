"""`attnscope train-lm FILE --out DIR` end to end (attnscope/cli.py's main in this process) on a tiny text with tiny
settings, then the checkpoint loaded back with attnscope.load; and its refusals, one line each with exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

import attnscope
from bench.lm import i18n_text

from .test_commands import in_process

TINY = ["--steps", "6", "--context", "16", "--layers", "1", "--heads", "2", "--d-model", "16", "--batch", "4",
        "--eval-every", "3", "--sample-chars", "10"]


@pytest.fixture(scope="module")
def text_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("lm-text") / "text.txt"
    path.write_text(i18n_text("zh", 8_000), encoding="utf-8")
    return path


def test_train_lm_writes_a_checkpoint_that_attnscope_loads(text_file, tmp_path, capsys):
    out = tmp_path / "my-lm"
    code, err = in_process(["train-lm", text_file, "--out", out, *TINY], capsys)
    assert code == 0, err
    lines = err.strip().splitlines()
    assert lines[0].startswith("attnscope train-lm: ") and "unigram entropy" in lines[0]
    assert [line.split()[1] for line in lines[1:-1]] == ["0/6", "3/6", "6/6"]  # a progress line per evaluation
    assert "val " in lines[1] and "sample " in lines[1]
    assert lines[-1].startswith("attnscope train-lm: 6 steps") and str(out) in lines[-1]
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]
    model = attnscope.load(out)
    assert (model.info.layers, model.info.heads, model.info.max_tokens) == (1, 2, 16)
    assert [t.display for t in model.encode("注意力机制").tokens] == list("注意力机制")


def test_the_same_seed_writes_the_same_weights(text_file, tmp_path, capsys):
    made = []
    for name in ("a", "b"):
        code, err = in_process(["train-lm", text_file, "--out", tmp_path / name, "--seed", "5", "--quiet", *TINY],
                               capsys)
        assert code == 0, err
        assert len(err.strip().splitlines()) == 2  # --quiet: the first and the summary line only
        made.append((tmp_path / name / "model.safetensors").read_bytes())
    assert made[0] == made[1]


@pytest.mark.parametrize(("make", "args", "says"), [
    (None, [], "no such file; give a UTF-8 text file"),
    (b"\xff\xfe" + "short".encode("utf-16-le"), [], "is not UTF-8 text (byte 0"),
    (b"too short", [], "the text has 9 characters; send at least 2,000"),
    (b"\x00\x01" * 2000, [], "this is not plain text"),
    (b"a" * (8 * 2**20 + 1), [], "is over 8,388,608 bytes; give a text of at most 8 MB"),
    ("ok " * 1000, ["--d-model", "30", "--heads", "4"], "--d-model: d_model 30 is not divisible by heads 4"),
])
def test_refusals_are_one_line_with_exit_code_2(tmp_path, capsys, make, args, says):
    path = tmp_path / "text.txt"
    if make is not None:
        path.write_bytes(make if isinstance(make, bytes) else make.encode())
    code, err = in_process(["train-lm", path, "--out", tmp_path / "out", *args], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("attnscope train-lm: error: ") and says in err
    assert not (tmp_path / "out").exists()


def test_a_setting_out_of_range_is_refused_by_the_parser(tmp_path, capsys):
    code, err = in_process(["train-lm", tmp_path / "t.txt", "--out", tmp_path / "o", "--layers", "9"], capsys)
    assert code == 2 and "'9': give a whole number from 1 to 8" in err
