"""attnscope in a notebook: `show(...)` draws attention maps as a widget (JupyterLab 4, Notebook 7, VS Code, marimo).

    >>> import attnscope
    >>> w = attnscope.show("The cat sat on the mat.", model="minilm")   # text + a model (or its id)
    >>> w = attnscope.show(model.attention("The cat sat."))             # any attnscope result with maps
    >>> w = attnscope.show(outputs.attentions, tokens)                  # transformers' output_attentions
    >>> w.layer, w.head = 2, 5                                          # the view follows; a click sets them
    >>> w.save_html("attention.html")                                   # one file that opens offline

The widget (attnscope/widget.py, anywidget) draws the pages' own modules: the grid of every head
(static/js/views/overview.js), the head view (views/head-view*.js), the colours (figures/colormap.js) and the
words (i18n/en.js, zh.js). anywidget loads its entry (static/js/widget/index.js) as one module from a blob
URL, where relative imports cannot resolve, so this module reads the modules the widget needs from static/js
at run time and sends them with the widget, each with the modules it imports; the entry links them in the
browser. Nothing is copied and nothing is fetched from the network.

This module only shapes the inputs (numpy; torch when given tensors) and reads the scripts; anywidget is
imported when a widget is made (the optional extra `attnscope[notebook]`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .api import Model
    from .widget import AttentionWidget

STATIC = Path(__file__).resolve().parent.parent / "static"  # app/settings.py STATIC_DIR: shipped in the wheel
JS = STATIC / "js"
ENTRY = "widget/view.js"  # the module the entry (widget/index.js) imports; its imports are followed from here
CSS_FILES = (STATIC / "css" / "head-view.css", JS / "widget" / "widget.css")
LANGUAGES = ("", "en", "zh")  # "": the page's choice (its lang parameter, the stored choice, the browser's)
U16_SCALE = 65535  # docs/encoding.md: weight = value / 65535

# `import ... from './x.js'`, `export { a } from '../y.js'` and `import './z.js'`: the relative specifiers.
_IMPORT = re.compile(r"""(?:^|[\s;])(?:import|export)\s(?:[^'";]*?\sfrom\s*)?(['"])(\.{1,2}/[^'"]+)\1""", re.M)

# The dictionaries' module decides its language once and translates the page it is loaded in. In a notebook the
# page is JupyterLab's: the widget takes the language it is given and leaves the page's own elements alone.
_I18N = "i18n/index.js"
_I18N_PATCHES = (
    ("export const lang = chooseLanguage();", "export const lang = known({lang}) ? {lang} : chooseLanguage();"),
    ("\nstart();\n", "\n"),
)


@dataclass(frozen=True)
class Shown:
    """What a widget draws: `maps` float32 (layers, heads, N, N), `tokens` (N dicts: text, display, special,
    segment, unknown), `layers` and `heads` (the model's indices of maps' rows and columns), and for the step
    view the `model` and the `text` (and `pair`) it can trace, or None."""

    maps: np.ndarray
    tokens: list[dict[str, Any]]
    layers: list[int]
    heads: list[int]
    model: Model | None = None
    text: str | None = None
    pair: str | None = None


def _token(value: Any) -> dict[str, Any]:
    """A token as the pages' modules read it (figures/axes.js tokenLabel): from a Token, a dict or a string."""
    if isinstance(value, str):
        return {"text": value, "display": value, "special": False, "segment": 0, "unknown": False}
    get = value.get if isinstance(value, dict) else lambda name, default=None: getattr(value, name, default)
    text = get("text")
    if not isinstance(text, str):
        raise ValueError(f"a token must be a string or have a text: got {value!r}")
    display = get("display")
    return {"text": text, "display": display if isinstance(display, str) else text,
            "special": bool(get("special", False)), "segment": int(get("segment", 0) or 0),
            "unknown": bool(get("unknown", False))}


def _array(value: Any) -> np.ndarray:
    """A numpy array of a numpy array, a torch tensor (any device or dtype) or a nested sequence of them."""
    if hasattr(value, "detach"):  # torch.Tensor
        return np.asarray(value.detach().float().cpu().numpy(), dtype=np.float32)
    if isinstance(value, (tuple, list)) and value and not isinstance(value[0], (int, float)):
        return np.stack([_array(part) for part in value])
    return np.asarray(value, dtype=np.float32)


