"""attnscope's Python API: the attention maps and the attention steps of a model, as numpy arrays.

    >>> import attnscope
    >>> model = attnscope.load("minilm")              # or a checkpoint directory: attnscope.load("~/models/gpt2"),
    ...                                               # or a cached repo id: attnscope.load("openai-community/gpt2")
    >>> model.info.layers, model.info.heads, model.info.max_tokens
    (6, 12, 512)
    >>> a = model.attention("The cat sat on the mat.")
    >>> a.maps.shape                                  # (layers, heads, tokens, tokens), float32
    (6, 12, 9, 9)
    >>> [t.display for t in a.tokens][:3]
    ['[CLS]', 'the', 'cat']
    >>> steps = model.trace("The cat sat on the mat.", layer=2, head=5)
    >>> steps["softmax"].shape, steps["split.q"].shape
    ((9, 9), (9, 32))

`load(name_or_path="minilm", device="cpu", dtype="float32") -> Model`
    A known model id ("minilm", packaged), a local Hugging Face checkpoint directory (BERT, RoBERTa,
    DistilBERT, ELECTRA, GPT-2, Llama, Mistral, Qwen2, Qwen3, Gemma 2) or a repo id ("ORG/NAME",
    "ORG/NAME@REVISION") already in the local Hugging Face cache (HF_HUB_CACHE, HF_HOME; a directory of that
    name wins); nothing is downloaded. `device` is "cpu" or "cuda" (only when torch.cuda.is_available());
    `dtype` "float32" or "bfloat16" (where the CPU has bfloat16 arithmetic; answers stay float32). Raises
    UnknownModel (LookupError), CheckpointError, ValueError.

`Model.info -> ModelInfo`
    id, name, architecture, layers, heads, max_tokens, causal, pairs.

`Model.attention(text, pair=None, layers=None, heads=None, edit=None) -> Attention`
    One input's maps: `maps` float32 (len(layers), len(heads), T, T) (rows sum to 1; query rows, key
    columns), `tokens` (text, display, start, end, special, segment, unknown), `ids`, `layers`, `heads`,
    and `map(layer, head)` for one (T, T) map by the model's indices; `edit` a what-if edit (the REST edit's
    fields as a dict). Inputs over max_tokens raise TooManyTokens (never truncated); bad indices IndexOutOfRange;
    a pair for a model without pairs InputError; what the REST refuses FieldError, in its words.

`Model.attention_batch(texts, batch_size=8, layers=None, heads=None, progress=None) -> list[Attention]`
    Many inputs (texts or (text, pair) tuples), sorted by length and run `batch_size` at a time, padded with
    a key-padding mask; each answer equals `attention` of that input alone up to float32 rounding.
    `iter_attention_batch` yields the answers batch by batch instead.

`Model.trace(text, layer, head=None, pair=None) -> dict[str, numpy.ndarray]`
    Every step of one layer's attention (input, project.q/k/v, split.q/k/v, scores, scale, mask, softmax,
    weighted_sum, concat, output), `head` given: that head's per-head steps without the head axis.

`Model.generate(text, max_new_tokens=20, *, temperature=0.0, top_k=0, top_p=1.0, seed=0, attention=True)`
    A decoder's continuation with the KV cache, one NewToken at a time (index, id, text, display,
    probability, top, attention (layers, heads, index + 1), cache_bytes): greedy by default, equal to
    transformers' generate without sampling; sampled with temperature, top-k, top-p and a seed. Only for a
    model with an LM head (GPT-2, Llama, Mistral, Qwen, Gemma 2): TypeError otherwise.

`Model.logit_attribution(text, answer, position=None) -> LogitAttribution`
    Direct logit attribution of a model with an LM head at `position` (default: the last token): `answer` [id]
    (that token's logit) or [good, bad] (the logit difference); `heads` float64 (layers, heads), `mlp` (layers,),
    `attention_bias` (layers,) or None, `embeddings`, `norm_bias`, each through the final norm with its scale
    frozen at the whole residual stream's; `total` (their sum) equals `logit` (before Gemma 2's soft-cap;
    `capped` after it). Raises InputError (`type` as the REST answer's): NoLMHead for an encoder, AnswerError,
    PositionOutOfRange.

`Model.metrics(text)`, `detect()`, `mean(text)`, `rollout(text, residual=0.5)`, `contributions(text, layers, heads)`,
`attention(text, edit={...})`, `edit_effect(text, edit)`, `lens(text, position, top_k)`, `patch(clean, corrupted,
target, answer, metric)`, `attribute(text, target, method, steps, baseline)`, `attribute_continuation(text, tokens,
steps, baseline)`
    The server's analyses, each checked as its REST route checks its body (the same rules and words: FieldError,
    an InputError) and computed by the same model/analysis function; each answers a frozen dataclass of numpy
    arrays (attnscope/results.py, results_causal.py) with `save(path)`. docs/python.md documents them all.

`Model.run(text, hooks=None, pair=None, keep="all") -> Activations`
    Every named activation of one forward (resid_pre, q, k, v, rot_q, rot_k, attn_scores, pattern, z, attn_out,
    resid_mid, mlp_out, resid_post per layer, and final) as float32 arrays, and hooks fn(tensor, layer) that read
    or replace them as the network runs (docs/activations.md).

`save(results, path)`: one result or a list of them as ".npz" ("<i>/<name>" arrays and a "meta.json" entry) or
    ".parquet" (one row per result), read back with plain numpy or pyarrow (attnscope/save.py).

`attnscope.corpus` (import it: `from attnscope.corpus import Corpus, index`): a head across a whole corpus.
    `index(FILE, model="minilm", out=DIR)` writes every text's head metrics and strongest pairs as Parquet
    shards (resuming an interrupted run); `Corpus(DIR).top(layer, head, by="to_previous", k=20)`, `.pattern(...)`
    and `.heads(x, y)` query them with DuckDB.
"""

from model.checkpoints.tokenizer import Token, TooManyTokens
from model.errors import CheckpointError, IndexOutOfRange, InputError, UnknownModel

from .activations import Activations
from .api import Attention, ItemError, LogitAttribution, Model, ModelInfo, NewToken, load
from .checks import FieldError, FieldTypeError
from .results import Aggregate, Contributions, Detectors, HeadMetrics
from .results_causal import Attribution, ContinuationAttribution, EditEffect, Lens, Patching
from .save import save

__all__ = [
    "Activations", "Aggregate", "Attention", "Attribution", "CheckpointError", "ContinuationAttribution",
    "Contributions", "Detectors", "EditEffect", "FieldError", "FieldTypeError", "HeadMetrics", "IndexOutOfRange",
    "InputError", "ItemError", "Lens", "load", "LogitAttribution", "Model", "ModelInfo", "NewToken", "Patching",
    "save", "Token", "TooManyTokens", "UnknownModel",
]

# A notebook widget of attention maps (attnscope/notebook.py; anywidget is imported when one is made).
from .notebook import show  # noqa: E402

__all__ += ["show"]
