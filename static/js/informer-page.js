// The Informer lab's page (/informer): "Train both" starts two jobs with the same settings (POST
// /api/v1/labs/informer/train), one with ProbSparse self-attention and one with full attention; each job's event
// stream redraws the validation MSE against the step and against the seconds. When both are done, the table holds
// their test MSE beside the seasonal-naive and linear forecasts', and sentences computed from those numbers say
// what they show. A test window's forecasts and attention come from POST /api/v1/labs/informer/watch; the measured
// forward sweep from static/data/informer-sweep.json.
//
// State in the URL: /informer?series=…&window=…&horizon=…&steps=…&factor=…&seed=…&job=…&full=… (only what differs
// from the defaults). `job` is the ProbSparse run, `full` the full-attention one: a reload or 中文 replays them.
import { ApiError, getInformerSeries, INFORMER_TRAIN, startTraining, stopTraining, trainingEventsUrl } from './api.js';
import { curvesFigure, KINDS, mse, secondsText, verdict } from './figures/informer.js';
import { lang } from './i18n/index.js';
import { readWholeFields } from './labs/fields.js';
import { followJob } from './labs/follow.js';
import { oneAtATime } from './labs/one-at-a-time.js';
import { labRefusal } from './labs/refusal.js';
import { $, createPage, createStatus, range, setTitle, t } from './page.js';
import { loadPlotly } from './views/plotly-loader.js';
import { releaseFigure, renderFigure } from './views/plot.js';
import { drawSweep } from './views/labs/informer-sweep.js';
import { drawWindow } from './views/labs/informer-watch.js';

const LOCALE = lang === 'zh' ? 'zh-CN' : 'en';
// The lab's defaults and limits (model/lab/informer.py; the server checks them again).
const DEFAULTS = Object.freeze({ series: 'co2', window: 96, horizon: 24, steps: 1500, factor: 5, seed: 0, job: null, full: null });
const LIMITS = Object.freeze({ window: [8, 1024], horizon: [1, 256], steps: [1, 20000], factor: [1, 64], seed: [0, 2147483647] });
const WHOLE = ['window', 'horizon', 'steps', 'factor', 'seed'];
const SERIES = ['co2', 'sunspots'];
const JOB_ID = /^[0-9a-f]{32}$/;
const HEADS = 4; // the lab's default heads (the page trains at the defaults but for its own fields)
const STATE_JOB = { probsparse: 'job', full: 'full' };

const fields = Object.fromEntries(['series', ...WHOLE].map((name) => [name, $(`informer-${name}`)]));
const els = {
  train: $('informer-train'), stop: $('informer-stop'), results: $('results'), seriesHint: $('informer-series-hint'),
  progress: $('informer-progress'), fill: $('informer-progress-fill'), progressText: $('informer-progress-text'),
  step: $('plot-step'), seconds: $('plot-seconds'), table: $('informer-table'), verdict: $('informer-verdict'),
  index: $('informer-index'), net: $('informer-net'), head: $('informer-head'), watch: $('informer-watch'),
  range: $('informer-window-range'),
  window: { forecast: $('plot-forecast'), says: $('informer-window-says'), layers: $('informer-layers'), hint: $('informer-attention-hint') },
  sweep: { section: $('informer-sweep'), hint: $('informer-sweep-hint'), time: $('plot-sweep-time'), memory: $('plot-sweep-memory'), crossover: $('informer-crossover'), seeds: $('informer-seeds') },
};
const fieldLabel = (name) => t(`informer.field.${name}`);

function read(params) {
  const state = {};
  for (const name of WHOLE) {
    const text = params.get(name);
    const [low, high] = LIMITS[name];
    state[name] = text !== null && /^\d{1,10}$/.test(text) ? Math.min(Math.max(Number(text), low), high) : DEFAULTS[name];
  }
  state.series = SERIES.includes(params.get('series')) ? params.get('series') : DEFAULTS.series;
  for (const name of ['job', 'full']) state[name] = JOB_ID.test(params.get(name) ?? '') ? params.get(name) : null;
  return state;
}

