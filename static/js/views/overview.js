// The grid of every layer's and head's attention map, drawn on canvases
// (one pixel per weight, scaled up by CSS) rather than 72 Plotly plots.
// The grid can be coloured by a number per head (a frame around each map, its value in the map's name),
// scaled per head or with one scale for all heads (with a gamma for small weights; a causal model's maps to
// their largest weight from a quarter of the rows down, figures/colormap.js scaleTop), and can mark one
// token's row and column on every map (with pooled maps, the bins that hold the token).
// Under grouped-query attention the columns are grouped by the key-value head their query heads share: a
// row of labels "KV g" above them and a gap with a line between two groups.
import { attentionPixels, cssGradient, isCausalMap, scaleTop, sequential } from '../figures/colormap.js';
import { kvGroup, kvRuns } from '../figures/kv-groups.js';
import { t } from '../i18n/index.js';

const ARROWS = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };

function label(text, className = 'axis-label') {
  const element = document.createElement('div');
  element.className = className;
  element.textContent = text;
  return element;
}

function thumbnail(layer, head, row, col, side) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'thumb';
  button.dataset.layer = String(layer);
  button.dataset.head = String(head);
  button.dataset.row = String(row);
  button.dataset.col = String(col);
  button.setAttribute('aria-pressed', 'false');
  button.tabIndex = -1; // one tab stop for the grid (the selected map); arrow keys move inside it
  const map = document.createElement('span');
  map.className = 'thumb-map';
  const canvas = document.createElement('canvas');
  canvas.width = side;
  canvas.height = side;
  map.append(canvas);
  button.append(map);
  return button;
}

/** A metric's value as written in a map's name: 3 significant digits. */
function formatValue(value) {
  if (!Number.isFinite(value)) return String(value);
  return Math.abs(value) >= 100 ? value.toFixed(0) : value.toPrecision(3).replace(/\.?0+$/, '');
}

/** The pooled rows (bins) that hold a token: [first, last] of the bins whose [start, end) contains it. */
function binsOf(index, bins) {
  let first = -1;
  let last = -1;
  bins.forEach(([start, end], i) => {
    if (start <= index && index < end) {
      if (first < 0) first = i;
      last = i;
    }
  });
  return first < 0 ? null : [first, last];
}

/**
 * Thumbnails are buttons labelled "layer L head H" (in the page's language): Tab reaches the selected one, arrow keys
 * move between them, Enter or Space (or a click) selects.
 * @param {HTMLElement} root the grid container
 * @param {{onSelect: (layer: number, head: number) => void, colourRamp?: HTMLElement}} options
 * @returns {{render: Function, select: Function, colourBy: Function, scale: Function, focus: Function}}
 */
