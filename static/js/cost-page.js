// The cost page (/cost): what one attention layer and a whole model cost in parameters, memory and
// FLOPs, with every formula filled in, and memory against sequence length for standard attention
// and FlashAttention, and the KV cache a decoder keeps (grouped-query attention when G < H). Every number
// comes from GET /api/v1/cost (model/lab/cost.py holds the formulas); the "measured here" panel reads the
// file bench/flash_sweep.py wrote (static/data/flash-sweep.json), nothing is measured on a page load.
// State in the URL: /cost?d_model=…&n_heads=…&n_kv_heads=…&seq_len=…&batch=…&n_layers=…&bytes=…&bias=false
// (n_kv_heads only when it is not n_heads)
import { ApiError, getCost, getFlashSweep } from './api.js';
import {
  binaryBytes, decimalBytes, duration, exact, inBinaryUnit, memoryFigure, scientific, significant,
  SWEEP_METHODS, sweepMemoryFigure, sweepRows, sweepTimeFigure,
} from './figures/cost.js';
import { $, createPage, createStatus, lang, latestWins, Lru, loadModels, setTitle, t } from './page.js';
import { tNodes } from './i18n/index.js';
import { renderFigure } from './views/plot.js';

// The API's defaults: one layer of the Transformer base model (E = 512, H = 8) at 1024 tokens in fp32;
// G defaults to H (multi-head attention).
const DEFAULTS = Object.freeze({ d_model: 512, n_heads: 8, seq_len: 1024, batch: 1, n_layers: 1, bytes: 4, bias: true });
const LIMITS = Object.freeze({
  d_model: [1, 65536], n_heads: [1, 65536], n_kv_heads: [1, 65536], seq_len: [1, 10000000], batch: [1, 4096],
  n_layers: [1, 1024],
});
const NUMBERS = Object.keys(LIMITS);
const BYTE_SIZES = [1, 2, 4, 8];
const LOCALE = lang === 'zh' ? 'zh-CN' : 'en';

// The notes' example: N = 100 000 tokens, H = 64 heads in fp16, one sequence. The matrix does not
// depend on E; E = 4096 gives heads of width D = 64.
const NOTES = Object.freeze({ d_model: 4096, n_heads: 64, n_kv_heads: 64, seq_len: 100000, batch: 1, n_layers: 1, bytes: 2, bias: true });
// The Iris transformer's attention layer (E = 8, H = 2, 4 tokens), a batch of 16 flowers, trained in float64.
const IRIS = Object.freeze({ d_model: 8, n_heads: 2, n_kv_heads: 2, seq_len: 4, batch: 16, n_layers: 1, bytes: 8, bias: true });

const fields = {
  d_model: $('cost-d-model'),
  n_heads: $('cost-heads'),
  n_kv_heads: $('cost-kv-heads'),
  seq_len: $('cost-seq-len'),
  batch: $('cost-batch'),
  n_layers: $('cost-layers'),
};
const bytesField = $('cost-bytes');
const biasField = $('cost-bias');
const invalid = $('cost-invalid');

/** A whole number within the field's limits, else `fallback`. */
function numberParam(params, name, fallback = DEFAULTS[name]) {
  const text = params.get(name);
  const [low, high] = LIMITS[name];
  const value = text !== null && /^\d{1,8}$/.test(text) ? Number(text) : fallback;
  return Math.min(Math.max(value, low), high);
}

/** The state of a query string: every number within its limits, G = H when the URL leaves it out (whether
 * H divides E and G divides H are the server's rules). */
function read(params) {
  const state = Object.fromEntries(NUMBERS.filter((name) => name !== 'n_kv_heads').map((name) => [name, numberParam(params, name)]));
  state.n_kv_heads = numberParam(params, 'n_kv_heads', state.n_heads);
  const bytes = Number(params.get('bytes'));
  return { ...state, bytes: BYTE_SIZES.includes(bytes) ? bytes : DEFAULTS.bytes, bias: params.get('bias') !== 'false' };
}

