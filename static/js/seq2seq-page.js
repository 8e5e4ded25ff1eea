// The encoder-decoder lab's page (/seq2seq): Train starts a job with Bahdanau attention (POST
// /api/v1/labs/seq2seq/train) and, when asked, the same network without attention beside it; each job's event
// stream extends the curves, and the attention run's redraws the watched example's alignment and states its
// alignment share; both runs' accuracy by source length shows the bottleneck. A text of one's own goes to the
// trained networks (POST /api/v1/labs/seq2seq/predict): the output and its alignment.
//
// State in the URL: /seq2seq?task=…&steps=…&lr=…&batch=…&hidden=…&seed=…&both=0&job=…&plain=… (only what differs
// from the defaults). `job` is the run with attention, `plain` the one without: a reload or 中文 replays them.
import { ApiError, predictSeq2seq, startTraining, stopTraining, trainingEventsUrl } from './api.js';
import { alignmentFigure, curvesFigure, lengthFigure } from './figures/seq2seq.js';
import { lang } from './i18n/index.js';
import { readWholeFields } from './labs/fields.js';
import { followJob } from './labs/follow.js';
import { labRefusal } from './labs/refusal.js';
import { $, createPage, createStatus, setTitle, t } from './page.js';
import { longestMean } from './seq2seq/lengths.js';
import { renderFigure } from './views/plot.js';

const TRAIN = '/api/v1/labs/seq2seq/train';
// The lab's defaults and limits (model/lab/seq2seq.py; the server checks them again).
const DEFAULTS = Object.freeze({ task: 'reverse', steps: 1500, lr: 0.002, batch: 64, hidden: 96, seed: 0, both: true, job: null, plain: null });
const LIMITS = Object.freeze({ steps: [1, 20000], batch: [1, 256], hidden: [4, 256], seed: [0, 2147483647], lr: [0, 0.1] });
const WHOLE = ['steps', 'batch', 'hidden', 'seed'];
const TASKS = ['reverse', 'dates'];
const EXAMPLES = { reverse: 'attention', dates: '1 Dec 2026' }; // ui-text: not UI (inputs of the tasks)
const JOB_ID = /^[0-9a-f]{32}$/;
const KINDS = ['attention', 'plain']; // the run with attention, the run without

