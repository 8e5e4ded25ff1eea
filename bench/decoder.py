"""A decoder of real size: a random checkpoint shaped like Qwen2.5-0.5B, served, beside transformers.

The checkpoint is built by transformers in a temporary directory and deleted after the run (never committed):
Qwen2's layout with 24 layers, 14 query heads and 2 key-value heads of 64, d_model 896, an MLP of 4,864, a
vocabulary of 151,936 tied to the LM head, bfloat16 on disk as published, read as float32 by both sides. Its
tokenizer is the tests' small byte-level BPE (tests/checkpoints.py), so the texts are made of random words and
cut to an exact token count, each new. `attnscope serve --model DIR` runs in its own process; transformers'
eager model runs in this one on the same directory, with the same torch threads, the other side idle.

1. The full compact answer (POST /api/v1/attention?encoding=u16, all 24 x 14 maps) at 128 and 512 tokens, as a
   client in its own process sees it (bench/client.py), against transformers' Qwen2Model forward with
   output_attentions (no LM head on either side). Goal: at most 1.2x.
2. The explorer in a cold Chromium context at 512 tokens: ms from navigation to the grid of 336 heads on
   screen. Goal: at most 2.5 s.
3. POST /api/v1/generate, greedy, 64 new tokens after a 128-token text with every new token's attention
   rows, as a client in its own process sees it (request to the `done` event), against transformers'
   generate(do_sample=False) with its KV cache on the same text; the same tokens are checked. Goal: at least
   0.8x transformers' tokens per second.
4. The server's resident memory after all of it, against the weights' bytes + 800 MB.

All four twice: in float32 (the default, beside transformers in float32), then with `--dtype bfloat16` beside
transformers' model in bfloat16; greedy tokens in bfloat16 are compared, not required equal (two orders of
rounding to 8 bits part ways at near-ties). 5. What bfloat16 costs: the largest difference of a map at 128
tokens from transformers' float32 maps, attnscope's bfloat16 beside transformers' own bfloat16.

    .venv/bin/python -m bench.decoder
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import torch

from bench.common import CHROMIUM, CHROMIUM_ARGS, ROOT, THREADS, WORDS, Server, median, print_table, timed, verdict
from bench.page_load import GRID_SHOWN, watch_grid

SHAPE = {"num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "hidden_size": 896,
         "intermediate_size": 4864, "vocab_size": 151936, "max_position_embeddings": 32768,
         "tie_word_embeddings": True, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6}
HEADS = SHAPE["num_hidden_layers"] * SHAPE["num_attention_heads"]
ANSWER_LENGTHS, ANSWER_REPEATS, BLOCKS = (128, 512), 3, 2
COLD_LOADS, GRID_TOKENS = 3, 512
PROMPT_TOKENS, NEW_TOKENS, GENERATIONS = 128, 64, 3
ANSWER_GOAL, GRID_GOAL_MS, GENERATE_GOAL, RSS_MARGIN_MB = 1.2, 2500.0, 0.8, 800.0
PAUSE_S = 0.5
MODEL_ID = "qwen2.5-0.5b-shaped"


def build(directory: Path) -> Path:
    """The random 0.5B-shaped checkpoint and the tests' byte-level tokenizer, in `directory`."""
    import transformers

    sys.path.insert(0, str(ROOT))
    from tests.checkpoints import make_llama_tokenizer

    torch.manual_seed(0)
    tok = make_llama_tokenizer("qwen2", directory / "vocab-source")
    config = transformers.Qwen2Config(**SHAPE, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    model = transformers.Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(str(directory))
    tok.save_pretrained(str(directory))
    shutil.rmtree(directory / "vocab-source")
    return directory


class Texts:
    """Random-word texts of an exact token count under the checkpoint's tokenizer, each one new."""

    def __init__(self, directory: Path, seed: int) -> None:
        from model.checkpoints.tokenizer import Tokenizer

        self.tokenizer = Tokenizer(directory / "tokenizer.json", max_tokens=100_000)
        self.rng = random.Random(seed)
        self.seen: set[str] = set()

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text))

    def text(self, n: int) -> str:
        words: list[str] = []
        while self.count(" ".join(words)) < n:
            words.append(self.rng.choice(WORDS))
        while self.count(" ".join(words)) > n:
            words.pop()
        text = " ".join(words)
        while self.count(text) < n:  # single letters until exactly n (one that adds two tokens is undone)
            longer = text + " " + self.rng.choice("abcdefghijklmnopqrstuvwxyz")
            if self.count(longer) <= n:
                text = longer
        assert self.count(text) == n and text not in self.seen
        self.seen.add(text)
        return text