function write(state) {
  const params = new URLSearchParams();
  for (const name of [...NUMBERS, 'bytes']) {
    const fallback = name === 'n_kv_heads' ? state.n_heads : DEFAULTS[name];
    if (state[name] !== fallback) params.set(name, String(state[name]));
  }
  if (!state.bias) params.set('bias', 'false');
  return params;
}

const page = createPage({ path: '/cost', read, write, render });
const status = createStatus();
const guard = latestWins();
const answers = new Lru(32);
let presets = [];
let shown = null; // the state in the form: G follows H while they are equal

const same = (a, b) => [...NUMBERS, 'bytes', 'bias'].every((name) => a[name] === b[name]);

/** Press the preset button whose sizes are the state's (none when no preset has them). */
function markPreset(state) {
  for (const button of document.querySelectorAll('#cost-preset-buttons button')) {
    const preset = presets[Number(button.dataset.preset)];
    button.setAttribute('aria-pressed', String(Boolean(preset) && same(preset.state, state)));
  }
}

/** The state in the form (the field being typed in keeps its text) and on the preset buttons. */
function showState(state) {
  shown = state;
  for (const [name, input] of Object.entries(fields)) {
    if (input !== document.activeElement) input.value = String(state[name]);
    input.removeAttribute('aria-invalid');
  }
  bytesField.value = String(state.bytes);
  biasField.checked = state.bias;
  invalid.hidden = true;
  markPreset(state);
}

/** Mark one field as the one to change and say why; the earlier numbers stay on screen. */
function refuse(name, message) {
  if (fields[name]) fields[name].setAttribute('aria-invalid', 'true');
  invalid.textContent = message;
  invalid.hidden = false;
}

const fieldName = (name) => t(`cost.field.${name}`);

/** A refusal of the server, worded from its rule (`type`) and numbers (`ctx`), never from its prose. */
function wordRefusal(error) {
  const item = error instanceof ApiError && error.status === 422 && error.body && Array.isArray(error.body.errors)
    ? error.body.errors[0] : null;
  if (!item || !item.ctx) return null;
  const name = item.loc && item.loc[1];
  const { ctx } = item;
  if (item.type === 'cost_heads_divide') {
    const divisors = [];
    for (let h = 1; h <= ctx.d_model; h += 1) if (ctx.d_model % h === 0) divisors.push(h);
    const below = Math.max(...divisors.filter((h) => h <= ctx.n_heads));
    const above = divisors.find((h) => h > ctx.n_heads);
    const choices = above === undefined ? String(below) : t('cost.error.either', { a: below, b: above });
    return { name, message: t('cost.error.headsDivide', { heads: ctx.n_heads, dModel: ctx.d_model, choices }) };
  }
  if (item.type === 'cost_kv_heads_divide') {
    const divisors = [];
    for (let g = 1; g <= ctx.n_heads; g += 1) if (ctx.n_heads % g === 0) divisors.push(g);
    const below = Math.max(...divisors.filter((g) => g <= ctx.n_kv_heads));
    const above = divisors.find((g) => g > ctx.n_kv_heads);
    const choices = above === undefined ? String(below) : t('cost.error.either', { a: below, b: above });
    return { name, message: t('cost.error.kvHeadsDivide', { kv: ctx.n_kv_heads, heads: ctx.n_heads, choices }) };
  }
  if (item.type === 'cost_not_exact') {
    return {
      name,
      message: t('cost.error.notExact', { quantity: t(`cost.q.${ctx.quantity}`), value: scientific(ctx.value), max: exact(ctx.max, LOCALE) }),
    };
  }
  return null;
}

