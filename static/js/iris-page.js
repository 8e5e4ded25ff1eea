// The Iris page (/iris): the notes' tiny transformer trained live on Iris. Train starts a job on
// the server (POST /api/v1/iris/train) and follows its event stream: every epoch extends the loss
// and accuracy curves and redraws the watched test flower's two attention maps; the end brings
// the test split's confusion matrix. The predict form sends four measurements to the trained
// model and opens its attention layer for that flower in the walkthrough of /toy.
//
// State in the URL: /iris?epochs=…&lr=…&optimizer=…&batch=…&seed=…&watch=…&job=… (only what
// differs from the defaults). `job` names the run on screen: the server keeps a job's events, so a
// reload or a language switch replays that run from its first epoch.
import { ApiError, getIrisData, irisEventsUrl, predictIris, startIrisTraining, stopIrisTraining } from './api.js';
import {
  accuracyFigure, attentionFigure, confusionFigure, dataFigure, lossAxis, lossFigure, probabilitiesFigure,
} from './figures/iris.js';
import { fromToy } from './figures/steps.js';
import { has } from './i18n/index.js';
import { $, createPage, createStatus, errorMessage, lang, setTitle, t } from './page.js';
import { renderFigure } from './views/plot.js';
import { createWalkthrough } from './views/walkthrough.js';

const DEFAULTS = Object.freeze({ epochs: 300, lr: 0.01, optimizer: 'adam', batch: 16, seed: 0, watch: 0, job: null });
const LIMITS = Object.freeze({ epochs: [1, 2000], batch: [1, 120], seed: [0, 2 ** 32 - 1], watch: [0, 29], lr: [0, 1] });
const OPTIMIZERS = ['adam', 'sgd'];
const SETTINGS = ['epochs', 'lr', 'optimizer', 'batch', 'seed', 'watch'];
const JOB_ID = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_FEATURE = 100; // cm, the server's limit for a typed measurement
const locale = lang === 'zh' ? 'zh-CN' : 'en';
const seconds = new Intl.NumberFormat(locale, { minimumFractionDigits: 1, maximumFractionDigits: 1 });

const fields = {
  epochs: $('iris-epochs'),
  lr: $('iris-lr'),
  optimizer: $('iris-optimizer'),
  batch: $('iris-batch'),
  seed: $('iris-seed'),
  watch: $('iris-watch'),
};
const featureInputs = [0, 1, 2, 3].map((i) => $(`iris-f${i}`));
const els = {
  results: $('results'),
  train: $('iris-train'),
  stop: $('iris-stop'),
  progress: $('iris-progress'),
  fill: $('iris-progress-fill'),
  progressText: $('iris-progress-text'),
  status: $('status'),
  flower: $('iris-maps-flower'),
  final: $('iris-final'),
  confusion: $('plot-confusion'),
  confusionWait: $('iris-confusion-wait'),
  predict: $('iris-predict'),
  predictStatus: $('predict-status'),
  prediction: $('iris-prediction'),
  predicted: $('iris-predicted'),
  walk: $('iris-walkthrough'),
  walkHint: $('iris-walk-hint'),
  head: $('head-select'),
  query: $('query-select'),
};
const maps = [$('plot-head-0'), $('plot-head-1')];
const predictMaps = [$('plot-predict-head-0'), $('plot-predict-head-1')];

// ---- URL <-> state ------------------------------------------------------------------------------

/** A whole number within its limits, or the default. */
function wholeParam(params, name) {
  const text = params.get(name);
  const [low, high] = LIMITS[name];
  if (text === null || !/^\d{1,10}$/.test(text)) return DEFAULTS[name];
  return Math.min(Math.max(Number(text), low), high);
}

/** A learning rate above 0 and at most 1, or the default. */
function rateParam(params) {
  const value = Number(params.get('lr') ?? Number.NaN);
  return Number.isFinite(value) && value > LIMITS.lr[0] && value <= LIMITS.lr[1] ? value : DEFAULTS.lr;
}

