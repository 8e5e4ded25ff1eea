// The worked example (/toy): small queries, keys, values and weights, all editable
// in place, recomputed by POST /api/v1/toy and shown with the same walkthrough
// as /steps. An edit the server refuses shows its message; the last good result stays.
import { ApiError, getToy } from './api.js';
import { fromToy } from './figures/steps.js';
import { createMatrixEditor } from './views/matrix-editor.js';
import { setLoading, showStatus } from './views/status.js';
import { createWalkthrough } from './views/walkthrough.js';

const LANG = document.documentElement.lang === 'zh' ? 'zh' : 'en'; // a language switch changes only this
const DEBOUNCE_MS = 300;

const $ = (id) => document.getElementById(id);
const els = {
  error: $('toy-error'),
  reset: $('toy-reset'),
  heads: $('toy-heads'),
  headsField: $('field-heads'),
  causal: $('toy-causal'),
  head: $('head-select'),
  query: $('query-select'),
  status: $('status'),
  loading: $('loading'),
  results: $('results'),
};

// ---- the editors ------------------------------------------------------------

const scheduleSoon = () => schedule(DEBOUNCE_MS);

const editors = {
  queries: createMatrixEditor($('editor-queries'), { label: 'queries', rowLabel: (i) => `q${i}`, onEdit: scheduleSoon }),
  keys: createMatrixEditor($('editor-keys'), { label: 'keys', rowLabel: (j) => `k${j}`, onEdit: scheduleSoon }),
  values: createMatrixEditor($('editor-values'), { label: 'values', rowLabel: (j) => `k${j}`, onEdit: scheduleSoon }),
  wq: createMatrixEditor($('editor-wq'), { label: 'W_q', onEdit: scheduleSoon }),
  wk: createMatrixEditor($('editor-wk'), { label: 'W_k', onEdit: scheduleSoon }),
  wv: createMatrixEditor($('editor-wv'), { label: 'W_v', onEdit: scheduleSoon }),
  wo: createMatrixEditor($('editor-wo'), { label: 'W_o', onEdit: scheduleSoon }),
};

/** Which editor (or field) an error location or a field name in a message refers to. */
const FIELDS = {
  queries: editors.queries,
  keys: editors.keys,
  values: editors.values,
  'weights.q': editors.wq,
  'weights.k': editors.wk,
  'weights.v': editors.wv,
  'weights.o': editors.wo,
};

const identity = (n) => Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));

function updateShapes() {
  const d = editors.wq.rows;
  $('shape-queries').textContent = `${editors.queries.rows}×${d}`;
  $('shape-keys').textContent = `${editors.keys.rows}×${d}`;
  $('shape-values').textContent = `${editors.values.rows}×${d}`;
}

/** Put the worked example (a /toy response to {}) into the editors. */
function fillEditors(toy) {
  editors.queries.set(toy.steps.input.q);
  editors.keys.set(toy.steps.input.k);
  editors.values.set(toy.steps.input.v);
  for (const name of ['wq', 'wk', 'wv', 'wo']) editors[name].set(identity(toy.d_model));
  els.heads.value = String(toy.n_heads);
  els.causal.checked = false;
  updateShapes();
}

function parseHeads(text) {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  return /^\d{1,6}$/.test(trimmed) ? Number(trimmed) : trimmed; // anything else: the server says what to change
}

/** The /toy request for what the editors hold, exactly as typed. */
function requestBody() {
  return {
    queries: editors.queries.read(),
    keys: editors.keys.read(),
    values: editors.values.read(),
    n_heads: parseHeads(els.heads.value),
    causal: els.causal.checked,
    weights: { q: editors.wq.read(), k: editors.wk.read(), v: editors.wv.read(), o: editors.wo.read() },
  };
}

// ---- errors -----------------------------------------------------------------

function clearErrors() {
  els.error.hidden = true;
  els.error.textContent = '';
  for (const editor of Object.values(editors)) editor.clearMarks();
  els.headsField.classList.remove('is-invalid');
  els.heads.removeAttribute('aria-invalid');
}

function markField(name, cells = null) {
  if (name === 'n_heads') {
    els.headsField.classList.add('is-invalid');
    els.heads.setAttribute('aria-invalid', 'true');
  } else if (FIELDS[name]) {
    FIELDS[name].mark(cells);
  }
}

