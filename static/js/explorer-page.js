// The explorer page (/): every layer's and head's attention for a sentence,
// and one head large. All state lives in the URL:
//   /?text=…&pair=…&model=…&layer=…&head=…
// User actions push history entries; popstate re-renders from the URL.
// Only what is on screen is downloaded: the grid from max-pooled summaries (at most 64 x 64 a head),
// the selected head at full resolution, both in the compact u16 encoding.
import { getAttentionCompact, getModels, getSummaryCompact } from './api.js';
import { toRows } from './compact.js';
import { attentionHeatmapFigure } from './figures/heatmap.js';
import { fillIndices, fillModels } from './views/controls.js';
import { renderHeatmap } from './views/heatmap.js';
import { createOverview } from './views/overview.js';
import { setLoading, showStatus } from './views/status.js';
import { renderTokens } from './views/tokens.js';
import { indexParam } from './url.js';

const $ = (id) => document.getElementById(id);
const els = {
  form: $('run-form'),
  text: $('text-input'),
  pair: $('pair-input'),
  model: $('model-select'),
  status: $('status'),
  loading: $('loading'),
  intro: $('intro'),
  results: $('results'),
  tokens: $('tokens'),
  tokenCount: $('token-count'),
  layer: $('layer-select'),
  head: $('head-select'),
  heatmap: $('heatmap'),
  steps: {
    text: $('steps-text'),
    pair: $('steps-pair'),
    model: $('steps-model'),
    layer: $('steps-layer'),
    head: $('steps-head'),
    button: $('steps-button'),
  },
};

// ---- URL <-> state -------------------------------------------------------

/** @returns {{text: string|null, pair: string|null, model: string|null, layer: number, head: number}} */
function stateFromUrl() {
  const params = new URLSearchParams(window.location.search);
  return {
    text: params.get('text'), // null: nothing to show yet; '' or blank: the server says what to change
    pair: params.get('pair') || null,
    model: params.get('model') || null,
    layer: indexParam(params.get('layer')),
    head: indexParam(params.get('head')),
  };
}

function urlFromState(state) {
  const params = new URLSearchParams();
  if (state.text !== null) params.set('text', state.text);
  if (state.pair !== null) params.set('pair', state.pair);
  if (state.model !== null) params.set('model', state.model);
  if (state.text !== null) {
    params.set('layer', String(state.layer));
    params.set('head', String(state.head));
  }
  const query = params.toString();
  return query ? `/?${query}` : '/';
}

const currentUrl = () => window.location.pathname + window.location.search;

// ---- data: a sentence's overview (pooled maps) and single heads at full resolution ----

let cached = { key: null, result: null }; // the last good overview; head changes and errors keep it
let pending = { key: null, promise: null };
const heads = new Map(); // `${key}|${layer}|${head}` -> rows of the full map; the most recent HEADS_KEPT
const HEADS_KEPT = 24;

function requestKey(state) {
  return JSON.stringify([state.text, state.pair, state.model]);
}

const sentence = (state) => ({ text: state.text, text_pair: state.pair, model: state.model });

/** The overview of the state's sentence: tokens and every head's pooled map (shares a request in flight). */
function fetchOverview(state) {
  const key = requestKey(state);
  if (pending.key !== key) {
    const promise = getSummaryCompact(sentence(state)).then(({ header, maps }) => {
      const side = header.shape[2];
      const result = { ...header, attention: maps.map((row) => row.map((flat) => toRows(flat, side, side))) };
      cached = { key, result };
      return result;
    });
    const clear = () => {
      if (pending.promise === promise) pending = { key: null, promise: null };
    };
    promise.then(clear, clear);
    pending = { key, promise };
  }
  return pending.promise;
}

/** One head's full map as rows (query, key), from the page's own cache when it was seen before. */
async function fetchHead(state, layer, head) {
  const id = `${requestKey(state)}|${layer}|${head}`;
  if (!heads.has(id)) {
    const { header, maps } = await getAttentionCompact({ ...sentence(state), layers: [layer], heads: [head] });
    const n = header.shape[2];
    heads.set(id, toRows(maps[0][0], n, n));
    if (heads.size > HEADS_KEPT) heads.delete(heads.keys().next().value);
  }
  return heads.get(id);
}

// ---- rendering -----------------------------------------------------------

const overview = createOverview($('overview'), {
  onSelect: (layer, head) => selectHead(layer, head),
  colourRamp: $('colour-ramp'),
});

/** What the results area shows: {key, state}; head changes start from it. */
let shown = null;
let renderSeq = 0;

function writeForm(state) {
  els.text.value = state.text ?? '';
  els.pair.value = state.pair ?? '';
  if (state.model !== null && Array.from(els.model.options).some((o) => o.value === state.model)) {
    els.model.value = state.model;
  }
}

