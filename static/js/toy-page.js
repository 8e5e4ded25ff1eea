// The worked example (/toy): small queries, keys, values and weights, all editable in place,
// recomputed by POST /api/v1/toy and shown with the same walkthrough as /steps.
//
// The whole setup lives in the URL, so a link reopens it and a language switch keeps it:
//   /toy?q=1,0,2,1;0,1,1,2&k=…&v=…&wq=…&wk=…&wv=…&wo=…&heads=2&causal=1&head=1&query=2&step=scores
// Rows are separated by ";" and numbers by ","; a matrix left out is the worked example's (weights:
// the identity), and so are heads (2), causal (off), head, query (0) and step (input). Typing
// replaces the URL entry; Reset and the row buttons push one. A part of a link that cannot be read
// falls back to the example's value, and the page says so.
import { ApiError, getToy } from './api.js';
import { fromToy, STEPS } from './figures/steps.js';
import { has } from './i18n/index.js';
import { $, createPage, createStatus, errorMessage, indexParam, lang, latestWins, Lru, setTitle, t } from './page.js';
import { createMatrixEditor, matrixFromParam, matrixToParam, parseCell } from './views/matrix-editor.js';
import { createWalkthrough } from './views/walkthrough.js';

const DEBOUNCE_MS = 300;
const SHOWN_ERRORS = 4; // more than this many field errors are summed up in one line
const WEIGHTS = ['q', 'k', 'v', 'o'];
const MATRICES = ['queries', 'keys', 'values', 'wq', 'wk', 'wv', 'wo'];
const PARAM = { queries: 'q', keys: 'k', values: 'v', wq: 'wq', wk: 'wk', wv: 'wv', wo: 'wo' };

const els = {
  errors: $('toy-error'),
  urlNote: $('toy-url-note'),
  stale: $('toy-stale'),
  heads: $('toy-heads'),
  headsField: $('field-heads'),
  causal: $('toy-causal'),
  head: $('head-select'),
  query: $('query-select'),
  results: $('results'),
};

const identity = (n) => Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const listOf = (items, type) => new Intl.ListFormat(lang === 'zh' ? 'zh-CN' : 'en', { type }).format(items.map(String));
const count = (key, n) => t(`${key}.${n === 1 ? 'one' : 'other'}`, { n });

// ---- the editors, named as the page labels them ---------------------------------------------

const rowName = (name, i) => (name === 'queries' ? `q${i}` : name === 'keys' || name === 'values' ? `k${i}` : String(i));

/** "Queries, row q1, column 2" / "Queries, row q1" / "Queries": where a message points. */
function placeName(name, row = null, col = null) {
  const matrix = t(`toy.name.${name}`);
  if (row === null) return matrix;
  if (col === null) return t('toy.where.row', { matrix, row: rowName(name, row) });
  return t('toy.where.cell', { matrix, row: rowName(name, row), col });
}

const editors = Object.fromEntries(MATRICES.map((name) => [name, createMatrixEditor($(`editor-${name}`), {
  rowLabel: ['queries', 'keys', 'values'].includes(name) ? (i) => rowName(name, i) : null,
  cellLabel: (i, j) => placeName(name, i, j),
  onEdit: edited,
})]));

const dModel = () => editors.queries.cols;

function updateShapes() {
  for (const name of ['queries', 'keys', 'values']) {
    $(`shape-${name}`).textContent = `${editors[name].rows}×${editors[name].cols}`;
  }
}

/** n_heads as typed: a number, null when empty (the server's default), else the text itself. */
function readHeads() {
  const text = els.heads.value.trim();
  if (text === '') return null;
  return /^\d{1,6}$/.test(text) ? Number(text) : text;
}

/** The /toy request for what the editors hold, exactly as typed: the server says what is wrong. */
function requestBody() {
  const weights = Object.fromEntries(WEIGHTS.map((w) => [w, editors[`w${w}`].read()]));
  return {
    queries: editors.queries.read(),
    keys: editors.keys.read(),
    values: editors.values.read(),
    n_heads: readHeads(),
    causal: els.causal.checked,
    weights,
  };
}

