"""What one request's model work costs, in floating-point operations (FLOPs), from the model's configuration,
and the refusal of a request over the server's budget before any model work starts.

Pure arithmetic on a NetConfig (no tensors). A multiply-add counts 2 FLOPs; biases, norms, activations, the
softmax and the embedding lookups are left out (they are linear in the tokens and small beside the matrix
products), as torch.utils.flop_counter.FlopCounterMode counts. The symbols: L = n_layers, D = d_model,
H = n_heads, G = key-value heads, d = d_head (H·d = D unless the model sets head_dim), F = d_ff, m = 3 for a
gated MLP (gate, up, down) and 2 otherwise, V = vocab_size, t = tokens.

* linear(t) = 2·L·t·(2·D·H·d + 2·D·G·d + m·D·F): every block's projections (q and o: D·H·d each; k and v:
  D·G·d each) and MLP, per token.
* attend(t, keys) = 2·L·t·(2·keys·H·d): every block's scores Q·Kᵀ and weighted sums A·V (keys = t for a whole
  input; a causal model computes the full matrix and masks it).
* forward(t) = linear(t) + attend(t, t). MiniLM (L 6, D 384, H 12, F 1536) at 512 tokens: 13.29 GFLOP, what
  FlopCounterMode counts on a real forward (tests/api/test_work.py).
* head(n) = 2·n·D·V: the LM head at n positions.
* gradient pass(t) = 2·linear(t) + 3·attend(t, t): a forward and a backward to the inputs only
  (torch.autograd.grad on the word embeddings): a linear layer's backward is one more product of its size
  (dX = dY·W), the attention's two (both its operands are activations).

Per operation (the functions below, each with its formula):
* attention, summary, aggregate: forward(t) (+ rollout's 2·(L−1)·t³ for the aggregate's rollout);
* metrics: forward(t) + forward(r), r the repeated random sequence R R (2·REPEAT_HALF and the template's tokens);
* contributions: forward(t) + per chosen layer 2·t·H·D·(d + H) + 2·t²·H² (f_h(x_j) = v W_o^h, the Gram
  matrices and their weighting, model/analysis/contributions.py);
* lens: forward(t) + head(L + 1);
* attribution: (steps + 2 or 2 passes)·(gradient pass(t) + 2·head(1)) + the target text's forward + the
  compared scores (two forwards, one layer's contributions, rollout);
* trace: (layer + 1)/L · forward(t): the blocks after the traced one do not run;
* patching: model/analysis/patching.py's `work`, the grid's multiply-adds, checked there against half the budget
  (its FLOPs against the budget), refused as `patch_too_large`;
* generate: forward(p) + head(1) for the prompt, then per new token j (context p + j) linear(R) +
  attend(1, p + j) + head(R), R = DECODE_ROWS: a one-token step runs at the pace of reading the weights;
* the training labs (induction, seq2seq, Iris, Informer, glimpse): steps × batch × 3 × one example's forward
  (their own functions below); a job, which runs in the background and can be cancelled, may take JOB_SHARE budgets.

Not bounded here: the corpus queries (GET /api/v1/corpus/...) run no model; they read the index the server was
started with, k texts at most (MAX_K), and their cost grows with that index, not with the request.

The budget is one number of FLOPs per request (the server's ATTNSCOPE_WORK_BUDGET, in GFLOP). A request over it
is refused with WorkTooLarge (`work_too_large`), naming the largest input that fits: the estimate is increasing
in the tokens, the steps and the new tokens, so `largest` inverts it by bisection.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from model.errors import RuleError
from model.nets.config import NetConfig

GIGA = 1e9
REPEAT_TOKENS = 2 * 24 + 2  # metrics' R R: circuits.REPEAT_HALF tokens twice, and [CLS] and [SEP]
# A generated token's step (one row through every weight) took as long as the products of about 16 tokens on a
# 0.5B decoder here (bench/budget.py: 256 steps after 1238 tokens, 0.68 s a step where its FLOPs would take 0.08 s)
DECODE_ROWS = 16

WORK_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "work_too_large": (("gflop", "budget_gflop", "largest"), "a request whose estimated work (model/analysis/work.py) "
                       "is over the server's ATTNSCOPE_WORK_BUDGET; `largest` is the most tokens (or steps, or new "
                       "tokens: the field in loc) that fit at the request's other settings"),
}


class WorkTooLarge(RuleError):
    """A request whose model work would exceed the per-request budget; `loc` names the field to shrink and ctx
    {gflop, budget_gflop, largest} the estimate, the budget and the largest value of that field that fits."""

    rules = WORK_RULES


def _mlp(cfg: NetConfig) -> int:
    return 3 if cfg.mlp == "gated" else 2


def linear(cfg: NetConfig, t: int) -> float:
    """2·L·t·(2·D·H·d + 2·D·G·d + m·D·F): the projections and the MLP of every block on t tokens."""
    d, h, g = cfg.d_head, cfg.n_heads, cfg.kv_heads
    per_token = 2 * cfg.d_model * h * d + 2 * cfg.d_model * g * d + _mlp(cfg) * cfg.d_model * cfg.d_ff
    return 2.0 * cfg.n_layers * t * per_token


def attend(cfg: NetConfig, t: int, keys: int) -> float:
    """2·L·t·(2·keys·H·d): the scores and the weighted sums of t queries over `keys` keys in every block."""
    return 2.0 * cfg.n_layers * t * 2 * keys * cfg.n_heads * cfg.d_head


def forward(cfg: NetConfig, t: int) -> float:
    """linear(t) + attend(t, t): one forward over t tokens, without the LM head."""
    return linear(cfg, t) + attend(cfg, t, t)


def head(cfg: NetConfig, positions: int) -> float:
    """2·n·D·V: the LM head's logits at n positions (0 for a model without one)."""
    return 2.0 * positions * cfg.d_model * cfg.vocab_size if cfg.lm_head else 0.0


