"""What one multi-head attention layer costs: parameters, memory and floating-point operations.

Pure integer arithmetic (no torch): every number is an exact Python int. The symbols are those of
the notes: E = d_model, H = n_heads, D = E / H (per-head width), S = sequence length (queries =
keys, self-attention), B = batch, b = bytes per number, L = layers.

Per layer:

* parameters: W_q, W_k, W_v, W_o are E x E, plus four bias vectors of E: 4·E² + 4·E (4·E² without).
* attention matrix: the weights A, one S x S matrix per head and sequence: B·H·S² numbers.
* backward cache: what the backward pass keeps from the forward: the input x, Q, K, V and the
  context ctx = A·V (each B·S·E) and A (B·H·S²): 5·B·S·E + B·H·S² numbers.
* FLOPs of the forward, counting a multiply-add as 2 FLOPs and leaving out biases, the scale and
  the softmax: the four projections 4 · 2·B·S·E² = 8·B·S·E², the scores Q·Kᵀ and the weighted sum
  A·V each 2·B·H·S²·D = 2·B·S²·E, together 4·B·S²·E.
* FlashAttention's working set (Dao et al. 2022): it computes attention tile by tile in on-chip
  memory and never stores the S x S matrix; what it keeps in memory beyond its inputs Q, K, V is
  the output O (B·H·S·D numbers) and two softmax statistics per query row, the running maximum
  m and the running sum ℓ (2·B·H·S): B·H·S·D + 2·B·H·S numbers, linear in S. Its tiles take a
  fixed amount of on-chip memory, independent of S, and are not counted.

Whole model: each per-layer number times L (every layer's matrix and cache kept, as in training;
inference without gradients holds one layer's attention matrix at a time).
"""

from __future__ import annotations

from dataclasses import dataclass

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
              "flash_attention_bytes")

# Rules between a cost request's numbers: type -> (ctx keys, what breaks it).
COST_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "cost_heads_divide": (("n_heads", "d_model"), "n_heads does not divide d_model"),
    "cost_bytes": (("bytes",), "bytes per number other than 1, 2, 4 and 8"),
    "cost_not_exact": (("quantity", "value", "max"),
                       "a number of the answer (per layer or for the whole model) over max = 2^53 - 1, the "
                       "largest integer a JSON client reading float64 keeps exact"),
    "cost_model_sizes": (("parameter", "model"), "d_model, n_heads or n_layers sent together with model (the model "
                         "fixes them)"),
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

    @property
    def d_head(self) -> int:
        """D = E / H, the width of each head's q, k and v."""
        return self.d_model // self.n_heads


def parameters(d_model: int, bias: bool = True) -> int:
    """W_q, W_k, W_v, W_o (E x E each) and, with bias, their four bias vectors: 4·E² + 4·E."""
    return 4 * d_model**2 + (4 * d_model if bias else 0)


def attention_matrix_numbers(batch: int, n_heads: int, seq_len: int) -> int:
    """The attention weights A: one S x S matrix per sequence and head, B·H·S²."""
    return batch * n_heads * seq_len**2


def cache_numbers(batch: int, n_heads: int, seq_len: int, d_model: int) -> int:
    """x, Q, K, V and ctx (B·S·E each) and A (B·H·S²), the forward's arrays the backward reads."""
    return 5 * batch * seq_len * d_model + attention_matrix_numbers(batch, n_heads, seq_len)


def projection_flops(batch: int, seq_len: int, d_model: int) -> int:
    """Q, K, V and the output projection: four (B·S x E) @ (E x E) products, 2 FLOPs a multiply-add."""
    return 8 * batch * seq_len * d_model**2


def attention_flops(batch: int, seq_len: int, d_model: int) -> int:
    """Q·Kᵀ and A·V of every head: 2 · (2·B·H·S²·D) = 4·B·S²·E, since H·D = E."""
    return 4 * batch * seq_len**2 * d_model


def flops(batch: int, seq_len: int, d_model: int) -> int:
    """The forward's matrix products (biases, scale and softmax not counted): 8·B·S·E² + 4·B·S²·E."""
    return projection_flops(batch, seq_len, d_model) + attention_flops(batch, seq_len, d_model)


def flash_attention_numbers(batch: int, n_heads: int, seq_len: int, d_head: int) -> int:
    """FlashAttention's output O (B·H·S·D) and its two statistics per query row, m and ℓ (2·B·H·S)."""
    return batch * n_heads * seq_len * d_head + 2 * batch * n_heads * seq_len


@dataclass(frozen=True)
class Quantity:
    """One number of a layer: its value, its formula in the symbols and the same with the sizes filled in."""

    value: int
    formula: str
    filled: str


