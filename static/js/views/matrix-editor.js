// A small matrix as a grid of text inputs, edited in place, with its column numbers above and
// optional row labels. What the user types is sent as it is (a number when it reads as one), so
// the server says what is wrong; the page marks the cells or the whole matrix it names.

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** A text -> a finite number when it reads as one, null when empty, else the trimmed text itself. */
export function parseCell(text) {
  const trimmed = text.trim().replace('−', '-');
  if (trimmed === '') return null;
  if (NUMBER.test(trimmed)) {
    const value = Number(trimmed);
    if (Number.isFinite(value)) return value;
  }
  return trimmed;
}

/**
 * @param {HTMLElement} root the fieldset (its legend already written)
 * @param {{rowLabel?: (i: number) => string, cellLabel: (i: number, j: number) => string,
 *   onEdit: () => void}} options rowLabel labels the rows (none: no labels); cellLabel names a
 *   cell for assistive technology, in the words the page's messages use
 */
export function createMatrixEditor(root, { rowLabel = null, cellLabel, onEdit }) {
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
    input.setAttribute('aria-label', cellLabel(i, j));
    input.value = value;
    return input;
  }

  function label(className, text) {
    const span = document.createElement('span');
    span.className = className;
    span.textContent = text;
    return span;
  }

  function draw() {
    grid.style.setProperty('--cols', String(cols));
    grid.classList.toggle('has-row-labels', Boolean(rowLabel));
    const nodes = rowLabel ? [label('cell-corner', '')] : [];
    for (let j = 0; j < cols; j += 1) nodes.push(label('cell-col-label', String(j)));
    inputs.forEach((row, i) => {
      if (rowLabel) nodes.push(label('cell-row-label', rowLabel(i)));
      nodes.push(...row);
    });
    grid.replaceChildren(...nodes);
  }

  /** Show a matrix of numbers, each exactly (String(x) reads back as the same number). */
  function set(matrix) {
    cols = matrix.length ? matrix[0].length : cols;
    inputs = matrix.map((row, i) => row.map((v, j) => cell(i, j, String(v))));
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

  /** Mark the whole matrix invalid, and the cells [[row, col], …] among it. */
  function mark(cells = []) {
    root.classList.add('is-invalid');
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
    /** The text typed in cell (i, j), or undefined outside the matrix. */
    text: (i, j) => inputs[i]?.[j]?.value,
    get rows() {
      return inputs.length;
    },
    get cols() {
      return cols;
    },
  };
}