/** The editors' setup as URL state, or null while some cell or the heads field is not a number. */
function editorSetup() {
  const body = requestBody();
  const matrices = [body.queries, body.keys, body.values, ...Object.values(body.weights)];
  const numbers = matrices.every((m) => m.every((row) => row.every((x) => typeof x === 'number')));
  if (!numbers || typeof body.n_heads === 'string') return null;
  const { queries, keys, values, weights } = body;
  return { queries, keys, values, weights, heads: body.n_heads ?? example.heads, causal: body.causal };
}

function fillEditors(state) {
  for (const name of ['queries', 'keys', 'values']) editors[name].set(state[name]);
  for (const w of WEIGHTS) editors[`w${w}`].set(state.weights[w]);
  els.heads.value = String(state.heads);
  els.causal.checked = state.causal;
  updateShapes();
}

// ---- URL <-> state ----------------------------------------------------------------------------

let example = null; // the worked example: {queries, keys, values, heads, toy} (the /toy answer to {})

const identityWeights = (d) => Object.fromEntries(WEIGHTS.map((w) => [w, identity(d)]));

/** The worked example's setup: what every part of the URL left out stands for. */
function exampleSetup() {
  const { queries, keys, values, heads } = example;
  return { queries, keys, values, heads, weights: identityWeights(queries[0].length), causal: false };
}

/** Query parameters whose string form keeps the matrices' "," and ";" readable (both are legal there). */
class ReadableParams extends URLSearchParams {
  toString() {
    return super.toString().replace(/%2C/g, ',').replace(/%3B/g, ';');
  }
}

function readState(params) {
  const unreadable = []; // the fields (toy.name.*) whose parameter fell back to the example's value
  const value = (param, field, parse, fallback) => {
    const text = params.get(param);
    if (text === null) return fallback;
    const parsed = parse(text);
    if (parsed !== null) return parsed;
    unreadable.push(field);
    return fallback;
  };
  const matrix = (name, fallback) => value(PARAM[name], name, matrixFromParam, fallback);
  const queries = matrix('queries', example.queries);
  const step = params.get('step');
  return {
    queries,
    keys: matrix('keys', example.keys),
    values: matrix('values', example.values),
    weights: Object.fromEntries(WEIGHTS.map((w) => [w, matrix(`w${w}`, identity(queries[0].length))])),
    heads: value('heads', 'n_heads', (text) => (/^\d{1,2}$/.test(text) ? Number(text) : null), example.heads),
    causal: value('causal', 'causal', (text) => ({ 1: true, 0: false })[text] ?? null, false),
    head: indexParam(params.get('head')),
    query: indexParam(params.get('query')),
    step: STEPS.includes(step) ? step : 'input',
    unreadable,
  };
}

function writeState(state) {
  const params = new ReadableParams();
  const put = (name, matrix, fallback) => {
    if (!same(matrix, fallback)) params.set(PARAM[name], matrixToParam(matrix));
  };
  put('queries', state.queries, example.queries);
  put('keys', state.keys, example.keys);
  put('values', state.values, example.values);
  for (const w of WEIGHTS) put(`w${w}`, state.weights[w], identity(state.queries[0].length));
  if (state.heads !== example.heads) params.set('heads', String(state.heads));
  if (state.causal) params.set('causal', '1');
  if (state.head) params.set('head', String(state.head));
  if (state.query) params.set('query', String(state.query));
  if (state.step !== 'input') params.set('step', state.step);
  return params;
}

const page = createPage({ path: '/toy', read: readState, write: writeState, render });
const status = createStatus();
const guard = latestWins();
const answers = new Lru(16); // request body (JSON) -> /toy answer: Back, Forward and Reset redraw at once

let selection = { head: 0, query: 0, step: 'input' };
let shown = null; // what is drawn: {toy, causal, example} (example: the worked example, shown for a link that failed)

/** Make the URL say what the editors hold (while a cell is not a number, the last setup that was). */
function syncUrl() {
  page.replace({ ...(editorSetup() ?? page.state()), ...selection });
}

// ---- errors, named as the page labels its fields ----------------------------------------------