def layer_cost(s: Sizes) -> dict[str, Quantity]:
    """Every quantity of QUANTITIES for one layer of sizes `s`. The `filled` strings evaluate to `value`
    when read as arithmetic (· multiplies, ² and ^ are powers)."""
    e, h, d, n, b, w = s.d_model, s.n_heads, s.d_head, s.seq_len, s.batch, s.bytes_per_number
    params = parameters(e, s.bias)
    if s.bias:
        p_formula, p_filled = "4·E² + 4·E", f"4·{e}² + 4·{e}"
    else:
        p_formula, p_filled = "4·E²", f"4·{e}²"
    return {
        "parameters": Quantity(params, p_formula, p_filled),
        "parameter_bytes": Quantity(params * w, f"({p_formula})·b", f"({p_filled})·{w}"),
        "attention_matrix_bytes": Quantity(attention_matrix_numbers(b, h, n) * w, "B·H·S²·b", f"{b}·{h}·{n}²·{w}"),
        "cache_bytes": Quantity(cache_numbers(b, h, n, e) * w, "(5·B·S·E + B·H·S²)·b",
                                f"(5·{b}·{n}·{e} + {b}·{h}·{n}²)·{w}"),
        "flops": Quantity(flops(b, n, e), "8·B·S·E² + 4·B·S²·E", f"8·{b}·{n}·{e}² + 4·{b}·{n}²·{e}"),
        "flash_attention_bytes": Quantity(flash_attention_numbers(b, h, n, d) * w, "(B·H·S·D + 2·B·H·S)·b",
                                          f"({b}·{h}·{n}·{d} + 2·{b}·{h}·{n})·{w}"),
    }


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
    """One layer's memory against S at the other sizes fixed: the standard attention matrix and
    FlashAttention's working set, in bytes. It ends before any value would pass MAX_EXACT."""

    seq_len: list[int]
    attention_matrix_bytes: list[int]
    flash_attention_bytes: list[int]


def memory_curve(s: Sizes) -> Curve:
    lengths, standard, flash = [], [], []
    for n in curve_lengths(s.seq_len):
        matrix = attention_matrix_numbers(s.batch, s.n_heads, n) * s.bytes_per_number
        if matrix > MAX_EXACT:
            break
        lengths.append(n)
        standard.append(matrix)
        flash.append(flash_attention_numbers(s.batch, s.n_heads, n, s.d_head) * s.bytes_per_number)
    return Curve(lengths, standard, flash)


@dataclass(frozen=True)
class Cost:
    sizes: Sizes
    per_layer: dict[str, Quantity]
    total: dict[str, int]  # per layer times L
    curve: Curve


def check_sizes(s: Sizes) -> None:
    """The rules between the sizes (COST_RULES); each field's own range is the caller's to check."""
    if s.d_model % s.n_heads:
        below = max(h for h in range(1, s.n_heads + 1) if s.d_model % h == 0)
        above = next((h for h in range(s.n_heads + 1, s.d_model + 1) if s.d_model % h == 0), None)
        advice = f"send {below}" + (f" or {above}" if above is not None else "")
        raise CostError("cost_heads_divide", "n_heads",
                        f"n_heads is {s.n_heads}, which does not divide d_model {s.d_model}; {advice}",
                        n_heads=s.n_heads, d_model=s.d_model)
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
                else "seq_len, batch, d_model"
            raise CostError("cost_not_exact", "seq_len",
                            f"{name} would be {where}, over 2^53 - 1 = {MAX_EXACT}, the largest integer a JSON "
                            f"client keeps exact; send a smaller {sizes} or n_layers",
                            quantity=name, value=float(one if one > MAX_EXACT else whole), max=MAX_EXACT)
    return Cost(s, per_layer, total, memory_curve(s))


# The sizes when a request names neither a model nor them: one layer of the Transformer base model
# (Vaswani et al. 2017: E = 512, H = 8) at 1024 tokens.
DEFAULT_D_MODEL, DEFAULT_HEADS, DEFAULT_SEQ_LEN = 512, 8, 1024


def request_sizes(d_model: int | None, n_heads: int | None, n_layers: int | None, seq_len: int | None,
                  batch: int, bytes_per_number: int, bias: bool, model: tuple[str, int, int, int, int] | None = None,
                  ) -> Sizes:
    """The Sizes of a request: its own numbers (defaults above, one layer), or a served model's
    (id, d_model, n_heads, n_layers, max_tokens) with seq_len defaulting to its max_tokens.
    With a model, d_model, n_heads and n_layers must be left out and seq_len stay within max_tokens."""
    if model is None:
        return Sizes(DEFAULT_D_MODEL if d_model is None else d_model, DEFAULT_HEADS if n_heads is None else n_heads,
                     DEFAULT_SEQ_LEN if seq_len is None else seq_len, batch, bytes_per_number, bias,
                     1 if n_layers is None else n_layers)
    model_id, e, h, layers, max_tokens = model
    for field, value in (("d_model", d_model), ("n_heads", n_heads), ("n_layers", n_layers)):
        if value is not None:
            raise CostError("cost_model_sizes", field,
                            f"{field} is fixed by model {model_id!r}; leave {field} out, or leave model out "
                            "to give your own sizes", parameter=field, model=model_id)
    if seq_len is not None and seq_len > max_tokens:
        raise CostError("cost_model_seq_len", "seq_len",
                        f"seq_len is {seq_len}; model {model_id!r} takes at most {max_tokens} tokens, send at most "
                        f"{max_tokens} (or leave model out)", seq_len=seq_len, max_tokens=max_tokens, model=model_id)
    return Sizes(e, h, max_tokens if seq_len is None else seq_len, batch, bytes_per_number, bias, layers)