/** Show the server's message near the editor and mark the fields it is about. */
function showError(error) {
  clearErrors();
  els.error.textContent = error.message || String(error);
  els.error.hidden = false;
  const items = error instanceof ApiError && Array.isArray(error.body?.errors) ? error.body.errors : [];
  for (const item of items) {
    const loc = Array.isArray(item.loc) ? item.loc.slice(item.loc[0] === 'body' ? 1 : 0).map(String) : [];
    const name = loc[0] === 'weights' ? `weights.${loc[1]}` : loc[0];
    const rest = loc.slice(loc[0] === 'weights' ? 2 : 1).map(Number);
    markField(name, rest.length === 2 && rest.every(Number.isInteger) ? [rest] : null);
  }
  if (!items.length) {
    // Messages without locations name their fields: "keys have 2 rows but values have 1; …".
    for (const match of error.message.matchAll(/\b(queries|keys|values|n_heads|weights\.[qkvo])\b/g)) markField(match[1]);
  }
}

// ---- the walkthrough ----------------------------------------------------------

let shown = null; // {data}: the last good result
let selection = { head: 0, query: 0 };

const { show } = createWalkthrough({ lang: LANG });

function fillSelect(select, labels, value) {
  const options = labels.map((text, index) => {
    const option = document.createElement('option');
    option.value = String(index);
    option.textContent = text;
    return option;
  });
  select.replaceChildren(...options);
  select.value = String(value);
}

const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;

function summary(data) {
  const parts = [
    `${count(data.queryLabels.length, 'query', 'queries')} × ${count(data.keyLabels.length, 'key', 'keys')}`,
    `d_model ${data.dModel}`,
    `${count(data.nHeads, 'head', 'heads')} of d_head ${data.dHead}`,
    `scale ${data.scale.toFixed(4)}`,
  ];
  if (data.causal) parts.push('causal');
  return parts.join(' · ');
}

async function draw() {
  await show(shown.data, selection);
}

/** Show a /toy response (sent with `causal`). */
function apply(toy, causal) {
  const data = fromToy(toy, { causal });
  shown = { data };
  selection = {
    head: Math.min(selection.head, data.nHeads - 1),
    query: Math.min(selection.query, data.queryLabels.length - 1),
  };
  fillSelect(els.head, data.heads.map((h) => `head ${h} (columns ${h * data.dHead}–${(h + 1) * data.dHead - 1})`), selection.head);
  fillSelect(els.query, data.queryLabels, selection.query);
  showStatus(els.status, summary(data));
  return draw();
}

// ---- recomputing --------------------------------------------------------------

let timer = null;
let requestSeq = 0;
let example = null;

function schedule(delay) {
  clearTimeout(timer);
  timer = setTimeout(recompute, delay);
}

async function recompute() {
  clearTimeout(timer);
  const seq = ++requestSeq;
  const body = requestBody();
  setLoading({ indicator: els.loading, region: els.results }, true);
  let toy;
  try {
    toy = await getToy(body);
  } catch (error) {
    if (seq !== requestSeq) return;
    setLoading({ indicator: els.loading, region: els.results }, false);
    showError(error); // the last good result stays on screen
    return;
  }
  if (seq !== requestSeq) return;
  setLoading({ indicator: els.loading, region: els.results }, false);
  clearErrors();
  await apply(toy, body.causal);
}

async function reset() {
  clearTimeout(timer);
  requestSeq += 1; // a request still in flight no longer counts
  setLoading({ indicator: els.loading, region: els.results }, false);
  clearErrors();
  fillEditors(example);
  await apply(example, false);
}

// ---- events -------------------------------------------------------------------

els.heads.addEventListener('input', scheduleSoon);
els.causal.addEventListener('change', () => schedule(0));
els.reset.addEventListener('click', () => {
  if (example) reset();
});

$('queries-add').addEventListener('click', () => {
  editors.queries.addRow();
  updateShapes();
  schedule(0);
});
$('queries-remove').addEventListener('click', () => {
  if (editors.queries.removeRow()) {
    updateShapes();
    schedule(0);
  }
});
$('keys-add').addEventListener('click', () => {
  editors.keys.addRow();
  editors.values.addRow();
  updateShapes();
  schedule(0);
});
$('keys-remove').addEventListener('click', () => {
  if (editors.keys.rows > 1 && editors.values.rows > 1) {
    editors.keys.removeRow();
    editors.values.removeRow();
    updateShapes();
    schedule(0);
  }
});

els.head.addEventListener('change', () => {
  selection = { ...selection, head: Number(els.head.value) };
  if (shown) draw();
});
els.query.addEventListener('change', () => {
  selection = { ...selection, query: Number(els.query.value) };
  if (shown) draw();
});

// ---- start ----------------------------------------------------------------------

setLoading({ indicator: els.loading, region: els.results }, true);
getToy({}).then(
  (toy) => {
    example = toy;
    setLoading({ indicator: els.loading, region: els.results }, false);
    fillEditors(toy);
    return apply(toy, false);
  },
  (error) => {
    setLoading({ indicator: els.loading, region: els.results }, false);
    showStatus(els.status, error.message || String(error), 'error');
  },
);
