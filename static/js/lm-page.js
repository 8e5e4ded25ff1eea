// The page that grows a small GPT from the learner's own text (/lm): Train sends the pasted text (JSON) or the
// chosen file (multipart/form-data) to POST /api/v1/labs/lm/train and follows the job's events: the loss curve
// against the text's unigram and bigram entropies, a generated sample at each evaluation, and once done the heads
// the detectors found, each with links that open the new model in the explorer and /steps on the learner's
// sentence. The server's trained models are listed below, each with its links and a Delete button.
//
// State in the URL: /lm?job=…&sentence=… — `job` names the run on screen (the server keeps a job's events, so a
// reload or a language switch replays it); the text itself is never put in the URL.
import { ApiError, startTraining, stopTraining, trainingEventsUrl } from './api.js';
import { explorerLink, firstSentence, headRows, lossFigure, ROLES, standing, stepsLink, trainBody } from './figures/lm.js';
import { lang, tNodes } from './i18n/index.js';
import { followJob } from './labs/follow.js';
import { labRefusal } from './labs/refusal.js';
import { $, createStatus, setTitle, t } from './page.js';
import { renderFigure } from './views/plot.js';

const TRAIN = '/api/v1/labs/lm/train';
const MODELS = '/api/v1/labs/lm/models';
const JOB_ID = /^[0-9a-f]{32}$/;
const NUMBERS = ['steps', 'seed', 'context', 'layers', 'heads', 'd_model'];
const LOCALE = lang === 'zh' ? 'zh-CN' : 'en';
const langParam = new URLSearchParams(window.location.search).get('lang');

const fields = Object.fromEntries(NUMBERS.map((name) => [name, $(`lm-${name}`)]));
const DEFAULTS = Object.fromEntries(NUMBERS.map((name) => [name, Number(fields[name].defaultValue)])); // the server's
const els = {
  form: $('lm-form'), text: $('lm-text'), file: $('lm-file'), count: $('lm-count'), sentence: $('lm-sentence'),
  train: $('lm-train'), stop: $('lm-stop'), progress: $('lm-progress'), fill: $('lm-progress-fill'),
  progressText: $('lm-progress-text'), loss: $('lm-loss'), standing: $('lm-standing'), samples: $('lm-samples'),
  model: $('lm-model'), heads: document.querySelector('#lm-head-table tbody'), models: $('lm-models'),
  modelsHint: $('lm-models-hint'), results: $('results'),
};
const status = createStatus();
const labWords = labRefusal('lm', (name, item) => (name === 'text' || name === 'file' ? 'lm.problem.text' : `lm.problem.${item.type}`));
/** A refused start in the page's words: over the size cap (413), uploads off (403), else the labs' wording. */
function refusal(error) {
  if (error instanceof ApiError && error.status === 413) {
    return t('lm.error.large', { limit: (limits.max_upload_bytes / (1024 * 1024)).toLocaleString(LOCALE, { maximumFractionDigits: 1 }) });
  }
  if (error instanceof ApiError && error.status === 403) return t('lm.uploadsOff');
  return labWords(error);
}
let run = null; // {job, steps, evals, source}
let limits = { min_chars: 2000, max_upload_bytes: 8 * 1024 * 1024, uploads: true, keep: 8 };

const label = (key) => t(`lm.loss.${key}`);
const sentence = () => els.sentence.value.trim() || firstSentence(els.text.value) || t('lm.defaultSentence');

function params() {
  return new URLSearchParams(window.location.search);
}

function writeUrl(job) {
  const query = params();
  if (job) query.set('job', job);
  else query.delete('job');
  const words = els.sentence.value.trim();
  if (words) query.set('sentence', words);
  else query.delete('sentence');
  const text = query.toString();
  window.history.replaceState(null, '', text ? `/lm?${text}` : '/lm');
}

function countText() {
  const chars = Array.from(els.text.value).length;
  els.count.textContent = els.file.files?.length
    ? t('lm.count.file', { name: els.file.files[0].name })
    : t('lm.count.chars', { chars: chars.toLocaleString(LOCALE), min: limits.min_chars.toLocaleString(LOCALE) });
}