function read(params) {
  const optimizer = params.get('optimizer');
  const job = params.get('job');
  return {
    epochs: wholeParam(params, 'epochs'),
    lr: rateParam(params),
    optimizer: OPTIMIZERS.includes(optimizer) ? optimizer : DEFAULTS.optimizer,
    batch: wholeParam(params, 'batch'),
    seed: wholeParam(params, 'seed'),
    watch: wholeParam(params, 'watch'),
    job: job !== null && JOB_ID.test(job) ? job : null,
  };
}

const page = createPage({
  path: '/iris',
  read,
  write: (state) => new URLSearchParams(
    Object.entries(state).filter(([name, value]) => value !== null && value !== DEFAULTS[name]).map(([name, value]) => [name, String(value)]),
  ),
  render,
});
const status = createStatus();
const predictStatus = createStatus({ status: els.predictStatus, loading: $('predict-loading'), region: els.prediction });

/** An error worded by the page (from a status or a type, never from prose), styled as one. */
function sayProblem(target, element, message) {
  target.busy(false);
  element.textContent = message;
  element.classList.add('is-error');
}

// ---- the data set and its words -------------------------------------------------------------------

let data = null; // GET /api/v1/iris/data
const slug = (name) => String(name).toLowerCase().replace(/\(.*?\)/g, '').replace(/^iris[-_ ]/, '').trim().replace(/[\s-]+/g, '_');
const featureName = (name) => (has(`iris.feature.${slug(name)}`) ? t(`iris.feature.${slug(name)}`) : String(name));
const speciesName = (name) => (has(`iris.species.${slug(name)}`) ? t(`iris.species.${slug(name)}`) : String(name));
const featureNames = () => data.features.map(featureName);
const speciesNames = () => data.classes.map(speciesName);
const measurements = (row) => row.map((value) => (Number.isInteger(value) ? value.toFixed(1) : String(value))).join(', '); // 4 cm as 4.0

/** "#3 · versicolor · 5.9, 3.0, 4.2, 1.5 cm": a test flower as the select names it. */
function flowerText(n) {
  const row = data.test[n];
  return t('iris.flowerOption', { n, species: speciesNames()[data.labels[row]], values: measurements(data.rows[row]) });
}

function fillWatch(value) {
  if (fields.watch.options.length !== data.test.length) {
    fields.watch.replaceChildren(...data.test.map((_, n) => {
      const option = document.createElement('option');
      option.value = String(n);
      option.textContent = flowerText(n);
      return option;
    }));
  }
  fields.watch.value = String(value);
}

function fillFeatures(n) {
  data.rows[data.test[n]].forEach((value, i) => {
    featureInputs[i].value = String(value);
  });
}

function drawData(typed = null) {
  return renderFigure($('plot-data'), dataFigure({
    ...data,
    classes: speciesNames(),
    features: featureNames(),
    watched: data.test[Number(fields.watch.value) || 0],
    typed,
  }));
}

// ---- the run on screen -------------------------------------------------------------------------

/**
 * @typedef {object} Run
 * @property {string} job
 * @property {EventSource|null} source
 * @property {number} epochs
 * @property {number} watch the test flower its maps show
 * @property {number} last the last epoch received (a reconnected stream starts again at 0)
 * @property {object[]} pending epoch events not drawn yet
 * @property {object|null} latest the last epoch event drawn
 * @property {Promise<unknown>} ready the empty figures are drawn
 * @property {'running'|'done'|'cancelled'|'error'|'lost'} phase
 */
/** @type {Run|null} */
let run = null;
let frame = 0;
const streams = new Map(); // job -> the URL of its event stream, as the server named it

function setPhase(phase) {
  run.phase = phase;
  els.results.dataset.run = phase;
  const running = phase === 'running';
  els.train.disabled = running;
  els.stop.disabled = !running;
  els.predict.disabled = running || !['done', 'cancelled'].includes(phase);
}