def gradient_pass(cfg: NetConfig, t: int) -> float:
    """2·linear(t) + 3·attend(t, t): a forward and a backward to the inputs (not to the weights)."""
    return 2 * linear(cfg, t) + 3 * attend(cfg, t, t)


def rollout(cfg: NetConfig, t: int) -> float:
    """2·(L − 1)·t³: attention rollout's products of the layers' t x t maps."""
    return 2.0 * max(cfg.n_layers - 1, 0) * t ** 3


def attention(cfg: NetConfig, t: int, kind: str = "mean") -> float:
    """forward(t) (+ rollout(t) for kind "rollout"): /attention, its summary, /aggregate and /trace."""
    return forward(cfg, t) + (rollout(cfg, t) if kind == "rollout" else 0.0)


def trace(cfg: NetConfig, t: int, layer: int) -> float:
    """(layer + 1)/L · forward(t): /trace runs the blocks up to the traced one and no further."""
    return forward(cfg, t) * (layer + 1) / cfg.n_layers


def contributions_extra(cfg: NetConfig, t: int, layers: int) -> float:
    """layers·(2·t·H·D·(d + H) + 2·t²·H²): f_h(x_j), the Gram matrices and their weighting per layer."""
    h = cfg.n_heads
    return layers * (2.0 * t * h * cfg.d_model * (cfg.d_head + h) + 2.0 * t * t * h * h)


def contributions(cfg: NetConfig, t: int, layers: int) -> float:
    """forward(t) + contributions_extra(t, layers): /contributions for `layers` chosen layers."""
    return forward(cfg, t) + contributions_extra(cfg, t, layers)


def metrics(cfg: NetConfig, t: int) -> float:
    """forward(t) + forward(r), r = min(REPEAT_TOKENS, the model's limit): /metrics."""
    return forward(cfg, t) + forward(cfg, min(REPEAT_TOKENS, cfg.max_positions))


def lens(cfg: NetConfig, t: int) -> float:
    """forward(t) + head(L + 1): /lens reads the stream after the embeddings and after each block at one position."""
    return forward(cfg, t) + head(cfg, cfg.n_layers + 1)


