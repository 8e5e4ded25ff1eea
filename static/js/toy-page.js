// The worked example (/toy): small queries, keys, values and weights, all editable in place,
// recomputed by POST /api/v1/toy and shown with the same walkthrough as /steps.
//
// The whole setup lives in the URL (its format: toy/url.js), so a link reopens it and a language
// switch keeps it:
//   /toy?q=1,0,2,1;0,1,1,2&k=…&v=…&wq=…&wk=…&wv=…&wo=…&heads=2&causal=1&head=1&query=2&step=scores
// where only what differs from the worked example is written. Typing replaces the URL entry; Reset
// and the row buttons push one. A part of a link that cannot be read falls back to the example's
// value, and the page says so. The server's refusals are named as the page labels its fields
// (toy/errors.js); the last good result stays on screen, marked stale.
import { ApiError, getToy, getToyBackward } from './api.js';
import { fromToy } from './figures/steps.js';
import { $, createPage, createStatus, errorMessage, fillSelect, latestWins, Lru, setTitle, t } from './page.js';
import { describeErrors, listOf } from './toy/errors.js';
import { flashParams } from './toy/flash-url.js';
import { identityWeights, OPTION_DEFAULTS, readState, writeState } from './toy/url.js';
import { createBackwardView } from './views/toy-backward.js';
import { createMechanismViews } from './views/toy-mechanisms.js';
import { createToySetup } from './views/toy-setup.js';
import { createWalkthrough } from './views/walkthrough.js';

const DEBOUNCE_MS = 300;
const SHOWN_ERRORS = 4; // more than this many field errors are summed up in one line

const els = {
  errors: $('toy-error'),
  urlNote: $('toy-url-note'),
  stale: $('toy-stale'),
  head: $('head-select'),
  query: $('query-select'),
  results: $('results'),
};

const count = (key, n) => t(`${key}.${n === 1 ? 'one' : 'other'}`, { n });

const setup = createToySetup({
  onEdit: edited,
  onCausal: () => {
    syncUrl();
    recompute();
  },
});

// ---- URL <-> state ----------------------------------------------------------------------------

let example = null; // the worked example: {queries, keys, values, heads, toy} (the /toy answer to {})

/** The worked example's setup: what every part of the URL left out stands for. */
function exampleSetup() {
  const { queries, keys, values, heads } = example;
  return { queries, keys, values, heads, weights: identityWeights(queries[0].length), causal: false, ...OPTION_DEFAULTS };
}

const page = createPage({
  path: '/toy',
  read: (params) => readState(params, example),
  write: (state) => writeState(state, example),
  render,
});
const status = createStatus();
const guard = latestWins();
const answers = new Lru(16); // request body (JSON) -> /toy answer: Back, Forward and Reset redraw at once

let selection = { head: 0, query: 0, step: 'input' };
// The panels under the walkthrough, open or not, and the backward pass's upstream gradient (in the URL).
let views = { compare: false, shuffle: false, backward: false, upstream: 'ones' };
let shown = null; // what is drawn: {toy, causal, example} (example: the worked example, shown for a link that failed)

/** The editors' setup as URL state, or null while some cell or the heads field is not a number. */
const editorSetup = () => setup.state(example.heads);

/** Make the URL say what the editors hold (while a cell is not a number, the last setup that was). */
function syncUrl() {
  const state = { ...(editorSetup() ?? page.state()), ...selection, ...views };
  page.replace(state);
  const params = flashParams(state, example); // the same layer and inputs, tile by tile on /flash
  const language = new URLSearchParams(window.location.search).get('lang');
  if (language !== null) params.set('lang', language);
  $('toy-flash-link').href = `/flash${params.toString() ? `?${params}` : ''}`;
}

// ---- errors, marked on the fields they name ----------------------------------------------------

function clearErrors() {
  els.errors.hidden = true;
  els.errors.replaceChildren();
  setup.clearMarks();
  els.results.classList.remove('is-stale');
  els.stale.hidden = true;
}

