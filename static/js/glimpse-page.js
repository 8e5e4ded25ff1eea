// The glimpse lab's page (/glimpse): "Train all four" trains the same digit reader with soft attention and with a
// hard glimpse trained by REINFORCE, Gumbel-softmax and straight-through (and REINFORCE without its baseline when
// asked), POST /api/v1/labs/glimpse/train each. The server trains at most two jobs at once, so the page starts one,
// then keeps two training, starting the next queued run as each finishes. Each job's event stream redraws the
// curves; each finished run fills its row of the table, and when all are done sentences computed from their numbers
// say what they show. The canvas view draws where a run looks on the watched test canvases.
//
// State in the URL: /glimpse?steps=…&batch=…&seed=…&without=1&soft=…&reinforce=…&gumbel=…&straight_through=…
// &nobaseline=… (only what differs from the defaults; each run's job id once started): a reload or 中文 replays the
// runs and goes on with the queued ones, unless a run was stopped.
import { ApiError, GLIMPSE_TRAIN, startTraining, stopTraining, trainingEventsUrl } from './api.js';
import { METHOD_OF, METHODS, percent, RUNS, secondsText, seriesFigure, varianceText, verdict } from './figures/glimpse.js';
import { lang } from './i18n/index.js';
import { readWholeFields } from './labs/fields.js';
import { followJob } from './labs/follow.js';
import { labRefusal } from './labs/refusal.js';
import { $, createPage, createStatus, setTitle, t } from './page.js';
import { createLook } from './views/labs/glimpse-look.js';
import { loadPlotly } from './views/plotly-loader.js';
import { renderFigure } from './views/plot.js';

const LOCALE = lang === 'zh' ? 'zh-CN' : 'en';
const AT_ONCE = 2; // the server's MAX_RUNNING (app/jobs/registry.py): jobs of every lab training at once
const EVALUATIONS = 16; // eval events per run (eval_every = steps / 16)
// The lab's defaults and limits (model/lab/glimpse.py; the server checks them again).
const DEFAULTS = Object.freeze({ steps: 2400, batch: 64, seed: 0, without: false, ...Object.fromEntries(RUNS.map((run) => [run, null])) });
const LIMITS = Object.freeze({ steps: [1, 20000], batch: [1, 256], seed: [0, 2147483647] });
const WHOLE = ['steps', 'batch', 'seed'];
const JOB_ID = /^[0-9a-f]{32}$/;
const FINAL = ['done', 'cancelled', 'error', 'lost', 'skipped'];
const CHARTS = [['accuracy', 'step'], ['accuracy', 'seconds'], ['loss', 'step'], ['loss', 'seconds'], ['variance', 'step'], ['entropy', 'step']];

const fields = Object.fromEntries(WHOLE.map((name) => [name, $(`glimpse-${name}`)]));
const els = {
  form: $('glimpse-form'), train: $('glimpse-train'), stop: $('glimpse-stop'), without: $('glimpse-without'), results: $('results'),
  runs: $('glimpse-runs'), table: $('glimpse-table'), verdict: $('glimpse-verdict'),
  charts: Object.fromEntries(CHARTS.map(([metric, x]) => [`${metric}-${x}`, $(`plot-${metric}-${x}`)])),
};
const look = createLook({
  run: $('glimpse-run'), canvases: $('glimpse-canvases'), step: $('glimpse-step'), stepLabel: $('glimpse-step-label'),
  plot: $('plot-canvas'), target: $('glimpse-target'), output: $('glimpse-output'), says: $('glimpse-says'),
}, (run) => session?.runs[run]?.evals ?? null);

function read(params) {
  const state = { without: params.get('without') === '1' };
  for (const name of WHOLE) {
    const text = params.get(name);
    const [low, high] = LIMITS[name];
    state[name] = text !== null && /^\d{1,10}$/.test(text) ? Math.min(Math.max(Number(text), low), high) : DEFAULTS[name];
  }
  for (const run of RUNS) state[run] = JOB_ID.test(params.get(run) ?? '') ? params.get(run) : null;
  if (!state.without) state.nobaseline = null;
  return state;
}

