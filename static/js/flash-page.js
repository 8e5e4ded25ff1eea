// FlashAttention, tile by tile (/flash): one head of the toy's layer through POST /api/v1/flash, walked
// one tile at a time: the grid of query blocks × key blocks with the tile lit, its scores, each row's
// maximum m before and after with the rescale factor exp(m_old − m_new) and ℓ, the running O beside the
// final output and standard attention's, what fast memory holds against the L × S matrix, and with the
// backward on, its tiles (A recomputed, dS, the running dQ, dK, dV) and the gradients beside autograd's.
//
// The state lives in the URL (toy/flash-url.js): the toy's layer and inputs (the worked example by
// default), head, br, bc, causal, backward and the tile shown. Every number drawn is the answer's, or
// (the backward's running sums, D, the factors) worked out from the answer's numbers by figures/flash.js.
import { getFlash, getToy } from './api.js';
import {
  backwardCaption, captionKey, fastMemory, forwardCaption, forwardStep, gradientsAfter, gridOf, indexRuns, maxAbsDiff, numberFormat,
  rowDots, span,
} from './figures/flash.js';
import { tNodes } from './i18n/index.js';
import { $, createPage, createStatus, errorMessage, latestWins, Lru, lang, setTitle, t } from './page.js';
import { describeErrors, listOf } from './toy/errors.js';
import { MAX_BLOCK, flashRequest, readFlashState, toyParams, writeFlashState } from './toy/flash-url.js';
import { identityWeights } from './toy/url.js';
import { createStepper } from './views/stepper.js';

const PLAY_INTERVAL = 1500; // ms between two tiles while playing
// Formulas, the same in every language: the sentences name them as {placeholders}, shown translate="no".
const FORMULA = {
  sum: 'ℓ = Σ exp(s − m)', factor: 'exp(m_old − m_new)', route: 'POST /api/v1/flash', expS: 'exp(S − m)',
  expInf: 'exp(−∞) = 0', exp0: 'exp(0) = 1', p: 'A = exp(S − m − log ℓ)', ds: 'dS = A ⊙ (dA − D)',
  dp: 'dA = dO · V_blockᵀ', dv: 'dV_block += Aᵀ · dO', dq: 'dQ_rows += scale · dS · K_block',
  dk: 'dK_block += scale · dSᵀ · Q_rows', scores: 'S = Q_block · K_blockᵀ × scale', D: 'D = rowsum(dO ⊙ O)',
  reference: 'softmax(Q Kᵀ × scale) V',
};
const KEY_NAMES = { home: 'Home', end: 'End' }; // ui-text: not UI (the names printed on the keys)

/** t() as nodes, with the formulas it names shown as notation. */
function say(key, values = {}) {
  const named = Object.keys(FORMULA).filter((name) => t(key, {}).includes(`{${name}}`));
  const formulas = Object.fromEntries(named.map((name) => [name, FORMULA[name]]));
  return tNodes(key, { ...values, ...formulas }, named);
}
const SAME_BOUND = 1e-12; // a difference this small is float64 rounding of numbers this size

const els = {
  br: $('flash-br'),
  bc: $('flash-bc'),
  head: $('flash-head'),
  causal: $('flash-causal'),
  backward: $('flash-backward'),
  toyLink: $('flash-toy-link'),
  urlNote: $('flash-url-note'),
  error: $('flash-error'),
  walk: $('flash-walk'),
  first: $('tile-first'),
  prev: $('tile-prev'),
  play: $('tile-play'),
  next: $('tile-next'),
  last: $('tile-last'),
  slider: $('tile-slider'),
  position: $('tile-position'),
  grid: $('tile-grid'),
  gridCaption: $('grid-caption'),
  memoryList: $('memory-list'),
  memoryCompare: $('memory-compare'),
  memoryBar: $('memory-bar-tile'),
  memoryNote: $('memory-note'),
  title: $('tile-title'),
  say: $('tile-say'),
  figures: $('tile-figures'),
  resultCheck: $('result-check'),
  resultFigures: $('result-figures'),
  grads: $('flash-grads'),
  gradsCheck: $('grads-check'),
  gradsFigures: $('grads-figures'),
};

