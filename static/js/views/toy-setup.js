// The /toy page's setup panel: the seven matrix editors (queries, keys, values, W_q…W_o), the
// heads field and the causal box, their shapes, and the marks on the fields the server refused.
// It reads what is typed exactly as typed (the server says what is wrong) and fills a URL state.
// The mechanisms (variant, temperature, seed, ProbSparse's factor, straight-through, d_keys, d_values, positions and
// the hidden keys) are sent only when they differ from the server's defaults.
import { $ } from '../page.js';
import { placeName, rowLabel } from '../toy/errors.js';
import { defaultWeights, numberOrList, OPTION_DEFAULTS, WEIGHTS } from '../toy/url.js';
import { createMatrixEditor } from './matrix-editor.js';

const MATRICES = ['queries', 'keys', 'values', 'wq', 'wk', 'wv', 'wo'];
const INPUTS = ['queries', 'keys', 'values'];
/** The mechanisms' fields (as the server names them), each with its #field-<name> and #error-<name>. */
export const OPTION_FIELDS = ['variant', 'temperature', 'seed', 'factor', 'scale', 'tau', 'delta', 'straight_through', 'd_keys', 'd_values', 'positions', 'hidden_keys'];
const TEMPERATURE = { min: 0.1, max: 5 };

/** A field's text: a whole number, null when empty, else the text itself (the server says what is wrong). */
function wholeOrText(input) {
  const text = input.value.trim();
  if (text === '') return null;
  return /^\d{1,12}$/.test(text) ? Number(text) : text;
}

/** The temperature as typed: a number when it reads as one, null when empty, else the text. */
function numberOrText(input) {
  const text = input.value.trim().replace('−', '-');
  if (text === '') return null;
  const value = Number(text);
  return /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text) && Number.isFinite(value) ? value : text;
}

/** @param {{onEdit: () => void, onCausal: () => void}} options onEdit: a cell or the heads field was
 *   typed in; onCausal: the causal box was switched */