const page = createPage({
  path: '/glimpse',
  read,
  write: (state) => new URLSearchParams(Object.entries(state)
    .filter(([name, value]) => value !== null && value !== DEFAULTS[name])
    .map(([name, value]) => [name, value === true ? '1' : String(value)])),
  render,
});
const status = createStatus();
const refusal = labRefusal('glimpse');

// ---- the runs on screen -------------------------------------------------------------------------------------------

// {state, plan: run names, runs: {run: {job, source, evals, pending, phase, done}}, stopped, retry}
let session = null;
let frame = 0;

const plan = (state) => (state.without ? RUNS : METHODS);
const phaseOf = (run) => session.runs[run].phase;
const active = () => session.plan.filter((run) => ['running', 'starting'].includes(phaseOf(run)));
const allFinal = () => session.plan.every((run) => FINAL.includes(phaseOf(run)));
const halted = () => session.stopped || session.plan.some((run) => ['cancelled', 'error', 'lost'].includes(phaseOf(run)));

function showRuns() {
  const { steps } = session?.state ?? page.state();
  els.runs.replaceChildren(...(session?.plan ?? []).map((run) => {
    const { phase, evals, done } = session.runs[run];
    const item = document.createElement('li');
    item.dataset.run = run;
    item.dataset.phase = phase;
    const swatch = document.createElement('span');
    swatch.className = `glimpse-swatch glimpse-swatch-${run}`;
    swatch.setAttribute('aria-hidden', 'true');
    const words = { step: evals.at(-1)?.step ?? 0, steps, seconds: secondsText(done?.seconds ?? evals.at(-1)?.seconds ?? 0) };
    item.append(swatch, document.createTextNode(t('glimpse.runLine', { run: t(`glimpse.run.${run}`), phase: t(`glimpse.phase.${phase === 'starting' ? 'queued' : phase}`, words) })));
    return item;
  }));
  const running = session !== null && !allFinal();
  els.train.disabled = running;
  els.stop.disabled = !running || session.stopped;
  if (session) els.results.dataset.run = running ? 'running' : session.plan.every((run) => phaseOf(run) === 'done') ? 'done' : 'stopped';
  else delete els.results.dataset.run;
}

/** The charts' legend: a swatch and the name of each run drawn (all four methods before any run). */
function showLegend() {
  const runs = session?.plan ?? METHODS;
  for (const legend of document.querySelectorAll('.glimpse-legend')) {
    legend.replaceChildren(...runs.map((run) => {
      const item = document.createElement('li');
      const swatch = document.createElement('span');
      swatch.className = `glimpse-swatch glimpse-swatch-${run}`;
      swatch.setAttribute('aria-hidden', 'true');
      item.append(swatch, document.createTextNode(t(`glimpse.run.${run}`)));
      return item;
    }));
  }
}

function drawCharts() {
  showLegend();
  const runs = Object.fromEntries(RUNS.filter((run) => session?.plan.includes(run)).map((run) => [run, session.runs[run].evals]));
  const { steps } = session?.state ?? page.state();
  return Promise.all(CHARTS.map(([metric, x]) => renderFigure(els.charts[`${metric}-${x}`], seriesFigure({ metric, x, runs, steps }))));
}

function clearTable() {
  for (const row of els.table.querySelectorAll('tr[data-run]')) {
    row.hidden = row.dataset.run === 'nobaseline' && !(session?.plan.includes('nobaseline'));
    for (const cell of row.querySelectorAll('td')) {
      cell.textContent = '';
      delete cell.dataset.value;
    }
  }
  els.verdict.replaceChildren();
}

