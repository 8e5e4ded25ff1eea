"""What one multi-head attention layer costs: parameters, memory and floating-point operations.

Pure integer arithmetic (no torch): every number is an exact Python int. The symbols are those of
the notes: E = d_model, H = n_heads, G = n_kv_heads (key-value heads, G divides H; G = H is
multi-head attention, G < H grouped-query attention, G = 1 multi-query attention), D = E / H
(per-head width; a served model may set its own, e.g. Qwen3's head_dim, and then H·D need not be E),
S = sequence length (queries = keys, self-attention), B = batch, b = bytes per number, L = layers.
Each formula below is written for H·D = E; with H·D ≠ E every E that stands for H·D becomes H·D.

Per layer:

* parameters: W_q and W_o are E x E, W_k and W_v E x G·D (E x E when G = H), plus their bias
  vectors (E, E, G·D, G·D): 2·E² + 2·E·G·D + 2·E + 2·G·D, which is 4·E² + 4·E when G = H.
* attention matrix: the weights A, one S x S matrix per head and sequence: B·H·S² numbers.
* backward cache: what the backward pass keeps from the forward: the input x, Q and the context
  ctx = A·V (each B·S·E), K and V (each B·S·G·D) and A (B·H·S²): 3·B·S·E + 2·B·S·G·D + B·H·S²
  numbers, 5·B·S·E + B·H·S² when G = H.
* FLOPs of the forward, counting a multiply-add as 2 FLOPs and leaving out biases, the scale and
  the softmax: the projections 2·B·S times their weights, 4·B·S·E² + 4·B·S·E·G·D (8·B·S·E² when
  G = H), the scores Q·Kᵀ and the weighted sum A·V each 2·B·H·S²·D = 2·B·S²·E, together 4·B·S²·E
  (each query head reads its group's keys and values: G does not change these).
* KV cache: the keys and values of every token so far, which a decoder keeps to generate the next
  token without recomputing them: 2·B·S·G·D numbers (B·S·G·D each for K and V). Multi-head
  attention would keep 2·B·S·H·D: grouped-query attention keeps G/H of that.
* FlashAttention's working set (Dao et al. 2022): it computes attention tile by tile in on-chip
  memory and never stores the S x S matrix; what it keeps in memory beyond its inputs Q, K, V is
  the output O (B·H·S·D numbers) and two softmax statistics per query row, the running maximum
  m and the running sum ℓ (2·B·H·S): B·H·S·D + 2·B·H·S numbers, linear in S. Its tiles take a
  fixed amount of on-chip memory, independent of S, and are not counted.

Whole model: each per-layer number times L (every layer's matrix and cache kept, as in training;
inference without gradients holds one layer's attention matrix at a time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from model.errors import RuleError

# Limits of one request. An answer's numbers must also stay at most MAX_EXACT, the largest integer
# a JSON client that reads numbers as float64 (JavaScript) keeps exact: at the largest sizes the
# products would not (65536 heads' width, 10^7 tokens and a batch of 4096 give ~10^26 bytes).
MAX_D_MODEL = 65536
MAX_SEQ_LEN = 10_000_000
MAX_BATCH = 4096
MAX_LAYERS = 1024
BYTE_SIZES = (1, 2, 4, 8)  # int8, fp16 / bf16, fp32, fp64
MAX_EXACT = 2**53 - 1  # 9007199254740991 = Number.MAX_SAFE_INTEGER

# The quantities, in the order the API and the page list them.
QUANTITIES = ("parameters", "parameter_bytes", "attention_matrix_bytes", "cache_bytes", "flops",
              "flash_attention_bytes", "kv_cache_bytes")

# Rules between a cost request's numbers: type -> (ctx keys, what breaks it).
COST_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "cost_heads_divide": (("n_heads", "d_model"), "n_heads does not divide d_model"),
    "cost_kv_heads_divide": (("n_kv_heads", "n_heads"), "n_kv_heads does not divide n_heads (it must be "
                             "1 to n_heads, each key-value head shared by n_heads / n_kv_heads query heads)"),
    "cost_bytes": (("bytes",), "bytes per number other than 1, 2, 4 and 8"),
    "cost_not_exact": (("quantity", "value", "max"),
                       "a number of the answer (per layer or for the whole model) over max = 2^53 - 1, the "
                       "largest integer a JSON client reading float64 keeps exact"),
    "cost_model_sizes": (("parameter", "model"), "d_model, n_heads, n_kv_heads or n_layers sent together with model "
                         "(the model fixes them)"),
    "cost_model_seq_len": (("seq_len", "max_tokens", "model"), "seq_len over the model's max_tokens"),
}


class CostError(RuleError):
    """A cost request whose numbers do not fit together; `loc` names the field, `type` is one of COST_RULES."""

    rules = COST_RULES


@dataclass(frozen=True)
class Sizes:
    """The sizes a cost is computed for; `check_sizes` states the rules between them."""

    d_model: int  # E
    n_heads: int  # H
    seq_len: int  # S
    batch: int = 1  # B
    bytes_per_number: int = 4  # b
    bias: bool = True
    n_layers: int = 1  # L
    n_kv_heads: int | None = None  # G; None: H (multi-head attention)
    head_dim: int | None = None  # D of a model that sets its own head width; None: E / H

    @property
    def d_head(self) -> int:
        """D, the width of each head's q, k and v: E / H unless head_dim sets it."""
        return self.d_model // self.n_heads if self.head_dim is None else self.head_dim

    @property
    def kv_heads(self) -> int:
        """G, the key-value heads."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def q_width(self) -> int:
        """H·D, the width of Q, K and V of multi-head attention and of the context ctx (E unless head_dim)."""
        return self.n_heads * self.d_head

    @property
    def kv_width(self) -> int:
        """G·D, the width of K and V."""
        return self.kv_heads * self.d_head


def parameters(d_model: int, bias: bool = True, kv_width: int | None = None, q_width: int | None = None) -> int:
    """W_q (E x H·D), W_k and W_v (E x G·D each), W_o (H·D x E) and, with bias, their bias vectors (H·D,
    G·D, G·D, E). kv_width = G·D and q_width = H·D default to E: 4·E² + 4·E, multi-head attention."""
    q = d_model if q_width is None else q_width
    kv = d_model if kv_width is None else kv_width
    return 2 * d_model * q + 2 * d_model * kv + ((q + d_model + 2 * kv) if bias else 0)


def attention_matrix_numbers(batch: int, n_heads: int, seq_len: int) -> int:
    """The attention weights A: one S x S matrix per sequence and head, B·H·S²."""
    return batch * n_heads * seq_len**2


def cache_numbers(batch: int, n_heads: int, seq_len: int, d_model: int, kv_width: int | None = None,
                  q_width: int | None = None) -> int:
    """x (B·S·E), Q and ctx (B·S·H·D each), K and V (B·S·G·D each) and A (B·H·S²), the forward's arrays
    the backward reads; kv_width = G·D and q_width = H·D default to E."""
    q = d_model if q_width is None else q_width
    kv = d_model if kv_width is None else kv_width
    return batch * seq_len * (d_model + 2 * q + 2 * kv) + attention_matrix_numbers(batch, n_heads, seq_len)


def projection_flops(batch: int, seq_len: int, d_model: int, kv_width: int | None = None,
                     q_width: int | None = None) -> int:
    """Q, K, V and the output projection: (B·S x E) @ (E x H·D), two (B·S x E) @ (E x G·D) and
    (B·S x H·D) @ (H·D x E), 2 FLOPs a multiply-add; 8·B·S·E² when G·D = H·D = E."""
    q = d_model if q_width is None else q_width
    kv = d_model if kv_width is None else kv_width
    return 2 * batch * seq_len * d_model * (2 * q + 2 * kv)


def attention_flops(batch: int, seq_len: int, q_width: int) -> int:
    """Q·Kᵀ and A·V of every head: 2 · (2·B·H·S²·D) = 4·B·S²·E, with q_width = H·D (= E)."""
    return 4 * batch * seq_len**2 * q_width


def flops(batch: int, seq_len: int, d_model: int, kv_width: int | None = None, q_width: int | None = None) -> int:
    """The forward's matrix products (biases, scale and softmax not counted): 8·B·S·E² + 4·B·S²·E when
    G = H (4·B·S·E² + 4·B·S·E·G·D + 4·B·S²·E with G key-value heads)."""
    q = d_model if q_width is None else q_width
    return projection_flops(batch, seq_len, d_model, kv_width, q_width) + attention_flops(batch, seq_len, q)


def kv_cache_numbers(batch: int, seq_len: int, n_kv_heads: int, d_head: int) -> int:
    """The keys and values a decoder keeps of S tokens: K and V, B·S·G·D each: 2·B·S·G·D."""
    return 2 * batch * seq_len * n_kv_heads * d_head


def flash_attention_numbers(batch: int, n_heads: int, seq_len: int, d_head: int) -> int:
    """FlashAttention's output O (B·H·S·D) and its two statistics per query row, m and ℓ (2·B·H·S)."""
    return batch * n_heads * seq_len * d_head + 2 * batch * n_heads * seq_len