function summary(result) {
  const tokens = result.tokens.length;
  return `${tokens} tokens · ${result.layers.length} layers × ${result.heads.length} heads · model ${result.model}`;
}

function drawResult(result) {
  renderTokens(els.tokens, result.tokens);
  els.tokenCount.textContent = `(${result.tokens.length})`;
  overview.render(result);
  fillIndices(els.layer, result.layers);
  fillIndices(els.head, result.heads);
}

/** Point the "Step through this head" form at /steps for this sentence, layer and head. */
function linkSteps(state, layer, head) {
  const { steps } = els;
  steps.text.value = state.text;
  steps.pair.value = state.pair ?? '';
  steps.pair.disabled = state.pair === null; // a disabled input is not sent
  steps.model.value = state.model ?? '';
  steps.model.disabled = state.model === null;
  steps.layer.value = String(layer);
  steps.head.value = String(head);
  steps.button.title = `Every step of layer ${layer}, head ${head}, with the real numbers`;
}

function drawHead(result, layer, head, matrix) {
  const figure = attentionHeatmapFigure({ tokens: result.tokens, matrix, layer, head, size: els.heatmap.clientWidth });
  renderHeatmap(els.heatmap, figure);
}

function selectInGrid(layer, head) {
  overview.select(layer, head);
  els.layer.value = String(layer);
  els.head.value = String(head);
}

function showError(error) {
  setLoading({ indicator: els.loading, region: els.results }, false);
  showStatus(els.status, error.message || String(error), 'error'); // the last good result stays
}

/** Render the view for a state (from the URL). Fetches the overview only when the sentence changed. */
async function render(state) {
  const seq = ++renderSeq;
  writeForm(state);
  if (state.text === null) {
    setLoading({ indicator: els.loading, region: els.results }, false);
    els.results.hidden = true;
    els.intro.hidden = false;
    showStatus(els.status, '');
    document.title = 'attnscope · attention explorer';
    return;
  }

  const key = requestKey(state);
  let result;
  if (cached.key === key) {
    result = cached.result;
  } else {
    setLoading({ indicator: els.loading, region: els.results }, true);
    showStatus(els.status, '');
    try {
      result = await fetchOverview(state);
    } catch (error) {
      if (seq === renderSeq) showError(error);
      return;
    }
    if (seq !== renderSeq) return;
  }

  // An index the model does not have falls back to the first layer/head.
  const layer = result.layers.includes(state.layer) ? state.layer : result.layers[0];
  const head = result.heads.includes(state.head) ? state.head : result.heads[0];
  const fixed = { ...state, layer, head };
  if (urlFromState(fixed) !== currentUrl()) history.replaceState(null, '', urlFromState(fixed));

  els.intro.hidden = true;
  els.results.hidden = false; // before Plotly measures the container
  if (!shown || shown.key !== key) drawResult(result);
  shown = { key, state: fixed };
  selectInGrid(layer, head);
  linkSteps(fixed, layer, head);
  document.title = `attnscope · ${state.text.trim().slice(0, 60)}`;

  let matrix;
  try {
    matrix = await fetchHead(fixed, layer, head);
  } catch (error) {
    if (seq === renderSeq) showError(error);
    return;
  }
  if (seq !== renderSeq) return;
  setLoading({ indicator: els.loading, region: els.results }, false);
  drawHead(result, layer, head, matrix);
  showStatus(els.status, summary(result));
}

/** Push a new history entry (unless the URL is unchanged) and render it. */
function navigate(state) {
  const url = urlFromState(state);
  if (url !== currentUrl()) history.pushState(null, '', url);
  return render(state);
}

function selectHead(layer, head) {
  if (!shown) return;
  navigate({ ...shown.state, layer, head });
}

// ---- events --------------------------------------------------------------

els.form.addEventListener('submit', (event) => {
  event.preventDefault();
  const previous = stateFromUrl();
  navigate({
    text: els.text.value,
    pair: els.pair.value.trim() ? els.pair.value : null,
    model: els.model.value || null,
    layer: previous.layer,
    head: previous.head,
  });
});

els.model.addEventListener('change', () => {
  if (els.text.value.trim()) els.form.requestSubmit();
});

els.layer.addEventListener('change', () => selectHead(Number(els.layer.value), Number(els.head.value)));
els.head.addEventListener('change', () => selectHead(Number(els.layer.value), Number(els.head.value)));

window.addEventListener('popstate', () => render(stateFromUrl()));

// ---- start ---------------------------------------------------------------

const initial = stateFromUrl();
render(initial);
getModels().then(
  (models) => fillModels(els.model, models, stateFromUrl().model),
  (error) => showStatus(els.status, error.message || String(error), 'error'),
);