function fillRow(run) {
  const { done, evals } = session.runs[run];
  const values = { ...done, grad_variance: evals.at(-1)?.grad_variance ?? null };
  for (const cell of els.table.querySelectorAll(`tr[data-run="${run}"] td`)) {
    const name = cell.dataset.cell;
    const value = values[name];
    cell.dataset.value = String(value);
    if (name === 'seconds') cell.textContent = secondsText(value);
    else if (name === 'grad_variance') cell.textContent = run === 'soft' ? t('glimpse.table.noSample') : varianceText(value);
    else cell.textContent = `${percent(value)} %`;
  }
}

function fillVerdict() {
  const done = Object.fromEntries(session.plan.filter((run) => phaseOf(run) === 'done').map((run) => [run, session.runs[run].done]));
  const evals = Object.fromEntries(session.plan.map((run) => [run, session.runs[run].evals]));
  els.verdict.replaceChildren(...verdict(done, evals, LOCALE).map(([key, values]) => {
    const item = document.createElement('li');
    item.dataset.key = key;
    item.dataset.values = JSON.stringify(values);
    item.textContent = t(key, values);
    return item;
  }));
}

/** Draw what every run has received since the last frame. */
function flush() {
  frame = 0;
  if (!session) return;
  for (const run of session.plan) session.runs[run].evals.push(...session.runs[run].pending.splice(0));
  drawCharts();
  showRuns();
  look.draw();
}

const schedule = () => {
  if (!frame) frame = window.requestAnimationFrame(flush);
};

function close() {
  if (frame) window.cancelAnimationFrame(frame);
  frame = 0;
  if (!session) return;
  window.clearTimeout(session.retry);
  for (const run of session.plan) session.runs[run].source?.close();
}

async function ended() {
  flush();
  if (halted()) for (const run of session.plan) if (phaseOf(run) === 'queued') session.runs[run].phase = 'skipped';
  showRuns();
  if (!allFinal()) {
    fill();
    return;
  }
  status.busy(false);
  if (session.plan.every((run) => phaseOf(run) === 'done')) {
    fillVerdict();
    status.info(t('glimpse.status.done', { count: session.plan.length, steps: session.state.steps }));
  } else if (session.stopped || session.plan.some((run) => phaseOf(run) === 'cancelled')) {
    fillVerdict();
    status.info(t('glimpse.status.cancelled'));
  }
  await drawCharts();
}

function follow(run, job) {
  const mine = session;
  const entry = Object.assign(session.runs[run], { job, phase: 'running' });
  entry.source = followJob(trainingEventsUrl(GLIMPSE_TRAIN, job), {
    onEval: (data) => {
      if (session !== mine) return;
      entry.pending.push(data);
      schedule();
    },
    onEnd: (phase, data) => {
      if (session !== mine) return;
      entry.phase = phase;
      if (phase === 'done') {
        entry.done = data;
        entry.evals.push(...entry.pending.splice(0));
        fillRow(run);
      }
      if (phase === 'error') status.problem(t('glimpse.error.failed', { detail: data?.detail ?? '' }));
      if (phase === 'lost') status.problem(t('glimpse.error.gone'));
      ended();
    },
    onReconnect: () => {
      if (session === mine) status.info(t('glimpse.status.reconnecting'));
    },
  });
}