function showProgress(epoch, epochs, elapsed) {
  const share = epochs > 0 ? epoch / epochs : 0;
  els.progress.setAttribute('aria-valuemax', String(epochs));
  els.progress.setAttribute('aria-valuenow', String(epoch));
  els.progress.dataset.percent = String(Math.round(100 * share));
  els.fill.style.width = `${(100 * share).toFixed(2)}%`;
  const text = t('iris.progress.text', { epoch, epochs, percent: Math.round(100 * share), seconds: seconds.format(elapsed) });
  els.progress.setAttribute('aria-valuetext', text);
  els.progressText.textContent = text;
}

function mapFigure(matrix, head) {
  return attentionFigure({ matrix, labels: featureNames(), head, height: 320 });
}

const uniform = () => [0, 1, 2, 3].map(() => [0.25, 0.25, 0.25, 0.25]);

/** Empty curves over the whole epoch axis, the maps of a flower not yet seen, no confusion matrix. */
function drawEmpty(epochs) {
  els.confusion.hidden = true;
  els.confusionWait.hidden = false;
  els.final.textContent = '';
  return Promise.all([
    renderFigure($('plot-loss'), lossFigure({ epochs, log: $('iris-loss-log').checked })),
    renderFigure($('plot-accuracy'), accuracyFigure({ epochs })),
    ...maps.map((gd, h) => renderFigure(gd, mapFigure(uniform(), h), { modeBar: false })),
  ]);
}

/** Draw the epochs received since the last frame: extend the curves, redraw the maps and the bar. */
function flush() {
  if (!run || !run.pending.length) return;
  const events = run.pending.splice(0);
  const x = events.map((e) => e.epoch);
  window.Plotly.extendTraces($('plot-loss'), { x: [x], y: [events.map((e) => e.loss)] }, [0]);
  window.Plotly.extendTraces($('plot-accuracy'), {
    x: [x, x],
    y: [events.map((e) => e.train_accuracy), events.map((e) => e.test_accuracy)],
  }, [0, 1]);
  const latest = events[events.length - 1];
  run.latest = latest;
  latest.attention.forEach((matrix, h) => {
    if (maps[h]) window.Plotly.restyle(maps[h], { z: [matrix] }, [0]);
  });
  showProgress(latest.epoch, latest.epochs ?? run.epochs, latest.seconds ?? 0);
  els.results.dataset.epoch = String(latest.epoch);
}

// Redraws run in animation frames, at most one a frame, and each waits twice as long as the last
// one took: however fast the epochs come and however slow the machine draws, two thirds of the
// main thread stay free for scrolling and for Stop. (Measured in headless Chromium, software
// rendering, 2 cores shared with the training: one redraw of the curves and both maps took
// 60–300 ms; a 2000-epoch run then kept a median frame of 16.7 ms.)
let nextRedraw = 0;

function redraw(now) {
  frame = 0;
  if (now < nextRedraw) {
    frame = window.requestAnimationFrame(redraw);
    return;
  }
  const start = performance.now();
  flush();
  const end = performance.now();
  nextRedraw = end + 2 * (end - start);
}

function schedule() {
  if (!frame) frame = window.requestAnimationFrame(redraw);
}

function drawNow() {
  if (frame) window.cancelAnimationFrame(frame);
  frame = 0;
  flush();
}

function closeStream() {
  if (run && run.source) {
    run.source.close();
    run.source = null;
  }
}

function percent(value) {
  return `${(100 * value).toFixed(1)} %`;
}

async function finished(done) {
  drawNow();
  closeStream();
  const correct = done.confusion.reduce((sum, row, i) => sum + row[i], 0);
  const total = done.confusion.flat().reduce((sum, n) => sum + n, 0);
  els.final.textContent = t('iris.final', {
    accuracy: percent(done.test_accuracy), correct, total, train: percent(done.train_accuracy ?? 0),
  });
  els.confusionWait.hidden = true;
  els.confusion.hidden = false;
  await renderFigure(els.confusion, confusionFigure({ confusion: done.confusion, classes: speciesNames() }), { modeBar: false });
  showProgress(done.epochs ?? run.epochs, done.epochs ?? run.epochs, done.seconds ?? 0);
  setPhase('done');
  status.busy(false);
  status.info(t('iris.status.done', {
    epochs: done.epochs ?? run.epochs, accuracy: percent(done.test_accuracy), seconds: seconds.format(done.seconds ?? 0),
  }));
}

