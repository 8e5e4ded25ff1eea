"""Every bounded operation at its cap under the default work budget, as a user's client sees it.

The work budget (ATTNSCOPE_WORK_BUDGET, GFLOP; model/analysis/work.py estimates each request's work) refuses what
is over it before any model work. This benchmark sends, for each bounded operation, the largest request the
default budget accepts (or the model's token limit, where that comes first) and times it from a client in its own
process (`python -m bench.budget --client`: httpx and the standard library, one keep-alive connection, each
request from sending it to its last body byte). Every text is new (TextMaker), so no cache answers it.

Two servers (`attnscope serve`, ATTNSCOPE_TORCH_THREADS = BENCH_THREADS): the packaged MiniLM (6 layers, 384 wide),
and for the operations that need an LM head (the lens, generate) a random checkpoint shaped like Qwen2.5-0.5B
(bench/decoder.py's, 24 layers, 896 wide, built in a temporary directory): the same budget gives it fewer tokens.

The reference, measured in the same run at its best (the least of REFERENCE_RUNS, before the servers start): the
MiniLM network's forward at 512 tokens in this process (the packaged weights, BENCH_THREADS threads). Its GFLOP/s
(work.forward's count over its time) gives the budget's seconds: the budget's GFLOP at that rate, what the
estimate's products take on this machine without the rest of a request. (transformers' eager BertModel with
output_attentions ran 4 to 6 times slower here, which would make the budget's seconds mean little.)
Each row prints the raw seconds, the estimate
(GFLOP), and seconds ÷ the budget's seconds: how much longer than the budget's seconds the request takes.

    .venv/bin/python -m bench.budget
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, THREADS, Server, TextMaker, print_table

REFERENCE_RUNS = 3
PROMPT_TOKENS = 128  # generate: the most new tokens after a prompt of this length
PAUSE_S = 0.5


# ---- the client, in its own process ----

def client_main() -> None:
    """Reads {"base", "requests": [{"path", "body", "stream"?}, ...]} on stdin; prints each one's seconds."""
    import httpx

    job = json.load(sys.stdin)
    results = []
    with httpx.Client(base_url=job["base"], timeout=300) as client:
        client.get("/healthz").raise_for_status()  # the connection is open before the first timed request
        for request in job["requests"]:
            time.sleep(PAUSE_S)
            body = bytearray()
            t0 = time.perf_counter()
            with client.stream("POST", request["path"], json=request["body"]) as r:
                for chunk in r.iter_raw():
                    body += chunk
            seconds = time.perf_counter() - t0
            if r.status_code != request.get("status", 200):
                raise RuntimeError(f"{r.status_code} from {request['path']}: {bytes(body[:400])!r}")
            if request.get("stream") and b"event: done" not in body:
                raise RuntimeError(f"the stream from {request['path']} has no done event: {bytes(body[-400:])!r}")
            results.append({"seconds": seconds, "bytes": len(body)})
    json.dump({"results": results}, sys.stdout)


def client(base: str, requests: list[dict]) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "bench.budget", "--client"], cwd=ROOT, capture_output=True,
                         input=json.dumps({"base": base, "requests": requests}).encode())
    if out.returncode:
        raise RuntimeError(f"the client failed:\n{out.stderr.decode(errors='replace')[-2000:]}")
    return json.loads(out.stdout)["results"]


# ---- the runs ----

def reference_gflops(seed: int) -> tuple[float, float]:
    """(best seconds, GFLOP/s) of MiniLM's forward at 512 tokens in this process (attnscope's network, the weights
    of the packaged model, BENCH_THREADS threads): the rate of the products work.forward counts."""
    import torch

    from model.analysis import work
    from model.checkpoints import load

    torch.set_num_threads(THREADS)
    model, maker = load("minilm"), TextMaker(seed=seed)
    best = float("inf")
    for _ in range(REFERENCE_RUNS + 1):  # the first warms up
        ids = torch.tensor([model.tokenizer.encode(maker.text(512)).ids])  # (1, 512)
        t0 = time.perf_counter()
        with torch.inference_mode():
            model.net(ids, torch.zeros_like(ids))
        best = min(best, time.perf_counter() - t0)
    return best, work.forward(model.cfg, 512) / best / work.GIGA