@dataclass(frozen=True)
class Quantity:
    """One number of a layer: its value, its formula in the symbols and the same with the sizes filled in."""

    value: int
    formula: str
    filled: str


def _fill(formula: str, s: Sizes) -> str:
    """The formula with every symbol replaced by its number: "B·H·S²·b" -> "1·64·100000²·2"."""
    numbers = {"E": s.d_model, "H": s.n_heads, "G": s.kv_heads, "D": s.d_head, "S": s.seq_len, "B": s.batch,
               "b": s.bytes_per_number}
    return re.sub(r"[EHGDSBb]", lambda m: str(numbers[m[0]]), formula)


def formulas(s: Sizes) -> dict[str, str]:
    """Each quantity's formula in the symbols, in its shortest true form: multi-head attention's (G = H,
    H·D = E) as the notes write it, grouped-query attention's with G, and H·D in place of E when a model's
    head width is not E / H."""
    if s.q_width != s.d_model:  # a model's own head width
        params = "2·E·H·D + 2·E·G·D" + (" + H·D + E + 2·G·D" if s.bias else "")
        cache = "(B·S·E + 2·B·S·H·D + 2·B·S·G·D + B·H·S²)·b"
        flop = "4·B·S·E·H·D + 4·B·S·E·G·D + 4·B·S²·H·D"
    elif s.kv_heads < s.n_heads:  # grouped-query attention
        params = "2·E² + 2·E·G·D" + (" + 2·E + 2·G·D" if s.bias else "")
        cache = "(3·B·S·E + 2·B·S·G·D + B·H·S²)·b"
        flop = "4·B·S·E² + 4·B·S·E·G·D + 4·B·S²·E"
    else:  # multi-head attention
        params = "4·E²" + (" + 4·E" if s.bias else "")
        cache = "(5·B·S·E + B·H·S²)·b"
        flop = "8·B·S·E² + 4·B·S²·E"
    return {
        "parameters": params,
        "parameter_bytes": f"({params})·b",
        "attention_matrix_bytes": "B·H·S²·b",
        "cache_bytes": cache,
        "flops": flop,
        "flash_attention_bytes": "(B·H·S·D + 2·B·H·S)·b",
        "kv_cache_bytes": "2·B·S·G·D·b",
    }


