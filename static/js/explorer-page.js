// The explorer page (/): every layer's and head's attention for a sentence, one map large, the head
// view of the selected layer, every head's metrics and what-if edits.
// All state lives in the URL: /?text=…&pair=…&model=…&layer=…&head=…&query=… plus the analysis
// choices of views/explorer-state.js (kind, focus, words, specials, colour, scale, gamma, edit…, diff).
// `query` is the token a click on the large map chose: "Step through this head" opens /steps at it.
// Only what is on screen is downloaded: the grid from max-pooled summaries (at most 64 x 64 a head),
// the selected layer's heads at full resolution (the large map and the head view), both in the compact
// u16 encoding; aggregates, contributions and metrics when they are shown.
// The grid is canvases: it needs no Plotly, and plotly.js (4.8 MB) is added only once the grid is
// on screen (or the intro is), for the large map.
import { tokenLabel } from './figures/axes.js';
import { isCausalMap, matrixAbsMax, scaleTop } from './figures/colormap.js';
import { attentionHeatmapFigure } from './figures/heatmap.js';
import {
  $, createPage, createRunForm, createStatus, indexParam, latestWins, linkTo, loadModels, modelName, modelOf, setTitle, t,
  windowText,
} from './page.js';
import { fillIndices } from './views/controls.js';
import {
  fetchAggregate, fetchContribution, fetchLayer, fetchMetrics, fetchOverview, hasOverview, headRows, sentenceKey,
} from './views/explorer-data.js';
import { createEditor } from './views/explorer-edit.js';
import { activeRows, createEffect } from './views/explorer-effect.js';
import { createAttributionPanel } from './views/explorer-attribution.js';
import { createDlaPanel } from './views/explorer-dla.js';
import { createLensPanel, readLens, writeLens } from './views/explorer-lens.js';
import { bindExport, createHeadViewPanel, exportName } from './views/explorer-extras.js';
import { createGeneratePanel } from './views/explorer-generate.js';
import { createMetricsTable, inapplicable } from './views/explorer-metrics.js';
import { createOptions, kindSentence, metricName, rowsSentence, scaleSentence } from './views/explorer-options.js';
import { editBody, readChoices, writeChoices } from './views/explorer-state.js';
import { createTokenChips } from './views/explorer-tokens.js';
import { segmentBoundary, transformMaps } from './views/explorer-transform.js';
import { createOverview } from './views/overview.js';
import { createPatchPanel } from './views/explorer-patch.js';
import { loadPlotly, preloadPlotly } from './views/plotly-loader.js';

const els = {
  intro: $('intro'),
  introHeading: $('intro-heading'),
  introAfter: $('intro-after'),
  introWindow: $('intro-window'),
  results: $('results'),
  tokens: $('tokens'),
  tokenCount: $('token-count'),
  unknownNote: $('unknown-note'),
  unknownKey: $('unknown-key'),
  focusClear: $('focus-clear'),
  layer: $('layer-select'),
  head: $('head-select'),
  heatmap: $('heatmap'),
  queryNote: $('query-note'),
  kindNote: $('kind-note'),
  scaleLegend: $('scale-legend'),
  rowsLegend: $('rows-legend'),
  scaleKey: $('scale-key'),
  colourNote: $('colour-note'),
  stepsLink: $('steps-link'),
};

const page = createPage({
  path: '/',
  read: (params) => ({
    text: params.get('text'), // null: nothing to show yet; '' or blank: the server says what to change
    pair: params.get('pair') || null,
    model: params.get('model') || null,
    layer: indexParam(params.get('layer')),
    head: indexParam(params.get('head')),
    query: indexParam(params.get('query')),
    lens: readLens(params), // the logit lens's position (views/explorer-lens.js); null: the focus or the last token
    ...readChoices(params),
  }),
  write: (state) => {
    const params = new URLSearchParams();
    if (state.text === null) return params;
    params.set('text', state.text);
    if (state.pair !== null) params.set('pair', state.pair);
    if (state.model !== null) params.set('model', state.model);
    params.set('layer', String(state.layer));
    params.set('head', String(state.head));
    if (state.query) params.set('query', String(state.query));
    return writeChoices(state, writeLens(state, params));
  },
  render,
});

const status = createStatus();
const form = createRunForm({
  status,
  onSubmit: (input) => {
    const previous = page.state();
    // a new sentence keeps the view's choices, not its token focus or its edit (they name tokens and heads of it)
    page.navigate({ ...previous, ...input, query: 0, focus: null, lens: null, edit: null, diff: false });
  },
});

