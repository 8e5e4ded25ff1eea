// The positional encodings page (/positions): the sinusoidal table beside the model's learned one,
// how alike two positions are against their distance (why relative positions emerge), RoPE's
// angles and its rotation of one pair of dimensions, and ALiBi's bias of every head.
// State in the URL: /positions?length=…&d_model=…&heads=…&pair=…
import { getPositions } from './api.js';
import {
  alibiFigure, anglesFigure, distanceFigure, rotationFigure, similarityByDistance, tableFigure,
} from './figures/positions.js';
import { $, createPage, createStatus, latestWins, Lru, loadModels, setTitle, t } from './page.js';
import { renderFigure } from './views/plot.js';

const DEFAULTS = Object.freeze({ length: 64, d_model: 64, heads: 8, pair: 6 }); // pair 6 turns 0.18 rad a step
const LIMITS = Object.freeze({ length: [2, 512], d_model: [2, 1024], heads: [1, 16], pair: [0, 511] });
const ROTATION_POINTS = 24; // positions drawn on RoPE's circle
const ALIBI_SIDE = 16; // ALiBi's bias is drawn for the first 16 positions of each head

const fields = {
  length: $('positions-length'),
  d_model: $('positions-d-model'),
  heads: $('positions-heads'),
  pair: $('positions-pair'),
};

/** A whole number within the field's limits, else the default (d_model rounded down to even). */
function numberParam(params, name) {
  const text = params.get(name);
  const [low, high] = LIMITS[name];
  const value = text !== null && /^\d{1,4}$/.test(text) ? Number(text) : DEFAULTS[name];
  const within = Math.min(Math.max(value, low), high);
  return name === 'd_model' ? within - (within % 2) : within;
}

/** The state of a query string (or of the form's values): every field within its limits. */
function read(params) {
  const state = Object.fromEntries(Object.keys(DEFAULTS).map((name) => [name, numberParam(params, name)]));
  return { ...state, pair: Math.min(state.pair, state.d_model / 2 - 1) };
}

const page = createPage({
  path: '/positions',
  read,
  write: (state) => new URLSearchParams(
    Object.entries(state).filter(([name, value]) => value !== DEFAULTS[name]).map(([name, value]) => [name, String(value)]),
  ),
  render,
});
const status = createStatus();
const guard = latestWins();
const tables = new Lru(16);

const table = (query) => tables.load(JSON.stringify(query), () => getPositions(query));

async function render(state) {
  const ticket = guard.begin();
  for (const [name, input] of Object.entries(fields)) input.value = String(state[name]);
  fields.pair.max = String(state.d_model / 2 - 1);
  setTitle('page.positions');
  status.busy(true);
  let answers;
  try {
    const models = await loadModels();
    // the learned table is the default model's, or the first served model's that has one (RoPE models have none)
    const learnedTables = models.filter((m) => m.positions === 'learned');
    const model = learnedTables.find((m) => m.default) || learnedTables[0] || models.find((m) => m.default) || models[0];
    const length = Math.min(state.length, model.max_tokens);
    answers = await Promise.all([
      table({ kind: 'sinusoidal', length: state.length, d_model: state.d_model }),
      table({ kind: 'learned', length, model: model.id }),
      table({ kind: 'rope', length: state.length, d_model: state.d_model }),
      table({ kind: 'alibi', length: Math.min(state.length, ALIBI_SIDE), n_heads: state.heads }),
    ]);
    answers.push(model);
  } catch (error) {
    if (guard.current(ticket)) status.error(error);
    return;
  }
  if (!guard.current(ticket)) return;
  status.busy(false);
  const [sinusoidal, learned, rope, alibi, model] = answers;
  status.info(t('positions.summary', { length: state.length, dModel: state.d_model, model: model.id, learnedDModel: learned.d_model }));
  $('rotation-hint').textContent = t('positions.rotation.hint', { pair: state.pair, dims: `${2 * state.pair}, ${2 * state.pair + 1}` });

  const low = Math.min(...alibi.bias.flat(2));
  await Promise.all([
    renderFigure($('plot-sinusoidal'), tableFigure(sinusoidal.matrix)),
    renderFigure($('plot-learned'), tableFigure(learned.matrix)),
    renderFigure($('plot-distance'), distanceFigure([
      { name: t('positions.sinusoidal.name'), values: similarityByDistance(sinusoidal.matrix) },
      { name: t('positions.learned.name', { model: model.id }), values: similarityByDistance(learned.matrix) },
    ])),
    renderFigure($('plot-angles'), anglesFigure(rope.angles)),
    renderFigure($('plot-rotation'), rotationFigure(rope.angles, state.pair, Math.min(ROTATION_POINTS, state.length))),
    drawAlibi(alibi, low),
  ]);
  $('results').dataset.drawn = page.urlOf(state);
}

/** One small heatmap per head, in a grid. */
function drawAlibi(alibi, low) {
  const grid = $('plot-alibi');
  const plots = alibi.bias.map(() => {
    const element = document.createElement('div');
    element.className = 'alibi-plot';
    return element;
  });
  grid.replaceChildren(...plots);
  return Promise.all(alibi.bias.map((bias, h) => renderFigure(plots[h], alibiFigure(bias, h, alibi.slopes[h], low), { modeBar: false })));
}

$('positions-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const params = new URLSearchParams(Object.entries(fields).map(([name, input]) => [name, input.value]));
  page.navigate(read(params));
});

page.start();