export function createOverview(root, { onSelect, colourRamp }) {
  /** @type {HTMLButtonElement[][]} buttons[row][col] */
  let buttons = [];
  let selected = null;
  let data = null; // {layers, heads, attention, bins}
  let scaling = { shared: false, gamma: 1 };
  let metric = null; // {values, label, min, max}
  let focused = null;

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

  function paintMaps() {
    if (!data) return;
    const shared = scaling.shared ? Math.max(0, ...data.attention.flat().map((matrix) => scaleTop(matrix))) : null;
    buttons.forEach((rowButtons, row) => rowButtons.forEach((button, col) => {
      const matrix = data.attention[row][col];
      const n = matrix.length;
      const max = shared ?? scaleTop(matrix);
      button.dataset.max = String(max);
      if (n > 0) {
        button.querySelector('canvas').getContext('2d')
          .putImageData(new ImageData(attentionPixels(matrix, max, scaling.gamma), n, n), 0, 0);
      }
    }));
    if (colourRamp) colourRamp.style.background = cssGradient('to right', { gamma: scaling.gamma }); // ui-text: not UI (a CSS keyword)
    root.dataset.scale = scaling.shared ? 'shared' : 'own';
    root.dataset.causal = String(data.attention.flat().some((matrix) => isCausalMap(matrix)));
    root.dataset.gamma = String(scaling.gamma);
  }

  function nameButtons() {
    for (const button of buttons.flat()) {
      const layer = Number(button.dataset.layer);
      const head = Number(button.dataset.head);
      const value = metric?.values?.[Number(button.dataset.row)]?.[Number(button.dataset.col)];
      if (metric && value !== undefined && value !== null) {
        const span = metric.max - metric.min;
        const share = span > 0 ? (value - metric.min) / span : 0.5;
        button.classList.add('has-metric');
        button.style.setProperty('--metric', `rgb(${sequential(share).join(',')})`);
        button.dataset.value = String(value);
        const name = t('overview.thumbValue', { layer, head, label: metric.label, value: formatValue(value) });
        button.setAttribute('aria-label', name);
        button.title = name;
      } else {
        button.classList.remove('has-metric');
        button.style.removeProperty('--metric');
        delete button.dataset.value;
        button.setAttribute('aria-label', t('explorer.overview.thumb', { layer, head }));
        button.title = t('figure.layerHead', { layer, head });
      }
    }
    if (metric) root.dataset.metric = metric.label; else delete root.dataset.metric;
  }

  function markFocus() {
    for (const mark of root.querySelectorAll('.thumb-focus')) mark.remove();
    delete root.dataset.focus;
    if (!data || focused === null) return;
    const side = data.attention[0]?.[0]?.length ?? 0;
    const bins = data.bins ?? Array.from({ length: side }, (_, i) => [i, i + 1]);
    const range = binsOf(focused, bins);
    if (!range || !side) return;
    root.dataset.focus = String(focused);
    root.dataset.focusBins = `${range[0]}-${range[1]}`;
    const start = `${(100 * range[0]) / side}%`;
    const size = `${(100 * (range[1] - range[0] + 1)) / side}%`;
    for (const button of buttons.flat()) {
      const row = document.createElement('span');
      row.className = 'thumb-focus thumb-focus-row';
      row.style.top = start;
      row.style.height = size;
      const col = document.createElement('span');
      col.className = 'thumb-focus thumb-focus-col';
      col.style.left = start;
      col.style.width = size;
      button.firstElementChild.append(row, col);
    }
  }

  /**
   * Draw every map of an /attention or /attention/summary response: {layers, heads, attention[i][j] (rows),
   * bins?} (bins: the token range [start, end) of each pooled row and column). nHeads and nKvHeads (the
   * model's, GET /api/v1/models): fewer key-value heads than query heads groups the columns by them.
   */
  function render({ layers, heads, attention, bins = null, nHeads = null, nKvHeads = null }) {
    data = { layers, heads, attention, bins };
    root.style.setProperty('--heads', String(heads.length));
    const runs = kvRuns(heads, nHeads ?? heads.length, nKvHeads);
    const gapBefore = new Set(runs.slice(1).map((run) => run.start));
    const gap = () => { const cell = document.createElement('div'); cell.className = 'kv-gap'; return cell; };
    // one column per head, and a narrow one between two groups
    root.style.gridTemplateColumns = runs.length
      ? `1.8rem ${runs.map((run) => `repeat(${run.count}, minmax(0, 1fr))`).join(' 9px ')}` : '';
    root.dataset.kvGroups = String(runs.length);
    const cells = [];
    if (runs.length) {
      cells.push(label(''));
      runs.forEach((run, i) => {
        if (i > 0) cells.push(gap());
        const group = label(t('overview.kvGroup', { kv: run.kv }), 'axis-label kv-label');
        group.style.gridColumn = `span ${run.count}`;
        group.dataset.kv = String(run.kv);
        group.title = t('overview.kvGroupTitle', {
          kv: run.kv, heads: kvGroup(heads[run.start], nHeads ?? heads.length, nKvHeads).heads.join(', '),
        });
        cells.push(group);
      });
    }
    cells.push(label(''));
    heads.forEach((head, col) => {
      if (gapBefore.has(col)) cells.push(gap());
      cells.push(label(`H${head}`));
    });
    buttons = layers.map((layer, row) => {
      cells.push(label(`L${layer}`));
      const rowButtons = heads.map((head, col) => thumbnail(layer, head, row, col, attention[row][col].length));
      rowButtons.forEach((button, col) => {
        if (gapBefore.has(col)) cells.push(gap());
        cells.push(button);
      });
      return rowButtons;
    });
    root.replaceChildren(...cells);
    selected = null;
    metric = null;
    paintMaps();
    nameButtons();
    markFocus();
  }

  /** Outline the thumbnail of (layer, head). */
  function select(layer, head) {
    if (selected) selected.setAttribute('aria-pressed', 'false');
    selected = root.querySelector(`button.thumb[data-layer="${layer}"][data-head="${head}"]`);
    if (selected) selected.setAttribute('aria-pressed', 'true');
    for (const row of buttons) for (const button of row) button.tabIndex = button === selected ? 0 : -1;
  }

  /**
   * Colour each map's frame by one number per head (values[row][col], rows and columns as rendered), on the
   * sequential scale from min to max; its name (aria-label and title) says the value. null: no frames.
   */
  function colourBy(values, { label: name = '', min = 0, max = 1 } = {}) {
    metric = values ? { values, label: name, min, max } : null;
    nameButtons();
  }

  /**
   * Each head to its own largest weight (shared: false) or one scale for all; colour = (w / max)^gamma, max
   * taken from a quarter of the rows down in a causal model's maps (figures/colormap.js scaleTop).
   */
  function scale({ shared = false, gamma = 1 } = {}) {
    const next = { shared: Boolean(shared), gamma: gamma > 0 ? gamma : 1 };
    if (next.shared === scaling.shared && next.gamma === scaling.gamma) return;
    scaling = next;
    paintMaps();
  }

  /** Mark token `index`'s row and column on every map (null: none). */
  function focus(index) {
    focused = index === null || index === undefined ? null : index;
    markFocus();
  }

  return { render, select, colourBy, scale, focus };
}