const locale = lang === 'zh' ? 'zh-CN' : 'en';
const integer = new Intl.NumberFormat(locale);
const count = (n) => t(n === 1 ? 'flash.numbers.one' : 'flash.numbers.other', { n: integer.format(n) });
const tiny = (x) => (x === 0 ? '0' : x.toExponential(1).replace('-', '−'));
/** Indices as a list in the page's language, runs of three or more as ranges: q0, q2 and q5–q9. */
const indexList = (letter, indices) => listOf(indexRuns(indices).map(([a, b]) => (a === b ? `${letter}${a}` : `${letter}${a}–${letter}${b}`)), 'conjunction');
const rowsText = (rows) => indexList('q', rows);
const keysText = (keys) => indexList('k', keys);
/** A share in percent, small ones with two significant digits (never a misleading 0.0%). */
const percent = (share) => `${share >= 10 ? share.toFixed(0) : share >= 1 ? share.toFixed(1) : String(Number(share.toPrecision(2)))}%`;
const range = (letter, [start, end]) => (end - start === 1 ? `${letter}${start}` : `${letter}${start}–${letter}${end - 1}`);

// ---- small DOM helpers ----------------------------------------------------------------------------

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Notation, the same in every language. */
function notation(text, tag = 'span') {
  const node = element(tag, 'flash-symbol', text);
  node.setAttribute('translate', 'no');
  return node;
}

/**
 * A matrix as a table of its numbers (written one way for the whole table, figures/flash.js numberFormat; the
 * exact value in data-value; hidden: −∞, data-value "null"), rows and columns labelled; `key` names it for tests
 * (data-matrix).
 */
function matrixFigure(key, caption, matrix, { rowLabels, colLabels, mark = null } = {}) {
  const figure = element('figure', 'flash-fig');
  figure.dataset.figure = key;
  const head = element('figcaption', 'flash-caption');
  head.append(...(Array.isArray(caption) ? caption : [caption]));
  const scroll = element('div', 'flash-scroll');
  const table = element('table', 'flash-matrix');
  table.dataset.matrix = key;
  const format = numberFormat(matrix);
  table.setAttribute('translate', 'no');
  const top = element('tr');
  top.append(element('th', 'corner'));
  for (const label of colLabels) top.append(element('th', 'col-label', label));
  const thead = element('thead');
  thead.append(top);
  const body = element('tbody');
  matrix.forEach((row, r) => {
    const tr = element('tr');
    if (mark && mark(r)) tr.className = 'is-marked';
    tr.append(element('th', 'row-label', rowLabels[r]));
    for (const value of row) {
      const td = element('td', value === null ? 'is-hidden' : '', format(value));
      td.dataset.value = value === null ? 'null' : String(value);
      tr.append(td);
    }
    body.append(tr);
  });
  table.append(thead, body);
  scroll.append(table);
  figure.append(head, ...scrollBox(scroll));
  return figure;
}

/**
 * A table's scroll box as shown: the line that says it scrolls sideways, then the box in a frame that fades its
 * cut edge (both shown by markScrollable, only when the table is wider than the box).
 */
function scrollBox(scroll) {
  const hint = element('p', 'hint flash-scroll-hint', t('flash.scrollHint'));
  hint.hidden = true;
  const frame = element('div', 'flash-scroll-frame');
  frame.append(scroll);
  scroll.addEventListener('scroll', () => {
    frame.classList.toggle('is-at-end', scroll.scrollLeft + scroll.clientWidth >= scroll.scrollWidth - 1);
  }, { passive: true });
  return [hint, frame];
}

/** Shows the hint and the fading edge of each table box narrower than its table (a phone); hides the others'. */
function markScrollable() {
  for (const frame of document.querySelectorAll('.flash-scroll-frame')) {
    const scroll = frame.firstElementChild;
    const wider = scroll.scrollWidth > scroll.clientWidth + 1;
    frame.classList.toggle('is-scrollable', wider);
    frame.classList.toggle('is-at-end', scroll.scrollLeft + scroll.clientWidth >= scroll.scrollWidth - 1);
    frame.previousElementSibling.hidden = !wider;
  }
}
window.addEventListener('resize', () => markScrollable());