def layer_cost(s: Sizes) -> dict[str, Quantity]:
    """Every quantity of QUANTITIES for one layer of sizes `s`. The `filled` strings evaluate to `value`
    when read as arithmetic (· multiplies, ² and ^ are powers)."""
    e, h, g, d, n, b, w = s.d_model, s.n_heads, s.kv_heads, s.d_head, s.seq_len, s.batch, s.bytes_per_number
    params = parameters(e, s.bias, s.kv_width, s.q_width)
    values = {
        "parameters": params,
        "parameter_bytes": params * w,
        "attention_matrix_bytes": attention_matrix_numbers(b, h, n) * w,
        "cache_bytes": cache_numbers(b, h, n, e, s.kv_width, s.q_width) * w,
        "flops": flops(b, n, e, s.kv_width, s.q_width),
        "flash_attention_bytes": flash_attention_numbers(b, h, n, d) * w,
        "kv_cache_bytes": kv_cache_numbers(b, n, g, d) * w,
    }
    return {name: Quantity(values[name], formula, _fill(formula, s)) for name, formula in formulas(s).items()}


def curve_lengths(seq_len: int) -> list[int]:
    """The sequence lengths of the memory curve: 1, 2, 5, 10, 20, 50, … up to the first one at or past
    10·S (at most MAX_SEQ_LEN), with S itself among them."""
    top = min(10 * seq_len, MAX_SEQ_LEN)
    lengths: list[int] = []
    decade = 1
    while not lengths or lengths[-1] < top:
        for step in (1, 2, 5):
            if not lengths or lengths[-1] < top:
                lengths.append(min(step * decade, MAX_SEQ_LEN))
        decade *= 10
    return sorted({*lengths, seq_len})