/** Which editor or field an error's loc (["body", "queries", "1", "2"]) points at. */
function fieldOf(loc) {
  const path = (Array.isArray(loc) ? loc : []).map(String);
  const [first, second, ...rest] = path[0] === 'body' ? path.slice(1) : path;
  const index = (text) => (text !== undefined && /^\d+$/.test(text) ? Number(text) : null);
  if (['queries', 'keys', 'values'].includes(first)) {
    return { kind: 'matrix', name: first, row: index(second), col: index(rest[0]) };
  }
  if (first === 'weights' && WEIGHTS.includes(second)) {
    return { kind: 'matrix', name: `w${second}`, row: index(rest[0]), col: index(rest[1]) };
  }
  if (first === 'n_heads' || first === 'causal') return { kind: first };
  return { kind: 'request' };
}

function placeOf(field) {
  if (field.kind === 'matrix') return placeName(field.name, field.row, field.col);
  return t(`toy.name.${field.kind}`);
}

/** What a toy_shape error means, from the field it names and the sizes the page sent; or null. */
function shapeProblem(field) {
  const editor = editors[field.name];
  const d = dModel();
  if (field.row !== null && field.col !== null) {
    const value = parseCell(editor.text(field.row, field.col) ?? '');
    return typeof value === 'number' ? t('toy.problem.tooBig') : null;
  }
  if (field.name.startsWith('w')) return t('toy.problem.weightShape', { rows: editor.rows, cols: editor.cols, d });
  if (editor.cols !== d) return t('toy.problem.columns', { cols: editor.cols, d });
  if (field.name === 'values' && editor.rows !== editors.keys.rows) {
    return t('toy.problem.valueRows', { values: editor.rows, keys: editors.keys.rows });
  }
  return null;
}

/** The problem in the page's language, chosen by the error's type; else the server's own words. */
function problemOf(item, field) {
  const type = String(item.type ?? '');
  if (field.kind === 'n_heads') {
    const d = dModel();
    const divisors = Array.from({ length: d }, (_, i) => i + 1).filter((n) => d % n === 0);
    return t('toy.problem.heads', { d, divisors: listOf(divisors, 'disjunction') });
  }
  if (field.kind === 'matrix') {
    if (type === 'toy_shape') {
      const problem = shapeProblem(field);
      if (problem) return problem;
    } else if (field.col !== null && editors[field.name].text(field.row, field.col)?.trim() === '') {
      return t('toy.problem.empty');
    }
  }
  if (has(`toy.problem.${type}`)) return t(`toy.problem.${type}`);
  const msg = typeof item.msg === 'string' ? item.msg : '';
  const echo = `${(Array.isArray(item.loc) ? item.loc : []).filter((part) => part !== 'body').join('.')}: `; // the loc again
  return (msg.startsWith(echo) ? msg.slice(echo.length) : msg) || t('toy.problem.invalid');
}

function mark(field) {
  if (field.kind === 'matrix') {
    editors[field.name].mark(field.row !== null && field.col !== null ? [[field.row, field.col]] : []);
  } else if (field.kind === 'n_heads') {
    els.headsField.classList.add('is-invalid');
    els.heads.setAttribute('aria-invalid', 'true');
  }
}

function clearErrors() {
  els.errors.hidden = true;
  els.errors.replaceChildren();
  for (const editor of Object.values(editors)) editor.clearMarks();
  els.headsField.classList.remove('is-invalid');
  els.heads.removeAttribute('aria-invalid');
  els.results.classList.remove('is-stale');
  els.stale.hidden = true;
}