const labels = (letter, [start, end]) => span([start, end]).map((i) => `${letter}${i}`);
const dims = (n, letter = 'd') => Array.from({ length: n }, (_, i) => `${letter}${i}`);

// ---- state ------------------------------------------------------------------------------------------

let example = null; // the worked example's inputs: {queries, keys, values, heads}
let state = null; // the state drawn (or being drawn)
let shown = null; // the answer on screen
let stepper = null;
let unsubscribe = null;

const status = createStatus({ region: els.walk, beside: null });
const guard = latestWins();
const answers = new Lru(16); // request (JSON) -> answer: Back and Forward redraw at once

const page = createPage({
  path: '/flash',
  read: (params) => readFlashState(params, example),
  write: (next) => writeFlashState(next, example),
  render,
});

/** The steps: every forward tile, then (backward on) every backward tile. */
const stepsOf = (answer) => [
  ...answer.tiles.map((_, i) => `f${i}`),
  ...(answer.backward ? answer.backward.tiles.map((_, i) => `b${i}`) : []),
];

function syncUrl() {
  page.replace(state);
  linkToy();
}

/** The link to /toy with the same layer and inputs (where they can be edited, or a refusal fixed). */
function linkToy() {
  els.toyLink.href = `/toy${withLang(toyParams(state, example))}`;
}

/** `?params` with the page's lang parameter kept (a shared link keeps its language). */
function withLang(params) {
  const language = new URLSearchParams(window.location.search).get('lang');
  if (language !== null) params.set('lang', language);
  const text = params.toString();
  return text ? `?${text}` : '';
}

// ---- the setup form ------------------------------------------------------------------------------

function fillForm() {
  els.br.value = String(state.br);
  els.bc.value = String(state.bc);
  els.causal.checked = state.causal;
  els.backward.checked = state.backward;
}

function fillHeads(n) {
  els.head.replaceChildren(...Array.from({ length: n }, (_, h) => {
    const option = element('option', '', t('flash.headOption', { head: h }));
    option.value = String(h);
    return option;
  }));
  els.head.value = String(Math.min(state.head, n - 1));
}

/** A block size typed in the form, or null while it is not a whole number from 1 to 64. */
function blockOf(input) {
  const text = input.value.trim();
  const value = /^\d{1,2}$/.test(text) ? Number(text) : NaN;
  const ok = value >= 1 && value <= MAX_BLOCK;
  input.classList.toggle('is-invalid', !ok);
  input.setAttribute('aria-invalid', ok ? 'false' : 'true');
  return ok ? value : null;
}

function changed(change) {
  page.navigate({ ...state, ...change });
}

for (const [input, name] of [[els.br, 'br'], [els.bc, 'bc']]) {
  input.addEventListener('input', () => {
    const value = blockOf(input);
    if (value !== null && value !== state[name]) changed({ [name]: value, tile: 0 });
  });
  input.addEventListener('blur', () => {
    if (blockOf(input) === null) {
      input.value = String(state[name]);
      blockOf(input);
    }
  });
}
els.head.addEventListener('change', () => changed({ head: Number(els.head.value), tile: 0 }));
els.causal.addEventListener('change', () => changed({ causal: els.causal.checked, tile: 0 }));
els.backward.addEventListener('change', () => {
  const tiles = shown ? shown.tiles.length : 0;
  // turning the backward on starts it; off, a backward tile falls back to the forward's last
  const tile = els.backward.checked ? tiles : Math.min(state.tile, Math.max(0, tiles - 1));
  changed({ backward: els.backward.checked, tile });
});

// ---- the controls ----------------------------------------------------------------------------------