def attribution(cfg: NetConfig, t: int, method: str, steps: int, target_tokens: int = 0) -> float:
    """passes·(gradient_pass(t) + 2·head(1)) + forward(target) + 2·forward(t) + contributions_extra(t, 1)
    + rollout(t); passes = steps + 2 for integrated gradients (the nodes, x and the baseline), 2 for
    gradient × input. `target_tokens`: the target text's tokens (an encoder's f), 0 for a token id."""
    passes = steps + 2 if method == "integrated_gradients" else 2
    return (passes * (gradient_pass(cfg, t) + 2 * head(cfg, 1)) + forward(cfg, target_tokens)
            + 2 * forward(cfg, t) + contributions_extra(cfg, t, 1) + rollout(cfg, t))


def generate(cfg: NetConfig, prompt: int, new_tokens: int) -> float:
    """forward(p) + head(1) + Σ_{j=0}^{n−2} (linear(R) + attend(1, p + j + 1) + head(R)), R = DECODE_ROWS: the
    prompt's forward and the first token, then each further token alone with the KV cache (the last token is not
    fed back). A step of one token reads every weight once, as a forward of many tokens does, and its products
    run at the pace of that reading: it is counted as the products of DECODE_ROWS tokens."""
    steps = max(new_tokens - 1, 0)
    keys = steps * (prompt + 1) + steps * (steps - 1) // 2  # Σ_{j=0}^{n−2} (p + j + 1)
    return (forward(cfg, prompt) + head(cfg, 1) + steps * (linear(cfg, DECODE_ROWS) + head(cfg, DECODE_ROWS))
            + 2.0 * cfg.n_layers * 2 * keys * cfg.n_heads * cfg.d_head)


def largest(cost: Callable[[int], float], budget: float, low: int, high: int) -> int:
    """The largest n in low..high with cost(n) ≤ budget, for a cost increasing in n; low − 1 when none fits."""
    if cost(low) > budget:
        return low - 1
    while low < high:  # cost(low) ≤ budget throughout
        middle = (low + high + 1) // 2
        if cost(middle) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def refuse(flops: float, budget_gflop: float, field: str, what: str, fits: int, advice: str) -> None:
    """WorkTooLarge when `flops` is over the budget: `what` names the request's work, `fits` the largest value of
    `field` that fits, `advice` says what to change (it names `fits`)."""
    if flops <= budget_gflop * GIGA:
        return
    raise WorkTooLarge("work_too_large", field, f"{what} would take about {flops / GIGA:.4g} GFLOP, more than the "
                       f"{budget_gflop:g} GFLOP one request may use on this server (ATTNSCOPE_WORK_BUDGET); {advice}",
                       gflop=float(f"{flops / GIGA:.6g}"), budget_gflop=budget_gflop, largest=fits)


def check_tokens(cost: Callable[[int], float], t: int, budget_gflop: float, what: str, limit: int,
                 field: str = "text", unit: str = "tokens") -> float:
    """cost(t), the work's estimate in FLOP; WorkTooLarge (`field`, "text" by default) when it is over the
    budget, naming the most tokens (or other `unit`, up to `limit`) that fit."""
    budget = budget_gflop * GIGA
    if cost(t) <= budget:
        return cost(t)
    fits = largest(cost, budget, 1, min(t, limit))
    advice = (f"shorten the text to at most {fits} tokens" if field == "text" else
              f"lower {field} to at most {fits}")
    refuse(cost(t), budget_gflop, field, f"{what} on {t} {unit}", fits,
           advice if fits >= 1 else "no input fits this model")
    raise AssertionError("refuse raises over the budget")


def check_attribution(cfg: NetConfig, t: int, method: str, steps: int, target_tokens: int, budget_gflop: float,
                      min_steps: int) -> None:
    """WorkTooLarge for an attribution over the budget: with integrated gradients, field "steps" naming the most
    steps at this length when at least `min_steps` fit, else field "text" naming the most tokens at these steps."""
    budget = budget_gflop * GIGA
    flops = attribution(cfg, t, method, steps, target_tokens)
    if flops <= budget:
        return
    with_steps = f" with {steps} steps" if method == "integrated_gradients" else ""
    what = f"{method}{with_steps} on {t} tokens"
    tokens = largest(lambda n: attribution(cfg, n, method, steps, target_tokens), budget, 1, t)
    token_advice = f"shorten the text to at most {tokens} tokens" if tokens >= 1 else "no input fits this model"
    if method == "integrated_gradients":
        most = largest(lambda s: attribution(cfg, t, method, s, target_tokens), budget, min_steps, steps)
        if most >= min_steps:
            refuse(flops, budget_gflop, "steps", what, most, f"lower steps to at most {most} at this length, or "
                   f"{token_advice} at {steps} steps")
    refuse(flops, budget_gflop, "text", what, tokens, f"{token_advice} at these settings")