async function render(state) {
  const ticket = guard.begin();
  showState(state);
  setTitle('page.cost');
  status.busy(true);
  let answer;
  try {
    answer = await answers.load(JSON.stringify(state), () => getCost(state));
  } catch (error) {
    if (!guard.current(ticket)) return;
    const worded = wordRefusal(error);
    if (worded) {
      status.busy(false);
      status.info('');
      refuse(worded.name, worded.message);
    } else {
      status.error(error);
    }
    return;
  }
  if (!guard.current(ticket)) return;
  status.busy(false);
  status.info('');
  drawTable(answer);
  drawGqa(answer);
  drawUnits(answer);
  drawShares(answer);
  await renderFigure($('plot-memory'), memoryFigure(answer.curve, answer.sizes.seq_len), {
    filename: `attnscope-cost-E${state.d_model}-H${state.n_heads}-G${state.n_kv_heads}-S${state.seq_len}`,
  });
  $('results').dataset.drawn = page.urlOf(state);
}

// ---- the table ------------------------------------------------------------------------------

const element = (tag, className, text) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

const bytesWord = () => t('cost.unit.bytes');

/** The readable line and the exact line of one number of a quantity. */
function readable(name, value) {
  if (name.endsWith('_bytes')) {
    const sci = value >= 10000 ? ` = ${scientific(value)} ${bytesWord()}` : '';
    return [`${decimalBytes(value)} · ${binaryBytes(value)}`, `${exact(value, LOCALE)} ${bytesWord()}${sci}`];
  }
  if (name === 'flops') return [t('cost.unit.flops', { n: scientific(value) }), exact(value, LOCALE)];
  return [exact(value, LOCALE), value >= 10000 ? `≈ ${scientific(value)}` : ''];
}

function cell(name, value, formula, testId) {
  const td = element('td', 'cost-cell');
  td.dataset.value = String(value);
  td.dataset.cell = testId;
  const [main, sub] = readable(name, value);
  const mainLine = element('div', 'cost-main', main);
  mainLine.translate = false;
  td.append(mainLine);
  if (sub) {
    const subLine = element('div', 'cost-exact', sub);
    td.append(subLine);
  }
  const code = element('code', 'cost-formula', formula);
  code.translate = false;
  td.append(code);
  return td;
}

function drawTable(answer) {
  const { sizes } = answer;
  $('cost-sizes').textContent = t('cost.sizes', {
    e: exact(sizes.d_model, LOCALE), h: exact(sizes.n_heads, LOCALE), g: exact(sizes.n_kv_heads, LOCALE),
    d: exact(sizes.d_head, LOCALE),
    s: exact(sizes.seq_len, LOCALE), b: exact(sizes.batch, LOCALE), l: exact(sizes.n_layers, LOCALE),
    bytes: t(`cost.bytes.${sizes.bytes}`), bias: t(sizes.bias ? 'cost.withBias' : 'cost.withoutBias'),
  });
  $('cost-total-heading').textContent = t('cost.table.total', { layers: exact(sizes.n_layers, LOCALE) });
  const rows = Object.entries(answer.per_layer).map(([name, q]) => {
    const tr = element('tr');
    tr.dataset.quantity = name;
    const th = element('th', 'cost-name');
    th.scope = 'row';
    th.append(element('div', 'cost-name-main', t(`cost.q.${name}`)), element('div', 'cost-name-hint', t(`cost.q.${name}.hint`)));
    const perLayer = cell(name, q.value, `${q.formula} = ${q.filled}`, 'layer');
    perLayer.dataset.label = t('cost.table.perLayer');
    const total = cell(name, answer.total[name], `L · ${exact(q.value, LOCALE)} = ${exact(sizes.n_layers, LOCALE)} · ${exact(q.value, LOCALE)}`, 'total');
    total.dataset.label = t('cost.table.total', { layers: exact(sizes.n_layers, LOCALE) });
    if (name === 'kv_cache_bytes' && sizes.n_kv_heads < sizes.n_heads) {
      perLayer.append(mhaLine(q.value, sizes));
      total.append(mhaLine(answer.total[name], sizes));
    }
    tr.append(th, perLayer, total);
    return tr;
  });
  $('cost-rows').replaceChildren(...rows);
}