@dataclass(frozen=True)
class Curve:
    """One layer's memory against S at the other sizes fixed: the standard attention matrix,
    FlashAttention's working set and the KV cache, in bytes. It ends before any value would pass MAX_EXACT."""

    seq_len: list[int]
    attention_matrix_bytes: list[int]
    flash_attention_bytes: list[int]
    kv_cache_bytes: list[int]


def memory_curve(s: Sizes) -> Curve:
    lengths: list[int] = []
    standard: list[int] = []
    flash: list[int] = []
    kv: list[int] = []
    w = s.bytes_per_number
    for n in curve_lengths(s.seq_len):
        row = (attention_matrix_numbers(s.batch, s.n_heads, n) * w,
               flash_attention_numbers(s.batch, s.n_heads, n, s.d_head) * w,
               kv_cache_numbers(s.batch, n, s.kv_heads, s.d_head) * w)
        if max(row) > MAX_EXACT:
            break
        lengths.append(n)
        for column, number in zip((standard, flash, kv), row, strict=True):
            column.append(number)
    return Curve(lengths, standard, flash, kv)


@dataclass(frozen=True)
class Cost:
    sizes: Sizes
    per_layer: dict[str, Quantity]
    total: dict[str, int]  # per layer times L
    curve: Curve


def check_sizes(s: Sizes) -> None:
    """The rules between the sizes (COST_RULES); each field's own range is the caller's to check."""
    if s.head_dim is None and s.d_model % s.n_heads:
        below = max(h for h in range(1, s.n_heads + 1) if s.d_model % h == 0)
        above = next((h for h in range(s.n_heads + 1, s.d_model + 1) if s.d_model % h == 0), None)
        advice = f"send {below}" + (f" or {above}" if above is not None else "")
        raise CostError("cost_heads_divide", "n_heads",
                        f"n_heads is {s.n_heads}, which does not divide d_model {s.d_model}; {advice}",
                        n_heads=s.n_heads, d_model=s.d_model)
    if s.kv_heads < 1 or s.n_heads % s.kv_heads:
        below = max(g for g in range(1, max(1, min(s.kv_heads, s.n_heads)) + 1) if s.n_heads % g == 0)
        above = next((g for g in range(s.kv_heads + 1, s.n_heads + 1) if s.n_heads % g == 0), None)
        advice = f"send {below}" + (f" or {above}" if above is not None else "")
        raise CostError("cost_kv_heads_divide", "n_kv_heads",
                        f"n_kv_heads is {s.kv_heads}, which does not divide n_heads {s.n_heads} (each key-value head "
                        f"serves n_heads / n_kv_heads query heads); {advice}",
                        n_kv_heads=s.kv_heads, n_heads=s.n_heads)
    if s.bytes_per_number not in BYTE_SIZES:
        raise CostError("cost_bytes", "bytes",
                        f"bytes is {s.bytes_per_number}; send 1 (int8), 2 (fp16, bf16), 4 (fp32) or 8 (fp64)",
                        bytes=s.bytes_per_number)