def check_generate(cfg: NetConfig, prompt: int, new_tokens: int, budget_gflop: float) -> None:
    """WorkTooLarge (field "max_new_tokens") for a generation over the budget, naming the most new tokens after
    this prompt; field "text" with the most prompt tokens when not even one new token fits."""
    budget = budget_gflop * GIGA
    flops = generate(cfg, prompt, new_tokens)
    if flops <= budget:
        return
    what = f"generating {new_tokens} tokens after {prompt}"
    most = largest(lambda n: generate(cfg, prompt, n), budget, 1, new_tokens)
    if most >= 1:
        refuse(flops, budget_gflop, "max_new_tokens", what, most, f"lower max_new_tokens to at most {most}")
    tokens = largest(lambda p: generate(cfg, p, new_tokens), budget, 1, prompt)
    refuse(flops, budget_gflop, "text", what, tokens,
           f"shorten the text to at most {tokens} tokens" if tokens >= 1 else "no input fits this model")


# ---- the training labs (model/lab): background jobs that report their progress and can be cancelled ----

JOB_SHARE = 20  # a training job may take this many requests' budgets: 26 TFLOP at the default budget
TRAINING = 3  # a training step on one example: its forward, and a backward to the weights and the inputs (2·forward)


def induction(vocab: int, length: int, layers: int, d_model: int, batch: int, steps: int) -> float:
    """3·steps·batch·(layers·(8·T·D² + 4·T²·D) + 2·T·D·V): Adam steps on batches of T-token sequences through
    `layers` attention-only blocks (q, k, v, o: 4·D² multiply-adds a token; scores and weighted sums 2·T·D) and
    the unembedding (D·V a token). The defaults (V 64, T 32, 2 layers, D 128, batch 64, 2000 steps): 3.8 TFLOP."""
    t, d = length, d_model
    return float(TRAINING * steps * batch * (layers * (8 * t * d * d + 4 * t * t * d) + 2 * t * d * vocab))


def seq2seq(hidden: int, embed: int, source: int, target: int, alphabet: int, attention: bool, batch: int,
            steps: int) -> float:
    """3·steps·batch·(encoder + decoder) on the task's longest source S and target T (+ END), h = hidden, E = embed,
    A = the target alphabet (+ 3 specials): encoder S·6·(E·2h + (2h)²) (a GRU of 2h units: three gates' input and
    hidden products); with attention S·2·2h·h (U h_i); decoder (T + 1)·(6·((E + 2h)·h + h²) + 2·(3h + E)·(A + 3)
    + attention's 2·h² + S·6h (W s, vᵀ tanh and the context)). The defaults (h 96, reverse: S = T = 30, batch 64,
    1500 steps): 4.7 TFLOP."""
    h, s = hidden, source
    encoder = s * 6 * (embed * 2 * h + 4 * h * h) + (s * 4 * h * h if attention else 0)
    step = 6 * ((embed + 2 * h) * h + h * h) + 2 * (3 * h + embed) * (alphabet + 3)
    if attention:
        step += 2 * h * h + s * 6 * h
    return float(TRAINING * steps * batch * (encoder + (target + 1) * step))


def iris(epochs: int, flowers: int, features: int, tokens: int, width: int, classes: int) -> float:
    """3·epochs·flowers·(2·F·T·E + T·4·2·E² + 2·2·T²·E + 2·E·C): every epoch trains on every flower once: the
    embedding of F features into T tokens of width E, the attention's four projections, its scores and weighted
    sums, the classifier. At its largest (2000 epochs of 120 flowers): about 2 GFLOP."""
    t, e = tokens, width
    per_flower = 2 * features * t * e + t * 8 * e * e + 4 * t * t * e + 2 * e * classes
    return float(TRAINING * epochs * flowers * per_flower)