function progress(step, steps) {
  const share = steps ? Math.min(1, step / steps) : 0;
  els.progress.setAttribute('aria-valuenow', String(Math.round(100 * share)));
  els.fill.style.width = `${(100 * share).toFixed(1)}%`;
  els.progressText.textContent = t('lm.progressText', { step, steps });
}

async function drawEvals() {
  if (!window.Plotly || !run) return;
  await renderFigure(els.loss, lossFigure(run.evals, label, run.steps), { filename: 'attnscope-lm-loss' });
  els.loss.dataset.points = String(run.evals.length);
  const where = standing(run.evals.at(-1));
  const last = run.evals.at(-1);
  els.standing.textContent = where ? t(`lm.standing.${where}`, {
    val: last.val_loss.toFixed(3), unigram: last.unigram_entropy.toFixed(3), bigram: last.bigram_entropy.toFixed(3),
  }) : '';
}

function addSample(evaluation) {
  const item = document.createElement('li');
  const step = document.createElement('span');
  step.className = 'lm-sample-step';
  step.textContent = t('lm.samples.step', { step: evaluation.step });
  const text = document.createElement('span');
  text.className = 'lm-sample-text';
  text.setAttribute('translate', 'no');
  text.textContent = evaluation.sample; // the network's output: text, never HTML
  item.append(step, text);
  els.samples.prepend(item);
}

function link(href, key, cls) {
  const a = document.createElement('a');
  a.href = href;
  a.className = cls;
  a.textContent = t(key);
  return a;
}

function drawHeads(done) {
  const rows = headRows(done.heads);
  const words = sentence();
  els.heads.replaceChildren(...rows.map((h) => {
    const tr = document.createElement('tr');
    tr.dataset.layer = String(h.layer);
    tr.dataset.head = String(h.head);
    const cell = (text) => {
      const td = document.createElement('td');
      td.textContent = text;
      return td;
    };
    const roles = h.roles.length ? h.roles.map((role) => t(`lm.role.${role}`)).join(', ') : t('lm.role.none');
    const links = document.createElement('td');
    links.append(link(explorerLink(done.model, words, h.layer, h.head, langParam), 'lm.heads.explorer', 'lm-explorer-link'),
      ' ', link(stepsLink(done.model, words, h.layer, h.head, langParam), 'lm.heads.steps', 'lm-steps-link'));
    tr.append(cell(t('lm.heads.name', { layer: h.layer, head: h.head })),
      ...ROLES.map((role) => cell(h[role].toFixed(2))), cell(roles), links);
    return tr;
  }));
  els.model.replaceChildren(...tNodes('lm.model', { model: done.model, steps: done.steps, seconds: Math.round(done.seconds) }, ['model']));
  els.model.dataset.model = done.model;
}

function buttons(running) {
  els.train.disabled = running;
  els.stop.disabled = !running;
}

function follow(job, events) {
  run = { job, steps: 0, evals: [] };
  els.samples.replaceChildren();
  els.heads.replaceChildren();
  els.model.textContent = '';
  delete els.model.dataset.model;
  els.results.dataset.phase = 'running';
  buttons(true);
  status.busy(true);
  followJob(events ?? trainingEventsUrl(TRAIN, job), {
    onEval: (evaluation) => {
      if (!run || run.job !== job) return;
      run.steps = evaluation.steps;
      run.evals.push(evaluation);
      progress(evaluation.step, evaluation.steps);
      addSample(evaluation);
      drawEvals();
    },
    onEnd: (phase, data) => {
      if (!run || run.job !== job) return;
      buttons(false);
      status.busy(false);
      els.results.dataset.phase = phase;
      if (phase === 'done' && data) {
        drawHeads(data);
        status.info(t('lm.status.done'));
        els.results.dataset.model = data.model;
        listModels();
      } else if (phase === 'cancelled') status.info(t('lm.status.cancelled'));
      else if (phase === 'error') status.problem(t('lm.status.error', { detail: data?.detail ?? '' }));
      else status.problem(t('lm.error.gone'));
    },
    onReconnect: () => status.info(t('lm.status.reconnecting')),
  });
}