/** Name each field the server refused, mark it, and mark the result on screen as stale. */
function showErrors(error) {
  clearErrors();
  const items = error instanceof ApiError && Array.isArray(error.body?.errors) ? error.body.errors : [];
  const lines = items.map((item) => {
    const field = fieldOf(item.loc);
    mark(field);
    return t('toy.error.item', { place: placeOf(field), problem: problemOf(item, field) });
  });
  if (!lines.length) lines.push(errorMessage(error));
  if (lines.length > SHOWN_ERRORS + 1) lines.splice(SHOWN_ERRORS, Infinity, t('toy.error.more', { count: lines.length - SHOWN_ERRORS }));
  els.errors.replaceChildren(...lines.map((line) => {
    const li = document.createElement('li');
    li.textContent = line;
    return li;
  }));
  els.errors.hidden = false;
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

function fillSelect(select, labels, value) {
  select.replaceChildren(...labels.map((text, index) => {
    const option = document.createElement('option');
    option.value = String(index);
    option.textContent = text;
    return option;
  }));
  select.value = String(value);
}

function summary(data) {
  const parts = [
    `${count('toy.count.query', data.queryLabels.length)} × ${count('toy.count.key', data.keyLabels.length)}`,
    `d_model ${data.dModel}`,
    t('toy.summary.heads', { heads: count('toy.count.head', data.nHeads), dHead: data.dHead }),
    t('toy.summary.scale', { scale: data.scale.toFixed(4) }),
  ];
  if (data.causal) parts.push(t('toy.summary.causal'));
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
  const body = requestBody();
  const ticket = guard.begin();
  status.busy(true);
  try {
    const toy = await answers.load(JSON.stringify(body), () => getToy(body));
    if (!guard.current(ticket)) return;
    status.busy(false);
    clearErrors();
    await draw(toy, body.causal);
  } catch (error) {
    if (!guard.current(ticket)) return;
    status.busy(false);
    if (!shown) await draw(example.toy, false, true); // a link that does not compute: the example meanwhile
    showErrors(error); // the last good result stays, marked stale
  }
  syncUrl();
}

function edited() {
  syncUrl();
  clearTimeout(timer);
  timer = setTimeout(recompute, DEBOUNCE_MS);
}

/** Render a state from the URL: fill every editor and recompute. */
async function render(state) {
  fillEditors(state);
  selection = { head: state.head, query: state.query, step: state.step };
  const unreadable = state.unreadable ?? [];
  els.urlNote.hidden = unreadable.length === 0;
  els.urlNote.textContent = unreadable.length
    ? t('toy.url.unreadable', { fields: listOf(unreadable.map((name) => t(`toy.name.${name}`)), 'conjunction') })
    : '';
  await recompute();
}

/** Change the editors' rows, then push the new setup (or, while a cell is not a number, just recompute). */
function changeRows(change) {
  if (change() === false) return;
  updateShapes();
  const setup = editorSetup();
  if (setup) page.navigate({ ...setup, ...selection });
  else recompute();
}

// ---- events --------------------------------------------------------------------------------------

els.heads.addEventListener('input', edited);
els.causal.addEventListener('change', () => {
  syncUrl();
  recompute();
});
$('toy-reset').addEventListener('click', () => {
  if (example) page.navigate({ ...exampleSetup(), ...selection });
});
$('queries-add').addEventListener('click', () => changeRows(() => editors.queries.addRow()));
$('queries-remove').addEventListener('click', () => changeRows(() => editors.queries.removeRow()));
$('keys-add').addEventListener('click', () => changeRows(() => {
  editors.keys.addRow();
  editors.values.addRow();
}));
$('keys-remove').addEventListener('click', () => changeRows(() => {
  if (editors.keys.rows <= 1 || editors.values.rows <= 1) return false;
  editors.keys.removeRow();
  editors.values.removeRow();
  return true;
}));
els.head.addEventListener('change', () => choose({ head: Number(els.head.value) }));
els.query.addEventListener('change', () => choose({ query: Number(els.query.value) }));

/** A head or query chosen: redraw what is shown (stale or not) at it. */
async function choose(change) {
  Object.assign(selection, change);
  syncUrl();
  if (shown) await draw(shown.toy, shown.causal, shown.example);
}

// ---- start: the worked example first (the URL's defaults), then the URL's setup ----------------

setTitle('page.toy');
status.busy(true);
getToy({}).then(
  (toy) => {
    const { q, k, v } = toy.steps.input;
    example = { queries: q, keys: k, values: v, heads: toy.n_heads, toy };
    const { queries, keys, values, heads, causal, weights } = exampleSetup();
    const body = { queries, keys, values, n_heads: heads, causal, weights }; // as requestBody() sends it
    answers.set(JSON.stringify(body), toy);
    return page.start();
  },
  (error) => status.error(error),
);
