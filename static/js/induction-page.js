// The induction-head lab's page (/induction): Train starts a job on the server (POST
// /api/v1/labs/induction/train) and views/induction-run.js follows its event stream and draws it. This script
// keeps the URL state and the settings form and wires them together.
//
// State in the URL: /induction?vocab=…&length=…&layers=…&heads=…&d_model=…&steps=…&lr=…&batch=…&seed=…&job=…
// (only what differs from the defaults). `job` names the run on screen: the server keeps a job's events, so a
// reload or a language switch replays that run from its first evaluation.
import { INDUCTION_TRAIN, startTraining } from './api.js';
import { labRefusal } from './labs/refusal.js';
import { $, createPage, createStatus, setTitle, t } from './page.js';
import { createInductionRun } from './views/induction-run.js';

// The lab's defaults and limits (model/lab/induction.py; the server checks them again).
const DEFAULTS = Object.freeze({ vocab: 64, length: 32, layers: 2, heads: 2, d_model: 128, steps: 2000, lr: 0.002, batch: 64, seed: 0, job: null });
const LIMITS = Object.freeze({
  vocab: [4, 512], length: [4, 128], layers: [1, 4], heads: [1, 8], d_model: [4, 256], steps: [1, 20000],
  batch: [1, 256], seed: [0, 2147483647], lr: [0, 0.1],
});
const WHOLE = ['vocab', 'length', 'layers', 'heads', 'd_model', 'steps', 'batch', 'seed'];
const SETTINGS = [...WHOLE, 'lr'];
const JOB_ID = /^[0-9a-f]{32}$/;

const fields = Object.fromEntries(SETTINGS.map((name) => [name, $(`induction-${name}`)]));
const fieldLabel = (name) => t(`induction.field.${name}`);

function read(params) {
  const state = { job: null };
  for (const name of WHOLE) {
    const text = params.get(name);
    const [low, high] = LIMITS[name];
    state[name] = text !== null && /^\d{1,10}$/.test(text) ? Math.min(Math.max(Number(text), low), high) : DEFAULTS[name];
  }
  const lr = Number(params.get('lr') ?? Number.NaN);
  state.lr = Number.isFinite(lr) && lr > 0 && lr <= LIMITS.lr[1] ? lr : DEFAULTS.lr;
  const job = params.get('job');
  state.job = job !== null && JOB_ID.test(job) ? job : null;
  return state;
}

const page = createPage({
  path: '/induction',
  read,
  write: (state) => new URLSearchParams(
    Object.entries(state).filter(([name, value]) => value !== null && value !== DEFAULTS[name]).map(([name, value]) => [name, String(value)]),
  ),
  render,
});
const status = createStatus();

const refusal = labRefusal('induction');

const run = createInductionRun({ status, refusal });

/** The form's settings, or the first problem: a field out of its limits, or settings that do not fit together. */
function readForm() {
  const settings = {};
  for (const name of WHOLE) {
    const text = fields[name].value.trim();
    const [low, high] = LIMITS[name];
    const value = Number(text);
    if (!/^\d+$/.test(text) || value < low || value > high) {
      return { name, message: t('induction.error.whole', { field: fieldLabel(name), low, high }) };
    }
    settings[name] = value;
  }
  const lr = Number(fields.lr.value.trim());
  if (!fields.lr.value.trim() || !Number.isFinite(lr) || lr <= 0 || lr > LIMITS.lr[1]) {
    return { name: 'lr', message: t('induction.error.rate', { field: fieldLabel('lr'), high: LIMITS.lr[1] }) };
  }
  settings.lr = lr;
  if (settings.length % 2) return { name: 'length', message: t('induction.error.even', { field: fieldLabel('length') }) };
  if (settings.d_model % settings.heads) {
    return { name: 'd_model', message: t('induction.error.divide', { field: fieldLabel('d_model'), heads: settings.heads }) };
  }
  if (settings.length / 2 > settings.vocab) { // the evaluation's R is of length / 2 different tokens
    return { name: 'length', message: t('induction.error.vocab', { length: settings.length, needed: settings.length / 2, vocab: settings.vocab }) };
  }
  return { settings };
}

function markInvalid(name) {
  for (const [field, input] of Object.entries(fields)) input.setAttribute('aria-invalid', field === name ? 'true' : 'false');
}

const streams = new Map(); // job -> the URL of its event stream, as the server named it

$('induction-form').addEventListener('submit', async (event) => {
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
  $('induction-train').disabled = true;
  let answer;
  try {
    answer = await startTraining(INDUCTION_TRAIN, { ...settings, eval_every: Math.max(1, Math.round(settings.steps / 60)) });
  } catch (error) {
    $('induction-train').disabled = run.phase === 'running';
    status.problem(refusal(error));
    return;
  }
  streams.set(answer.job, answer.events);
  await page.navigate({ ...settings, job: answer.job });
});

async function render(state) {
  setTitle('page.induction');
  for (const name of SETTINGS) fields[name].value = String(state[name]);
  markInvalid(null);
  if (!state.job) await run.clear(state);
  else if (run.job !== state.job) await run.follow(state.job, state, streams.get(state.job));
  $('results').dataset.drawn = page.urlOf(state);
}

setTitle('page.induction');
page.start();