/** Name each field the server refused in `body`, mark it, and mark the result on screen as stale. */
function showErrors(error, body) {
  clearErrors();
  const items = error instanceof ApiError && Array.isArray(error.body?.errors) ? error.body.errors : [];
  const lines = [];
  for (const { field, problem, text } of describeErrors(items, body)) {
    setup.mark(field);
    if (!setup.sayBeside(field, problem)) lines.push(text); // a mechanism's problem is said beside its control
  }
  if (!items.length) lines.push(errorMessage(error));
  if (lines.length > SHOWN_ERRORS + 1) lines.splice(SHOWN_ERRORS, Infinity, t('toy.error.more', { count: lines.length - SHOWN_ERRORS }));
  els.errors.replaceChildren(...lines.map((line) => {
    const li = document.createElement('li');
    li.textContent = line;
    return li;
  }));
  els.errors.hidden = lines.length === 0;
  els.results.classList.add('is-stale');
  els.stale.textContent = t(shown.example ? 'toy.staleExample' : 'toy.stale');
  els.stale.hidden = false;
}

// ---- the walkthrough ----------------------------------------------------------------------------

const walkthrough = createWalkthrough({
  onStep: (step) => {
    selection.step = step;
    syncUrl();
  },
});

function summary(data) {
  const parts = [
    `${count('toy.count.query', data.queryLabels.length)} × ${count('toy.count.key', data.keyLabels.length)}`,
    `d_model ${data.dModel}`,
    t('toy.summary.heads', { heads: count('toy.count.head', data.nHeads), dHead: data.dHead }),
    t('toy.summary.scale', { scale: data.scale.toFixed(4) }),
  ];
  if (data.causal) parts.push(t('toy.summary.causal'));
  const toy = shown?.toy;
  if (toy?.variant && toy.variant !== OPTION_DEFAULTS.variant) parts.push(t('toy.summary.variant', { variant: t(`toy.variant.${toy.variant}`) }));
  if (toy?.temperature != null && toy.temperature !== OPTION_DEFAULTS.temperature) parts.push(t('toy.summary.temperature', { temperature: toy.temperature }));
  if (toy?.positions && toy.positions !== OPTION_DEFAULTS.positions) parts.push(t('toy.summary.positions', { positions: t(`toy.positions.${toy.positions}`) }));
  if (toy?.hidden_keys?.length) parts.push(t('toy.summary.hidden', { keys: toy.hidden_keys.map((j) => `k${j}`).join(', ') }));
  return parts.join(' · ');
}

/** Draw a /toy answer (computed with `causal`) at the current selection. */
async function draw(toy, causal, isExample = false) {
  const data = fromToy(toy, { causal });
  shown = { toy, causal, example: isExample };
  selection.head = Math.min(selection.head, data.nHeads - 1);
  selection.query = Math.min(selection.query, data.queryLabels.length - 1);
  const columns = (h) => ({ head: h, from: h * data.dHead, to: (h + 1) * data.dHead - 1 });
  fillSelect(els.head, data.heads.map((h) => t('toy.headOption', columns(h))), selection.head);
  fillSelect(els.query, data.queryLabels, selection.query);
  status.info(summary(data));
  const { head, query, step } = selection;
  await walkthrough.show(data, { head, query }, step);
}

// ---- recomputing ---------------------------------------------------------------------------------

let timer = null;

async function recompute() {
  clearTimeout(timer);
  const body = setup.request(); // exactly as typed: the server says what is wrong
  const ticket = guard.begin();
  status.busy(true);
  try {
    const toy = await answers.load(JSON.stringify(body), () => getToy(body));
    if (!guard.current(ticket)) return;
    status.busy(false);
    clearErrors();
    await draw(toy, body.causal);
    await drawMechanisms(body, ticket);
  } catch (error) {
    if (!guard.current(ticket)) return;
    status.busy(false);
    if (!shown) await draw(example.toy, false, true); // a link that does not compute: the example meanwhile
    showErrors(error, body); // the last good result stays, marked stale
  }
  syncUrl();
}

function edited() {
  syncUrl();
  clearTimeout(timer);
  timer = setTimeout(recompute, DEBOUNCE_MS);
}

// ---- the compare and shuffle panels ---------------------------------------------------------------

const mechanisms = createMechanismViews(
  { compare: $('compare-panel'), shuffle: $('shuffle-panel') },
  { load: (body) => answers.load(JSON.stringify(body), () => getToy(body)) },
);
const backwards = new Lru(16); // request body (JSON) -> /toy/backward answer
const backward = createBackwardView($('backward-panel'), {
  load: (body) => backwards.load(JSON.stringify(body), () => getToyBackward(body)),
});
const upstreamMode = $('backward-upstream-mode');
upstreamMode.addEventListener('change', () => {
  views = { ...views, upstream: upstreamMode.value };
  syncUrl();
  if (lastBody) drawMechanisms(lastBody, guard.begin());
});
const panels = {
  backward: { toggle: $('backward-toggle'), body: $('backward-body'), show: 'toy.back.show', hide: 'toy.back.hide' },
  compare: { toggle: $('compare-toggle'), body: $('compare-grid'), show: 'toy.compare.show', hide: 'toy.compare.hide' },
  shuffle: { toggle: $('shuffle-toggle'), body: $('shuffle-body'), show: 'toy.perm.shuffle', hide: 'toy.perm.hide' },
};
let lastBody = null; // the request of the result on screen

