// The walkthrough page (/steps): every step of multi-head attention for one layer, head and
// query token of a real model on the user's sentence. The state lives in the URL:
//   /steps?text=…&pair=…&model=…&layer=…&head=…&query=…&keys=…&step=…
// keys is the first key of a key window the user moved (long inputs are drawn through windows,
// figures/steps.js); without it the keys around the query are shown. Choices of sentence, layer,
// head, query or window push history entries (Back works); the animation's step only replaces
// the current entry. Indices the model or the sentence does not have fall back to 0. After the attention's
// output the walk goes on through the rest of the block in the model's order (figures/block.js): the
// residual sums, the norms, the MLP and, on a pre-norm model's last layer, the final norm; a step the
// model's block does not have (a gate in BERT) falls back to the first step.
import { getTraceCompact } from './api.js';
import { tokenLabel } from './figures/axes.js';
import { BLOCK_STEPS, walkSteps } from './figures/block.js';
import { fromTrace, STEPS } from './figures/steps.js';
import {
  $, createPage, createRunForm, createStatus, indexParam, latestWins, layerWindow, linkTo, loadModels, Lru, modelOf, range,
  setTitle, t,
} from './page.js';
import { fillIndices } from './views/controls.js';
import { loadPlotly, preloadPlotly } from './views/plotly-loader.js';
import { createTokenPicker } from './views/token-picker.js';
import { showUnknownNote } from './views/unknown-note.js';
import { createWalkthrough } from './views/walkthrough.js';

const els = {
  layer: $('layer-select'),
  head: $('head-select'),
  query: $('query-select'),
  tokens: $('tokens'),
  unknownNote: $('unknown-note'),
  explorerLink: $('explorer-link'),
  modelNote: $('model-note'),
  intro: $('intro'),
  results: $('results'),
};

// ---- URL <-> state -------------------------------------------------------------

function read(params) {
  const step = params.get('step');
  const keys = params.get('keys');
  return {
    text: params.get('text'),
    pair: params.get('pair') || null,
    model: params.get('model') || null,
    layer: indexParam(params.get('layer')),
    head: indexParam(params.get('head')),
    query: indexParam(params.get('query')),
    keys: keys !== null && /^\d{1,6}$/.test(keys) ? Number(keys) : null,
    step: STEPS.includes(step) || BLOCK_STEPS.includes(step) ? step : null,
  };
}

function write(state) {
  const params = new URLSearchParams();
  if (state.text === null) return params;
  params.set('text', state.text);
  if (state.pair !== null) params.set('pair', state.pair);
  if (state.model !== null) params.set('model', state.model);
  for (const name of ['layer', 'head', 'query']) params.set(name, String(state[name]));
  if (state.keys !== null) params.set('keys', String(state.keys));
  if (state.step) params.set('step', state.step);
  return params;
}

// ---- the page ------------------------------------------------------------------

const page = createPage({ path: '/steps', read, write, render });
const status = createStatus();
const guard = latestWins();
const traces = new Lru(6); // a 512-token trace holds 2.3 M numbers (9.2 MB as float32): keep a few
const traceKey = (s) => JSON.stringify([s.text, s.pair, s.model, s.layer, s.head]);

/** What is on screen: {state, trace, data}; every user choice starts from it. */
let shown = null;

const { stepper, show } = createWalkthrough({
  onStep: (step) => shown && page.replace({ ...shown.state, step }),
  onSelect: (change) => choose(change),
});
const tokenPicker = createTokenPicker(els.tokens, { onSelect: (query) => choose({ query }) });

const form = createRunForm({
  status,
  onSubmit(input) {
    const previous = shown ? shown.state : page.state();
    const sameText = ['text', 'pair', 'model'].every((name) => input[name] === previous[name]);
    page.navigate({
      ...previous,
      ...input,
      layer: Number(els.layer.value || previous.layer),
      head: Number(els.head.value || previous.head),
      keys: sameText ? previous.keys : null,
      step: stepper.state.step,
    });
  },
});

/** A user's choice of layer, head, query or key window, applied to what is on screen. */
function choose(change) {
  if (shown) page.navigate({ ...shown.state, step: stepper.state.step, ...change });
}

els.layer.addEventListener('change', () => choose({ layer: Number(els.layer.value) }));
els.head.addEventListener('change', () => choose({ head: Number(els.head.value) }));
els.query.addEventListener('change', () => choose({ query: Number(els.query.value) }));

// ---- rendering -----------------------------------------------------------------

/** The state with a layer and head the model has (else 0); fills the layer and head pickers. */
function withinModel(state, models) {
  const model = models.find((m) => m.id === state.model) || models.find((m) => m.default) || models[0];
  const layer = state.layer < model.n_layers ? state.layer : 0;
  const head = state.head < model.n_heads ? state.head : 0;
  fillIndices(els.layer, range(model.n_layers));
  fillIndices(els.head, range(model.n_heads));
  els.layer.value = String(layer);
  els.head.value = String(head);
  return { ...state, layer, head };
}