def client(base: str, path: str, job: dict) -> list[dict]:
    """bench/client.py in its own process; its timings, one dict per request."""
    out = subprocess.run([sys.executable, "-m", "bench.client"], cwd=ROOT, check=True, capture_output=True,
                         input=json.dumps({"base": base, "path": path, **job}).encode())
    return json.loads(out.stdout)["results"]


def answers(server: Server, hf, texts: Texts) -> list[list[object]]:
    rows = []
    for n in ANSWER_LENGTHS:
        client(server.base, "/api/v1/attention?encoding=u16", {"texts": [texts.text(n)], "model": MODEL_ID})
        with torch.inference_mode():
            hf.model(torch.tensor([texts.tokenizer.encode(texts.text(n)).ids]), output_attentions=True)  # warm-up
        ours, theirs = [], []
        for _ in range(BLOCKS):
            block = [texts.text(n) for _ in range(ANSWER_REPEATS)]
            time.sleep(PAUSE_S)  # the server idle
            for text in block:
                ids = torch.tensor([texts.tokenizer.encode(text).ids])
                with torch.inference_mode():
                    theirs.append(timed(lambda ids=ids: hf.model(ids, output_attentions=True)))
            time.sleep(PAUSE_S)  # this process idle
            results = client(server.base, "/api/v1/attention?encoding=u16",
                             {"texts": [texts.text(n) for _ in range(ANSWER_REPEATS)], "model": MODEL_ID})
            assert all(r["shape"] == [24, 14, n, n] for r in results), [r["shape"] for r in results]
            ours += [r["total_ms"] for r in results]
        ratio = min(ours) / min(theirs)
        rows.append([f"compact answer, {n} tokens", f"{min(ours):.0f} ({median(ours):.0f})",
                     f"{min(theirs):.0f} ({median(theirs):.0f})", f"{ratio:.2f}", f"<= {ANSWER_GOAL}",
                     verdict(ratio <= ANSWER_GOAL)])
    return rows


def grid(server: Server, texts: Texts) -> list[object]:
    from playwright.sync_api import sync_playwright

    shown = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(COLD_LOADS):
            context = browser.new_context(viewport={"width": 1440, "height": 1000})
            context.add_init_script(watch_grid(HEADS))
            page = context.new_page()
            page.goto(f"{server.base}/?model={MODEL_ID}&text={quote(texts.text(GRID_TOKENS))}", wait_until="commit")
            page.wait_for_function(GRID_SHOWN, timeout=120_000)
            shown.append(page.evaluate("() => window.__gridShown"))
            context.close()
        browser.close()
    return [f"explorer grid on screen, {GRID_TOKENS} tokens ({HEADS} heads)", f"{min(shown):.0f} ({median(shown):.0f})",
            "", "", f"<= {GRID_GOAL_MS:.0f} ms", verdict(median(shown) <= GRID_GOAL_MS)]


