// An RNN, a convolution stack and self-attention side by side (/sequence): who can see whom (the dependency
// path from j to i in each, drawn here from the formulas), the three measured on this machine (the file
// bench/sequence_sweep.py wrote, static/data/sequence-sweep.json: nothing is measured on a page load), and how
// far back the last position's gradient reaches in each (POST /api/v1/sequence/reach).
//
// The state lives in the URL: n, i, j, k, dilated (1 or 0), layers and d.
import { getSequenceReach, getSequenceSweep } from './api.js';
import { tNodes } from './i18n/index.js';
import { $, createPage, createStatus, latestWins, Lru, lang, setTitle, t } from './page.js';
import { drawPaths } from './views/sequence/paths.js';
import { drawReach, reachHint } from './views/sequence/reach.js';
import { drawSweep } from './views/sequence/sweep.js';

const LOCALE = lang === 'zh' ? 'zh-CN' : 'en';
// Each field: its URL name, input, bounds and default (i and j are bounded by N, checked after).
export const FIELDS = {
  n: { input: 'seq-n', min: 2, max: 512, fallback: 64 },
  i: { input: 'seq-i', min: 0, max: 511, fallback: null },
  j: { input: 'seq-j', min: 0, max: 511, fallback: 0 },
  k: { input: 'seq-k', min: 2, max: 9, fallback: 3 },
  layers: { input: 'seq-layers', min: 1, max: 12, fallback: 4 },
  d: { input: 'seq-d', min: 1, max: 128, fallback: 32 },
};

const SYMBOLS = { n: 'N', i: 'i', j: 'j', k: 'k', layers: 'L', d: 'd' }; // notation, the same in every language

const whole = (text, { min, max }) => (/^\d{1,4}$/.test(text ?? '') && Number(text) >= min && Number(text) <= max ? Number(text) : null);

function read(params) {
  const state = {};
  for (const [name, field] of Object.entries(FIELDS)) state[name] = whole(params.get(name), field) ?? field.fallback;
  if (state.i === null || state.i >= state.n) state.i = state.n - 1;
  if (state.j >= state.n) state.j = 0;
  state.dilated = params.get('dilated') !== '0';
  return state;
}

function write(state) {
  const params = new URLSearchParams();
  for (const [name, field] of Object.entries(FIELDS)) {
    const fallback = name === 'i' ? state.n - 1 : field.fallback;
    if (state[name] !== fallback) params.set(name, String(state[name]));
  }
  if (!state.dilated) params.set('dilated', '0');
  return params;
}

const els = {
  form: $('seq-form'),
  dilated: $('seq-dilated'),
  error: $('seq-error'),
  paths: {
    counts: $('paths-counts'),
    plots: { rnn: $('plot-path-rnn'), conv: $('plot-path-conv'), attention: $('plot-path-attention') },
    captions: { rnn: $('path-rnn-caption'), conv: $('path-conv-caption'), attention: $('path-attention-caption') },
  },
  sweep: {
    section: $('seq-sweep'), hint: $('sweep-hint'), machine: $('sweep-machine'), status: $('sweep-status'),
    forward: $('plot-sweep-forward'), train: $('plot-sweep-train'), memory: $('plot-sweep-memory'),
    forwardCaption: $('sweep-forward-caption'), trainCaption: $('sweep-train-caption'),
    memoryCaption: $('sweep-memory-caption'), notes: $('sweep-notes'),
  },
  reach: { section: $('seq-reach'), hint: $('reach-hint'), reach: $('plot-reach'), field: $('plot-field'), caption: $('reach-caption') },
};
const status = createStatus({ region: els.reach.section, beside: null });
const guard = latestWins();
const answers = new Lru(16);
let shown = null;

function fillForm(state) {
  for (const [name, field] of Object.entries(FIELDS)) {
    const input = $(field.input);
    input.value = String(state[name]);
    input.classList.remove('is-invalid');
    input.removeAttribute('aria-invalid');
  }
  $('seq-i').max = String(state.n - 1);
  $('seq-j').max = String(state.n - 1);
  els.dilated.checked = state.dilated;
  els.error.hidden = true;
}

/**
 * The form's state, or null after marking the first field out of its bounds and saying why. i and j must be
 * below N; when N itself was changed (`changed` is its input), they move inside it instead.
 */
function formState(changed) {
  const next = { dilated: els.dilated.checked };
  const n = whole($('seq-n').value.trim(), FIELDS.n);
  for (const [name, field] of Object.entries(FIELDS)) {
    const input = $(field.input);
    const position = name === 'i' || name === 'j';
    if (position && n !== null && changed === $('seq-n')) {
      next[name] = Math.min(whole(input.value.trim(), field) ?? field.fallback ?? n - 1, n - 1);
      continue;
    }
    const bounds = position && n !== null ? { min: 0, max: n - 1 } : field;
    const value = whole(input.value.trim(), bounds);
    if (value === null) {
      input.classList.add('is-invalid');
      input.setAttribute('aria-invalid', 'true');
      els.error.textContent = t('sequence.problem.range', { field: `${t(`sequence.${name}`)} ${SYMBOLS[name]}`, min: bounds.min, max: bounds.max });
      els.error.hidden = false;
      return null;
    }
    next[name] = value;
  }
  return next;
}

async function render(state) {
  shown = state;
  fillForm(state);
  setTitle('page.sequence');
  const [key, values, data] = reachHint(state);
  els.reach.hint.replaceChildren(...tNodes(state.dilated ? 'sequence.reach.hintDilated' : key, values, data));
  await drawPaths(els.paths, state, pick);
  const ticket = guard.begin();
  const body = { length: state.n, d: state.d, kernel: state.k, dilated: state.dilated, layers: state.layers };
  status.busy(true);
  status.info('');
  try {
    const answer = await answers.load(JSON.stringify(body), () => getSequenceReach(body));
    if (!guard.current(ticket)) return;
    await drawReach(els.reach, answer);
    status.busy(false);
  } catch (error) {
    if (guard.current(ticket)) status.error(error);
  }
}

const page = createPage({ path: '/sequence', read, write, render });

/** A click on a path figure: the nearer of i and j moves to the clicked position. */
function pick(position) {
  if (!shown || position < 0 || position >= shown.n) return;
  const moveI = Math.abs(position - shown.i) <= Math.abs(position - shown.j);
  page.navigate({ ...shown, ...(moveI ? { i: position } : { j: position }) });
}

els.form.addEventListener('change', (event) => {
  const next = formState(event.target);
  if (next) page.navigate(next);
});
els.form.addEventListener('submit', (event) => event.preventDefault());

async function sweep() {
  try {
    await drawSweep(els.sweep, await getSequenceSweep(), LOCALE);
  } catch (error) {
    els.sweep.status.textContent = t('sequence.sweep.missing', { error: error.message || String(error) });
    els.sweep.status.hidden = false;
  }
}

page.start();
sweep();
