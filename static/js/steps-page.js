// The walkthrough page (/steps): every step of multi-head attention for one
// layer, head and query token of a real model on the user's sentence. The state
// lives in the URL:
//   /steps?text=…&pair=…&model=…&layer=…&head=…&query=…&step=…
// Choices of sentence, layer, head or query push history entries (Back works);
// the animation's step only replaces the current entry.
import { getModels, getTrace } from './api.js';
import { fromTrace, STEPS } from './figures/steps.js';
import { fillIndices, fillModels } from './views/controls.js';
import { setLoading, showStatus } from './views/status.js';
import { createTokenPicker } from './views/token-picker.js';
import { createWalkthrough } from './views/walkthrough.js';
import { indexParam } from './url.js';

const LANG = document.documentElement.lang === 'zh' ? 'zh' : 'en'; // a language switch changes only this

const $ = (id) => document.getElementById(id);
const els = {
  form: $('run-form'),
  text: $('text-input'),
  pair: $('pair-input'),
  model: $('model-select'),
  layer: $('layer-select'),
  head: $('head-select'),
  query: $('query-select'),
  tokens: $('tokens'),
  explorerLink: $('explorer-link'),
  status: $('status'),
  loading: $('loading'),
  intro: $('intro'),
  results: $('results'),
};

// ---- URL <-> state -------------------------------------------------------

function stateFromUrl() {
  const params = new URLSearchParams(window.location.search);
  const step = params.get('step');
  return {
    text: params.get('text'),
    pair: params.get('pair') || null,
    model: params.get('model') || null,
    layer: indexParam(params.get('layer')),
    head: indexParam(params.get('head')),
    query: indexParam(params.get('query')),
    step: STEPS.includes(step) ? step : null,
  };
}

function urlFromState(state) {
  const params = new URLSearchParams();
  if (state.text === null) return '/steps';
  params.set('text', state.text);
  if (state.pair !== null) params.set('pair', state.pair);
  if (state.model !== null) params.set('model', state.model);
  params.set('layer', String(state.layer));
  params.set('head', String(state.head));
  params.set('query', String(state.query));
  if (state.step) params.set('step', state.step);
  return `/steps?${params}`;
}

function explorerUrl(state) {
  const params = new URLSearchParams({ text: state.text });
  if (state.pair !== null) params.set('pair', state.pair);
  if (state.model !== null) params.set('model', state.model);
  params.set('layer', String(state.layer));
  params.set('head', String(state.head));
  return `/?${params}`;
}

const currentUrl = () => window.location.pathname + window.location.search;

// ---- traces: a few recent ones, and the request in flight -------------------

const CACHE_SIZE = 8;
const cache = new Map();
const pending = new Map();

const traceKey = (state) => JSON.stringify([state.text, state.pair, state.model, state.layer, state.head]);

function fetchTrace(state) {
  const key = traceKey(state);
  if (cache.has(key)) return Promise.resolve(cache.get(key));
  if (!pending.has(key)) {
    const promise = getTrace({ text: state.text, text_pair: state.pair, model: state.model, layer: state.layer, head: state.head })
      .then((trace) => {
        cache.set(key, trace);
        if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value);
        return trace;
      })
      .finally(() => pending.delete(key));
    pending.set(key, promise);
  }
  return pending.get(key);
}

// ---- the walkthrough ----------------------------------------------------------

/** What is on screen: {state, data}; every user choice starts from it. */
let shown = null;

const { stepper, show } = createWalkthrough({
  lang: LANG,
  onStep: (step) => {
    if (!shown) return;
    const url = urlFromState({ ...shown.state, step });
    if (url !== currentUrl()) history.replaceState(null, '', url);
  },
});

const tokenPicker = createTokenPicker(els.tokens, { onSelect: (query) => choose({ query }) });

// ---- rendering -----------------------------------------------------------

let renderSeq = 0;
const modelsPromise = getModels();

function writeForm(state) {
  els.text.value = state.text ?? '';
  els.pair.value = state.pair ?? '';
  if (state.model !== null && Array.from(els.model.options).some((o) => o.value === state.model)) {
    els.model.value = state.model;
  }
}

const range = (n) => Array.from({ length: n }, (_, i) => i);