els.first.addEventListener('click', () => stepper?.seek(0));
els.prev.addEventListener('click', () => stepper?.prev());
els.next.addEventListener('click', () => stepper?.next());
els.last.addEventListener('click', () => stepper?.seek(stepper.state.steps.length - 1));
els.play.addEventListener('click', () => stepper?.toggle());
els.slider.addEventListener('input', () => stepper?.seek(Number(els.slider.value)));
els.grid.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-step]');
  if (button && stepper) stepper.seek(button.dataset.step);
});

const KEYS = { ArrowLeft: (s) => s.prev(), ArrowRight: (s) => s.next(), Home: (s) => s.seek(0), End: (s) => s.seek(s.state.steps.length - 1) };
document.addEventListener('keydown', (event) => {
  const action = KEYS[event.key];
  if (!action || !stepper || event.altKey || event.ctrlKey || event.metaKey) return;
  if (event.target.closest('input, select, textarea, [contenteditable]')) return;
  event.preventDefault();
  action(stepper);
});

function positionText(step) {
  const backward = step.startsWith('b');
  const n = Number(step.slice(1));
  const total = backward ? shown.backward.tiles.length : shown.tiles.length;
  return t(backward ? 'flash.position.backward' : 'flash.position.forward', { n: n + 1, total });
}

function showControls({ index, step, steps, playing }) {
  els.slider.max = String(steps.length - 1);
  els.slider.value = String(index);
  const text = positionText(step);
  els.slider.setAttribute('aria-valuetext', text);
  els.position.textContent = text;
  els.play.textContent = t(playing ? 'walk.pause' : 'walk.play');
  els.play.setAttribute('aria-pressed', playing ? 'true' : 'false');
  els.first.disabled = els.prev.disabled = index === 0;
  els.last.disabled = els.next.disabled = index === steps.length - 1;
}

// ---- the grid of tiles -------------------------------------------------------------------------------

let gridPhase = null; // which tiles the grid holds: 'f' or 'b'

function drawGrid(phase) {
  const tiles = phase === 'b' ? shown.backward.tiles : shown.tiles;
  const { rows, cols } = gridOf(tiles);
  gridPhase = phase;
  els.grid.style.setProperty('--cols', String(cols));
  els.grid.style.setProperty('--tile', cols <= 8 && rows <= 8 ? '48px' : cols <= 24 ? '34px' : '24px');
  els.grid.dataset.phase = phase;
  const cells = [element('span', 'tile-corner')];
  const firstRow = tiles.filter((tile) => tile.row_block === 0);
  for (const tile of firstRow) {
    const label = element('span', 'tile-col-label', range('k', tile.cols));
    label.setAttribute('translate', 'no');
    cells.push(label);
  }
  tiles.forEach((tile, i) => {
    if (tile.col_block === 0) {
      const label = element('span', 'tile-row-label', range('q', tile.rows));
      label.setAttribute('translate', 'no');
      cells.push(label);
    }
    const button = element('button', `tile${tile.skipped ? ' is-skipped' : ''}`);
    button.type = 'button';
    button.dataset.step = `${phase}${i}`;
    button.dataset.rowBlock = String(tile.row_block);
    button.dataset.colBlock = String(tile.col_block);
    const where = { row: tile.row_block, col: tile.col_block, rows: range('q', tile.rows), cols: range('k', tile.cols) };
    button.setAttribute('aria-label', t(tile.skipped ? 'flash.grid.tileSkipped' : 'flash.grid.tile', where));
    button.title = button.getAttribute('aria-label');
    cells.push(button);
  });
  els.grid.replaceChildren(...cells);
  const key = phase === 'b' ? 'flash.grid.captionBackward' : 'flash.grid.caption';
  els.gridCaption.textContent = t(key, { rows, cols, br: shown.block_rows, bc: shown.block_cols });
}