// ---- the page's parts ---------------------------------------------------------

/** A user's change of the view, applied to what is on screen. */
function choose(change) {
  if (shown) page.navigate({ ...shown.state, ...change });
}

// a focused token is also where the logit lens reads (its own position choice gives way)
const focusToken = (index) => choose(index === null ? { focus: null, lens: null } : { focus: index, query: index, lens: null });

const overview = createOverview($('overview'), {
  onSelect: (layer, head) => choose({ layer, head }),
  colourRamp: $('colour-ramp'),
});
const chips = createTokenChips(els.tokens, { onFocus: focusToken });
const options = createOptions({
  kind: $('kind-select'), colour: $('colour-select'), scale: $('scale-select'), gamma: $('gamma-select'),
  words: $('words-toggle'), specials: $('specials-toggle'),
}, { onChange: choose });
const effectPanel = createEffect($('edit-effect'));
const editor = createEditor({
  form: $('edit-form'), layer: $('edit-layer'), heads: $('edit-heads'), kind: $('edit-kind'),
  factor: $('edit-factor'), kindNote: $('edit-kind-note'), temperature: $('edit-temperature'),
  hide: $('edit-hide'), ablate: $('edit-ablate'), error: $('edit-error'),
  banner: $('edit-banner'), summary: $('edit-summary'), diff: $('edit-diff'), undo: $('edit-undo'),
}, {
  onEdit: (edit) => choose({ edit, diff: edit ? shown.state.diff : false }),
  onDiff: (diff) => choose({ diff }),
});
const metricsTable = createMetricsTable({
  head: $('metrics-head'), body: $('metrics-body'), thresholds: $('metrics-thresholds'),
}, { onSelect: (layer, head) => choose({ layer, head }) });
const lensPanel = createLensPanel({
  panel: $('lens-panel'), select: $('lens-select'), note: $('lens-note'), head: $('lens-head'), body: $('lens-body'),
  error: $('lens-error'),
}, { onPosition: (position) => choose({ lens: position }) });
const attributionPanel = createAttributionPanel($('attribution-panel'));
const patchPanel = createPatchPanel($('patch-panel'), { onSelect: (layer, head) => choose({ layer, head }) });
const dlaPanel = createDlaPanel($('dla-panel'), { onSelect: (layer, head) => choose({ layer, head }) });
const generatePanel = createGeneratePanel({
  panel: $('generate-panel'), unavailable: $('generate-unavailable'), form: $('generate-form'),
  maxNew: $('generate-max'), temperature: $('generate-temperature'), sampling: $('generate-sampling'),
  topK: $('generate-top-k'), topP: $('generate-top-p'), seed: $('generate-seed'), start: $('generate-start'),
  stop: $('generate-stop'), room: $('generate-room'), mode: $('generate-mode'), error: $('generate-error'),
  output: $('generate-output'), text: $('generate-text'), state: $('generate-state'), speed: $('generate-speed'),
  open: $('generate-open'), detail: $('generate-detail'), cache: $('generate-cache'),
  cacheSize: $('generate-cache-size'), cacheFormula: $('generate-cache-formula'),
  cacheCompare: $('generate-cache-compare'), mapBox: $('generate-map-box'), map: $('generate-map'),
  mapNote: $('generate-map-note'),
}, {
  // the text and its continuation as a new input: its maps come from /attention like any other
  onOpen: (text) => choose({ text, query: 0, focus: null, lens: null, edit: null, diff: false }),
});
const headView = createHeadViewPanel({
  root: $('head-view'), missing: $('head-view-missing'), layerNote: $('head-view-layer'),
}, { onFocus: focusToken });

/** What the large map shows now, for the export buttons. */
let onScreen = null;
bindExport({ png: $('export-png'), svg: $('export-svg'), json: $('export-json'), csv: $('export-csv') }, () => onScreen);

els.focusClear.addEventListener('click', () => focusToken(null));
els.layer.addEventListener('change', () => choose({ layer: Number(els.layer.value) }));
els.head.addEventListener('change', () => choose({ head: Number(els.head.value) }));
els.heatmap.addEventListener('plotly-query', (event) => choose({ query: drawn ? drawn.toToken(event.detail.query) : event.detail.query }));
els.heatmap.addEventListener('plotly-focus', (event) => focusToken(drawn ? drawn.toToken(event.detail.index) : event.detail.index));