function cancelled(event) {
  drawNow();
  closeStream();
  setPhase('cancelled');
  status.busy(false);
  status.info(t('iris.status.cancelled', { epoch: event.epoch ?? run.last, epochs: run.epochs }));
}

/** Follow the events of `job` from its first epoch (a late client gets them all). */
async function follow(job, epochs, watch, url = streams.get(job) ?? irisEventsUrl(job)) {
  closeStream();
  if (frame) window.cancelAnimationFrame(frame);
  frame = 0;
  run = { job, source: null, epochs, watch, last: -1, pending: [], latest: null, ready: null, phase: 'running' };
  const mine = run;
  els.results.dataset.job = job;
  els.results.dataset.epoch = '';
  setPhase('running');
  status.busy(true);
  status.info('');
  showProgress(0, epochs, 0);
  els.flower.textContent = t('iris.maps.flower', { flower: flowerText(watch) });
  mine.ready = drawEmpty(epochs);
  await mine.ready;
  if (run !== mine) return;

  const source = new EventSource(url);
  mine.source = source;
  const parse = (event) => {
    try {
      return JSON.parse(event.data);
    } catch {
      return null;
    }
  };
  source.addEventListener('epoch', (event) => {
    const epoch = parse(event);
    if (run !== mine || !epoch || epoch.epoch <= mine.last) return; // a reconnected stream repeats the epochs
    mine.last = epoch.epoch;
    if (epoch.epochs && epoch.epochs !== mine.epochs) mine.epochs = epoch.epochs;
    if (mine.phase !== 'running') return;
    status.info('');
    mine.pending.push(epoch);
    schedule();
  });
  source.addEventListener('done', (event) => {
    const done = parse(event);
    if (run === mine && done) finished(done);
  });
  source.addEventListener('cancelled', (event) => {
    if (run === mine) cancelled(parse(event) ?? {});
  });
  source.addEventListener('error', (event) => {
    if (run !== mine) return;
    if (typeof event.data === 'string') { // the server's own `error` event: the training failed
      drawNow();
      closeStream();
      setPhase('error');
      const detail = parse(event)?.detail;
      sayProblem(status, els.status, detail ? t('iris.error.failed', { detail }) : t('iris.error.failedQuiet'));
      return;
    }
    if (source.readyState === EventSource.CLOSED) { // the server refused the stream: no such job any more
      drawNow();
      closeStream();
      setPhase('lost');
      sayProblem(status, els.status, mine.last < 0 ? t('iris.error.gone') : t('iris.error.lost', { epoch: mine.last }));
    } else {
      status.info(t('iris.status.reconnecting'));
    }
  });
}

$('iris-loss-log').addEventListener('change', (event) => {
  window.Plotly.relayout($('plot-loss'), lossAxis(event.target.checked));
});

// ---- the settings form ---------------------------------------------------------------------------

/** The form's settings, or the first field that is not within its limits. */
function readForm() {
  const settings = {};
  for (const name of ['epochs', 'batch', 'seed']) {
    const text = fields[name].value.trim();
    const [low, high] = LIMITS[name];
    const value = Number(text);
    if (!/^\d+$/.test(text) || value < low || value > high) return { error: { name, low, high, whole: true } };
    settings[name] = value;
  }
  const lr = Number(fields.lr.value.trim());
  if (!fields.lr.value.trim() || !Number.isFinite(lr) || lr <= 0 || lr > LIMITS.lr[1]) {
    return { error: { name: 'lr', low: 0, high: LIMITS.lr[1], whole: false } };
  }
  settings.lr = lr;
  settings.optimizer = fields.optimizer.value;
  settings.watch = Number(fields.watch.value) || 0;
  return { settings };
}

function markInvalid(name) {
  for (const [field, input] of Object.entries(fields)) input.setAttribute('aria-invalid', field === name ? 'true' : 'false');
}