function markGrid(phase, i) {
  if (gridPhase !== phase) drawGrid(phase);
  for (const button of els.grid.querySelectorAll('button.tile')) {
    const j = Number(button.dataset.step.slice(1));
    button.classList.toggle('is-done', j < i);
    if (j === i) button.setAttribute('aria-current', 'step');
    else button.removeAttribute('aria-current');
  }
  const current = els.grid.querySelector('button[aria-current="step"]');
  const scroller = els.grid.parentElement;
  if (current && scroller.scrollWidth > scroller.clientWidth + 1) {
    // keep the lit tile in view inside the grid's own scroll box (never scroll the page)
    const left = current.offsetLeft - scroller.clientWidth / 2 + current.offsetWidth / 2;
    scroller.scrollLeft = Math.max(0, left);
  }
  if (current && scroller.scrollHeight > scroller.clientHeight + 1) {
    const top = current.offsetTop - scroller.clientHeight / 2 + current.offsetHeight / 2;
    scroller.scrollTop = Math.max(0, top);
  }
}

// ---- fast memory --------------------------------------------------------------------------------------

function drawMemory(tile, backward) {
  const memory = fastMemory(shown, tile, backward);
  const dk = shown.q[0].length;
  const dv = shown.v[0].length;
  const { rows: nr, cols: nc } = memory;
  const shapes = {
    q: `${nr} × ${dk}`, k: `${nc} × ${dk}`, v: `${nc} × ${dv}`, s: `${nr} × ${nc}`, ml: `2 × ${nr}`, o: `${nr} × ${dv}`,
    dO: `${nr} × ${dv}`, d: `${nr}`, p: `${nr} × ${nc}`, ds: `${nr} × ${nc}`, dq: `${nr} × ${dk}`, dk: `${nc} × ${dk}`,
    dv: `${nc} × ${dv}`,
  };
  els.memoryList.replaceChildren(...Object.entries(memory.parts).map(([name, n]) => {
    const li = element('li');
    li.dataset.part = name;
    li.dataset.count = String(n);
    const label = element('span', 'memory-name');
    label.append(...say(`flash.memory.part.${name}`));
    li.append(label, ' ', notation(`${shapes[name]} =`),
      ' ', element('span', 'memory-count', count(n)));
    return li;
  }));
  const total = element('li', 'memory-total');
  total.dataset.count = String(memory.total);
  total.textContent = t('flash.memory.total', { total: count(memory.total) });
  els.memoryList.append(total);
  const held = backward ? 2 * memory.scores : memory.scores;
  const full = backward ? memory.fullBackward : memory.full;
  const share = (100 * held) / full;
  els.memoryCompare.dataset.tile = String(held);
  els.memoryCompare.dataset.full = String(full);
  els.memoryCompare.textContent = t(backward ? 'flash.memory.compareBackward' : 'flash.memory.compare', {
    tile: count(held), rows: nr, cols: nc, full: count(full), L: memory.L, S: memory.S,
    share: percent(share),
  });
  els.memoryBar.style.width = `${Math.max(0.5, Math.min(100, share))}%`;
  els.memoryNote.textContent = t('flash.memory.note');
}

// ---- one tile ------------------------------------------------------------------------------------------

function sayList(items, wordsOf) {
  els.say.replaceChildren(...items.map((item) => {
    const li = element('li');
    li.append(...wordsOf({ ...item, key: captionKey(item) }));
    li.dataset.say = item.key;
    if (item.rows) li.dataset.rows = item.rows.join(',');
    if (item.keys) li.dataset.keys = item.keys.join(',');
    if (item.factors) li.dataset.factors = item.factors.map(String).join(',');
    return li;
  }));
}

function drawForward(i) {
  const step = forwardStep(shown, i);
  const { tile } = step;
  const rowLabels = labels('q', tile.rows);
  const colLabels = labels('k', tile.cols);
  els.title.textContent = t('flash.tile.title', { row: tile.row_block, col: tile.col_block, rows: range('q', tile.rows), cols: range('k', tile.cols) });
  const format = numberFormat(Object.values(rowColumns(step))); // the factors as the row table writes them
  sayList(forwardCaption(step), (item) => say(item.key, {
    rows: item.rows ? rowsText(item.rows) : '',
    factors: item.factors ? listOf(item.factors.map(format), 'conjunction') : '',
  }));
  const dv = shown.v[0].length;
  const figures = [
    matrixFigure('scores', tNodes('flash.fig.scores', {
      formula: FORMULA.scores, rows: tile.rows[1] - tile.rows[0], cols: tile.cols[1] - tile.cols[0],
    }, ['formula']),
      tile.scores, { rowLabels, colLabels }),
    rowStateFigure(step, rowLabels),
    matrixFigure('o', t('flash.fig.o'), tile.o, { rowLabels, colLabels: dims(dv) }),
  ];
  if (step.last) {
    const [r0, r1] = tile.rows;
    figures.push(
      matrixFigure('block-output', t('flash.fig.blockOutput'), shown.output.slice(r0, r1), { rowLabels, colLabels: dims(dv) }),
      matrixFigure('block-reference', t('flash.fig.blockReference'), shown.reference.slice(r0, r1), { rowLabels, colLabels: dims(dv) }),
    );
  }
  els.figures.replaceChildren(...figures);
  els.figures.dataset.tile = String(i);
  els.figures.dataset.phase = 'f';
}