function showPanels() {
  for (const [name, panel] of Object.entries(panels)) {
    panel.body.hidden = !views[name];
    panel.toggle.textContent = t(views[name] ? panel.hide : panel.show);
    panel.toggle.setAttribute('aria-expanded', views[name] ? 'true' : 'false');
  }
}

/** Draw the open panels for the request on screen (a request the server refused draws nothing new). */
async function drawMechanisms(body, ticket) {
  lastBody = body;
  showPanels();
  try {
    if (views.backward) await backward.draw(body, selection.head, { mode: views.upstream, query: selection.query });
    if (views.compare) await mechanisms.drawCompare(body, selection.head);
    if (views.shuffle) await mechanisms.drawShuffle(body);
  } catch (error) {
    if (guard.current(ticket)) status.error(error);
  }
}

for (const name of Object.keys(panels)) {
  panels[name].toggle.addEventListener('click', () => {
    views = { ...views, [name]: !views[name] };
    syncUrl();
    if (lastBody) drawMechanisms(lastBody, guard.begin());
    else showPanels();
  });
}

/** Render a state from the URL: fill every editor and recompute. */
async function render(state) {
  setup.fill(state);
  selection = { head: state.head, query: state.query, step: state.step };
  views = {
    compare: Boolean(state.compare), shuffle: Boolean(state.shuffle), backward: Boolean(state.backward),
    upstream: state.upstream ?? 'ones',
  };
  upstreamMode.value = views.upstream;
  const unreadable = state.unreadable ?? [];
  els.urlNote.hidden = unreadable.length === 0;
  els.urlNote.textContent = unreadable.length
    ? t('toy.url.unreadable', { fields: listOf(unreadable.map((name) => t(`toy.name.${name}`)), 'conjunction') })
    : '';
  await recompute();
}

/** Change the editors' rows, then push the new setup (or, while a cell is not a number, just recompute). */
function changeRows(changed) {
  if (!changed) return;
  const next = editorSetup();
  if (next) page.navigate({ ...next, ...selection, ...views });
  else recompute();
}

/** A head or query chosen: redraw what is shown (stale or not) at it. */
async function choose(change) {
  Object.assign(selection, change);
  syncUrl();
  if (shown) await draw(shown.toy, shown.causal, shown.example);
  const upstreamMoved = 'query' in change && views.upstream === 'row';
  if (views.backward && lastBody && ('head' in change || upstreamMoved)) {
    await backward.draw(lastBody, selection.head, { mode: views.upstream, query: selection.query });
  }
  if (views.compare && lastBody && 'head' in change) await mechanisms.drawCompare(lastBody, selection.head);
}

// ---- events --------------------------------------------------------------------------------------

$('toy-reset').addEventListener('click', () => {
  if (example) page.navigate({ ...exampleSetup(), ...selection, ...views });
});
$('queries-add').addEventListener('click', () => changeRows(setup.addRow('queries')));
$('queries-remove').addEventListener('click', () => changeRows(setup.removeRow('queries')));
$('keys-add').addEventListener('click', () => changeRows(setup.addRow('keys'))); // keys and values: a pair
$('keys-remove').addEventListener('click', () => changeRows(setup.removeRow('keys')));
els.head.addEventListener('change', () => choose({ head: Number(els.head.value) }));
els.query.addEventListener('change', () => choose({ query: Number(els.query.value) }));

// ---- start: the worked example first (the URL's defaults), then the URL's setup ----------------

setTitle('page.toy');
status.busy(true);
getToy({}).then(
  (toy) => {
    const { q, k, v } = toy.steps.input;
    example = { queries: q, keys: k, values: v, heads: toy.n_heads, toy };
    const { queries, keys, values, heads, causal, weights } = exampleSetup();
    const body = { queries, keys, values, n_heads: heads, causal, weights }; // as setup.request() sends it
    answers.set(JSON.stringify(body), toy);
    return page.start();
  },
  (error) => status.error(error),
);