/** Bytes readable in both units, with the exact digits while they are exact. */
function someBytes(value) {
  const digits = Number.isSafeInteger(value) ? `${exact(value, LOCALE)} ${bytesWord()}` : `${scientific(value)} ${bytesWord()}`;
  return `${decimalBytes(value)} · ${binaryBytes(value)} (${digits})`;
}

/** What multi-head attention (G = H) would keep beside a KV cache of `value` bytes at G < H. */
function mhaLine(value, sizes) {
  const ratio = sizes.n_heads / sizes.n_kv_heads;
  const line = element('div', 'cost-mha', t('cost.kv.mha', {
    h: exact(sizes.n_heads, LOCALE), bytes: someBytes(value * ratio), ratio: exact(ratio, LOCALE),
  }));
  line.dataset.mha = String(value * ratio);
  return line;
}

/** The caption of grouped-query attention, shown only when G < H. */
function drawGqa(answer) {
  const { sizes } = answer;
  const caption = $('cost-gqa');
  if (sizes.n_kv_heads >= sizes.n_heads) {
    caption.hidden = true;
    caption.textContent = '';
    return;
  }
  const ratio = sizes.n_heads / sizes.n_kv_heads;
  const kv = answer.per_layer.kv_cache_bytes.value;
  const kvTotal = answer.total.kv_cache_bytes;
  caption.textContent = t('cost.gqa', {
    h: exact(sizes.n_heads, LOCALE), g: exact(sizes.n_kv_heads, LOCALE), per: exact(ratio, LOCALE),
    kv: someBytes(kv), mha: someBytes(kv * ratio), saved: someBytes(kv * ratio - kv), l: exact(sizes.n_layers, LOCALE),
    kvTotal: someBytes(kvTotal), mhaTotal: someBytes(kvTotal * ratio),
  });
  caption.hidden = false;
}

/** The attention matrix of one layer in every unit, the notes' one among them. */
function drawUnits(answer) {
  const v = answer.per_layer.attention_matrix_bytes.value;
  let binary = binaryBytes(v);
  if (v >= 1024 ** 4) binary = `${inBinaryUnit(v, 4, 3)} = ${inBinaryUnit(v, 3, 2)}`;
  else if (v >= 1024 ** 3) binary = inBinaryUnit(v, 3, 2);
  const decimal = v >= 1e12 ? `${significant(v / 1e12, 4)} TB = ${significant(v / 1e9, 6)} GB` : decimalBytes(v);
  $('cost-units').textContent = t('cost.units.line', {
    exact: exact(v, LOCALE), sci: scientific(v, 10), decimal, binary,
  });
}

function drawShares(answer) {
  const layer = answer.per_layer;
  const matrix = layer.attention_matrix_bytes.value;
  const flash = layer.flash_attention_bytes.value;
  $('cost-shares').textContent = t(matrix > flash ? 'cost.shares' : 'cost.sharesSmall', {
    share: significant((100 * matrix) / layer.cache_bytes.value, 3),
    ratio: significant(matrix / flash, 3),
  });
}

// ---- input ------------------------------------------------------------------------------------

/** The form's state, or null after marking the first field that is not a whole number in its range. */
function formState() {
  const state = {};
  for (const [name, input] of Object.entries(fields)) {
    const [low, high] = LIMITS[name];
    const text = input.value.trim();
    const value = /^\d{1,8}$/.test(text) ? Number(text) : NaN;
    if (!(value >= low && value <= high)) {
      refuse(name, t('cost.invalid.range', { field: fieldName(name), min: exact(low, LOCALE), max: exact(high, LOCALE) }));
      return null;
    }
    input.removeAttribute('aria-invalid');
    state[name] = value;
  }
  invalid.hidden = true;
  return { ...state, bytes: Number(bytesField.value), bias: biasField.checked };
}