const fieldLabel = (name) => (has(`iris.field.${name}`) ? t(`iris.field.${name}`) : String(name));

/** A refusal of the server in the page's words, from its status and each item's type and ctx. */
function refusal(error) {
  if (!(error instanceof ApiError)) return errorMessage(error);
  const items = Array.isArray(error.body?.errors) ? error.body.errors : [];
  if (error.status === 429) {
    const wait = error.retryAfter ?? items.find((item) => item.type === 'jobs_busy')?.ctx?.retry_after;
    return wait ? t('iris.error.busy', { seconds: wait }) : t('iris.error.busyQuiet');
  }
  if (error.status === 404) return t('iris.error.gone');
  if (error.status === 422 && items.length) {
    return items.map((item) => {
      const loc = (item.loc ?? []).map(String).filter((part) => part !== 'body');
      const name = loc[0] === 'features' && loc.length > 1 ? featureNames()[Number(loc[1])] ?? loc[1] : fieldLabel(loc[0] ?? 'request');
      const key = `iris.problem.${item.type}`;
      const problem = has(key) ? t(key, item.ctx ?? {}) : t('iris.problem.invalid');
      return t('iris.error.item', { field: name, problem });
    }).join(' ');
  }
  return errorMessage(error);
}

async function train(settings) {
  markInvalid(null);
  status.busy(true);
  els.train.disabled = true;
  let answer;
  try {
    answer = await startIrisTraining(settings);
  } catch (error) {
    els.train.disabled = run?.phase === 'running';
    sayProblem(status, els.status, refusal(error));
    return;
  }
  streams.set(answer.job, answer.events);
  await page.navigate({ ...settings, job: answer.job });
}

$('iris-form').addEventListener('submit', (event) => {
  event.preventDefault();
  if (!data) return;
  const { settings, error } = readForm();
  if (error) {
    markInvalid(error.name);
    const key = error.whole ? 'iris.error.whole' : 'iris.error.rate';
    sayProblem(status, els.status, t(key, { field: fieldLabel(error.name), low: error.low, high: error.high }));
    fields[error.name].focus();
    return;
  }
  train(settings);
});

els.stop.addEventListener('click', async () => {
  if (!run || run.phase !== 'running') return;
  els.stop.disabled = true;
  try {
    await stopIrisTraining(run.job);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) sayProblem(status, els.status, refusal(error));
  } // the stream says `cancelled` (or `done`, when the last epoch came first)
});

fields.watch.addEventListener('change', () => {
  const n = Number(fields.watch.value) || 0;
  fillFeatures(n);
  drawData();
  if (run && ['done', 'cancelled'].includes(run.phase)) predict();
});

// ---- predict and the walkthrough ---------------------------------------------------------------------

const walkthrough = createWalkthrough();
let walkData = null;

function fillSelect(select, labels, value) {
  select.replaceChildren(...labels.map((text, index) => {
    const option = document.createElement('option');
    option.value = String(index);
    option.textContent = text;
    return option;
  }));
  select.value = String(value);
}

function walkSelection() {
  return { head: Number(els.head.value) || 0, query: Number(els.query.value) || 0 };
}

els.head.addEventListener('change', () => walkData && walkthrough.show(walkData, walkSelection()));
els.query.addEventListener('change', () => walkData && walkthrough.show(walkData, walkSelection()));

/** The four typed measurements, or the index of the first one that is not a number from 0 to 100. */
function readFeatures() {
  const values = featureInputs.map((input) => (input.value.trim() === '' ? Number.NaN : Number(input.value)));
  const bad = values.findIndex((v) => !Number.isFinite(v) || v < 0 || v > MAX_FEATURE);
  featureInputs.forEach((input, i) => input.setAttribute('aria-invalid', i === bad ? 'true' : 'false'));
  return bad < 0 ? { values } : { bad };
}