def as_maps(maps: Any) -> np.ndarray:
    """Attention maps of one input as float32 (layers, heads, N, N).

    Takes a (layers, heads, N, N) array or tensor; transformers' `outputs.attentions` (a tuple of one
    (1, heads, N, N) tensor per layer) or a list of such (a TransformerLens cache: [cache["pattern", l] for l
    in range(n_layers)]); (layers, 1, heads, N, N) likewise; a single layer's (heads, N, N). Weights must be
    finite and within [0, 1]; anything else raises ValueError naming what to change."""
    array = _array(maps)
    if array.ndim == 5 and array.shape[1] == 1:  # per layer (batch=1, heads, N, N)
        array = array[:, 0]
    if array.ndim == 3:  # one layer
        array = array[None]
    if array.ndim != 4 or array.shape[2] != array.shape[3]:
        raise ValueError(f"attention maps must be shaped (layers, heads, N, N) (or a tuple of (1, heads, N, N) per "
                         f"layer, as transformers' output_attentions) for one input; got shape {array.shape}: "
                         "select one input of a batch first, e.g. [a[0] for a in outputs.attentions]")
    if 0 in array.shape:
        raise ValueError(f"attention maps must have at least one layer, head and token; got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError("attention maps must be finite: pass the weights after the softmax, not the scores")
    low, high = float(array.min()), float(array.max())
    if low < -1e-4 or high > 1 + 1e-4:
        raise ValueError(f"attention weights must lie in [0, 1] (after the softmax); these span [{low:.4g}, "
                         f"{high:.4g}]: pass the weights, not the scores or logits")
    clipped: np.ndarray = np.clip(array, 0.0, 1.0)
    return clipped


def _result(source: Any) -> tuple[np.ndarray, list[Any], list[int] | None, list[int] | None] | None:
    """(maps, tokens, layers, heads) of an attnscope result: an Attention (`maps`, `tokens`), or a result that
    saves itself (attnscope/save.py: `_arrays()` holding "maps" or "pattern", `_meta()` holding "tokens")."""
    if hasattr(source, "maps") and hasattr(source, "tokens"):
        return (source.maps, list(source.tokens), getattr(source, "layers", None), getattr(source, "heads", None))
    if callable(getattr(source, "_arrays", None)) and callable(getattr(source, "_meta", None)):
        arrays, meta = source._arrays(), source._meta()
        for name in ("maps", "pattern", "attention"):
            if name in arrays and "tokens" in meta:
                return arrays[name], list(meta["tokens"]), meta.get("layers"), meta.get("heads")
    return None


def _indices(given: Sequence[int] | None, count: int, what: str) -> list[int]:
    if given is None:
        return list(range(count))
    out = [int(i) for i in given]
    if len(out) != count:
        raise ValueError(f"{len(out)} {what} named for maps with {count}: name one per map")
    return out


def shown(source: Any, tokens: Sequence[Any] | None = None, *, model: Model | str | None = None,
          pair: str | None = None) -> Shown:
    """What `show` draws, from any of its inputs (see `show`); ValueError for anything else."""
    from .api import Model, load

    if isinstance(source, str):
        if model is None:
            raise ValueError("show(text) needs a model: show(text, model=attnscope.load('minilm')) or "
                             "show(text, model='minilm')")
        loaded = load(model) if isinstance(model, str) else model
        if not isinstance(loaded, Model):
            raise ValueError(f"model must be an attnscope.Model or a model id; got {type(model).__name__}")
        answer = loaded.attention(source, pair)
        return Shown(as_maps(answer.maps), [_token(t) for t in answer.tokens], list(answer.layers),
                     list(answer.heads), loaded, source, pair)
    if isinstance(model, str):
        model = load(model)
    found = _result(source)
    if found is not None:
        maps, found_tokens, layers, heads = found
        tokens = found_tokens if tokens is None else tokens
        text = getattr(source, "text", None)
        return _checked(maps, tokens, layers, heads, model, text if isinstance(text, str) else None,
                        getattr(source, "pair", None))
    if source is None or isinstance(source, (bytes, dict, int, float)):
        raise ValueError(f"show() takes a text and a model, an attnscope result or (maps, tokens); got "
                         f"{type(source).__name__}")
    return _checked(source, tokens, None, None, None, None, None)


def _checked(maps: Any, tokens: Sequence[Any] | None, layers: Sequence[int] | None, heads: Sequence[int] | None,
             model: Model | None, text: str | None, pair: str | None) -> Shown:
    array = as_maps(maps)
    n = array.shape[2]
    if tokens is None:
        tokens = [str(i) for i in range(n)]
    if isinstance(tokens, str) or len(tokens) != n:
        count = "a string" if isinstance(tokens, str) else f"{len(tokens)} tokens"
        raise ValueError(f"the maps are {n} x {n} but {count} given: pass one token per row, e.g. "
                         "tokenizer.convert_ids_to_tokens(inputs['input_ids'][0])")
    return Shown(array, [_token(t) for t in tokens], _indices(layers, array.shape[0], "layers"),
                 _indices(heads, array.shape[1], "heads"), model if text is not None else None, text, pair)


def compact(maps: np.ndarray) -> bytes:
    """(layers, heads, N, N) weights in [0, 1] as little-endian uint16 (docs/encoding.md: weight = value / 65535)."""
    values: bytes = np.rint(np.clip(maps, 0.0, 1.0) * U16_SCALE).astype("<u2").tobytes()
    return values


def steps_of(model: Model, text: str, pair: str | None, layer: int, head: int) -> tuple[dict[str, Any], bytes]:
    """The steps that make one head's map ({names, shapes, layer, head} and their float32 bytes, in that order):
    scores, scale, mask (-inf where a key is hidden) and softmax, each (N, N), from `Model.trace`."""
    trace = model.trace(text, layer, head, pair)
    names = [name for name in ("scores", "scale", "mask", "softmax") if name in trace]
    arrays = [np.ascontiguousarray(trace[name], dtype="<f4") for name in names]
    meta = {"names": names, "shapes": {n: list(a.shape) for n, a in zip(names, arrays, strict=True)},
            "layer": layer, "head": head}
    return meta, b"".join(a.tobytes() for a in arrays)


@lru_cache(maxsize=4)
def modules(lang: str = "") -> list[list[Any]]:
    """The widget's modules, each after those it imports: [path under static/js, source, [[specifier, path], ...]].
    `lang` "en" or "zh" sets the words' language; "" leaves it to the page (lang parameter, stored, browser)."""
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {LANGUAGES}; got {lang!r}")
    ordered: list[list[Any]] = []
    done: set[str] = set()
    visiting: set[str] = set()

    def visit(path: str) -> None:
        if path in done:
            return
        if path in visiting:
            raise RuntimeError(f"static/js/{path} imports itself through a cycle: the widget cannot link it")
        visiting.add(path)
        file = JS / path
        if not file.is_file():
            raise RuntimeError(f"static/js/{path} is missing: reinstall attnscope (the wheel ships static/js)")
        source = file.read_text(encoding="utf-8")
        imports = []
        for match in _IMPORT.finditer(source):
            specifier = match.group(2)
            target = (file.parent / specifier).resolve().relative_to(JS.resolve()).as_posix()
            visit(target)
            imports.append([specifier, target])
        if path == _I18N:
            source = _patched_i18n(source, lang)
        visiting.discard(path)
        done.add(path)
        ordered.append([path, source, imports])

    visit(ENTRY)
    return ordered


def _patched_i18n(source: str, lang: str) -> str:
    for old, new in _I18N_PATCHES:
        if source.count(old) != 1:
            raise RuntimeError(f"static/js/{_I18N} no longer holds {old.strip()!r} once: update _I18N_PATCHES "
                               "in attnscope/notebook.py to how it now chooses its language and starts")
        source = source.replace(old, new.replace("{lang}", json.dumps(lang)))
    return source


def entry_source() -> str:
    """The widget's entry module (anywidget's _esm)."""
    return (JS / "widget" / "index.js").read_text(encoding="utf-8")


def css_source() -> str:
    """The widget's styles: the head view's and the grid's (static/css/head-view.css) and its own."""
    return "\n".join(path.read_text(encoding="utf-8") for path in CSS_FILES)


def standalone_source() -> str:
    """The script of a saved page (widget.save_html): a stand-in for anywidget's model, then the entry."""
    return (JS / "widget" / "standalone.js").read_text(encoding="utf-8")


def show(source: Any, tokens: Sequence[Any] | None = None, *, model: Model | str | None = None,
         pair: str | None = None, layer: int | None = None, head: int | None = None, lang: str = "",
         ) -> AttentionWidget:
    """A widget of attention maps: the grid of every head, the selected head's map, the head view of its layer
    and, with a model, the steps that make that head's map.

    `source` is one of: a text with `model` (an attnscope.Model or a model id: "minilm", a checkpoint
    directory, a cached repo id) and optionally `pair`; an attnscope result holding maps (`Model.attention`'s
    Attention, or one that saves maps and tokens); attention maps from anywhere with their `tokens` (one per
    row: strings or Tokens), shaped (layers, heads, N, N) — a numpy array or torch tensor — or a tuple of one
    (1, heads, N, N) per layer (transformers' `outputs.attentions`). An Attention with `model` given also
    draws the steps. `layer`, `head` (the model's indices) are the head selected first; `lang` "en" or "zh"
    (default: the notebook page's). The widget's `layer`, `head` and `token` traits follow clicks and can
    be set from Python. Raises ValueError for anything else, naming what to change; ImportError without
    anywidget (pip install 'attnscope[notebook]')."""
    from .widget import AttentionWidget

    return AttentionWidget(shown(source, tokens, model=model, pair=pair), layer=layer, head=head, lang=lang)