const fields = Object.fromEntries(['task', ...WHOLE, 'lr'].map((name) => [name, $(`seq2seq-${name}`)]));
const els = {
  both: $('seq2seq-both'), train: $('seq2seq-train'), stop: $('seq2seq-stop'), results: $('results'),
  progress: $('seq2seq-progress'), fill: $('seq2seq-progress-fill'), progressText: $('seq2seq-progress-text'),
  alignment: $('plot-alignment'), alignmentHint: $('seq2seq-alignment-hint'), share: $('seq2seq-share'),
  loss: $('plot-loss'), accuracy: $('plot-accuracy'), length: $('plot-length'), lengthHint: $('seq2seq-length-hint'),
  bottleneck: $('seq2seq-bottleneck'), taskHint: $('seq2seq-task-hint'), text: $('seq2seq-text'),
  predict: $('seq2seq-predict'), predicted: $('seq2seq-predicted'), predictedMap: $('plot-predicted'),
};
const seconds = new Intl.NumberFormat(lang === 'zh' ? 'zh-CN' : 'en', { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const percent = (x) => `${(100 * x).toFixed(1)} %`;
const fieldLabel = (name) => t(`seq2seq.field.${name}`);

function read(params) {
  const state = {};
  for (const name of WHOLE) {
    const text = params.get(name);
    const [low, high] = LIMITS[name];
    state[name] = text !== null && /^\d{1,10}$/.test(text) ? Math.min(Math.max(Number(text), low), high) : DEFAULTS[name];
  }
  const lr = Number(params.get('lr') ?? Number.NaN);
  state.lr = Number.isFinite(lr) && lr > 0 && lr <= LIMITS.lr[1] ? lr : DEFAULTS.lr;
  state.task = TASKS.includes(params.get('task')) ? params.get('task') : DEFAULTS.task;
  state.both = params.get('both') !== '0';
  for (const name of ['job', 'plain']) state[name] = JOB_ID.test(params.get(name) ?? '') ? params.get(name) : null;
  return state;
}

const page = createPage({
  path: '/seq2seq',
  read,
  write: (state) => new URLSearchParams(Object.entries(state)
    .filter(([name, value]) => value !== null && value !== DEFAULTS[name])
    .map(([name, value]) => [name, typeof value === 'boolean' ? (value ? '1' : '0') : String(value)])),
  render,
});
const status = createStatus();

// A text the task cannot read is named as the input, whatever the rule.
const refusal = labRefusal('seq2seq', (name, item) => (name === 'text' ? 'seq2seq.problem.text' : `seq2seq.problem.${item.type}`));

// ---- the runs on screen -------------------------------------------------------------------------------------------

let runs = null; // {settings, attention: run, plain: run|null}; run = {job, source, evals, phase}
let frame = 0;

const running = () => runs !== null && KINDS.some((kind) => runs[kind]?.phase === 'running');

function showPhase() {
  const phases = runs ? KINDS.filter((kind) => runs[kind]).map((kind) => runs[kind].phase) : [];
  const phase = phases.includes('running') ? 'running' : phases.find((p) => p !== 'done') ?? phases[0];
  if (phase) els.results.dataset.run = phase;
  else delete els.results.dataset.run;
  els.train.disabled = phase === 'running';
  els.stop.disabled = phase !== 'running';
  els.predict.disabled = !runs || !runs.attention.evals.length;
}

function showProgress() {
  const { steps } = runs.settings;
  const done = Math.min(...KINDS.filter((kind) => runs[kind]).map((kind) => runs[kind].evals.at(-1)?.step ?? 0));
  const elapsed = Math.max(...KINDS.filter((kind) => runs[kind]).map((kind) => runs[kind].evals.at(-1)?.seconds ?? 0));
  els.progress.setAttribute('aria-valuemax', String(steps));
  els.progress.setAttribute('aria-valuenow', String(done));
  els.fill.style.width = `${((100 * done) / steps).toFixed(2)}%`;
  els.progressText.textContent = t('seq2seq.progress.text', { step: done, steps, percent: Math.round((100 * done) / steps), seconds: seconds.format(elapsed) });
}

/**
 * What follows the chosen task at once, before any training: its description and, unless the user typed a text
 * of their own, its example input.
 */
function showTask(task) {
  els.taskHint.textContent = t(`seq2seq.task.${task}Hint`); // ui-text: not UI (a key)
  if (!els.text.value || Object.values(EXAMPLES).includes(els.text.value)) els.text.value = EXAMPLES[task];
}

function drawEmpty(settings) {
  const both = Boolean(runs?.plain);
  els.alignmentHint.textContent = t('seq2seq.alignment.hint');
  els.lengthHint.textContent = t('seq2seq.length.hint', { longest: 6 });
  els.share.textContent = '';
  els.bottleneck.textContent = '';
  return Promise.all([
    renderFigure(els.loss, curvesFigure({ steps: settings.steps, kind: 'loss', both })),
    renderFigure(els.accuracy, curvesFigure({ steps: settings.steps, kind: 'accuracy', both })),
    renderFigure(els.length, lengthFigure({ attention: null, plain: null })),
    renderFigure(els.alignment, alignmentFigure({ source: [], target: [], weights: [] }), { modeBar: false }),
  ]);
}

/** Draw what every run has received since the last frame. */
function flush() {
  frame = 0;
  if (!runs) return;
  KINDS.forEach((kind, trace) => {
    const run = runs[kind];
    if (!run || !run.pending.length) return;
    const events = run.pending.splice(0);
    run.evals.push(...events);
    const x = events.map((e) => e.step);
    window.Plotly.extendTraces(els.loss, { x: [x], y: [events.map((e) => e.loss)] }, [trace]);
    window.Plotly.extendTraces(els.accuracy, { x: [x], y: [events.map((e) => e.accuracy)] }, [trace]);
  });
  const latest = runs.attention.evals.at(-1);
  const plain = runs.plain?.evals.at(-1) ?? null;
  if (latest) {
    const { alignment } = latest;
    renderFigure(els.alignment, alignmentFigure(alignment), { modeBar: false });
    els.share.textContent = t(`seq2seq.share.${runs.settings.task}`, { step: latest.step, share: percent(latest.alignment_share) });
    els.results.dataset.step = String(latest.step);
  }
  renderFigure(els.length, lengthFigure({ attention: latest?.accuracy_by_length ?? null, plain: plain?.accuracy_by_length ?? null }));
  const a = latest ? longestMean(latest.accuracy_by_length) : null;
  const b = plain ? longestMean(plain.accuracy_by_length) : null;
  els.bottleneck.textContent = a && b ? t('seq2seq.bottleneck', {
    from: a.from, to: a.to, step: latest.step, plainStep: plain.step, attention: percent(a.mean), plain: percent(b.mean),
  }) : '';
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

function finished() {
  if (running()) return;
  flush();
  status.busy(false);
  const ends = KINDS.filter((kind) => runs[kind]).map((kind) => runs[kind].phase);
  const last = runs.attention.evals.at(-1);
  if (ends.every((p) => p === 'done')) {
    status.info(t('seq2seq.status.done', { steps: runs.settings.steps, accuracy: percent(last?.accuracy ?? 0), seconds: seconds.format(runs.attention.seconds ?? 0) }));
  } else if (ends.includes('cancelled')) {
    status.info(t('seq2seq.status.cancelled', { step: last?.step ?? 0, steps: runs.settings.steps }));
  }
}

function follow(kind, job) {
  const run = { job, source: null, evals: [], pending: [], phase: 'running', seconds: 0 };
  runs[kind] = run;
  const mine = runs;
  run.source = followJob(trainingEventsUrl(TRAIN, job), {
    onEval: (data) => {
      if (runs !== mine) return;
      run.pending.push(data);
      schedule();
    },
    onEnd: (phase, data) => {
      if (runs !== mine) return;
      run.phase = phase;
      if (phase === 'done') run.seconds = data?.seconds ?? 0;
      if (phase === 'error') status.problem(t('seq2seq.error.failed', { detail: data?.detail ?? '' }));
      if (phase === 'lost') status.problem(t('seq2seq.error.gone'));
      finished();
    },
    onReconnect: () => {
      if (runs === mine) status.info(t('seq2seq.status.reconnecting'));
    },
  });
}

async function show(state) {
  close();
  runs = { settings: state, attention: null, plain: state.both && state.plain ? {} : null };
  els.results.dataset.job = state.job ?? '';
  els.predicted.textContent = '';
  window.Plotly?.purge?.(els.predictedMap);
  await drawEmpty(state);
  if (!state.job) {
    runs = null;
    showPhase();
    status.busy(false);
    status.info(t('seq2seq.status.ready'));
    return;
  }
  status.busy(true);
  status.info('');
  follow('attention', state.job);
  if (state.both && state.plain) follow('plain', state.plain);
  showPhase();
}

// ---- the settings form --------------------------------------------------------------------------------------------

function readForm() {
  const whole = readWholeFields(fields, WHOLE, LIMITS, (name, low, high) => t('seq2seq.error.whole', { field: fieldLabel(name), low, high }));
  if (!whole.values) return whole;
  const settings = { task: fields.task.value, ...whole.values };
  const lr = Number(fields.lr.value.trim());
  if (!fields.lr.value.trim() || !Number.isFinite(lr) || lr <= 0 || lr > LIMITS.lr[1]) {
    return { name: 'lr', message: t('seq2seq.error.rate', { field: fieldLabel('lr'), high: LIMITS.lr[1] }) };
  }
  settings.lr = lr;
  return { settings };
}

function markInvalid(name) {
  for (const [field, input] of Object.entries(fields)) input.setAttribute('aria-invalid', field === name ? 'true' : 'false');
}

fields.task.addEventListener('change', () => showTask(fields.task.value));

$('seq2seq-form').addEventListener('submit', async (event) => {
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
  const both = els.both.checked;
  const body = { ...settings, eval_every: Math.max(1, Math.round(settings.steps / 30)) };
  const started = [];
  try {
    started.push((await startTraining(TRAIN, { ...body, attention: true })).job);
    if (both) started.push((await startTraining(TRAIN, { ...body, attention: false })).job);
  } catch (error) {
    for (const job of started) stopTraining(TRAIN, job).catch(() => {}); // all or nothing
    els.train.disabled = running();
    status.problem(refusal(error));
    return;
  }
  await page.navigate({ ...settings, both, job: started[0], plain: started[1] ?? null });
});

els.stop.addEventListener('click', async () => {
  if (!running()) return;
  els.stop.disabled = true;
  for (const kind of KINDS) {
    const run = runs[kind];
    if (run?.phase === 'running') {
      try {
        await stopTraining(TRAIN, run.job);
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 404)) status.problem(refusal(error));
      }
    }
  }
});

// ---- a text of one's own ----------------------------------------------------------------------------------------

$('seq2seq-predict-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  if (!runs) return;
  const text = els.text.value;
  const ask = (job) => predictSeq2seq({ job, text });
  try {
    const [withAttention, without] = await Promise.all([ask(runs.attention.job), runs.plain ? ask(runs.plain.job) : null]);
    els.predicted.textContent = t(without ? 'seq2seq.predict.both' : 'seq2seq.predict.one', {
      text, output: withAttention.output, step: withAttention.step, plain: without?.output ?? '',
    });
    await renderFigure(els.predictedMap, alignmentFigure({ ...withAttention.alignment, height: 360 }), { modeBar: false });
    status.info('');
  } catch (error) {
    status.problem(refusal(error));
  }
});

async function render(state) {
  setTitle('page.seq2seq');
  for (const name of [...WHOLE, 'lr', 'task']) fields[name].value = String(state[name]);
  els.both.checked = state.both;
  showTask(state.task);
  markInvalid(null);
  if (runs?.attention?.job !== state.job || !state.job) await show(state);
  els.results.dataset.drawn = page.urlOf(state);
}

setTitle('page.seq2seq');
page.start();