// ---- rendering -----------------------------------------------------------

/** The large map's view (views/heatmap.js), once plotly.js has run. */
const heatmapView = () => loadPlotly().then(() => import('./views/heatmap.js'));

/** Resolves after the next frame is painted. */
const afterPaint = () => new Promise((resolve) => { requestAnimationFrame(() => setTimeout(resolve, 0)); });

let shown = null; // {key, state}: what the results area shows; choices start from it
let drawn = null; // the large map's transform (drawn index <-> token index)
const guard = latestWins();

function drawSentence(result) {
  chips.render(result.tokens);
  els.tokenCount.textContent = `(${result.tokens.length})`;
  const unknown = result.tokens.filter((token) => token.unknown).length;
  els.unknownNote.hidden = unknown === 0;
  els.unknownKey.hidden = unknown === 0;
  els.unknownNote.textContent = unknown ? t('tokens.unknownNote', { count: unknown, unk: '[UNK]' }) : '';
  const model = modelOf(result.model);
  overview.render({ ...result, nHeads: model?.n_heads ?? null, nKvHeads: model?.n_kv_heads ?? null });
  fillIndices(els.layer, result.layers);
  fillIndices(els.head, result.heads);
}

/** The chosen query token, and /steps for this sentence, layer, head and query. */
function drawQuery(result, state) {
  const label = document.createElement('span');
  label.textContent = t('explorer.query', { query: state.query });
  const token = document.createElement('span');
  token.className = 'query-token';
  token.translate = false;
  token.textContent = tokenLabel(result.tokens[state.query]);
  els.queryNote.replaceChildren(label, ' ', token);

  els.stepsLink.href = linkTo('/steps', state, ['layer', 'head', 'query']);
  els.stepsLink.title = t('explorer.detail.stepsTitle', state);
}

/** The focused token on every view: chips, the grid, the head view (the large map draws it itself). */
function drawFocus(state) {
  chips.focus(state.focus);
  els.focusClear.hidden = state.focus === null;
  if (typeof overview.focus === 'function') overview.focus(state.focus);
  headView.focus(state.focus);
  headView.select(state.head);
}

/** The colour scale on the grid and its key; the grid coloured by a metric once /metrics answers. */
function drawScale(state) {
  if (typeof overview.scale === 'function') overview.scale({ shared: state.shared, gamma: state.gamma });
  els.scaleKey.textContent = t(state.shared ? 'explorer.overview.scaleShared' : 'explorer.overview.scale')
    + (state.gamma !== 1 ? ` · γ = ${state.gamma}` : '');
}

async function drawMetrics(state, ticket) {
  let answer;
  try {
    answer = await fetchMetrics(state);
  } catch (error) {
    if (guard.current(ticket)) status.error(error);
    return;
  }
  if (!guard.current(ticket)) return;
  if (metricsKey !== sentenceKey(state)) {
    metricsKey = sentenceKey(state);
    metricsTable.render(answer);
    options.limitMetrics(inapplicable(answer.tokens || [], modelOf(answer.model)).map((item) => item.metric));
  }
  metricsTable.select(state.layer, state.head);
  const values = state.colour ? answer.metrics[state.colour] : null;
  els.colourNote.hidden = !values;
  if (values) {
    const flat = values.flat();
    const [min, max] = [Math.min(...flat), Math.max(...flat)];
    els.colourNote.textContent = t('explorer.colourBy.note', { metric: metricName(state.colour), min: min.toFixed(3), max: max.toFixed(3) });
    if (typeof overview.colourBy === 'function') overview.colourBy(values, { label: metricName(state.colour), min, max });
  } else if (typeof overview.colourBy === 'function') {
    overview.colourBy(null, {});
  }
}
let metricsKey = null;

/** The matrix of the large map for a state, as rows (query, key); `unedited` with a difference map. */
async function largeMatrix(state, kind) {
  if (kind === 'mean' || kind === 'rollout') {
    const aggregate = await fetchAggregate(state, kind);
    const at = aggregate.layers ? aggregate.layers.indexOf(state.layer) : state.layer;
    return { matrix: aggregate.maps[at], all: aggregate.maps };
  }
  if (kind === 'contribution') return { matrix: await fetchContribution(state, state.layer, state.head) };
  const layer = await fetchLayer(state, state.layer, state.edit);
  const matrix = headRows(layer, state.head);
  if (!(state.edit && state.diff)) return { matrix };
  const unedited = headRows(await fetchLayer(state, state.layer, null), state.head);
  return { matrix, unedited };
}

