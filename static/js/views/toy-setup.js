// The /toy page's setup panel: the seven matrix editors (queries, keys, values, W_q…W_o), the
// heads field and the causal box, their shapes, and the marks on the fields the server refused.
// It reads what is typed exactly as typed (the server says what is wrong) and fills a URL state.
import { $ } from '../page.js';
import { placeName, rowLabel } from '../toy/errors.js';
import { WEIGHTS } from '../toy/url.js';
import { createMatrixEditor } from './matrix-editor.js';

const MATRICES = ['queries', 'keys', 'values', 'wq', 'wk', 'wv', 'wo'];
const INPUTS = ['queries', 'keys', 'values'];

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
  heads.addEventListener('input', onEdit);
  causal.addEventListener('change', onCausal);

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
    return { queries, keys, values, n_heads: readHeads(), causal: causal.checked, weights };
  }

  /** The setup as URL state (empty heads: `defaultHeads`), or null while a cell or the heads field is not a number. */
  function state(defaultHeads) {
    const body = request();
    const matrices = [body.queries, body.keys, body.values, ...Object.values(body.weights)];
    const numbers = matrices.every((m) => m.every((row) => row.every((x) => typeof x === 'number')));
    if (!numbers || typeof body.n_heads === 'string') return null;
    const { queries, keys, values, weights } = body;
    return { queries, keys, values, weights, heads: body.n_heads ?? defaultHeads, causal: body.causal };
  }

  function fill(setup) {
    for (const name of INPUTS) editors[name].set(setup[name]);
    for (const w of WEIGHTS) editors[`w${w}`].set(setup.weights[w]);
    heads.value = String(setup.heads);
    causal.checked = setup.causal;
    updateShapes();
  }

  /** Add a row to the queries, or to the keys and values together ('keys'); false when nothing changed. */
  function addRow(which) {
    for (const name of which === 'keys' ? ['keys', 'values'] : [which]) editors[name].addRow();
    updateShapes();
    return true;
  }

  function removeRow(which) {
    const names = which === 'keys' ? ['keys', 'values'] : [which];
    if (names.some((name) => editors[name].rows <= 1)) return false;
    for (const name of names) editors[name].removeRow();
    updateShapes();
    return true;
  }

  /** Mark a field named by toy/errors.js fieldOf: a matrix (and its cell) or the heads field. */
  function mark(field) {
    if (field.kind === 'matrix') {
      editors[field.name].mark(field.row !== null && field.col !== null ? [[field.row, field.col]] : []);
    } else if (field.kind === 'n_heads') {
      headsField.classList.add('is-invalid');
      heads.setAttribute('aria-invalid', 'true');
    }
  }

  function clearMarks() {
    for (const editor of Object.values(editors)) editor.clearMarks();
    headsField.classList.remove('is-invalid');
    heads.removeAttribute('aria-invalid');
  }

  return { request, state, fill, addRow, removeRow, mark, clearMarks };
}
