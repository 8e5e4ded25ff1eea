// A small matrix as a grid of text inputs, edited in place. What the user types is
// sent as it is (a number when it reads as one), so the server's message says
// what to change; cells or whole matrices the server names are marked invalid.

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** A cell's text -> a number when it is one, null when empty, else the text itself. */
export function parseCell(text) {
  const trimmed = text.trim().replace('−', '-');
  if (trimmed === '') return null;
  if (NUMBER.test(trimmed)) {
    const value = Number(trimmed);
    if (Number.isFinite(value)) return value;
  }
  return trimmed;
}

/** A number as the editor writes it: up to 4 decimals, no trailing zeros. */
export function formatEntry(value) {
  return Number.isInteger(value) ? String(value) : String(Number(value.toFixed(4)));
}

/**
 * @param {HTMLElement} root the fieldset (its legend already written)
 * @param {{label: string, rowLabel?: (i: number) => string, onEdit: () => void}} options
 *   label names the matrix in each cell's accessible name; rowLabel labels the rows (none: no labels)
 */
export function createMatrixEditor(root, { label, rowLabel = null, onEdit }) {
  const grid = document.createElement('div');
  grid.className = 'cell-grid';
  const legend = root.querySelector('legend');
  if (legend) legend.after(grid);
  else root.prepend(grid);
  let cols = 0;
  /** @type {HTMLInputElement[][]} */
  let inputs = [];

  grid.addEventListener('input', () => onEdit());

  function cell(i, j, value) {
    const input = document.createElement('input');
    input.type = 'text';
    input.inputMode = 'decimal';
    input.spellcheck = false;
    input.autocomplete = 'off';
    input.className = 'cell-input';
    input.dataset.row = String(i);
    input.dataset.col = String(j);
    input.setAttribute('aria-label', `${label} row ${i} column ${j}`);
    input.value = value;
    return input;
  }

  function draw() {
    grid.style.setProperty('--cols', String(cols));
    grid.classList.toggle('has-row-labels', Boolean(rowLabel));
    const nodes = [];
    inputs.forEach((row, i) => {
      if (rowLabel) {
        const name = document.createElement('span');
        name.className = 'cell-row-label';
        name.textContent = rowLabel(i);
        nodes.push(name);
      }
      nodes.push(...row);
    });
    grid.replaceChildren(...nodes);
  }

  /** Show a matrix of numbers. */
  function set(matrix) {
    cols = matrix.length ? matrix[0].length : cols;
    inputs = matrix.map((row, i) => row.map((v, j) => cell(i, j, formatEntry(v))));
    draw();
    clearMarks();
  }

  /** The cells as they will be sent: numbers, null for empty cells, text for anything else. */
  function read() {
    return inputs.map((row) => row.map((input) => parseCell(input.value)));
  }

  function addRow() {
    const i = inputs.length;
    inputs.push(Array.from({ length: cols }, (_, j) => cell(i, j, '0')));
    draw();
  }

  function removeRow() {
    if (inputs.length <= 1) return false;
    inputs.pop();
    draw();
    return true;
  }

  /** Mark the whole matrix invalid, or only the cells [[row, col], …]. */
  function mark(cells = null) {
    root.classList.add('is-invalid');
    if (!cells) return;
    for (const [i, j] of cells) {
      const input = inputs[i]?.[j];
      if (input) input.setAttribute('aria-invalid', 'true');
    }
  }

  function clearMarks() {
    root.classList.remove('is-invalid');
    for (const row of inputs) for (const input of row) input.removeAttribute('aria-invalid');
  }

  return {
    set,
    read,
    addRow,
    removeRow,
    mark,
    clearMarks,
    get rows() {
      return inputs.length;
    },
  };
}