/** Start queued runs while fewer than AT_ONCE of this page's runs train; a busy server is asked again later. */
async function fill() {
  const mine = session;
  while (session === mine && !halted() && active().length < AT_ONCE) {
    const run = session.plan.find((name) => phaseOf(name) === 'queued');
    if (!run) return;
    session.runs[run].phase = 'starting';
    const { steps, batch, seed } = session.state;
    const body = { method: METHOD_OF[run], steps, batch, seed, baseline: run !== 'nobaseline', eval_every: Math.max(1, Math.round(steps / EVALUATIONS)) };
    let job;
    try {
      // eslint-disable-next-line no-await-in-loop
      job = (await startTraining(GLIMPSE_TRAIN, body)).job;
    } catch (error) {
      if (session !== mine) return;
      session.runs[run].phase = 'queued';
      if (error instanceof ApiError && error.status === 429) { // another job holds the place: try again when it may be free
        status.info(refusal(error));
        session.retry = window.setTimeout(fill, 1000 * Math.max(1, error.retryAfter ?? 5));
      } else {
        session.runs[run].phase = 'error';
        status.problem(refusal(error));
        ended();
      }
      return;
    }
    if (session !== mine || session.stopped) {
      stopTraining(GLIMPSE_TRAIN, job).catch(() => {}); // the page moved on, or Stop came, while it started
      if (session === mine) {
        session.runs[run].phase = 'skipped';
        ended();
      }
      return;
    }
    session.state = { ...session.state, [run]: job };
    page.replace(session.state);
    els.results.dataset.drawn = page.urlOf(session.state);
    follow(run, job);
    showRuns();
  }
}

async function show(state) {
  close();
  session = null;
  clearTable();
  if (!RUNS.some((run) => state[run])) {
    await drawCharts();
    showRuns();
    look.draw();
    status.busy(false);
    status.info(t('glimpse.status.ready'));
    return;
  }
  session = { state, plan: plan(state), stopped: false, retry: 0, runs: {} };
  for (const run of session.plan) session.runs[run] = { job: null, source: null, evals: [], pending: [], phase: 'queued', done: null };
  clearTable();
  status.busy(true);
  status.info('');
  for (const run of session.plan) if (state[run]) follow(run, state[run]);
  await drawCharts();
  showRuns();
  fill();
}

// ---- the settings form --------------------------------------------------------------------------------------------

function readForm() {
  const whole = readWholeFields(fields, WHOLE, LIMITS, (name, low, high) => t('glimpse.error.whole', { field: t(`glimpse.field.${name}`), low, high }));
  if (!whole.values) return whole;
  const settings = { without: els.without.checked, ...whole.values };
  return { settings };
}

function markInvalid(name) {
  for (const [field, input] of Object.entries(fields)) input.setAttribute('aria-invalid', field === name ? 'true' : 'false');
}

els.form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const { settings, name, message } = readForm();
  if (!settings) {
    markInvalid(name);
    status.problem(message);
    fields[name].focus();
    return;
  }
  markInvalid(null);
  els.train.disabled = true;
  status.busy(true);
  const { steps, batch, seed } = settings;
  let job;
  try {
    job = (await startTraining(GLIMPSE_TRAIN, { method: 'soft', steps, batch, seed, eval_every: Math.max(1, Math.round(steps / EVALUATIONS)) })).job;
  } catch (error) {
    els.train.disabled = session !== null && !allFinal();
    status.busy(false);
    status.problem(refusal(error));
    return;
  }
  await page.navigate({ ...DEFAULTS, ...settings, soft: job });
});

els.stop.addEventListener('click', async () => {
  if (!session || allFinal()) return;
  session.stopped = true;
  window.clearTimeout(session.retry);
  for (const run of session.plan) if (phaseOf(run) === 'queued') session.runs[run].phase = 'skipped';
  showRuns();
  for (const run of session.plan) {
    if (phaseOf(run) !== 'running') continue;
    try {
      // eslint-disable-next-line no-await-in-loop
      await stopTraining(GLIMPSE_TRAIN, session.runs[run].job);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) status.problem(refusal(error));
    }
  }
  if (allFinal()) ended();
});

async function render(state) {
  setTitle('page.glimpse');
  for (const name of WHOLE) fields[name].value = String(state[name]);
  els.without.checked = state.without;
  for (const option of $('glimpse-run').options) option.hidden = option.value === 'nobaseline' && !state.without;
  markInvalid(null);
  await loadPlotly();
  const same = session !== null && page.urlOf(session.state) === page.urlOf(state);
  if (!same) await show(state);
  els.results.dataset.drawn = page.urlOf(session?.state ?? state);
}

setTitle('page.glimpse');
page.start();