async function predict() {
  if (!run || !['done', 'cancelled'].includes(run.phase)) return;
  const { values, bad } = readFeatures();
  if (values === undefined) {
    sayProblem(predictStatus, els.predictStatus, t('iris.error.feature', { feature: featureNames()[bad], max: MAX_FEATURE }));
    featureInputs[bad].focus();
    return;
  }
  const job = run.job;
  predictStatus.busy(true);
  predictStatus.info('');
  let answer;
  try {
    answer = await predictIris({ job, features: values });
  } catch (error) {
    sayProblem(predictStatus, els.predictStatus, refusal(error));
    return;
  }
  if (!run || run.job !== job) return;
  predictStatus.busy(false);
  await showPrediction(answer, values);
}

async function showPrediction(answer, values) {
  const classes = (answer.classes ?? data.classes).map(speciesName);
  const predicted = typeof answer.predicted === 'number' ? answer.predicted : (answer.classes ?? data.classes).indexOf(answer.predicted);
  els.prediction.hidden = false;
  els.prediction.dataset.predicted = String(predicted);
  els.predicted.textContent = t('iris.predicted', {
    species: classes[predicted], probability: percent(answer.probabilities[predicted]), epoch: answer.epoch,
  });
  predictStatus.info(t('iris.predict.done', { values: measurements(values), epoch: answer.epoch }));
  const weights = answer.trace.steps.softmax; // (H, 4, 4)
  await Promise.all([
    renderFigure($('plot-probabilities'), probabilitiesFigure({ probabilities: answer.probabilities, classes, predicted }), { modeBar: false }),
    ...predictMaps.map((gd, h) => renderFigure(gd, mapFigure(weights[h], h), { modeBar: false })),
    drawData(values),
  ]);
  // The trained attention layer for this flower, step by step: its four tokens named after the features.
  const labels = featureNames();
  walkData = { ...fromToy(answer.trace), queryLabels: labels, keyLabels: labels };
  els.walk.hidden = false;
  els.walkHint.textContent = t('iris.walk.hint', { values: measurements(values), epoch: answer.epoch });
  const selection = walkSelection();
  fillSelect(els.head, walkData.heads.map((h) => t('iris.head', { head: h })), Math.min(selection.head, walkData.nHeads - 1));
  fillSelect(els.query, labels, selection.query);
  await walkthrough.show(walkData, walkSelection());
  els.walk.dataset.drawn = String(answer.epoch);
}

$('iris-predict-form').addEventListener('submit', (event) => {
  event.preventDefault();
  predict();
});

// ---- render a state --------------------------------------------------------------------------------

async function render(state) {
  setTitle('page.iris');
  for (const name of SETTINGS) fields[name].value = String(state[name]);
  markInvalid(null);
  if (!data) return;
  fillWatch(state.watch);
  fillFeatures(state.watch);
  els.prediction.hidden = true;
  els.walk.hidden = true;
  walkData = null;
  predictStatus.info('');
  await drawData();
  if (state.job) {
    if (!run || run.job !== state.job) await follow(state.job, state.epochs, state.watch);
    els.results.dataset.drawn = page.urlOf(state);
    return;
  }
  closeStream();
  run = null;
  delete els.results.dataset.run;
  delete els.results.dataset.job;
  els.train.disabled = false;
  els.stop.disabled = true;
  els.predict.disabled = true;
  status.busy(false);
  status.info(t('iris.status.ready'));
  showProgress(0, state.epochs, 0);
  els.flower.textContent = t('iris.maps.flower', { flower: flowerText(state.watch) });
  await drawEmpty(state.epochs);
  els.results.dataset.drawn = page.urlOf(state);
}

// ---- start ---------------------------------------------------------------------------------------

for (const input of featureInputs) input.setAttribute('max', String(MAX_FEATURE));
setTitle('page.iris');
status.busy(true);
getIrisData().then(
  (answer) => {
    data = answer;
    featureNames().forEach((name, i) => {
      $(`iris-f${i}-label`).textContent = t('iris.predict.field', { feature: name });
    });
    status.busy(false);
    return page.start();
  },
  (error) => sayProblem(status, els.status, refusal(error)),
);