def cost(s: Sizes) -> Cost:
    """Every quantity per layer and for the whole model, and the memory curve; CostError when the sizes
    break a rule of COST_RULES, including an answer number over MAX_EXACT."""
    check_sizes(s)
    per_layer = layer_cost(s)
    total = {name: q.value * s.n_layers for name, q in per_layer.items()}
    for name in QUANTITIES:
        one, whole = per_layer[name].value, total[name]
        if whole > MAX_EXACT:
            where = f"{one} per layer" if one > MAX_EXACT else f"{whole} for the whole model"
            sizes = "seq_len, batch, n_heads" if name in ("attention_matrix_bytes", "flash_attention_bytes") \
                else "seq_len, batch, n_kv_heads" if name == "kv_cache_bytes" else "seq_len, batch, d_model"
            raise CostError("cost_not_exact", "seq_len",
                            f"{name} would be {where}, over 2^53 - 1 = {MAX_EXACT}, the largest integer a JSON "
                            f"client keeps exact; send a smaller {sizes} or n_layers",
                            quantity=name, value=float(one if one > MAX_EXACT else whole), max=MAX_EXACT)
    return Cost(s, per_layer, total, memory_curve(s))


# The sizes when a request names neither a model nor them: one layer of the Transformer base model
# (Vaswani et al. 2017: E = 512, H = 8) at 1024 tokens.
DEFAULT_D_MODEL, DEFAULT_HEADS, DEFAULT_SEQ_LEN = 512, 8, 1024


class Served(NamedTuple):
    """The sizes of a served model a cost request names: G = n_kv_heads (None: H) and D = head_dim
    (None: E / H) as its config sets them."""

    id: str
    d_model: int
    n_heads: int
    n_layers: int
    max_tokens: int
    n_kv_heads: int | None = None
    head_dim: int | None = None


def request_sizes(d_model: int | None, n_heads: int | None, n_layers: int | None, seq_len: int | None,
                  batch: int, bytes_per_number: int, bias: bool, model: Served | None = None,
                  n_kv_heads: int | None = None) -> Sizes:
    """The Sizes of a request: its own numbers (defaults above, one layer, G = H), or a served model's
    with seq_len defaulting to its max_tokens. With a model, d_model, n_heads, n_kv_heads and n_layers
    must be left out and seq_len stay within max_tokens."""
    if model is None:
        return Sizes(DEFAULT_D_MODEL if d_model is None else d_model, DEFAULT_HEADS if n_heads is None else n_heads,
                     DEFAULT_SEQ_LEN if seq_len is None else seq_len, batch, bytes_per_number, bias,
                     1 if n_layers is None else n_layers, n_kv_heads)
    for field, value in (("d_model", d_model), ("n_heads", n_heads), ("n_kv_heads", n_kv_heads),
                         ("n_layers", n_layers)):
        if value is not None:
            raise CostError("cost_model_sizes", field,
                            f"{field} is fixed by model {model.id!r}; leave {field} out, or leave model out "
                            "to give your own sizes", parameter=field, model=model.id)
    if seq_len is not None and seq_len > model.max_tokens:
        raise CostError("cost_model_seq_len", "seq_len",
                        f"seq_len is {seq_len}; model {model.id!r} takes at most {model.max_tokens} tokens, send at "
                        f"most {model.max_tokens} (or leave model out)", seq_len=seq_len,
                        max_tokens=model.max_tokens, model=model.id)
    kv = None if model.n_kv_heads in (None, model.n_heads) else model.n_kv_heads
    head_dim = None if model.head_dim is None or model.head_dim * model.n_heads == model.d_model else model.head_dim
    return Sizes(model.d_model, model.n_heads, model.max_tokens if seq_len is None else seq_len, batch,
                 bytes_per_number, bias, model.n_layers, kv, head_dim)
