// The compare page (/compare): one head's attention for two sentences A and B. When their tokens
// line up (as many of them, with the special tokens and the segments at the same positions), the
// difference A − B is drawn on a diverging scale beside A and B; otherwise A and B side by side,
// with one layer and head picker for both and a sentence saying why no difference is drawn.
// Word view (figures/words.js) and hidden special tokens apply to both; every figure exports as
// PNG, SVG, JSON and CSV (views/export.js). The form is page.js's createRunForm with two texts: for a
// model that takes one text (`pairs: false`) the second-segment fields are disabled and a note says so; a
// segment from the URL stays in its field and in the URL, and is never sent.
// State in the URL: /compare?a=…&a_pair=…&b=…&b_pair=…&model=…&layer=…&head=…&words=1&specials=hide (as the explorer)
import { getAttentionCompact } from './api.js';
import { toRows } from './compact.js';
import { difference, differenceFigure, sentenceFigure } from './figures/compare.js';
import { matrixMax } from './figures/colormap.js';
import { hideSpecial, mergeWords, wordMatrix } from './figures/words.js';
import {
  $, createPage, createRunForm, createStatus, fillSelect, indexParam, latestWins, linkTo, loadModels, Lru, modelOf, range,
  setTitle, t, takesOneText,
} from './page.js';
import { attnscopeVersion, exportFigure, exportNumbers } from './views/export.js';
import { downloadName, renderFigure } from './views/plot.js';
import { loadPlotly } from './views/plotly-loader.js';

const els = {
  intro: $('intro'),
  results: $('results'),
  layer: $('layer-select'),
  head: $('head-select'),
  words: $('words-toggle'),
  special: $('special-toggle'),
  note: $('compare-note'),
  viewNote: $('view-note'),
  maps: $('compare-maps'),
  diffPanel: $('panel-diff'),
  diffLegend: $('diff-legend'),
  sharedLegend: $('shared-legend'),
  plots: { a: $('plot-a'), b: $('plot-b'), diff: $('plot-diff') },
  sentences: { a: $('sentence-a'), b: $('sentence-b') },
  links: { a: $('explorer-a'), b: $('explorer-b') },
};

const FIRST_WORDS = 4;
const PAIR = Object.freeze({ a: 'aPair', b: 'bPair' }); // the state's field of each sentence's second segment
const flag = (value) => value === '1' || value === 'true';
const orNull = (value) => (value && value.trim() ? value : null);

const page = createPage({
  path: '/compare',
  read: (params) => ({
    a: params.get('a'), // null: nothing to compare yet
    aPair: orNull(params.get('a_pair')),
    b: params.get('b'),
    bPair: orNull(params.get('b_pair')),
    model: params.get('model') || null,
    layer: indexParam(params.get('layer')),
    head: indexParam(params.get('head')),
    words: flag(params.get('words')),
    hide: params.get('specials') === 'hide',
  }),
  write: (state) => {
    const params = new URLSearchParams();
    if (state.a === null && state.b === null) return params;
    params.set('a', state.a ?? '');
    if (state.aPair !== null) params.set('a_pair', state.aPair);
    params.set('b', state.b ?? '');
    if (state.bPair !== null) params.set('b_pair', state.bPair);
    if (state.model !== null) params.set('model', state.model);
    params.set('layer', String(state.layer));
    params.set('head', String(state.head));
    if (state.words) params.set('words', '1');
    if (state.hide) params.set('specials', 'hide');
    return params;
  },
  render,
});
const status = createStatus();
const guard = latestWins();
const heads = new Lru(16); // sentence|layer|head -> {tokens, matrix rows}

let shown = null; // what is on screen, for the pickers, toggles and exports

/** The two sentences' fields (templates/compare.html) in page.js's sentence form. */
const FIELDS = {
  form: 'compare-form', note: 'compare-pair-note', drop: 'compare-pair-drop',
  texts: [
    { text: 'compare-a', pair: 'compare-a-pair', keys: { text: 'a', pair: 'aPair' } },
    { text: 'compare-b', pair: 'compare-b-pair', keys: { text: 'b', pair: 'bPair' } },
  ],
  words: { placeholder: 'compare.pair.placeholder', single: 'followups.compare.single', held: 'followups.compare.held' },
};
// A new pair of sentences from the form, at the layer, head and view on screen.
const form = createRunForm({
  status,
  fields: FIELDS,
  onSubmit: (input) => page.navigate({ ...(shown ? shown.state : page.state()), ...input }),
});

/** The second segment a sentence sends: none for a model that takes one text. */
const sentPair = (state, side) => (takesOneText(state.model) ? null : state[PAIR[side]]);

function writeForm(state) {
  form.write(state);
  els.words.checked = state.words;
  els.special.checked = state.hide;
}

