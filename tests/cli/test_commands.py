"""`attnscope models` and `attnscope attention`, run as the installed command in a process of its own; the
files it writes read back with numpy and json and compared with the Python API's single runs and with
transformers."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

import attnscope
from attnscope import cli
from attnscope.output import atomic

from .conftest import hf_maps

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-5
SENTENCES = [
    "Hello world, attention is all you need.",
    "",
    "The cat",
    "注意力机制让模型关注输入中最相关的部分。",
    "   ",
    "Models looking at attention, again and again. Where is the dog?",
    "a",
]


def command() -> list[str]:
    """The `attnscope` entry point installed beside this interpreter (pip's console script)."""
    script = Path(sys.executable).parent / "attnscope"
    return [str(script)] if script.exists() else [sys.executable, "-m", "attnscope.cli"]


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ATTNSCOPE_PROGRESS"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **extra)
    return env


def attnscope_cli(*args: str | Path, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """The command's exit code, stdout and stderr (decoded as they are: the bar's carriage returns kept)."""
    done = subprocess.run([*command(), *map(str, args)], cwd=ROOT, capture_output=True, env=environment(**env),
                          input=None if stdin is None else stdin.encode(), timeout=300)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def in_process(argv: list[str | Path], capsys) -> tuple[int, str]:
    """attnscope/cli.py's main in this process (the same parser and commands, without a process start): exit code
    and stderr."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's own refusals
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def sentences(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sentences") / "sentences.txt"
    path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def gpt2(checkpoint_dirs) -> attnscope.Model:
    return attnscope.load(checkpoint_dirs["gpt2"])


def test_models_table_and_json(checkpoint_dirs):
    done = attnscope_cli("models", "--model", checkpoint_dirs["gpt2"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["id", "architecture", "layers", "x", "heads", "max", "tokens", "causal", "pairs"]
    assert lines[1].split() == ["minilm", "bert", "6", "x", "12", "512", "no", "yes"]
    assert lines[2].split() == ["tiny-gpt2", "gpt2", "2", "x", "4", "64", "yes", "no"]
    done = attnscope_cli("models", "--json")
    assert done.returncode == 0, done.stderr
    [minilm] = json.loads(done.stdout)
    assert {k: minilm[k] for k in ("id", "architecture", "layers", "heads", "max_tokens", "causal", "pairs")} == {
        "id": "minilm", "architecture": "bert", "layers": 6, "heads": 12, "max_tokens": 512, "causal": False,
        "pairs": True}


def test_one_text_with_a_pair_to_npz(checkpoint_dirs, references, tmp_path):
    out = tmp_path / "pair.npz"
    text, pair = "Where is the cat?", "The cat sat on the mat."
    done = attnscope_cli("attention", text, "--pair", pair, "--model", checkpoint_dirs["bert"], "--out", out)
    assert done.returncode == 0, done.stderr
    assert "wrote the maps of the text" in done.stderr and "2 layers x 4 heads of tiny-bert" in done.stderr
    z = np.load(out)
    assert sorted(z.files) == sorted(["model", "layers", "heads", "maps", "tokens", "display", "ids", "offsets",
                                      "special", "segments", "text", "pair"])
    assert (str(z["model"]), str(z["text"]), str(z["pair"])) == ("tiny-bert", text, pair)
    assert z["layers"].tolist() == [0, 1] and z["heads"].tolist() == [0, 1, 2, 3]
    ids, want = hf_maps(references["bert"], text, pair)
    assert z["ids"].tolist() == ids
    assert z["maps"].dtype == np.float32 and z["maps"].shape == tuple(want.shape)
    assert np.abs(z["maps"] - want.numpy()).max() <= TOLERANCE
    api = attnscope.load(checkpoint_dirs["bert"]).attention(text, pair)
    assert np.array_equal(z["maps"], api.maps)  # one text runs exactly as the Python API's attention
    assert z["tokens"].tolist() == [t.text for t in api.tokens]
    assert z["display"].tolist() == [t.display for t in api.tokens]
    assert z["segments"].tolist() == [t.segment for t in api.tokens] and set(z["segments"].tolist()) == {0, 1}
    assert z["special"].tolist() == [t.special for t in api.tokens]
    assert z["offsets"].tolist() == [[-1 if t.start is None else t.start, -1 if t.end is None else t.end]
                                     for t in api.tokens]


def test_a_file_in_batches_to_npz_equals_single_runs(checkpoint_dirs, references, gpt2, sentences, tmp_path):
    out = tmp_path / "maps.npz"
    done = attnscope_cli("attention", "--file", sentences, "--model", checkpoint_dirs["gpt2"], "--batch-size", "2",
                         "--progress", "--out", out)
    assert done.returncode == 0, done.stderr
    assert "\r[" in done.stderr and "5/5 sentences" in done.stderr
    assert done.stderr.rstrip().splitlines()[-1].startswith("attnscope attention: wrote the maps of 5 sentences (")
    assert "skipped 2 blank lines" in done.stderr
    z = np.load(out)
    kept = [s for s in SENTENCES if s.strip()]
    assert z["texts"].tolist() == kept
    assert z["lines"].tolist() == [1, 3, 4, 6, 7]
    assert str(z["model"]) == "tiny-gpt2"
    for i, text in enumerate(kept):
        single = gpt2.attention(text)
        ids, want = hf_maps(references["gpt2"], text)
        assert z[f"ids_{i}"].tolist() == single.ids == ids
        assert z[f"maps_{i}"].shape == single.maps.shape == tuple(want.shape)
        assert np.abs(z[f"maps_{i}"] - single.maps).max() <= TOLERANCE, text
        assert np.abs(z[f"maps_{i}"] - want.numpy()).max() <= TOLERANCE, text
        assert "".join(z[f"display_{i}"].tolist()) == text  # byte-level tokens display as the text


def test_a_file_to_json_with_chosen_layers_and_heads(sentences, tmp_path):
    """MiniLM, the default model; the bar forced with ATTNSCOPE_PROGRESS=1."""
    out = tmp_path / "maps.json"
    done = attnscope_cli("attention", "--file", sentences, "--layers", "5,0", "--heads", "3,11", "--out", out,
                         ATTNSCOPE_PROGRESS="1")
    assert done.returncode == 0, done.stderr
    assert "\r[" in done.stderr and "2 layers x 2 heads of minilm" in done.stderr
    answer = json.loads(out.read_text(encoding="utf-8"))
    assert (answer["model"], answer["layers"], answer["heads"]) == ("minilm", [5, 0], [3, 11])
    minilm = attnscope.load()
    from model.checkpoints.registry import minilm_dir

    reference = (transformers.AutoTokenizer.from_pretrained(str(minilm_dir())),
                 transformers.BertModel.from_pretrained(str(minilm_dir()), attn_implementation="eager",
                                                        add_pooling_layer=False).eval())
    kept = [(n, s) for n, s in enumerate(SENTENCES, start=1) if s.strip()]
    assert [(item["line"], item["text"], item["pair"]) for item in answer["items"]] == [(n, s, None) for n, s in kept]
    for item in answer["items"]:
        single = minilm.attention(item["text"], layers=[5, 0], heads=[3, 11])
        ids, want = hf_maps(reference, item["text"])
        maps = np.array(item["maps"], dtype=np.float32)
        assert item["ids"] == single.ids == ids
        assert np.abs(maps - single.maps).max() <= TOLERANCE
        assert np.abs(maps - want[[5, 0]][:, [3, 11]].numpy()).max() <= TOLERANCE
        assert item["tokens"] == [{"text": t.text, "display": t.display, "start": t.start, "end": t.end,
                                   "special": t.special, "segment": t.segment, "unknown": t.unknown}
                                  for t in single.tokens]


def test_the_bar_is_off_when_stderr_is_not_a_terminal_or_quiet(checkpoint_dirs, sentences, tmp_path):
    for flags in ([], ["--quiet"]):
        done = attnscope_cli("attention", "--file", sentences, "--model", checkpoint_dirs["distilbert"], *flags,
                             "--out", tmp_path / "maps.npz")
        assert done.returncode == 0, done.stderr
        assert "\r" not in done.stderr and "[" not in done.stderr
        assert done.stderr.splitlines() == [line for line in done.stderr.splitlines() if line.startswith(
            "attnscope attention: wrote the maps of 5 sentences")]
    done = attnscope_cli("attention", "--file", sentences, "--model", checkpoint_dirs["distilbert"], "--progress",
                         "--out", tmp_path / "maps.npz", ATTNSCOPE_PROGRESS="0")
    assert "\r" not in done.stderr


def test_the_bar_is_drawn_on_a_terminal(checkpoint_dirs, sentences, tmp_path):
    main, child = pty.openpty()
    try:
        proc = subprocess.Popen([*command(), "attention", "--file", str(sentences), "--model",
                                 str(checkpoint_dirs["roberta"]), "--out", str(tmp_path / "maps.npz")],
                                cwd=ROOT, env=environment(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=child)
        os.close(child)
        seen = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the terminal closes when the process ends
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait(timeout=300) == 0, seen
    finally:
        os.close(main)
    text = seen.decode()
    assert "\r[" in text and "5/5 sentences" in text and "wrote the maps of 5 sentences" in text


def refusals(dirs: dict[str, Path], sentences: Path, tmp: Path) -> dict[str, tuple[list[str | Path], list[str]]]:
    long_file = tmp / "long.txt"
    long_file.write_text("fine\n\n" + "a " * 70 + "\n", encoding="utf-8")
    empty = tmp / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    not_a_checkpoint = tmp / "not-a-checkpoint"
    not_a_checkpoint.mkdir(exist_ok=True)
    gpt2 = dirs["gpt2"]
    return {
        "unknown model": (["x", "--model", "bret"], ["Unknown model 'bret'", "use one of: minilm",
                                                     "checkpoint directory"]),
        "missing directory": (["x", "--model", tmp / "nowhere"], ["no such directory", "known models: minilm"]),
        "not a checkpoint": (["x", "--model", not_a_checkpoint], ["config.json: missing file",
                                                                  "supported architectures: bert, roberta"]),
        "too many tokens": (["--file", long_file, "--model", gpt2], [f"--file {long_file} line 3 has 71 tokens",
                                                                     "takes at most 64", "shorten it"]),
        "too many tokens in TEXT": (["word " * 70, "--model", gpt2], ["TEXT has 141 tokens", "takes at most 64"]),
        "bad layer": (["x", "--model", gpt2, "--layers", "0,2"], ["--layers 0,2: layers [2] out of range",
                                                                 "has layers 0..1"]),
        "bad head": (["x", "--model", gpt2, "--heads", "4"], ["--heads 4: heads [4] out of range", "has heads 0..3"]),
        "not indices": (["x", "--heads", "one"], ["'one' is not a comma-separated list of indices"]),
        "pair without pairs": (["x", "--pair", "y", "--model", gpt2], ["--pair: model 'tiny-gpt2' (gpt2) takes one "
                                                                      "text", "leave --pair out"]),
        "TEXT and --file": (["x", "--file", sentences], ["give either TEXT or --file"]),
        "neither": ([], ["give either TEXT or --file"]),
        "pair with a file": (["--file", sentences, "--pair", "y"], ["--pair goes with TEXT"]),
        "blank file": (["--file", empty], ["no sentences", "2 lines is blank"]),
        "batch size": (["--file", sentences, "--batch-size", "0"], ["give a whole number of at least 1"]),
    }


CASES = ["unknown model", "missing directory", "not a checkpoint", "too many tokens", "too many tokens in TEXT",
         "bad layer", "bad head", "not indices", "pair without pairs", "TEXT and --file", "neither",
         "pair with a file", "blank file", "batch size"]


def check_refusal(code: int, stderr: str, said: list[str], out: Path) -> None:
    assert code == 2, stderr
    message = stderr.strip().splitlines()[-1]
    assert message.startswith("attnscope attention: error:")
    for part in said:
        assert part in message, (part, message)
    assert "Traceback" not in stderr
    assert out.read_bytes() == b"an earlier run"  # an existing file is replaced only by a complete one
    assert not list(out.parent.glob(f".{out.name}.*"))


@pytest.mark.parametrize("case", CASES)
def test_refusals_say_what_to_change(case, checkpoint_dirs, sentences, tmp_path, capsys):
    args, said = refusals(checkpoint_dirs, sentences, tmp_path)[case]
    out = tmp_path / "maps.npz"
    out.write_bytes(b"an earlier run")
    code, stderr = in_process(["attention", *args, "--out", out], capsys)
    check_refusal(code, stderr, said, out)


@pytest.mark.parametrize("case", ["unknown model", "too many tokens", "bad layer", "pair without pairs"])
def test_refusals_of_the_installed_command(case, checkpoint_dirs, sentences, tmp_path):
    args, said = refusals(checkpoint_dirs, sentences, tmp_path)[case]
    out = tmp_path / "maps.json"
    out.write_bytes(b"an earlier run")
    done = attnscope_cli("attention", *args, "--out", out)
    check_refusal(done.returncode, done.stderr, said, out)


def test_an_out_name_without_npz_or_json_is_refused_before_loading(tmp_path, capsys):
    done = attnscope_cli("attention", "x", "--out", tmp_path / "maps.txt", "--model", "never-looked-up")
    assert done.returncode == 2
    assert "--out" in done.stderr and "must end in .npz or .json" in done.stderr
    assert not list(tmp_path.iterdir())
    code, stderr = in_process(["attention", "x", "--out", tmp_path / "no-dir" / "maps.json"], capsys)
    assert code == 2 and "does not exist; create it" in stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="this torch has CUDA")
def test_cuda_refused_without_it(tmp_path):
    done = attnscope_cli("attention", "x", "--device", "cuda", "--out", tmp_path / "maps.npz")
    assert done.returncode == 2
    assert "--device cuda: torch.cuda.is_available() is False here" in done.stderr
    assert "use --device cpu" in done.stderr


def test_stdin_as_the_file(checkpoint_dirs, tmp_path):
    out = tmp_path / "maps.npz"
    done = attnscope_cli("attention", "--file", "-", "--model", checkpoint_dirs["electra"], "--out", out,
                         stdin="The cat sat on the mat.\nWhere is the dog?\n")
    assert done.returncode == 0, done.stderr
    assert np.load(out)["texts"].tolist() == ["The cat sat on the mat.", "Where is the dog?"]


def test_a_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "maps.npz"
    with pytest.raises(RuntimeError), atomic(target) as f:
        f.write(b"half")
        raise RuntimeError("interrupted")
    assert not list(tmp_path.iterdir())
    with atomic(target) as f:
        f.write(b"whole")
    assert target.read_bytes() == b"whole" and list(tmp_path.iterdir()) == [target]


def test_an_id_from_the_servers_model_paths_names_that_checkpoint(checkpoint_dirs, monkeypatch, capsys, tmp_path):
    """With ATTNSCOPE_MODEL_PATHS set, `--model tiny-gpt2` is the id `attnscope serve` lists it under."""
    monkeypatch.setenv("ATTNSCOPE_MODEL_PATHS", str(checkpoint_dirs["gpt2"]))
    code, err = in_process(["models"], capsys)
    assert code == 0, err
    out = tmp_path / "by-id.npz"
    code, err = in_process(["attention", "Hello world", "--model", "tiny-gpt2", "--out", out, "--quiet"], capsys)
    assert code == 0, err
    by_path = attnscope.load(checkpoint_dirs["gpt2"]).attention("Hello world")
    z = np.load(out)
    assert str(z["model"]) == "tiny-gpt2" and np.array_equal(z["maps"], by_path.maps)
    monkeypatch.delenv("ATTNSCOPE_MODEL_PATHS")
    code, err = in_process(["attention", "Hello world", "--model", "tiny-gpt2", "--out", out], capsys)
    assert code == 2 and "Unknown model 'tiny-gpt2'" in err


def test_a_reader_that_leaves_stops_the_command_quietly():
    """`attnscope models | head -0`: the pipe is closed before the command writes; it stops without an error line
    and exits as a Unix tool whose reader left (128 + SIGPIPE), not with a usage error."""
    import signal

    child = subprocess.Popen([*command(), "models"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=environment())
    child.stdout.close()  # the reader leaves before the first line
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 128 + signal.SIGPIPE, err
    assert "Broken pipe" not in err and "Traceback" not in err and "error" not in err