export function createToySetup({ onEdit, onCausal }) {
  const heads = $('toy-heads');
  const headsField = $('field-heads');
  const causal = $('toy-causal');
  const editors = Object.fromEntries(MATRICES.map((name) => [name, createMatrixEditor($(`editor-${name}`), {
    rowLabel: rowLabel(name),
    cellLabel: (i, j) => placeName(name, i, j),
    onEdit,
  })]));
  const options = {
    variant: $('toy-variant'),
    temperature: $('toy-temperature'),
    temperatureRange: $('toy-temperature-range'),
    seed: $('toy-seed'),
    straightThrough: $('toy-straight-through'),
    factor: $('toy-factor'),
    scale: $('toy-scale'),
    tau: $('toy-tau'),
    delta: $('toy-delta'),
    dKeys: $('toy-d-keys'),
    dValues: $('toy-d-values'),
    positions: $('toy-positions'),
    hidden: $('toy-hidden'),
  };
  let hidden = []; // the hidden key indices, sorted (a link may name one the keys do not have)
  let widths = null; // {heads, dKeys, dValues} the weight editors' default shapes were made for

  const dModel = () => editors.queries.cols;

  /** When the weights still hold the default of the old widths, give them the default of the new ones. */
  function reshapeWeights() {
    const now = { heads: readHeads(), dKeys: wholeOrText(options.dKeys), dValues: wholeOrText(options.dValues) };
    const numeric = (x) => (typeof x === 'number' ? x : null);
    if (widths) {
      const before = defaultWeights(dModel(), numeric(widths.heads) ?? 2, numeric(widths.dKeys), numeric(widths.dValues));
      const after = defaultWeights(dModel(), numeric(now.heads) ?? 2, numeric(now.dKeys), numeric(now.dValues));
      for (const w of WEIGHTS) {
        const editor = editors[`w${w}`];
        if (JSON.stringify(editor.read()) === JSON.stringify(before[w])) editor.set(after[w]);
      }
    }
    widths = now;
  }

  const widthEdited = () => {
    reshapeWeights();
    onEdit();
  };
  heads.addEventListener('input', widthEdited);
  options.dKeys.addEventListener('input', widthEdited);
  options.dValues.addEventListener('input', widthEdited);
  causal.addEventListener('change', onCausal);
  options.variant.addEventListener('change', () => {
    updateEnabled();
    onCausal();
  });
  options.positions.addEventListener('change', onCausal);
  options.straightThrough.addEventListener('change', onCausal);
  options.seed.addEventListener('input', onEdit);
  options.factor.addEventListener('input', onEdit);
  for (const name of ['scale', 'tau', 'delta']) options[name].addEventListener('input', onEdit);
  options.temperature.addEventListener('input', () => {
    const value = numberOrText(options.temperature);
    if (typeof value === 'number') options.temperatureRange.value = String(Math.min(TEMPERATURE.max, Math.max(TEMPERATURE.min, value)));
    onEdit();
  });
  options.temperatureRange.addEventListener('input', () => {
    options.temperature.value = String(Number(options.temperatureRange.value));
    onEdit();
  });
  options.hidden.addEventListener('change', () => {
    hidden = [...options.hidden.querySelectorAll('input:checked')].map((box) => Number(box.value));
    onCausal();
  });

  /** Straight-through is a gumbel thing only, the factor c a probsparse one. */
  function updateEnabled() {
    options.straightThrough.disabled = options.variant.value !== 'gumbel';
    options.factor.disabled = options.variant.value !== 'probsparse';
    options.scale.disabled = options.variant.value !== 'cosine';
  }

  /** One check box per key row (k0, k1, …), checked for the hidden ones. */
  function drawHidden() {
    const rows = editors.keys.rows;
    hidden = hidden.filter((j) => j < rows || !options.hidden.childElementCount);
    options.hidden.replaceChildren(...Array.from({ length: rows }, (_, j) => {
      const label = document.createElement('label');
      label.className = 'mech-key';
      const box = document.createElement('input');
      box.type = 'checkbox';
      box.value = String(j);
      box.checked = hidden.includes(j);
      const name = document.createElement('span');
      name.textContent = `k${j}`;
      name.setAttribute('translate', 'no');
      label.append(box, name);
      return label;
    }));
  }

  function updateShapes() {
    for (const name of INPUTS) $(`shape-${name}`).textContent = `${editors[name].rows}×${editors[name].cols}`;
  }

  /** n_heads as typed: a number, null when empty (the server's default), else the text itself. */
  function readHeads() {
    const text = heads.value.trim();
    if (text === '') return null;
    return /^\d{1,6}$/.test(text) ? Number(text) : text;
  }

  /** The /toy request for what the editors hold, exactly as typed. */
  function request() {
    const weights = Object.fromEntries(WEIGHTS.map((w) => [w, editors[`w${w}`].read()]));
    const [queries, keys, values] = INPUTS.map((name) => editors[name].read());
    const body = { queries, keys, values, n_heads: readHeads(), causal: causal.checked, weights };
    const D = OPTION_DEFAULTS;
    const variant = options.variant.value;
    if (variant !== D.variant) body.variant = variant;
    const temperature = numberOrText(options.temperature);
    if (temperature !== null && temperature !== D.temperature) body.temperature = temperature;
    const seed = wholeOrText(options.seed);
    if (seed !== null && seed !== D.seed) body.seed = seed;
    if (variant === 'gumbel' && options.straightThrough.checked) body.straight_through = true;
    const factor = variant === 'probsparse' ? wholeOrText(options.factor) : null;
    if (factor !== null && factor !== D.factor) body.factor = factor;
    const scale = variant === 'cosine' ? numberOrText(options.scale) : null;
    if (scale !== null) body.scale = scale;
    const tau = numberOrText(options.tau);
    if (tau !== null && tau !== D.tau) body.tau = tau;
    const deltaText = options.delta.value.trim().replace(/−/g, '-');
    const delta = deltaText === '' ? null : numberOrList(deltaText) ?? deltaText;
    if (delta !== null && JSON.stringify(delta) !== JSON.stringify(D.delta)) body.delta = delta;
    const dKeys = wholeOrText(options.dKeys);
    if (dKeys !== null) body.d_keys = dKeys;
    const dValues = wholeOrText(options.dValues);
    if (dValues !== null) body.d_values = dValues;
    if (options.positions.value !== D.positions) body.positions = options.positions.value;
    if (hidden.length) body.hidden_keys = [...hidden];
    return body;
  }

  /** The setup as URL state (empty heads: `defaultHeads`), or null while a cell or the heads field is not a number. */
  function state(defaultHeads) {
    const body = request();
    const matrices = [body.queries, body.keys, body.values, ...Object.values(body.weights)];
    const numbers = matrices.every((m) => m.every((row) => row.every((x) => typeof x === 'number')));
    const texts = [body.n_heads, body.temperature, body.seed, body.factor, body.scale, body.tau, body.delta, body.d_keys, body.d_values];
    if (!numbers || texts.some((x) => typeof x === 'string')) return null;
    const D = OPTION_DEFAULTS;
    const { queries, keys, values, weights } = body;
    return {
      queries, keys, values, weights, heads: body.n_heads ?? defaultHeads, causal: body.causal,
      variant: body.variant ?? D.variant,
      temperature: body.temperature ?? D.temperature,
      seed: body.seed ?? D.seed,
      straightThrough: options.straightThrough.checked && options.variant.value === 'gumbel',
      factor: body.factor ?? D.factor,
      scale: body.scale ?? D.scale,
      tau: body.tau ?? D.tau,
      delta: body.delta ?? D.delta,
      dKeys: body.d_keys ?? null,
      dValues: body.d_values ?? null,
      positions: body.positions ?? D.positions,
      hidden: body.hidden_keys ?? [],
    };
  }

  function fill(setup) {
    for (const name of INPUTS) editors[name].set(setup[name]);
    for (const w of WEIGHTS) editors[`w${w}`].set(setup.weights[w]);
    heads.value = String(setup.heads);
    causal.checked = setup.causal;
    const D = OPTION_DEFAULTS;
    options.variant.value = setup.variant ?? D.variant;
    const temperature = setup.temperature ?? D.temperature;
    options.temperature.value = String(temperature);
    options.temperatureRange.value = String(Math.min(TEMPERATURE.max, Math.max(TEMPERATURE.min, temperature)));
    options.seed.value = String(setup.seed ?? D.seed);
    options.straightThrough.checked = Boolean(setup.straightThrough);
    options.factor.value = String(setup.factor ?? D.factor);
    options.scale.value = setup.scale == null ? '' : String(setup.scale);
    options.tau.value = String(setup.tau ?? D.tau);
    const delta = setup.delta ?? D.delta;
    options.delta.value = Array.isArray(delta) ? delta.join(', ') : String(delta);
    options.dKeys.value = setup.dKeys == null ? '' : String(setup.dKeys);
    options.dValues.value = setup.dValues == null ? '' : String(setup.dValues);
    options.positions.value = setup.positions ?? D.positions;
    hidden = [...(setup.hidden ?? [])];
    options.hidden.replaceChildren();
    widths = { heads: setup.heads, dKeys: setup.dKeys ?? null, dValues: setup.dValues ?? null };
    updateEnabled();
    updateShapes();
    drawHidden();
  }

  /** Add a row to the queries, or to the keys and values together ('keys'); false when nothing changed. */
  function addRow(which) {
    for (const name of which === 'keys' ? ['keys', 'values'] : [which]) editors[name].addRow();
    updateShapes();
    drawHidden();
    return true;
  }

  function removeRow(which) {
    const names = which === 'keys' ? ['keys', 'values'] : [which];
    if (names.some((name) => editors[name].rows <= 1)) return false;
    for (const name of names) editors[name].removeRow();
    updateShapes();
    drawHidden();
    return true;
  }

  /** Mark a field named by toy/errors.js fieldOf: a matrix (and its cell) or the heads field. */
  function mark(field) {
    if (field.kind === 'matrix') {
      editors[field.name].mark(field.row !== null && field.col !== null ? [[field.row, field.col]] : []);
    } else if (field.kind === 'n_heads') {
      headsField.classList.add('is-invalid');
      heads.setAttribute('aria-invalid', 'true');
    } else if (OPTION_FIELDS.includes(field.kind)) {
      $(`field-${field.kind}`).classList.add('is-invalid');
    }
  }

  /** Say a problem beside the mechanism's control it belongs to (false: not one of them). */
  function sayBeside(field, text) {
    if (!OPTION_FIELDS.includes(field.kind)) return false;
    const slot = $(`error-${field.kind}`);
    slot.textContent = slot.textContent ? `${slot.textContent} ${text}` : text;
    slot.hidden = false;
    return true;
  }

  function clearMarks() {
    for (const editor of Object.values(editors)) editor.clearMarks();
    headsField.classList.remove('is-invalid');
    heads.removeAttribute('aria-invalid');
    for (const name of OPTION_FIELDS) {
      $(`field-${name}`).classList.remove('is-invalid');
      const slot = $(`error-${name}`);
      slot.textContent = '';
      slot.hidden = true;
    }
  }

  return { request, state, fill, addRow, removeRow, mark, sayBeside, clearMarks };
}