/**
 * The intro names the chosen model and its size ("all-MiniLM-L6-v2", "gpt2": a name before its " (…)"), and its
 * sliding window when it has one (Mistral; Gemma 2's local layers).
 */
async function describeIntro(modelId) {
  let model = null;
  try {
    await loadModels();
    model = modelOf(modelId);
  } catch {
    // the list could not be read: the run form says so; the intro names no model
  }
  const name = model ? modelName(model) : '';
  els.introHeading.textContent = t('explorer.intro.heading', { model: name });
  els.intro.setAttribute('aria-label', els.introHeading.textContent);
  els.introAfter.textContent = t('explorer.intro.after', { layers: model?.n_layers ?? '?', heads: model?.n_heads ?? '?' });
  const window = windowText(model);
  els.introWindow.textContent = window ? t('explorer.intro.window', { window }) : '';
  els.introWindow.hidden = !window;
}

/** Render the view for a state (from the URL). Fetches the overview only when the sentence or edit changed. */
async function render(state) {
  const ticket = guard.begin();
  form.write(state);
  if (state.text === null) {
    status.busy(false);
    els.results.hidden = true;
    await describeIntro(state.model);
    if (!guard.current(ticket)) return;
    els.intro.hidden = false;
    status.info();
    setTitle('page.explorer');
    preloadPlotly(); // ready for the first sentence
    return;
  }

  const key = `${sentenceKey(state)}|${JSON.stringify(editBody(state.edit))}`;
  let result;
  if (!hasOverview(state, state.edit)) {
    status.busy(true);
    status.info();
  }
  try {
    // the model list too: the grid groups a grouped-query model's heads by key-value head (none if it fails)
    [result] = await Promise.all([fetchOverview(state, state.edit), loadModels().catch(() => null)]);
  } catch (error) {
    if (guard.current(ticket)) {
      // the last good result stays; beside the what-if form when the edit is what the server refused, else
      // beside the sentence form
      status.error(error, { beside: !editor.refused(error) });
    }
    preloadPlotly(); // ready for the next sentence
    return;
  }
  if (!guard.current(ticket)) return;

  // An index the model or the sentence does not have falls back to the first one (a focus to none).
  const n = result.tokens.length;
  const fixed = {
    ...state,
    layer: result.layers.includes(state.layer) ? state.layer : result.layers[0],
    head: result.heads.includes(state.head) ? state.head : result.heads[0],
    query: state.query < n ? state.query : 0,
    focus: state.focus !== null && state.focus < n ? state.focus : null,
    lens: state.lens !== null && state.lens < n ? state.lens : null,
  };
  page.replace(fixed);
  const kind = fixed.edit ? 'weight' : fixed.kind; // the aggregates and contributions have no edit

  els.intro.hidden = true;
  els.results.hidden = false; // before Plotly measures the container
  const newView = !shown || shown.key !== key;
  if (newView) drawSentence(result);
  shown = { key, state: fixed };
  overview.select(fixed.layer, fixed.head);
  els.layer.value = String(fixed.layer);
  els.head.value = String(fixed.head);
  els.head.disabled = kind === 'mean' || kind === 'rollout';
  options.write(fixed);
  editor.write(fixed, result.layers);
  drawQuery(result, fixed);
  drawFocus(fixed);
  drawScale(fixed);
  lensPanel.draw(fixed, result.tokens);
  attributionPanel.draw(fixed, result.tokens);
  patchPanel.draw(fixed, result.tokens);
  dlaPanel.draw(fixed, result.tokens);
  generatePanel.draw(fixed, result.tokens);
  els.kindNote.textContent = kindSentence(kind);
  setTitle('page.explorer', state.text);

  const wanted = largeMatrix(fixed, kind); // downloads while the grid is painted
  wanted.catch(() => {}); // awaited below (no unhandled rejection meanwhile)
  const effectWanted = effectPanel.load(fixed).catch(() => null); // what the edit changed: shown when it comes
  let large;
  let view;
  let effect;
  try {
    if (newView) await afterPaint(); // the grid first: parsing plotly.js holds the main thread
    [large, view, effect] = await Promise.all([wanted, heatmapView(), effectWanted]);
  } catch (error) {
    if (guard.current(ticket)) status.error(error);
    return;
  }
  if (!guard.current(ticket)) return;
  effectPanel.draw(effect);

  const diff = Boolean(large.unedited);
  const matrices = diff ? [large.matrix, large.unedited] : [large.matrix];
  const shares = kind !== 'contribution';
  const shape = await transformMaps({
    tokens: result.tokens, matrices, text: fixed.text, pair: fixed.pair,
    words: fixed.words, hideSpecial: fixed.hideSpecial, shares,
  });
  if (!guard.current(ticket)) return;
  drawn = shape;
  const matrix = diff
    ? shape.matrices[0].map((row, q) => row.map((v, k) => v - shape.matrices[1][q][k]))
    : shape.matrices[0];
  let zmax = null;
  if (fixed.shared && !diff) {
    if (kind === 'weight') zmax = Math.max(result.attention.flat().reduce((m, map) => Math.max(m, scaleTop(map)), 0), scaleTop(matrix));
    if (large.all) zmax = large.all.reduce((m, map) => Math.max(m, scaleTop(map)), scaleTop(matrix));
  }
  const notes = [...shape.notes];
  if (shape.missing) notes.push(t('explorer.view.missing'));
  const focus = fixed.focus === null ? null : shape.fromToken(fixed.focus);
  const query = shape.fromToken(fixed.query);
  const active = kind === 'weight' ? activeRows(effect, fixed.layer, fixed.head) : null;
  const marked = active ? [...new Set(active.map((i) => shape.fromToken(i)).filter((r) => r !== null))] : [];
  if (active) notes.push(t('explorer.effect.marked', { u: active.length }));
  const figure = attentionHeatmapFigure({
    tokens: shape.tokens, matrix, layer: fixed.layer, head: fixed.head, query, focus, kind, diff,
    edited: Boolean(fixed.edit), zmax, gamma: diff ? 1 : fixed.gamma, boundary: segmentBoundary(shape.tokens),
    notes, marked, size: els.heatmap.clientWidth,
  });
  await view.renderHeatmap(els.heatmap, figure, {
    text: fixed.text, layer: fixed.layer, head: fixed.head, keep: [query, focus].filter((i) => i !== null),
  });
  if (!guard.current(ticket)) return;
  status.busy(false);
  const top = diff ? matrixAbsMax(matrix) : (zmax || scaleTop(matrix));
  els.scaleLegend.textContent = scaleSentence({
    kind, diff, shared: fixed.shared, gamma: fixed.gamma, zmax: top, causal: isCausalMap(matrix),
  });
  els.rowsLegend.textContent = rowsSentence({ kind, diff, edited: Boolean(fixed.edit) });
  onScreen = {
    gd: els.heatmap,
    tokens: shape.tokens,
    matrix,
    name: exportName({ text: fixed.text, layer: fixed.layer, head: fixed.head, kind: diff ? 'difference' : kind }),
    meta: {
      model: result.model, text: fixed.text, pair: fixed.pair, tokens: shape.tokens.map((token) => tokenLabel(token)),
      layer: fixed.layer, head: kind === 'mean' || kind === 'rollout' ? null : fixed.head,
      kind: diff ? 'difference' : kind, edit: editBody(fixed.edit),
      words: fixed.words, hide_special: fixed.hideSpecial,
    },
  };
  status.info(t('explorer.summary', {
    tokens: result.tokens.length, layers: result.layers.length, heads: result.heads.length, model: result.model,
  }));

  drawHeadView(fixed, result, ticket);
  drawMetrics(fixed, ticket);
}

let headViewKey = null; // sentence|edit|layer the head view shows

/** The head view of the selected layer (with the edit, when there is one); drawn again only when that changes. */
async function drawHeadView(state, result, ticket) {
  const key = `${sentenceKey(state)}|${JSON.stringify(editBody(state.edit))}|${state.layer}`;
  if (key === headViewKey) return;
  let layer;
  try {
    layer = await fetchLayer(state, state.layer, state.edit);
  } catch (error) {
    if (guard.current(ticket)) status.error(error);
    return;
  }
  if (!guard.current(ticket)) return;
  headViewKey = key;
  const model = modelOf(result.model);
  await headView.render({
    tokens: result.tokens, maps: layer.maps, heads: layer.heads, layer: state.layer,
    nHeads: model?.n_heads ?? null, nKvHeads: model?.n_kv_heads ?? null,
    label: t('explorer.headView.layer', { layer: state.layer }),
  });
}

page.start();