const page = createPage({
  path: '/informer',
  read,
  write: (state) => new URLSearchParams(Object.entries(state)
    .filter(([name, value]) => value !== null && value !== DEFAULTS[name]).map(([name, value]) => [name, String(value)])),
  render,
});
const status = createStatus();
const refusal = labRefusal('informer');

// ---- the series: its unit and test windows ----------------------------------------------------------------------

let seriesList = null; // GET /series's answer for the drawn window and horizon

async function showSeries(window, horizon) {
  try {
    seriesList = await getInformerSeries({ window, horizon });
  } catch {
    seriesList = null;
    els.seriesHint.textContent = '';
    return;
  }
  const s = seriesOf(fields.series.value);
  els.seriesHint.textContent = s.test_windows === null
    ? t('informer.seriesHint.tooLong', { values: s.values, first: Math.floor(s.first), last: Math.floor(s.last), season: s.season, step: t(`informer.step.${s.step_label}`) })
    : t('informer.seriesHint.fits', { values: s.values, first: Math.floor(s.first), last: Math.floor(s.last), season: s.season, step: t(`informer.step.${s.step_label}`), windows: s.test_windows });
}

const seriesOf = (name) => seriesList?.series.find((s) => s.name === name) ?? null;
const unitOf = (name) => t(`informer.unit.${name}`); // ui-text: not UI (a key)

// ---- the runs on screen -------------------------------------------------------------------------------------------

let runs = null; // {settings, probsparse: run, full: run}; run = {job, source, evals, phase, done}
let frame = 0;

const running = () => runs !== null && KINDS.some((kind) => runs[kind]?.phase === 'running');
const bothDone = () => runs !== null && KINDS.every((kind) => runs[kind]?.phase === 'done');

function showPhase() {
  const phases = runs ? KINDS.map((kind) => runs[kind].phase) : [];
  const phase = phases.includes('running') ? 'running' : phases.find((p) => p !== 'done') ?? phases[0];
  if (phase) els.results.dataset.run = phase;
  else delete els.results.dataset.run;
  els.train.disabled = phase === 'running';
  els.stop.disabled = phase !== 'running';
  els.watch.disabled = !runs || KINDS.some((kind) => !runs[kind].evals.length);
}

function showProgress() {
  const { steps } = runs.settings;
  const done = Math.min(...KINDS.map((kind) => runs[kind].evals.at(-1)?.step ?? 0));
  const elapsed = Math.max(...KINDS.map((kind) => runs[kind].evals.at(-1)?.seconds ?? 0));
  els.progress.setAttribute('aria-valuemax', String(steps));
  els.progress.setAttribute('aria-valuenow', String(done));
  els.fill.style.width = `${((100 * done) / steps).toFixed(2)}%`;
  els.progressText.textContent = t('informer.progress.text', { step: done, steps, percent: Math.round((100 * done) / steps), seconds: secondsText(elapsed) });
}

function drawCurves() {
  const settings = runs?.settings ?? page.state();
  const evals = Object.fromEntries(KINDS.map((kind) => [kind, runs?.[kind]?.evals ?? []]));
  const naive = bothDone() ? runs.probsparse.done.naive_mse : null;
  const unit = unitOf(settings.series);
  return Promise.all(['step', 'seconds'].map((x) => renderFigure(x === 'step' ? els.step : els.seconds, curvesFigure({ x, runs: evals, steps: settings.steps, naive, unit }))));
}

function clearTable() {
  for (const cell of els.table.querySelectorAll('td')) {
    cell.textContent = '';
    delete cell.dataset.value;
  }
  els.verdict.replaceChildren();
}