def generation(server: Server, hf, texts: Texts, exact: bool = True) -> list[object]:
    prompts = [texts.text(PROMPT_TOKENS) for _ in range(GENERATIONS + 1)]
    body = {"model": MODEL_ID, "max_new_tokens": NEW_TOKENS}
    with httpx.Client(base_url=server.base, timeout=600) as check:  # untimed: the same tokens as transformers
        with check.stream("POST", "/api/v1/generate", json={"text": prompts[0], **body}) as r:
            ours = [json.loads(line[6:])["token"]["id"] for line in r.iter_lines()
                    if line.startswith("data: ") and '"index"' in line]
    ids = torch.tensor([texts.tokenizer.encode(prompts[0]).ids])
    with torch.inference_mode():
        expected = hf.generate(ids, max_new_tokens=NEW_TOKENS, do_sample=False)[0, ids.shape[1]:].tolist()
    same = ours == expected
    agree = next((i for i, (a, b) in enumerate(zip(ours, expected, strict=True)) if a != b), len(expected))
    theirs = []
    time.sleep(PAUSE_S)
    for text in prompts[1:]:
        ids = torch.tensor([texts.tokenizer.encode(text).ids])
        with torch.inference_mode():
            seconds = timed(lambda ids=ids: hf.generate(ids, max_new_tokens=NEW_TOKENS, do_sample=False)) / 1000
        theirs.append(NEW_TOKENS / seconds)
    time.sleep(PAUSE_S)
    results = client(server.base, "/api/v1/generate", {"bodies": [{"text": text, **body} for text in prompts[1:]]})
    assert all(r["tokens"] == NEW_TOKENS for r in results), [r["tokens"] for r in results]
    rates = [NEW_TOKENS / (r["total_ms"] / 1000) for r in results]
    ratio = max(rates) / max(theirs)
    check = "" if same else f" (tokens DIFFER from the {agree + 1}th" + (": check FAILED)" if exact else ")")
    return [f"generate {NEW_TOKENS} tokens after {PROMPT_TOKENS}, tokens/s{check}",
            f"{max(rates):.1f} ({median(rates):.1f})", f"{max(theirs):.1f} ({median(theirs):.1f})", f"{ratio:.2f}",
            f">= {GENERATE_GOAL}", verdict(ratio >= GENERATE_GOAL and (same or not exact))]


def accuracy(directory: Path, texts: Texts) -> list[object]:
    """The largest difference of a bfloat16 map from transformers' float32 one, ours and transformers' own."""
    import transformers

    from model.checkpoints import load

    encoded = texts.tokenizer.encode(texts.text(ANSWER_LENGTHS[0]))
    ids = torch.tensor([encoded.ids])
    maps = {}
    for dtype in (torch.float32, torch.bfloat16):
        hf = transformers.AutoModel.from_pretrained(str(directory), attn_implementation="eager", dtype=dtype).eval()
        with torch.inference_mode():
            maps[dtype] = torch.stack([a[0].float() for a in hf(ids, output_attentions=True).attentions])
        del hf
    ours = torch.stack(load(directory, dtype="bfloat16").attention_maps(encoded).per_layer)  # (L, H, T, T)
    mine, theirs = ((m - maps[torch.float32]).abs().max().item() for m in (ours, maps[torch.bfloat16]))
    return [f"bfloat16: largest map difference from float32, {ANSWER_LENGTHS[0]} tokens", f"{mine:.4f}",
            f"{theirs:.4f}", f"{mine / theirs:.2f}", "", ""]


def run() -> str:
    import transformers

    torch.set_num_threads(THREADS)
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="attnscope-bench-") as tmp:
        directory = build(Path(tmp) / MODEL_ID)
        texts = Texts(directory, seed=int(time.time()))
        for dtype in ("float32", "bfloat16"):
            hf = transformers.AutoModelForCausalLM.from_pretrained(str(directory), attn_implementation="eager",
                                                                   dtype=getattr(torch, dtype)).eval()
            weights_mb = sum(p.nbytes for p in hf.parameters()) / 2**20
            with Server(ATTNSCOPE_MODEL_PATHS=str(directory), ATTNSCOPE_DTYPE=dtype) as server:
                found = answers(server, hf, texts)
                found.append(grid(server, texts))
                found.append(generation(server, hf, texts, exact=dtype == "float32"))
                rss = server.rss_mb()
            found.append(["server RSS after all of it, MB", f"{rss:.0f}", f"weights {weights_mb:.0f}",
                          f"+{rss - weights_mb:.0f}", f"<= weights + {RSS_MARGIN_MB:.0f}",
                          verdict(rss <= weights_mb + RSS_MARGIN_MB)])
            rows += [[f"{dtype}: {row[0]}", *row[1:]] for row in found]
            del hf
        rows.append(accuracy(directory, texts))
    return print_table(
        "A Qwen2.5-0.5B-shaped random checkpoint (24 layers x 14 heads, 2 KV heads, d_model 896) served in float32 and "
        "in bfloat16, beside transformers in the same dtype in the same run: ms min (median), or tokens/s max (median)",
        ["measure", "attnscope", "transformers", "ratio", "goal", ""], rows,
    )


if __name__ == "__main__":
    run()
