// The grid of every layer's and head's attention map, drawn on canvases
// (one pixel per weight, scaled up by CSS) rather than 72 Plotly plots.
import { attentionPixels, cssGradient } from '../figures/colormap.js';
import { t } from '../i18n/index.js';

const ARROWS = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };

function label(text, className = 'axis-label') {
  const element = document.createElement('div');
  element.className = className;
  element.textContent = text;
  return element;
}

function thumbnail(matrix, layer, head, row, col) {
  const n = matrix.length;
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'thumb';
  button.dataset.layer = String(layer);
  button.dataset.head = String(head);
  button.dataset.row = String(row);
  button.dataset.col = String(col);
  button.setAttribute('aria-label', t('explorer.overview.thumb', { layer, head }));
  button.setAttribute('aria-pressed', 'false');
  button.tabIndex = -1; // one tab stop for the grid (the selected map); arrow keys move inside it
  button.title = t('figure.layerHead', { layer, head });
  const canvas = document.createElement('canvas');
  canvas.width = n;
  canvas.height = n;
  if (n > 0) canvas.getContext('2d').putImageData(new ImageData(attentionPixels(matrix), n, n), 0, 0);
  button.append(canvas);
  return button;
}

/**
 * Thumbnails are buttons labelled "layer L head H" (in the page's language): Tab reaches the selected one, arrow keys
 * move between them, Enter or Space (or a click) selects.
 * @param {HTMLElement} root the grid container
 * @param {{onSelect: (layer: number, head: number) => void, colourRamp?: HTMLElement}} options
 */
export function createOverview(root, { onSelect, colourRamp }) {
  /** @type {HTMLButtonElement[][]} buttons[row][col] */
  let buttons = [];
  let selected = null;

  if (colourRamp) colourRamp.style.background = cssGradient();

  root.addEventListener('click', (event) => {
    const button = event.target.closest('button.thumb');
    if (button && root.contains(button)) onSelect(Number(button.dataset.layer), Number(button.dataset.head));
  });

  root.addEventListener('keydown', (event) => {
    const move = ARROWS[event.key];
    const button = event.target.closest('button.thumb');
    if (!move || !button) return;
    const next = buttons[Number(button.dataset.row) + move[0]]?.[Number(button.dataset.col) + move[1]];
    if (next) {
      event.preventDefault();
      button.tabIndex = -1;
      next.tabIndex = 0;
      next.focus();
    }
  });

  /** Draw every map of an /attention response. */
  function render({ layers, heads, attention }) {
    root.style.setProperty('--heads', String(heads.length));
    const cells = [label('')];
    for (const head of heads) cells.push(label(`H${head}`));
    buttons = layers.map((layer, row) => {
      cells.push(label(`L${layer}`));
      const rowButtons = heads.map((head, col) => thumbnail(attention[row][col], layer, head, row, col));
      cells.push(...rowButtons);
      return rowButtons;
    });
    root.replaceChildren(...cells);
    selected = null;
  }

  /** Outline the thumbnail of (layer, head). */
  function select(layer, head) {
    if (selected) selected.setAttribute('aria-pressed', 'false');
    selected = root.querySelector(`button.thumb[data-layer="${layer}"][data-head="${head}"]`);
    if (selected) selected.setAttribute('aria-pressed', 'true');
    for (const row of buttons) for (const button of row) button.tabIndex = button === selected ? 0 : -1;
  }

  return { render, select };
}