function fetchHead(text, pair, model, layer, head) {
  return heads.load(JSON.stringify([text, pair, model, layer, head]), async () => {
    const { header, maps } = await getAttentionCompact({ text, text_pair: pair, model, layers: [layer], heads: [head] });
    const n = header.shape[2];
    return { model: header.model, tokens: header.tokens, matrix: toRows(maps[0][0], n, n) };
  });
}

/**
 * What one sentence shows: its units (tokens, or words in word view), their matrix (word view first,
 * then special tokens dropped with rows renormalised) and the indices of the units kept.
 */
function view(sentence, text, pair, { words, hide }) {
  let units = sentence.tokens;
  let matrix = sentence.matrix;
  if (words) {
    units = mergeWords(sentence.tokens, text, pair).words;
    matrix = wordMatrix(matrix, units);
  }
  if (hide) {
    const hidden = hideSpecial(matrix, units);
    units = hidden.kept.map((i) => units[i]);
    matrix = hidden.matrix;
  }
  return { units, matrix };
}

/**
 * Whether A's and B's units line up position by position: null when they do, else why not
 * ({kind: 'length'} or {kind: 'layout', index}: the first position whose special flag or segment differs).
 */
function misalignment(unitsA, unitsB) {
  if (unitsA.length !== unitsB.length) return { kind: 'length' };
  const index = unitsA.findIndex((unit, i) => unit.special !== unitsB[i].special || unit.segment !== unitsB[i].segment
    || (unit.special && unit.text !== unitsB[i].text));
  return index < 0 ? null : { kind: 'layout', index };
}

async function render(state) {
  const ticket = guard.begin();
  delete els.results.dataset.drawn; // set again once this state is on screen
  writeForm(state);
  if (state.a === null && state.b === null) {
    status.busy(false);
    status.info();
    els.results.hidden = true;
    els.intro.hidden = false;
    setTitle('page.compare');
    return;
  }
  status.busy(true);
  status.info();
  let answers;
  try {
    await loadModels();
    const model = modelOf(state.model) ?? modelOf(null); // an unknown id: the default's sizes (the server says no)
    const fixed = {
      ...state,
      layer: state.layer < model.n_layers ? state.layer : 0,
      head: state.head < model.n_heads ? state.head : 0,
    };
    const [a, b] = await Promise.all([
      fetchHead(state.a ?? '', sentPair(state, 'a'), state.model, fixed.layer, fixed.head),
      fetchHead(state.b ?? '', sentPair(state, 'b'), state.model, fixed.layer, fixed.head),
      loadPlotly(),
    ]);
    answers = { a, b, model, fixed };
  } catch (error) {
    if (guard.current(ticket)) status.error(error); // the last good result stays
    return;
  }
  if (!guard.current(ticket)) return;
  const { a, b, model, fixed } = answers;
  page.replace(fixed);
  fillSelect(els.layer, range(model.n_layers).map(String), fixed.layer);
  fillSelect(els.head, range(model.n_heads).map(String), fixed.head);

  els.intro.hidden = true;
  els.results.hidden = false; // before Plotly measures the containers
  const shownA = view(a, fixed.a, sentPair(fixed, 'a'), fixed);
  const shownB = view(b, fixed.b, sentPair(fixed, 'b'), fixed);
  const why = misalignment(shownA.units, shownB.units);
  const units = t(fixed.words ? 'compare.units.words' : 'compare.units.tokens');
  drawNote(why, shownA.units, shownB.units, units);
  drawViewNote(fixed);

  for (const side of ['a', 'b']) {
    const text = fixed[side];
    const pair = sentPair(fixed, side);
    els.sentences[side].textContent = pair === null ? text : `${text} ‖ ${pair}`;
    const link = { text, pair, heldPair: fixed[PAIR[side]], model: fixed.model, layer: fixed.layer, head: fixed.head };
    els.links[side].href = linkTo('/', link, ['layer', 'head']); // a held segment stays in the link
    els.links[side].title = t('compare.openTitle', { layer: fixed.layer, head: fixed.head });
  }

  const zmax = Math.max(matrixMax(shownA.matrix), matrixMax(shownB.matrix));
  const where = { layer: fixed.layer, head: fixed.head };
  const width = (element) => Math.max(280, element.clientWidth);
  els.diffPanel.hidden = why !== null;
  els.maps.classList.toggle('is-aligned', why === null);
  const drawing = [
    renderFigure(els.plots.a, sentenceFigure({
      units: shownA.units, matrix: shownA.matrix, title: t('compare.figure.a', where), zmax, size: width(els.plots.a),
    }), { filename: fileName('a', fixed) }),
    renderFigure(els.plots.b, sentenceFigure({
      units: shownB.units, matrix: shownB.matrix, title: t('compare.figure.b', where), zmax, size: width(els.plots.b),
    }), { filename: fileName('b', fixed) }),
  ];
  let diff = null;
  if (why === null) {
    diff = difference(shownA.matrix, shownB.matrix);
    const figure = differenceFigure({
      unitsA: shownA.units, unitsB: shownB.units, matrix: diff, title: t('compare.figure.diff', where), size: width(els.plots.diff),
    });
    const max = figure.data[0].zmax;
    els.diffLegend.textContent = diff.every((row) => row.every((v) => v === 0))
      ? t('compare.legend.identical')
      : t('compare.legend.diff', { max: formatNumber(max) });
    drawing.push(renderFigure(els.plots.diff, figure, { filename: fileName('diff', fixed) }));
  } else if (els.plots.diff.classList.contains('js-plotly-plot')) {
    window.Plotly.purge(els.plots.diff);
  }
  els.sharedLegend.textContent = t('compare.legend.shared', { max: formatNumber(zmax) });
  await Promise.all(drawing);
  if (!guard.current(ticket)) return;
  shown = { state: fixed, a, b, shownA, shownB, diff };
  status.busy(false);
  status.info(t('compare.summary', {
    model: a.model, a: a.tokens.length, b: b.tokens.length, layer: fixed.layer, head: fixed.head,
  }));
  setTitle('page.compare', fixed.a);
  els.results.dataset.drawn = page.urlOf(fixed);
}