// Typing updates the numbers and the URL in place; a preset, a unit or the bias switch adds a history entry.
$('cost-form').addEventListener('input', (event) => {
  if (event.target === bytesField || event.target === biasField) return;
  // while G equals H (multi-head attention), a new H takes G with it
  if (event.target === fields.n_heads && shown && shown.n_kv_heads === shown.n_heads
      && fields.n_kv_heads.value.trim() === String(shown.n_heads)) {
    fields.n_kv_heads.value = fields.n_heads.value;
  }
  const state = formState();
  if (state) {
    page.replace(state);
    render(state);
  }
});
$('cost-form').addEventListener('change', (event) => {
  if (event.target !== bytesField && event.target !== biasField) return;
  const state = formState();
  if (state) page.navigate(state);
});
$('cost-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const state = formState();
  if (state) page.navigate(state);
});

function presetButton(preset, i) {
  const button = element('button', 'cost-preset');
  button.type = 'button';
  button.dataset.preset = String(i);
  button.dataset.presetId = preset.id;
  button.append(element('span', 'cost-preset-name', preset.name), element('span', 'cost-preset-detail', preset.detail));
  button.addEventListener('click', () => page.navigate(preset.state));
  return button;
}

async function buildPresets() {
  presets = [
    { id: 'notes', name: t('cost.preset.notes'), detail: t('cost.preset.notes.detail'), state: NOTES },
    { id: 'iris', name: t('cost.preset.iris'), detail: t('cost.preset.iris.detail'), state: IRIS },
  ];
  try {
    for (const m of await loadModels()) {
      // the form's sizes give D = E / H: a model with a head width of its own (Qwen3's head_dim) is
      // GET /api/v1/cost?model=ID's, not a preset's
      if (m.d_head && m.d_head * m.n_heads !== m.d_model) continue;
      const g = m.n_kv_heads || m.n_heads;
      presets.push({
        id: m.id,
        name: t('cost.preset.model', { model: m.id }),
        detail: t('cost.preset.model.detail', { layers: m.n_layers, e: m.d_model, h: m.n_heads, g, s: m.max_tokens }),
        state: { d_model: m.d_model, n_heads: m.n_heads, n_kv_heads: g, seq_len: m.max_tokens, batch: 1, n_layers: m.n_layers, bytes: 4, bias: true },
      });
    }
  } catch (error) {
    status.error(error);
  }
  $('cost-preset-buttons').replaceChildren(...presets.map(presetButton));
  markPreset(page.state());
}

// ---- measured here: bench/flash_sweep.py's file ---------------------------------------------------

const METHOD_CELL = { naive: 'naive', tiled: 'tiled', sdpa: 'sdpa' };

function sweepCell(result) {
  const td = element('td');
  if (!result) return td;
  td.dataset.method = METHOD_CELL[result.method];
  if (result.refused) {
    td.dataset.refused = 'true';
    td.append(element('div', 'cost-refused', t('cost.sweep.refused', {
      size: binaryBytes(4 * result.n * result.n), bound: binaryBytes(lastSweep.naive_max_matrix_bytes),
    })));
    return td;
  }
  td.dataset.seconds = String(result.seconds);
  td.dataset.bytes = String(result.peak_rss_bytes);
  const time = element('div', 'cost-main', duration(result.seconds));
  const memory = element('div', 'cost-exact', binaryBytes(result.peak_rss_bytes));
  time.translate = false;
  memory.translate = false;
  td.append(time, memory);
  return td;
}

let lastSweep = null;