def informer(window: int, horizon: int, layers: int, d_model: int, factor: int, attention: str, batch: int,
             steps: int) -> float:
    """3·steps·batch·(2·3·L·D + Σ_l layer(n_l) + 2·n_last·D·H): a window of L values embedded by a convolution of
    width 3, then `layers` encoder layers at lengths n_l = ⌈L/2^l⌉ (each distilling layer halves it), each
    8·n·D² (q, k, v, o) + 16·n·D² (a feed-forward of 4D) + its attention, and between two layers the distilling
    convolution (width 3, D to D: 6·n·D²); the head maps the last n·D values to the H forecast. Attention: full
    4·n²·D (scores and weighted sums); ProbSparse 2·n·U·D (each query's sampled scores, U = min(c·⌈ln n⌉, n))
    + 4·u·n·D (the u = min(c·⌈ln n⌉, n) active queries' rows; the lazy rows share one mean of V). The defaults
    (L 96, H 24, 2 layers, D 32, batch 32): 0.47 GFLOP a step with ProbSparse, 0.55 with full attention."""
    d = d_model
    flops = 2 * 3 * window * d
    n = window
    for layer in range(layers):
        flops += 24 * n * d * d
        if attention == "full":
            flops += 4 * n * n * d
        else:
            sampled = min(factor * math.ceil(math.log(n)), n) if n > 1 else n
            flops += 2 * n * sampled * d + 4 * sampled * n * d
        if layer < layers - 1:
            flops += 6 * n * d * d
            n = (n + 1) // 2
    flops += 2 * n * d * horizon
    return float(TRAINING * steps * batch * flops)


def glimpse(channels: int, hidden: int, batch: int, steps: int, eval_every: int) -> float:
    """One canvas's forward f = encoder + 5·decoder step, the encoder 2·576·9·C (conv 1 → C on 24 × 24) +
    2·144·9·2C² (conv C → 2C on 12 × 12) + 2·9·8C·K (a linear layer per cell) + 2·9·K·A (U h_i), a decoder step
    2·h·A + 2·9·A (the additive scores) + 6·((E + K)·h + h²) (the GRU) + 2·(h + K + E)·11 (the output), K = 64,
    A = 32, E = 16 (model/lab/glimpse_net.py). Training 3·steps·batch·f; each of the steps/eval_every + 2
    evaluations reads 1,000 canvases forward and 16 × 32 with a backward (3f): 2,536f. The defaults (C 24, h 64,
    batch 64, 2,400 steps every 150): 1.9 TFLOP."""
    k, a, e, c, h = 64, 32, 16, channels, hidden
    encoder = 2 * 576 * 9 * c + 2 * 144 * 9 * 2 * c * c + 2 * 9 * 8 * c * k + 2 * 9 * k * a
    step = 2 * h * a + 2 * 9 * a + 6 * ((e + k) * h + h * h) + 2 * (h + k + e) * 11
    forward = encoder + 5 * step
    evaluations = steps // eval_every + 2
    return float(TRAINING * steps * batch * forward + evaluations * (1000 + TRAINING * 16 * 32) * forward)


def check_job(cost: Callable[[int], float], steps: int, budget_gflop: float, field: str, what: str) -> None:
    """WorkTooLarge (field `field`: steps or epochs) when a training job's cost(steps) is over JOB_SHARE budgets,
    naming the most steps that fit at its other settings."""
    budget = budget_gflop * JOB_SHARE * GIGA
    flops = cost(steps)
    if flops <= budget:
        return
    fits = largest(cost, budget, 1, steps)
    advice = f"lower {field} to at most {fits}" if fits >= 1 else "choose smaller sizes"
    raise WorkTooLarge("work_too_large", field, f"{what} would take about {flops / GIGA:.4g} GFLOP, more than the "
                       f"{budget / GIGA:g} GFLOP one training job may use on this server ({JOB_SHARE} x "
                       f"ATTNSCOPE_WORK_BUDGET); {advice} at these sizes",
                       gflop=float(f"{flops / GIGA:.6g}"), budget_gflop=budget / GIGA, largest=fits)