function fillQueries(tokens, query) {
  const options = tokens.map((token, index) => {
    const element = document.createElement('option');
    element.value = String(index);
    element.textContent = `${index} · ${token.text}`;
    return element;
  });
  els.query.replaceChildren(...options);
  els.query.value = String(query);
}

function summary(trace, state) {
  return `${trace.tokens.length} tokens · layer ${trace.layer}, head ${state.head} of ${trace.n_heads} · d_model ${trace.d_model}, d_head ${trace.d_head} · model ${trace.model}`;
}

/** Render the page for a state (from the URL). Fetches only when sentence, layer or head changed. */
async function render(state) {
  const seq = ++renderSeq;
  writeForm(state);
  if (state.text === null) {
    els.results.hidden = true;
    els.intro.hidden = false;
    els.explorerLink.hidden = true;
    showStatus(els.status, '');
    return;
  }

  let models;
  try {
    models = await modelsPromise;
  } catch (error) {
    showStatus(els.status, error.message || String(error), 'error');
    return;
  }
  if (seq !== renderSeq) return;
  const model = models.find((m) => m.id === state.model) || models.find((m) => m.default) || models[0];
  fillModels(els.model, models, state.model);
  // An index the model does not have falls back to 0.
  const layer = state.layer < model.n_layers ? state.layer : 0;
  const head = state.head < model.n_heads ? state.head : 0;
  fillIndices(els.layer, range(model.n_layers));
  fillIndices(els.head, range(model.n_heads));
  els.layer.value = String(layer);
  els.head.value = String(head);

  let trace;
  const wanted = { ...state, layer, head };
  setLoading({ indicator: els.loading, region: els.results }, true);
  showStatus(els.status, '');
  try {
    trace = await fetchTrace(wanted);
  } catch (error) {
    if (seq !== renderSeq) return;
    setLoading({ indicator: els.loading, region: els.results }, false);
    showStatus(els.status, error.message || String(error), 'error'); // the last good result stays
    return;
  }
  if (seq !== renderSeq) return;
  setLoading({ indicator: els.loading, region: els.results }, false);

  const query = state.query < trace.tokens.length ? state.query : 0;
  const step = state.step || stepper.state.step;
  const fixed = { ...wanted, query, step };
  if (urlFromState(fixed) !== currentUrl()) history.replaceState(null, '', urlFromState(fixed));

  const data = fromTrace(trace);
  shown = { state: fixed, data };
  els.intro.hidden = true;
  els.results.hidden = false; // before Plotly measures the containers
  tokenPicker.render(trace.tokens, query);
  fillQueries(trace.tokens, query);
  els.explorerLink.href = explorerUrl(fixed);
  els.explorerLink.hidden = false;
  showStatus(els.status, summary(trace, fixed));
  document.title = `attnscope · steps · ${state.text.trim().slice(0, 60)}`;

  await show(data, { head, query }, step);
}

/** Push a new history entry (unless the URL is unchanged) and render it. */
function navigate(state) {
  const url = urlFromState(state);
  if (url !== currentUrl()) history.pushState(null, '', url);
  return render(state);
}

/** A user's choice of layer, head or query, applied to what is on screen. */
function choose(change) {
  if (!shown) return;
  navigate({ ...shown.state, step: stepper.state.step, ...change });
}

// ---- events --------------------------------------------------------------

els.form.addEventListener('submit', (event) => {
  event.preventDefault();
  const previous = shown ? shown.state : stateFromUrl();
  navigate({
    text: els.text.value,
    pair: els.pair.value.trim() ? els.pair.value : null,
    model: els.model.value || null,
    layer: Number(els.layer.value || previous.layer),
    head: Number(els.head.value || previous.head),
    query: previous.query,
    step: stepper.state.step,
  });
});

els.model.addEventListener('change', () => {
  if (els.text.value.trim()) els.form.requestSubmit();
});
els.layer.addEventListener('change', () => choose({ layer: Number(els.layer.value) }));
els.head.addEventListener('change', () => choose({ head: Number(els.head.value) }));
els.query.addEventListener('change', () => choose({ query: Number(els.query.value) }));

window.addEventListener('popstate', () => render(stateFromUrl()));

// ---- start ---------------------------------------------------------------

render(stateFromUrl());
modelsPromise.then(
  (models) => fillModels(els.model, models, stateFromUrl().model),
  (error) => showStatus(els.status, error.message || String(error), 'error'),
);