function fillTable() {
  const done = Object.fromEntries(KINDS.map((kind) => [kind, runs[kind].done]));
  for (const kind of KINDS) {
    for (const cell of els.table.querySelectorAll(`tr[data-kind="${kind}"] td`)) {
      const value = done[kind][cell.dataset.cell];
      cell.dataset.value = String(value);
      cell.textContent = cell.dataset.cell === 'seconds' ? secondsText(value) : mse(value, LOCALE);
    }
  }
  els.verdict.replaceChildren(...verdict(done, LOCALE).map(([key, values]) => {
    const item = document.createElement('li');
    item.dataset.key = key;
    item.textContent = t(key, values);
    return item;
  }));
}

/** Draw what every run has received since the last frame. */
function flush() {
  frame = 0;
  if (!runs) return;
  for (const kind of KINDS) runs[kind].evals.push(...runs[kind].pending.splice(0));
  drawCurves();
  showProgress();
  showPhase();
}

const schedule = () => {
  if (!frame) frame = window.requestAnimationFrame(flush);
};

function close() {
  if (frame) window.cancelAnimationFrame(frame);
  frame = 0;
  for (const kind of KINDS) runs?.[kind]?.source?.close();
}

async function finished() {
  if (running()) return;
  flush();
  status.busy(false);
  const ends = KINDS.map((kind) => runs[kind].phase);
  if (ends.every((p) => p === 'done')) {
    fillTable();
    status.info(t('informer.status.done', { steps: runs.settings.steps }));
    await drawCurves();
    await showWindow();
  } else if (ends.includes('cancelled')) {
    const step = Math.min(...KINDS.map((kind) => runs[kind].evals.at(-1)?.step ?? 0));
    status.info(t('informer.status.cancelled', { step, steps: runs.settings.steps }));
  }
}

function follow(kind, job) {
  const run = { job, source: null, evals: [], pending: [], phase: 'running', done: null };
  runs[kind] = run;
  const mine = runs;
  run.source = followJob(trainingEventsUrl(INFORMER_TRAIN, job), {
    onEval: (data) => {
      if (runs !== mine) return;
      run.pending.push(data);
      schedule();
    },
    onEnd: (phase, data) => {
      if (runs !== mine) return;
      run.phase = phase;
      if (phase === 'done') run.done = data;
      if (phase === 'error') status.problem(t('informer.error.failed', { detail: data?.detail ?? '' }));
      if (phase === 'lost') status.problem(t('informer.error.gone'));
      finished();
    },
    onReconnect: () => {
      if (runs === mine) status.info(t('informer.status.reconnecting'));
    },
  });
}

async function show(state) {
  close();
  runs = null;
  clearTable();
  releaseFigure(els.window.forecast);
  els.window.forecast.replaceChildren();
  for (const plot of els.window.layers.querySelectorAll('.js-plotly-plot')) releaseFigure(plot);
  els.window.layers.replaceChildren();
  els.window.says.textContent = '';
  els.window.hint.textContent = '';
  els.range.textContent = '';
  els.results.dataset.job = state.job ?? '';
  if (!state.job || !state.full) {
    await drawCurves();
    showPhase();
    status.busy(false);
    status.info(t('informer.status.ready'));
    return;
  }
  runs = { settings: state, probsparse: null, full: null };
  status.busy(true);
  status.info('');
  follow('probsparse', state.job);
  follow('full', state.full);
  await drawCurves();
  showPhase();
}

// ---- a test window ------------------------------------------------------------------------------------------------