/** The state with a query and key window the sentence has (else 0, and keys around the query). */
function withinTrace(state, trace) {
  const n = trace.tokens.length;
  const walk = walkSteps(trace.block ?? null);
  const step = [state.step, stepper.state.step].find((name) => walk.includes(name)) ?? walk[0];
  return {
    ...state,
    query: state.query < n ? state.query : 0,
    keys: state.keys !== null && state.keys < n ? state.keys : null,
    step,
  };
}

function fillQueries(tokens, query) {
  els.query.replaceChildren(...tokens.map((token, index) => {
    const option = document.createElement('option');
    option.value = String(index);
    option.textContent = `${index} · ${tokenLabel(token)}`;
    return option;
  }));
  els.query.value = String(query);
}

/**
 * A trace as the walkthrough draws it; a causal model's (GPT-2) mask is its causal mask, said as such, and a
 * layer with a sliding window (Mistral; Gemma 2's local layers) says its window.
 */
function stepData(trace) {
  const model = modelOf(trace.model);
  return {
    ...fromTrace(trace, { nKvHeads: model ? model.n_kv_heads : null, window: layerWindow(model, trace.layer) }),
    causal: Boolean(model && model.causal),
    block: trace.block ?? null, // the rest of the layer's block (figures/block.js)
    walk: walkSteps(trace.block ?? null),
    nLayers: model ? model.n_layers : null,
  };
}

/**
 * The note under the form for a causal model: why every later key is hidden, and the traced layer's sliding
 * window (or, for a model whose window is in other layers, that this one has none).
 */
function showModelNote(trace) {
  const model = modelOf(trace.model);
  const causal = Boolean(model && model.causal);
  els.modelNote.hidden = !causal;
  if (!causal) {
    els.modelNote.textContent = '';
    return;
  }
  const parts = [t('models.steps.causal', { model: model.id })];
  const window = layerWindow(model, trace.layer);
  if (window) parts.push(t('models.steps.window', { layer: trace.layer, window, before: window - 1 }));
  else if (model.window) {
    const key = model.window_layers.length === 1 ? 'models.steps.windowElsewhere.one' : 'models.steps.windowElsewhere';
    parts.push(t(key, { window: model.window, layers: model.window_layers.join(', '), layer: trace.layer }));
  }
  els.modelNote.textContent = parts.join(' ');
}

async function draw(trace, state) {
  const data = shown && shown.trace === trace ? shown.data : stepData(trace);
  shown = { state, trace, data };
  showModelNote(trace);
  els.intro.hidden = true;
  els.results.hidden = false; // before Plotly measures the containers
  els.explorerLink.href = linkTo('/', state, ['layer', 'head', 'query']);
  els.explorerLink.hidden = false;
  tokenPicker.render(trace.tokens, state.query);
  showUnknownNote(els.unknownNote, trace.tokens, trace.model); // hidden when the model knows every token
  fillQueries(trace.tokens, state.query);
  status.info(t('steps.summary', {
    tokens: trace.tokens.length, layer: trace.layer, head: state.head, heads: trace.n_heads,
    dModel: trace.d_model, dHead: trace.d_head,
  }));
  setTitle('page.steps', state.text);
  await show(data, { head: state.head, query: state.query, keys: state.keys }, state.step);
}

/** Render the page for a state (from the URL). Fetches only when sentence, layer or head changed. */
async function render(state) {
  const ticket = guard.begin();
  form.write(state);
  if (state.text === null) {
    status.busy(false);
    status.info();
    els.results.hidden = true;
    els.intro.hidden = false;
    els.explorerLink.hidden = true;
    els.unknownNote.hidden = true;
    setTitle('page.steps');
    preloadPlotly(); // ready for the first sentence
    return;
  }
  let trace;
  try {
    const wanted = withinModel(state, await loadModels());
    if (!guard.current(ticket)) return;
    const key = traceKey(wanted);
    status.busy(!traces.has(key));
    status.info();
    const traced = traces.load(key, () => getTraceCompact({
      text: wanted.text, text_pair: wanted.pair, model: wanted.model, layer: wanted.layer, head: wanted.head,
    }));
    // plotly.js is parsed while the server traces the layer (its request has gone out by now).
    const plotly = loadPlotly();
    trace = await traced;
    await plotly;
    state = wanted;
  } catch (error) {
    if (guard.current(ticket)) status.error(error); // the last good result stays
    return;
  }
  if (!guard.current(ticket)) return;
  status.busy(false);
  const fixed = withinTrace(state, trace);
  page.replace(fixed);
  await draw(trace, fixed);
}

page.start();