def minilm_requests(budget: float) -> list[tuple[str, float, dict]]:
    """(name, estimate GFLOP, request) for MiniLM at each operation's cap."""
    from model.analysis import attribution, patching, work
    from model.checkpoints import load

    model = load("minilm")
    cfg, net = model.cfg, model.net
    maker, limit, flops = TextMaker(seed=7), cfg.max_positions, budget * work.GIGA
    target = "a small house by the river"
    target_tokens = len(model.tokenizer.encode(target))

    def ig(n: int, steps: int) -> float:
        return work.attribution(cfg, n, "integrated_gradients", steps, target_tokens)

    default = attribution.DEFAULT_STEPS
    ig_steps = work.largest(lambda s: ig(limit, s), flops, attribution.MIN_STEPS, attribution.MAX_STEPS)
    ig_tokens = work.largest(lambda n: ig(n, default), flops, 2, limit)
    residual = work.largest(lambda n: 2 * patching.work(net, "residual", n), flops, 2, limit)
    heads = work.largest(lambda n: 2 * patching.work(net, "heads", n), flops, 2, limit)

    def pair(n: int, kind: str) -> dict:
        clean = maker.text(n)
        words = clean.split()
        other = next(w for w in maker.words if w != words[-1])
        return {"clean": clean, "corrupted": " ".join([*words[:-1], other]), "target": kind}

    g = work.GIGA
    rows = [
        (f"attention ?encoding=u16, all maps, {limit} tokens", work.attention(cfg, limit) / g,
         {"path": "/api/v1/attention?encoding=u16", "body": {"text": maker.text(limit)}}),
        (f"attention/summary, {limit} tokens", work.attention(cfg, limit) / g,
         {"path": "/api/v1/attention/summary", "body": {"text": maker.text(limit)}}),
        (f"aggregate rollout, {limit} tokens", work.attention(cfg, limit, "rollout") / g,
         {"path": "/api/v1/aggregate", "body": {"text": maker.text(limit), "kind": "rollout"}}),
        (f"trace layer 5, every head, ?encoding=f32, {limit} tokens", work.trace(cfg, limit, 5) / g,
         {"path": "/api/v1/trace?encoding=f32", "body": {"text": maker.text(limit), "layer": 5}}),
        (f"metrics, {limit} tokens", work.metrics(cfg, limit) / g,
         {"path": "/api/v1/metrics", "body": {"text": maker.text(limit)}}),
        (f"contributions, layer 5, head 0, {limit} tokens", work.contributions(cfg, limit, 1) / g,
         {"path": "/api/v1/contributions", "body": {"text": maker.text(limit), "layers": [5], "heads": [0]}}),
        (f"attribution gradient_x_input, {limit} tokens",
         work.attribution(cfg, limit, "gradient_x_input", 0, target_tokens) / g,
         {"path": "/api/v1/attribution", "body": {"text": maker.text(limit), "target": target,
                                                  "method": "gradient_x_input"}}),
        (f"attribution integrated_gradients, {limit} tokens, {ig_steps} steps (the most)", ig(limit, ig_steps) / g,
         {"path": "/api/v1/attribution", "body": {"text": maker.text(limit), "target": target, "steps": ig_steps}}),
        (f"attribution integrated_gradients, {ig_tokens} tokens (the most), {default} steps",
         ig(ig_tokens, default) / g,
         {"path": "/api/v1/attribution", "body": {"text": maker.text(ig_tokens), "target": target, "steps": default}}),
        (f"patch residual, {residual} tokens (the most)", 2 * patching.work(net, "residual", residual) / g,
         {"path": "/api/v1/patch", "body": pair(residual, "residual")}),
        (f"patch heads, {heads} tokens (the most)", 2 * patching.work(net, "heads", heads) / g,
         {"path": "/api/v1/patch", "body": pair(heads, "heads")}),
        (f"refused: integrated_gradients, 502 tokens, {default} steps", ig(502, default) / g,
         {"path": "/api/v1/attribution", "body": {"text": "word " * 500, "target": "hi", "steps": default},
          "status": 422}),
    ]
    return rows


