// The explorer page (/): every layer's and head's attention for a sentence,
// and one head large. All state lives in the URL:
//   /?text=…&pair=…&model=…&layer=…&head=…
// User actions push history entries; popstate re-renders from the URL.
import { getAttention, getModels } from './api.js';
import { attentionHeatmapFigure } from './figures/heatmap.js';
import { fillIndices, fillModels } from './views/controls.js';
import { renderHeatmap } from './views/heatmap.js';
import { createOverview } from './views/overview.js';
import { setLoading, showStatus } from './views/status.js';
import { renderTokens } from './views/tokens.js';

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

/** A non-negative integer from the URL, or 0 (checked against the model later). */
function indexParam(value) {
  return value !== null && /^\d{1,6}$/.test(value) ? Number(value) : 0;
}

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

// ---- attention results: the last good response, and the request in flight ----

let cached = { key: null, result: null }; // changing the head reuses it; so does an error that follows it
let pending = { key: null, promise: null };

function requestKey(state) {
  return JSON.stringify([state.text, state.pair, state.model]);
}

/** Fetch the /attention response for the state's sentence (sharing a request already in flight). */
function fetchAttention(state) {
  const key = requestKey(state);
  if (pending.key !== key) {
    const promise = getAttention({ text: state.text, text_pair: state.pair, model: state.model }).then(
      (result) => {
        cached = { key, result };
        return result;
      },
    );
    const clear = () => {
      if (pending.promise === promise) pending = { key: null, promise: null };
    };
    promise.then(clear, clear);
    pending = { key, promise };
  }
  return pending.promise;
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

function drawHead(result, layer, head) {
  const row = result.layers.indexOf(layer);
  const col = result.heads.indexOf(head);
  overview.select(layer, head);
  els.layer.value = String(layer);
  els.head.value = String(head);
  const figure = attentionHeatmapFigure({
    tokens: result.tokens,
    matrix: result.attention[row][col],
    layer,
    head,
    size: els.heatmap.clientWidth,
  });
  renderHeatmap(els.heatmap, figure);
}

/** Render the view for a state (from the URL). Fetches only when the sentence changed. */
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
      result = await fetchAttention(state);
    } catch (error) {
      if (seq !== renderSeq) return;
      setLoading({ indicator: els.loading, region: els.results }, false);
      showStatus(els.status, error.message || String(error), 'error'); // the last good result stays
      return;
    }
    if (seq !== renderSeq) return;
    setLoading({ indicator: els.loading, region: els.results }, false);
  }

  // An index the model does not have falls back to the first layer/head.
  const layer = result.layers.includes(state.layer) ? state.layer : result.layers[0];
  const head = result.heads.includes(state.head) ? state.head : result.heads[0];
  const fixed = { ...state, layer, head };
  if (urlFromState(fixed) !== urlFromState(state)) history.replaceState(null, '', urlFromState(fixed));

  els.intro.hidden = true;
  els.results.hidden = false; // before Plotly measures the container
  if (!shown || shown.key !== key) drawResult(result);
  shown = { key, state: fixed };
  drawHead(result, layer, head);
  linkSteps(fixed, layer, head);
  showStatus(els.status, summary(result));
  document.title = `attnscope · ${state.text.trim().slice(0, 60)}`;
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