/** The row table's columns for a step: the tile's maximum, m before → after, the factor, ℓ before → after. */
function rowColumns(step) {
  const { tile, before, maxima, factors } = step;
  return { max: maxima, mOld: before.m, mNew: tile.m, factor: factors, lOld: before.l, lNew: tile.l };
}

/** Per row: the tile's maximum, m before → after, the factor exp(m_old − m_new), ℓ before → after. */
function rowStateFigure(step, rowLabels) {
  const figure = element('figure', 'flash-fig');
  figure.dataset.figure = 'rows';
  const caption = element('figcaption', 'flash-caption');
  caption.append(...say('flash.fig.rows'));
  figure.append(caption);
  const scroll = element('div', 'flash-scroll');
  const table = element('table', 'flash-matrix flash-rows');
  table.dataset.matrix = 'rows';
  table.setAttribute('translate', 'no');
  const head = element('tr');
  for (const name of ['', 'rowmax(S)', 'm_old', 'm_new', 'exp(m_old − m_new)', 'ℓ_old', 'ℓ_new']) head.append(element('th', 'col-label', name));
  const thead = element('thead');
  thead.append(head);
  const body = element('tbody');
  const columns = rowColumns(step);
  const format = numberFormat(Object.values(columns));
  rowLabels.forEach((label, r) => {
    const tr = element('tr');
    tr.dataset.kind = step.kinds[r];
    tr.append(element('th', 'row-label', label));
    for (const [name, values] of Object.entries(columns)) {
      const value = values[r];
      const rescaled = name === 'factor' && step.kinds[r] === 'grew'; // the factor below 1 that shrank ℓ and O
      const td = element('td', value === null ? 'is-hidden' : rescaled ? 'is-rescaled' : '', format(value));
      td.dataset.col = name;
      td.dataset.value = value === null ? 'null' : String(value);
      tr.append(td);
    }
    body.append(tr);
  });
  table.append(thead, body);
  scroll.append(table);
  figure.append(...scrollBox(scroll));
  return figure;
}

function drawBackward(i) {
  const back = shown.backward;
  const tile = back.tiles[i];
  const rowLabels = labels('q', tile.rows);
  const colLabels = labels('k', tile.cols);
  const [r0, r1] = tile.rows;
  const [c0, c1] = tile.cols;
  els.title.textContent = t('flash.tile.titleBackward', { row: tile.row_block, col: tile.col_block, rows: range('q', tile.rows), cols: range('k', tile.cols) });
  sayList(backwardCaption(shown, i), (item) => say(item.key, {
    rows: item.rows ? rowsText(item.rows) : '', keys: item.keys ? keysText(item.keys) : '',
  }));
  const grads = gradientsAfter(shown, i);
  const D = rowDots(back.upstream, shown.output).slice(r0, r1);
  const dk = shown.q[0].length;
  const dv = shown.v[0].length;
  els.figures.replaceChildren(
    matrixFigure('p', t('flash.fig.p'), tile.p, { rowLabels, colLabels }),
    matrixFigure('D', tNodes('flash.fig.D', { formula: FORMULA.D }, ['formula']), D.map((x) => [x]), { rowLabels, colLabels: ['D'] }),
    matrixFigure('ds', tNodes('flash.fig.ds', { formula: FORMULA.ds }, ['formula']), tile.ds, { rowLabels, colLabels }),
    matrixFigure('dq-run', t('flash.fig.dqRun', { rows: rowsText(span(tile.rows)) }), grads.dq.slice(r0, r1), { rowLabels, colLabels: dims(dk) }),
    matrixFigure('dk-run', t('flash.fig.dkRun', { keys: keysText(span(tile.cols)) }), grads.dk.slice(c0, c1), { rowLabels: colLabels, colLabels: dims(dk) }),
    matrixFigure('dv-run', t('flash.fig.dvRun', { keys: keysText(span(tile.cols)) }), grads.dv.slice(c0, c1), { rowLabels: colLabels, colLabels: dims(dv) }),
  );
  els.figures.dataset.tile = String(i);
  els.figures.dataset.phase = 'b';
}