def decoder_requests(directory: Path, budget: float) -> list[tuple[str, float, dict]]:
    """(name, estimate GFLOP, request) for the lens and generate on the 0.5B-shaped decoder at their caps."""
    from bench.decoder import Texts
    from model.analysis import work
    from model.analysis.generate import MAX_NEW_TOKENS
    from model.checkpoints import load

    cfg = load(directory).cfg
    texts, flops, g = Texts(directory, seed=3), budget * work.GIGA, work.GIGA
    lens = work.largest(lambda n: work.lens(cfg, n), flops, 1, cfg.max_positions)
    new = work.largest(lambda n: work.generate(cfg, PROMPT_TOKENS, n), flops, 1, MAX_NEW_TOKENS)
    return [
        (f"lens (0.5B decoder), {lens} tokens (the most)", work.lens(cfg, lens) / g,
         {"path": "/api/v1/lens", "body": {"text": texts.text(lens), "model": directory.name}}),
        (f"generate (0.5B decoder), {PROMPT_TOKENS} tokens + {new} new (the most)",
         work.generate(cfg, PROMPT_TOKENS, new) / g,
         {"path": "/api/v1/generate", "body": {"text": texts.text(PROMPT_TOKENS), "model": directory.name,
                                               "max_new_tokens": new, "attention": False},
          "stream": True}),
    ]


def run() -> str:
    from app.settings import Settings
    from bench.decoder import build
    from model.analysis import work
    from model.checkpoints import load

    budget = Settings.model_fields["work_budget"].default
    before, _ = reference_gflops(seed=99)
    print(f"reference before the servers: {before:.3f} s", flush=True)
    rows: list[list[object]] = []
    measured: list[tuple[str, float, float]] = []  # (name, seconds, estimate GFLOP)

    def measure(server: Server, requests: list[tuple[str, float, dict]]) -> None:
        results = client(server.base, [r for _, _, r in requests])
        for (name, gflop, _), result in zip(requests, results, strict=True):
            measured.append((name, result["seconds"], gflop))
            print(measured[-1], flush=True)

    with Server() as server:
        measure(server, minilm_requests(budget))
    with tempfile.TemporaryDirectory() as tmp:
        directory = build(Path(tmp) / "qwen-shaped")
        with Server(ATTNSCOPE_MODEL_PATHS=str(directory)) as server:
            measure(server, decoder_requests(directory, budget))
    after, _ = reference_gflops(seed=98)
    best = min(before, after)
    rate = work.forward(load("minilm").cfg, 512) / best / work.GIGA
    budget_s = budget / rate
    print(f"reference: MiniLM's forward in this process, 512 tokens: {before:.3f} s before the servers, {after:.3f} "
          f"s after, at its best {rate:.1f} GFLOP/s; the budget {budget:g} GFLOP = {budget_s:.2f} s at that rate")
    for name, seconds, gflop in measured:
        rows.append([name, f"{seconds:.2f}", f"{gflop:.0f}", f"{gflop / budget:.2f}", f"{seconds / budget_s:.2f}"])
    return print_table(f"Each bounded operation at its cap, budget {budget:g} GFLOP ({budget_s:.2f} s at the "
                       f"reference's {rate:.1f} GFLOP/s)",
                       ["request", "seconds", "estimate (GFLOP)", "÷ budget", "seconds ÷ budget's seconds"], rows)


if __name__ == "__main__":
    if "--client" in sys.argv:
        client_main()
    else:
        run()