const formatNumber = (value) => (value >= 0.01 ? value.toFixed(3) : value.toExponential(2));

function drawNote(why, unitsA, unitsB, units) {
  els.note.classList.toggle('is-aligned', why === null);
  if (why === null) {
    const differ = unitsA.filter((unit, i) => unit.text !== unitsB[i].text).length;
    els.note.textContent = t('compare.aligned', { count: unitsA.length, units, differ });
  } else if (why.kind === 'length') {
    els.note.textContent = t('compare.notAligned.length', { a: unitsA.length, b: unitsB.length, units });
  } else {
    els.note.textContent = t('compare.notAligned.layout', { count: unitsA.length, units, index: why.index });
  }
}

function drawViewNote(state) {
  const notes = [];
  if (state.words) notes.push(t('compare.legend.words'));
  if (state.hide) notes.push(t('compare.legend.hidden'));
  els.viewNote.hidden = notes.length === 0;
  els.viewNote.textContent = notes.join(' ');
}

function fileName(figure, state) {
  const text = figure === 'b' ? state.b : state.a;
  const words = (text ?? '').trim().split(/\s+/).slice(0, FIRST_WORDS).join(' ');
  const which = figure === 'diff' ? 'a-minus-b' : figure;
  return downloadName('compare', which, 'layer', state.layer, 'head', state.head, state.words ? 'words' : null, words);
}

// ---- export of the numbers on screen ----

const unitLabel = (unit) => unit.display ?? unit.text;

async function numbersOf(figure) {
  const { state, a, b, shownA, shownB, diff } = shown;
  const version = await attnscopeVersion();
  const side = (which) => ({
    text: state[which], pair: sentPair(state, which), tokens: (which === 'a' ? shownA : shownB).units,
  });
  const one = figure === 'b' ? 'b' : 'a';
  const meta = {
    model: (one === 'a' ? a : b).model,
    ...side(one),
    layer: state.layer,
    head: state.head,
    kind: figure === 'diff' ? 'difference' : 'attention',
    edit: null,
    version,
    units: state.words ? 'words' : 'tokens',
    hide_special: state.hide,
  };
  if (figure === 'diff') meta.b = side('b');
  const matrix = figure === 'diff' ? diff : (figure === 'a' ? shownA : shownB).matrix;
  const labels = (figure === 'b' ? shownB : shownA).units.map(unitLabel);
  return { meta, rows: labels, cols: labels, matrix, filename: fileName(figure, state) };
}

els.maps.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-export]');
  if (!button || !shown) return;
  const { figure, export: format } = button.dataset;
  try {
    if (format === 'png' || format === 'svg') {
      await exportFigure(els.plots[figure], format, fileName(figure, shown.state));
    } else {
      exportNumbers(format, await numbersOf(figure));
    }
  } catch (error) {
    status.error(error);
  }
});

// ---- controls ----

/** A change of layer, head or view, applied to what is on screen. */
function choose(change) {
  if (shown) page.navigate({ ...shown.state, ...change });
}

els.layer.addEventListener('change', () => choose({ layer: Number(els.layer.value) }));
els.head.addEventListener('change', () => choose({ head: Number(els.head.value) }));
els.words.addEventListener('change', () => choose({ words: els.words.checked }));
els.special.addEventListener('change', () => choose({ hide: els.special.checked }));

page.start();