function drawStep(step) {
  const phase = step[0];
  const i = Number(step.slice(1));
  const tile = phase === 'b' ? shown.backward.tiles[i] : shown.tiles[i];
  markGrid(phase, i);
  drawMemory(tile, phase === 'b');
  if (phase === 'b') drawBackward(i);
  else drawForward(i);
  markResults(tile);
  markScrollable();
  els.walk.dataset.step = step;
  const index = stepper ? stepper.state.index : 0;
  if (state.tile !== index) {
    state = { ...state, tile: index };
    syncUrl();
  }
}

// ---- the answer: the output and the gradients beside standard attention's ------------------------------

/** Mark the current tile's rows in the answer's tables: its queries in O, m, ℓ and dQ, its keys in dK and dV. */
function markResults(tile) {
  const mark = (keys, [start, end]) => {
    for (const key of keys) {
      const table = document.querySelector(`#flash-result [data-matrix="${key}"], #flash-grads [data-matrix="${key}"]`);
      if (!table) continue;
      [...table.tBodies[0].rows].forEach((tr, r) => tr.classList.toggle('is-marked', r >= start && r < end));
    }
  };
  mark(['output', 'reference', 'ml', 'dq', 'dq-ref'], tile.rows);
  mark(['dk', 'dk-ref', 'dv', 'dv-ref'], tile.cols);
}

function drawResult() {
  const L = shown.q.length;
  const dv = shown.v[0].length;
  const rowLabels = dims(L, 'q');
  const same = shown.max_abs_diff <= SAME_BOUND;
  els.resultCheck.textContent = t(same ? 'flash.result.same' : 'flash.result.differs', { diff: tiny(shown.max_abs_diff) });
  els.resultCheck.dataset.value = String(shown.max_abs_diff);
  els.resultCheck.classList.toggle('is-same', same);
  els.resultFigures.replaceChildren(
    matrixFigure('output', t('flash.fig.output'), shown.output, { rowLabels, colLabels: dims(dv) }),
    matrixFigure('reference', tNodes('flash.fig.reference', { formula: FORMULA.reference }, ['formula']), shown.reference, { rowLabels, colLabels: dims(dv) }),
    matrixFigure('ml', t('flash.fig.ml'), shown.m.map((m, r) => [m, shown.l[r]]), { rowLabels, colLabels: ['m', 'ℓ'] }),
  );
  const back = shown.backward;
  els.grads.hidden = !back;
  if (!back) {
    els.gradsFigures.replaceChildren();
    return;
  }
  const sameGrads = back.max_abs_diff <= SAME_BOUND;
  els.gradsCheck.textContent = t(sameGrads ? 'flash.grads.same' : 'flash.grads.differs', { diff: tiny(back.max_abs_diff) });
  els.gradsCheck.dataset.value = String(back.max_abs_diff);
  els.gradsCheck.classList.toggle('is-same', sameGrads);
  const dk = shown.q[0].length;
  const S = shown.k.length;
  const figures = [];
  for (const [name, width, rows] of [['dq', dk, rowLabels], ['dk', dk, dims(S, 'k')], ['dv', dv, dims(S, 'k')]]) {
    const symbol = { dq: 'dQ', dk: 'dK', dv: 'dV' }[name];
    const pair = element('div', 'flash-pair');
    pair.append(
      matrixFigure(name, t('flash.fig.gradTiles', { name: symbol }), back[name], { rowLabels: rows, colLabels: dims(width) }),
      matrixFigure(`${name}-ref`, t('flash.fig.gradAutograd', { name: symbol }), back.reference[name], { rowLabels: rows, colLabels: dims(width) }),
    );
    pair.dataset.diff = String(maxAbsDiff(back[name], back.reference[name]));
    figures.push(pair);
  }
  els.gradsFigures.replaceChildren(...figures);
}

