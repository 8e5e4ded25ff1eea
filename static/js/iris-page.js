// The Iris page (/iris): the notes' tiny transformer trained live on Iris. Train starts a job on
// the server (POST /api/v1/iris/train) and follows its event stream: every epoch extends the loss
// and accuracy curves and redraws the watched test flower's two attention maps; the end brings
// the test split's confusion matrix. The predict form sends four measurements to the trained
// model and opens its attention layer for that flower in the walkthrough of /toy. The run on screen
// is views/iris-run.js, predict and the walkthrough views/iris-predict.js, the data set's words
// iris/words.js; this script keeps the URL state and the settings form and wires them together.
//
// State in the URL: /iris?epochs=…&lr=…&optimizer=…&batch=…&seed=…&watch=…&job=… (only what
// differs from the defaults). `job` names the run on screen: the server keeps a job's events, so a
// reload or a language switch replays that run from its first epoch.
import { getIrisData, startIrisTraining } from './api.js';
import { dataFigure } from './figures/iris.js';
import { featureNames, fieldLabel, flowerText, refusal, speciesNames } from './iris/words.js';
import { $, createPage, createStatus, setTitle, t } from './page.js';
import { createIrisPredict } from './views/iris-predict.js';
import { createIrisRun } from './views/iris-run.js';
import { renderFigure } from './views/plot.js';

const DEFAULTS = Object.freeze({ epochs: 300, lr: 0.01, optimizer: 'adam', batch: 16, seed: 0, watch: 0, job: null });
const LIMITS = Object.freeze({ epochs: [1, 2000], batch: [1, 120], seed: [0, 2 ** 32 - 1], watch: [0, 29], lr: [0, 1] });
const OPTIMIZERS = ['adam', 'sgd'];
const SETTINGS = ['epochs', 'lr', 'optimizer', 'batch', 'seed', 'watch'];
const JOB_ID = /^[A-Za-z0-9_-]{1,64}$/;

const fields = {
  epochs: $('iris-epochs'),
  lr: $('iris-lr'),
  optimizer: $('iris-optimizer'),
  batch: $('iris-batch'),
  seed: $('iris-seed'),
  watch: $('iris-watch'),
};
const els = { results: $('results'), train: $('iris-train') };

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

// ---- the data set, the run on screen, predict ------------------------------------------------------

let data = null; // GET /api/v1/iris/data
const streams = new Map(); // job -> the URL of its event stream, as the server named it

function fillWatch(value) {
  if (fields.watch.options.length !== data.test.length) {
    fields.watch.replaceChildren(...data.test.map((_, n) => {
      const option = document.createElement('option');
      option.value = String(n);
      option.textContent = flowerText(data, n);
      return option;
    }));
  }
  fields.watch.value = String(value);
}

function drawData(typed = null) {
  return renderFigure($('plot-data'), dataFigure({
    ...data,
    classes: speciesNames(data),
    features: featureNames(data),
    watched: data.test[Number(fields.watch.value) || 0],
    typed,
  }));
}

const run = createIrisRun({ status, data: () => data, onPhase: () => predictor.enable(run.trained !== null) });
const predictor = createIrisPredict({ data: () => data, trained: () => run.trained, drawData });
const fillFeatures = (n) => predictor.fill(data.rows[data.test[n]]);

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

async function train(settings) {
  markInvalid(null);
  status.busy(true);
  els.train.disabled = true;
  let answer;
  try {
    answer = await startIrisTraining(settings);
  } catch (error) {
    els.train.disabled = run.phase === 'running';
    status.problem(refusal(error, data));
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
    status.problem(t(key, { field: fieldLabel(error.name), low: error.low, high: error.high }));
    fields[error.name].focus();
    return;
  }
  train(settings);
});

fields.watch.addEventListener('change', () => {
  fillFeatures(Number(fields.watch.value) || 0);
  drawData();
  predictor.predict(); // once a model is trained
});

// ---- render a state --------------------------------------------------------------------------------

async function render(state) {
  setTitle('page.iris');
  for (const name of SETTINGS) fields[name].value = String(state[name]);
  markInvalid(null);
  if (!data) return;
  fillWatch(state.watch);
  fillFeatures(state.watch);
  predictor.clear();
  await drawData();
  if (!state.job) await run.clear(state.epochs, state.watch);
  else if (run.job !== state.job) await run.follow(state.job, state.epochs, state.watch, streams.get(state.job));
  els.results.dataset.drawn = page.urlOf(state);
}

// ---- start ---------------------------------------------------------------------------------------

setTitle('page.iris');
status.busy(true);
getIrisData().then(
  (answer) => {
    data = answer;
    predictor.labelFields();
    status.busy(false);
    return page.start();
  },
  (error) => status.problem(refusal(error)),
);