async function start() {
  const body = trainBody(Object.fromEntries(NUMBERS.map((name) => [name, fields[name].value])));
  const file = els.file.files?.[0] ?? null;
  if (!file && Array.from(els.text.value).length < limits.min_chars) {
    status.problem(t('lm.error.short', { min: limits.min_chars.toLocaleString(LOCALE) }));
    els.text.focus();
    return;
  }
  body.eval_every = Math.max(1, Math.round((body.steps ?? DEFAULTS.steps) / 20));
  buttons(true);
  status.busy(true);
  let answer;
  try {
    if (file) {
      const form = new FormData();
      form.append('file', file);
      for (const [name, value] of Object.entries(body)) form.append(name, String(value));
      const response = await fetch(TRAIN, { method: 'POST', body: form, headers: { Accept: 'application/json' } });
      const parsed = await response.json().catch(() => null);
      if (!response.ok) throw new ApiError(response.status, 'http', parsed?.detail ?? '', parsed);
      answer = parsed;
    } else {
      answer = await startTraining(TRAIN, { text: els.text.value, ...body });
    }
  } catch (error) {
    buttons(false);
    status.problem(refusal(error));
    return;
  }
  if (!els.sentence.value.trim()) els.sentence.value = firstSentence(file ? '' : els.text.value);
  writeUrl(answer.job);
  follow(answer.job, answer.events);
}

function modelItem(model) {
  const item = document.createElement('li');
  item.dataset.model = model.id;
  const name = document.createElement('span');
  name.className = 'lm-model-name';
  name.replaceChildren(...tNodes('lm.models.item', {
    id: model.id, layers: model.n_layers, heads: model.n_heads, chars: (model.characters ?? 0).toLocaleString(LOCALE),
    loss: model.final_val_loss === null ? '–' : model.final_val_loss.toFixed(2),
  }, ['id']));
  const words = sentence();
  const remove = document.createElement('button');
  remove.type = 'button';
  remove.className = 'button-secondary lm-delete';
  remove.textContent = t('lm.models.delete');
  remove.addEventListener('click', async () => {
    remove.disabled = true;
    try {
      await fetch(`${MODELS}/${encodeURIComponent(model.id)}`, { method: 'DELETE' });
    } finally {
      listModels();
    }
  });
  item.append(name, ' ', link(explorerLink(model.id, words, 0, 0, langParam), 'lm.heads.explorer', 'lm-explorer-link'), ' ',
    link(stepsLink(model.id, words, 0, 0, langParam), 'lm.heads.steps', 'lm-steps-link'), ' ', remove);
  return item;
}

async function listModels() {
  let answer;
  try {
    const response = await fetch(MODELS, { headers: { Accept: 'application/json' } });
    answer = await response.json();
  } catch {
    return;
  }
  limits = answer;
  els.models.replaceChildren(...answer.models.map(modelItem));
  els.models.dataset.count = String(answer.models.length);
  els.modelsHint.textContent = answer.models.length
    ? t('lm.models.hint', { keep: answer.keep }) : t('lm.models.none', { keep: answer.keep });
  els.file.disabled = !answer.uploads;
  if (!answer.uploads) status.info(t('lm.uploadsOff'));
  countText();
}

els.form.addEventListener('submit', (event) => {
  event.preventDefault();
  start();
});
els.stop.addEventListener('click', async () => {
  if (!run) return;
  els.stop.disabled = true;
  try {
    await stopTraining(TRAIN, run.job);
  } catch (error) {
    status.problem(refusal(error));
  }
});
els.text.addEventListener('input', countText);
els.file.addEventListener('change', countText);

setTitle('page.lm');
els.sentence.value = params().get('sentence') ?? '';
countText();
listModels();
const job = params().get('job');
if (job && JOB_ID.test(job)) follow(job, null);