function summary() {
  const parts = [t('flash.summary', {
    head: shown.head, L: shown.q.length, S: shown.k.length, dk: shown.q[0].length, scale: shown.scale.toFixed(4),
    tiles: shown.tiles.length, br: shown.block_rows, bc: shown.block_cols,
  })];
  if (state.causal) parts.push(t('toy.summary.causal'));
  if (state.hidden.length) parts.push(t('toy.summary.hidden', { keys: state.hidden.map((j) => `k${j}`).join(', ') }));
  return parts.join(' · ');
}

// ---- loading ----------------------------------------------------------------------------------------------

function showError(error, body) {
  const items = Array.isArray(error?.body?.errors) ? error.body.errors : [];
  const lines = items.length ? describeErrors(items, body).map((item) => item.text) : [errorMessage(error)];
  els.error.textContent = lines.join(' ');
  els.error.hidden = false;
  els.walk.classList.toggle('is-stale', shown !== null);
}

async function render(next) {
  state = { ...next };
  fillForm();
  linkToy();
  const unreadable = state.unreadable ?? [];
  els.urlNote.hidden = unreadable.length === 0;
  els.urlNote.textContent = unreadable.length
    ? t('flash.url.unreadable', {
      fields: listOf(unreadable.map((name) => (name === 'block_rows' ? t('flash.br') : name === 'block_cols' ? t('flash.bc') : t(`toy.name.${name}`))), 'conjunction'),
    })
    : '';
  if (!shown) fillHeads(Number.isInteger(state.heads) && state.heads > 0 ? state.heads : 1); // until an answer says
  const body = flashRequest(state);
  const ticket = guard.begin();
  status.busy(true);
  els.walk.setAttribute('aria-busy', 'true');
  let answer;
  try {
    answer = await answers.load(JSON.stringify(body), () => getFlash(body));
  } catch (error) {
    if (!guard.current(ticket)) return;
    status.busy(false);
    showError(error, body);
    return;
  }
  if (!guard.current(ticket)) return;
  status.busy(false);
  els.error.hidden = true;
  els.walk.classList.remove('is-stale');
  shown = answer;
  gridPhase = null;
  els.walk.hidden = false;
  $('flash-result').hidden = false;
  fillHeads(answer.n_heads);
  if (state.head !== answer.head) state.head = answer.head;
  status.info(summary());
  drawResult();
  if (unsubscribe) unsubscribe();
  stepper?.pause();
  const steps = stepsOf(answer);
  stepper = createStepper({ steps, onStep: (step) => drawStep(step), interval: PLAY_INTERVAL });
  unsubscribe = stepper.subscribe(showControls);
  const tile = Math.min(state.tile, steps.length - 1);
  await stepper.seek(tile);
  syncUrl();
  els.walk.setAttribute('aria-busy', 'false');
  els.walk.dataset.drawn = page.urlOf(state);
}

// ---- start: the worked example's inputs first (the URL's defaults), then the URL's state -----------------

setTitle('page.flash');
$('flash-intro').replaceChildren(...say('flash.intro'));
$('flash-keys').replaceChildren(...tNodes('flash.keysHint', KEY_NAMES, Object.keys(KEY_NAMES)));
status.busy(true);
getToy({}).then(
  (toy) => {
    const { q, k, v } = toy.steps.input;
    example = { queries: q, keys: k, values: v, heads: toy.n_heads, weights: identityWeights(q[0].length) };
    return page.start();
  },
  (error) => status.error(error),
);

