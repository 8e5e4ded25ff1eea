"""The notebook widget (anywidget): attention maps drawn by the pages' own modules, two-way with the kernel.

Made by `attnscope.show` (attnscope/notebook.py, which shapes the inputs and reads the scripts). Synced traits:
  layer, head   the selected head, the model's indices (validated against the maps' layers and heads); a click
                on the grid sets them, and setting them in Python moves the view
  token         the selected query token (0 ... N-1) or None; a click on a token of the head view or on a row
                of the map sets it, and the grid marks its row and column
  tokens, layers, heads   what the maps' rows, grid rows and grid columns are (tokens as text, never HTML)
  _maps, _shape the maps (layers, heads, N, N) as uint16 bytes (docs/encoding.md), sent as a binary buffer
  _steps, _step_data   with a model: the selected head's scores, scale, mask and softmax (N, N) as float32
                bytes, traced again when the head changes
  _modules      the static/js modules the entry links in the browser (attnscope/notebook.py `modules`)
`save_html(path)` writes the same widget, its scripts and its data into one page that needs no network.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import anywidget
import numpy as np
import traitlets

from . import notebook
from .notebook import Shown

# The traits a saved page carries, and those of them that are bytes (base64 in the page).
_STATE = ("_modules", "_maps", "_shape", "tokens", "layers", "heads", "layer", "head", "token", "_steps",
          "_step_data")
_BUFFERS = ("_maps", "_step_data")

# A saved page may run its own inline script and the blob URLs it makes, and nothing else: no request leaves it.
_PAGE_CSP = ("default-src 'none'; script-src 'unsafe-inline' blob:; style-src 'unsafe-inline'; "
             "img-src data: blob:")


class AttentionWidget(anywidget.AnyWidget):
    """Every head's map, one head's map, the head view and (with a model) the steps; see the module docstring."""

    _esm = traitlets.Unicode().tag(sync=True)  # the entry, static/js/widget/index.js (read per widget: no stale copy)
    _css = traitlets.Unicode().tag(sync=True)
    _modules: traitlets.List[list[Any]] = traitlets.List().tag(sync=True)
    _maps = traitlets.Bytes().tag(sync=True)
    _shape = traitlets.List(traitlets.Int()).tag(sync=True)
    _steps = traitlets.Dict().tag(sync=True)
    _step_data = traitlets.Bytes().tag(sync=True)
    tokens = traitlets.List(traitlets.Dict()).tag(sync=True)
    layers = traitlets.List(traitlets.Int()).tag(sync=True)
    heads = traitlets.List(traitlets.Int()).tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)
    head = traitlets.Int(0).tag(sync=True)
    token = traitlets.Int(None, allow_none=True).tag(sync=True)

    def __init__(self, data: Shown, layer: int | None = None, head: int | None = None, lang: str = "") -> None:
        self._data = data
        super().__init__(
            _esm=notebook.entry_source(), _css=notebook.css_source(), _modules=notebook.modules(lang),
            _maps=notebook.compact(data.maps), _shape=list(data.maps.shape), tokens=data.tokens,
            layers=data.layers, heads=data.heads,
        )
        self.layer = data.layers[0] if layer is None else layer
        self.head = data.heads[0] if head is None else head
        self._trace()

    # ---- what is shown, for Python ----

    @property
    def maps(self) -> np.ndarray:
        """The maps shown, float32 (layers, heads, N, N) (before the uint16 rounding of what is sent)."""
        return self._data.maps

    @property
    def map(self) -> np.ndarray:
        """The selected head's (N, N) map (query rows, key columns)."""
        block: np.ndarray = self._data.maps[self.layers.index(self.layer), self.heads.index(self.head)]
        return block

    # ---- validation: the view and Python agree on what exists ----

    @traitlets.validate("layer")
    def _valid_layer(self, proposal: dict[str, Any]) -> int:
        value = int(proposal["value"])
        if value not in self.layers:
            raise traitlets.TraitError(f"layer {value} is not in these maps: pick one of {self.layers}")
        return value

    @traitlets.validate("head")
    def _valid_head(self, proposal: dict[str, Any]) -> int:
        value = int(proposal["value"])
        if value not in self.heads:
            raise traitlets.TraitError(f"head {value} is not in these maps: pick one of {self.heads}")
        return value

    @traitlets.validate("token")
    def _valid_token(self, proposal: dict[str, Any]) -> int | None:
        value = proposal["value"]
        if value is not None and not 0 <= int(value) < len(self.tokens):
            raise traitlets.TraitError(f"token {value} is not in these maps: pick 0 to {len(self.tokens) - 1} or None")
        return None if value is None else int(value)

    @traitlets.observe("layer", "head")
    def _selected(self, _change: dict[str, Any]) -> None:
        self._trace()

    def _trace(self) -> None:
        """The steps of the selected head, when there is a model and a text to trace."""
        data = getattr(self, "_data", None)
        if data is None or data.model is None or data.text is None:
            return
        meta, values = notebook.steps_of(data.model, data.text, data.pair, self.layer, self.head)
        with self.hold_sync():
            self._step_data = values
            self._steps = meta

    # ---- one page ----

    def save_html(self, path: str | Path) -> Path:
        """Write the widget, its scripts, styles and data into one HTML file that opens in a browser without a
        kernel or a network (its CSP lets no request out); clicks there change that page only. Returns the
        path."""
        state: dict[str, Any] = {}
        for name in _STATE:
            value = getattr(self, name)
            state[name] = base64.b64encode(value).decode("ascii") if name in _BUFFERS else value
        payload = {"state": state, "buffers": list(_BUFFERS), "entry": notebook.entry_source()}
        # "<" as \u003c: no "</script>" or "<!--" can end the JSON's element early
        data = json.dumps(payload, ensure_ascii=False).replace("<", "\\u003c")
        script = notebook.standalone_source()
        if "</script" in script.lower():
            raise RuntimeError("static/js/widget/standalone.js must not contain '</script': it is inlined")
        page = (
            "<!doctype html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{_PAGE_CSP}\">\n"
            "<title>attnscope</title>\n"
            f"<style>\n{notebook.css_source()}\n</style>\n</head>\n<body>\n"
            "<div id=\"attnscope-widget\"></div>\n"
            f"<script type=\"application/json\" id=\"attnscope-state\">{data}</script>\n"
            f"<script type=\"module\">\n{script}\n</script>\n</body>\n</html>\n"
        )
        out = Path(path).expanduser()
        out.write_text(page, encoding="utf-8")
        return out