/** Draws the test window the form names for the network and head chosen (one drawing at a time: showWindow). */
async function drawChosenWindow() {
  if (!runs) return;
  const windows = runs.windows ?? null; // known from the first window shown
  const text = els.index.value.trim();
  const index = Number(text);
  if (!/^\d{1,6}$/.test(text) || (windows !== null && index >= windows)) {
    els.index.setAttribute('aria-invalid', 'true');
    status.problem(t('informer.error.index', { max: (windows ?? 1) - 1 }));
    return;
  }
  els.index.setAttribute('aria-invalid', 'false');
  try {
    const jobs = { probsparse: runs.probsparse.job, full: runs.full.job };
    const answers = await drawWindow(els.window, jobs, {
      index, net: els.net.value, head: Number(els.head.value), unit: t(`informer.value.${runs.settings.series}`), locale: LOCALE,
    });
    const { windows: count } = answers.probsparse;
    runs.windows = count;
    els.index.max = String(count - 1);
    els.range.textContent = t('informer.window.range', { max: count - 1 });
    els.results.dataset.window = String(index);
  } catch (error) {
    status.problem(refusal(error));
  }
}

const showWindow = oneAtATime(drawChosenWindow);

$('informer-watch-form').addEventListener('submit', (event) => {
  event.preventDefault();
  showWindow();
});
for (const select of [els.net, els.head]) select.addEventListener('change', () => { if (!els.watch.disabled) showWindow(); });

// ---- the settings form --------------------------------------------------------------------------------------------

function readForm() {
  const whole = readWholeFields(fields, WHOLE, LIMITS, (name, low, high) => t('informer.error.whole', { field: fieldLabel(name), low, high }));
  if (!whole.values) return whole;
  return { settings: { series: fields.series.value, ...whole.values } };
}

function markInvalid(name) {
  for (const [field, input] of Object.entries(fields)) input.setAttribute('aria-invalid', field === name ? 'true' : 'false');
}

const reseries = () => {
  const window = Number(fields.window.value);
  const horizon = Number(fields.horizon.value);
  if (Number.isInteger(window) && Number.isInteger(horizon) && window >= LIMITS.window[0] && window <= LIMITS.window[1]
      && horizon >= LIMITS.horizon[0] && horizon <= LIMITS.horizon[1]) showSeries(window, horizon);
};
for (const name of ['series', 'window', 'horizon']) fields[name].addEventListener('change', reseries);

$('informer-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const { settings, name, message } = readForm();
  if (!settings) {
    markInvalid(name);
    status.problem(message);
    fields[name].focus();
    return;
  }
  markInvalid(null);
  status.busy(true);
  els.train.disabled = true;
  const body = { ...settings, eval_every: Math.max(1, Math.round(settings.steps / 30)) };
  const started = {};
  try {
    for (const kind of KINDS) {
      // eslint-disable-next-line no-await-in-loop
      started[kind] = (await startTraining(INFORMER_TRAIN, { ...body, attention: kind })).job;
    }
  } catch (error) {
    for (const job of Object.values(started)) stopTraining(INFORMER_TRAIN, job).catch(() => {}); // both or neither
    els.train.disabled = running();
    status.problem(refusal(error));
    return;
  }
  await page.navigate({ ...settings, job: started.probsparse, full: started.full });
});

els.stop.addEventListener('click', async () => {
  if (!running()) return;
  els.stop.disabled = true;
  for (const kind of KINDS) {
    const run = runs[kind];
    if (run?.phase === 'running') {
      try {
        // eslint-disable-next-line no-await-in-loop
        await stopTraining(INFORMER_TRAIN, run.job);
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 404)) status.problem(refusal(error));
      }
    }
  }
});

async function render(state) {
  setTitle('page.informer');
  for (const name of [...WHOLE, 'series']) fields[name].value = String(state[name]);
  markInvalid(null);
  await loadPlotly();
  await showSeries(state.window, state.horizon);
  if (runs?.probsparse?.job !== state.job || !state.job) await show(state);
  els.results.dataset.drawn = page.urlOf(state);
}

els.head.replaceChildren(...range(HEADS).map((h) => {
  const option = document.createElement('option');
  option.value = String(h);
  option.textContent = String(h);
  return option;
}));
setTitle('page.informer');
loadPlotly().then(() => drawSweep(els.sweep, LOCALE)).catch(() => {});
page.start();