async function drawSweep() {
  const note = $('sweep-status');
  let sweep;
  try {
    sweep = await getFlashSweep();
  } catch (error) {
    note.textContent = t('cost.sweep.missing', { error: error.message || String(error) });
    note.hidden = false;
    return;
  }
  lastSweep = sweep;
  const m = sweep.machine;
  const [block] = sweep.block;
  $('sweep-hint').replaceChildren(...tNodes('cost.sweep.hint', {
    d: sweep.d_head, block, threads: m.torch_threads, script: 'bench/flash_sweep.py',
    sdpa: 'torch.nn.functional.scaled_dot_product_attention',
  }, ['script', 'sdpa']));
  const machineLine = tNodes('cost.sweep.machine', {
    date: m.date, cpu: m.cpu, cpus: m.cpu_count, torch: m.torch, load: m.load_average_start[0].toFixed(2),
  }, ['date', 'cpu', 'torch']);
  $('sweep-machine').replaceChildren(...machineLine, ...(m.note ? [` ${t('cost.sweep.underLoad')}`] : []));
  const rows = sweepRows(sweep);
  $('sweep-rows').replaceChildren(...rows.map((row) => {
    const tr = element('tr');
    tr.dataset.n = String(row.n);
    const th = element('th', null, exact(row.n, LOCALE));
    th.scope = 'row';
    tr.append(th, element('td', 'cost-sweep-matrix', binaryBytes(4 * row.n * row.n)), ...SWEEP_METHODS.map((name) => sweepCell(row[name])));
    return tr;
  }));
  // the captions read the numbers at the largest N all three ran at
  const full = rows.filter((r) => SWEEP_METHODS.every((name) => r[name] && !r[name].refused));
  const top = full[full.length - 1];
  const first = full[0];
  const name = (method) => t(`cost.sweep.${method}`);
  const parts = [];
  if (top) {
    const matrix = 4 * top.n * top.n;
    parts.push(t('cost.sweep.memoryCaption', {
      n: exact(top.n, LOCALE), naive: binaryBytes(top.naive.peak_rss_bytes), matrix: binaryBytes(matrix),
      times: significant(top.naive.peak_rss_bytes / matrix, 3), tiled: binaryBytes(top.tiled.peak_rss_bytes),
      sdpa: binaryBytes(top.sdpa.peak_rss_bytes), n0: exact(first.n, LOCALE), growth: exact(top.n / first.n, LOCALE),
      naiveGrowth: significant(top.naive.peak_rss_bytes / first.naive.peak_rss_bytes, 3),
    }));
  }
  const refused = rows.filter((r) => r.naive && r.naive.refused);
  if (refused.length) {
    parts.push(t('cost.sweep.refusedCaption', {
      n: refused.map((r) => exact(r.n, LOCALE)).join(', '), size: binaryBytes(4 * refused[0].n * refused[0].n),
      bound: binaryBytes(sweep.naive_max_matrix_bytes),
    }));
  }
  if (rows.some((r) => SWEEP_METHODS.some((k) => r[k] && !r[k].refused && r[k].peak_rss_bytes <= 0))) {
    parts.push(t('cost.sweep.zero'));
  }
  $('sweep-memory-caption').textContent = parts.join(' ');
  if (top) {
    const ranked = [...SWEEP_METHODS].sort((a, b) => top[a].seconds - top[b].seconds);
    const fastest = ranked[0];
    const slowest = ranked[ranked.length - 1];
    $('sweep-time-caption').textContent = t('cost.sweep.timeCaption', {
      n: exact(top.n, LOCALE), fastest: name(fastest), fastTime: duration(top[fastest].seconds),
      slowest: name(slowest), slowTime: duration(top[slowest].seconds), block,
    });
  }
  await renderFigure($('plot-sweep-memory'), sweepMemoryFigure(sweep), { filename: 'attnscope-flash-sweep-memory' });
  await renderFigure($('plot-sweep-time'), sweepTimeFigure(sweep), { filename: 'attnscope-flash-sweep-time' });
  $('sweep').dataset.drawn = 'true';
}

buildPresets();
page.start();
drawSweep();
