// The notebook widget's view (attnscope/notebook.py): the grid of every head (views/overview.js), the selected
// head's map, the head view of its layer (views/head-view.js) and the steps of the selected head that make its
// map (scores → scale → mask → softmax, from the model's trace). The kernel's traits drive it: `layer` and
// `head` (the model's indices) and `token` (a query token or null) follow the clicks here and the assignments
// in Python alike. Token text is set as text, never parsed. The root carries data-layer, data-head,
// data-token and data-step for tests and tools.
import { attentionPixels, differencePixels, matrixMax } from '../figures/colormap.js';
import { tokenLabel } from '../figures/axes.js';
import { t } from '../i18n/index.js';
import { stepText } from '../i18n/steps.js';
import { createHeadView } from '../views/head-view.js';
import { createOverview } from '../views/overview.js';
import {
  clampMasked, decodeMaps, finiteAbsMax, gridOf, layerOf, mapAt, positionOf, rowsOf, stepsOf,
} from './data.js';

const STEPS = ['scores', 'scale', 'mask', 'softmax'];
const SIGNED = new Set(['scores', 'scale', 'mask']);

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function section(className, heading) {
  const node = element('section', `attnscope-widget-panel ${className}`);
  const title = element('h3', 'attnscope-widget-heading', heading);
  node.append(title);
  return { node, title };
}

/** Paint an N x N matrix (rows) one pixel per entry on `canvas`. */
function paint(canvas, matrix, signed) {
  const n = matrix.length;
  canvas.width = Math.max(1, n);
  canvas.height = Math.max(1, n);
  if (!n) return;
  const pixels = signed
    ? differencePixels(clampMasked(matrix, finiteAbsMax(matrix)), finiteAbsMax(matrix))
    : attentionPixels(matrix, matrixMax(matrix));
  canvas.getContext('2d').putImageData(new ImageData(pixels, n, n), 0, 0);
}

/** The cell of `canvas` (an N x N picture scaled by CSS) under a pointer event: {query, key} or null. */
function cellAt(canvas, event, n) {
  const box = canvas.getBoundingClientRect();
  if (!n || box.width <= 0 || box.height <= 0) return null;
  const key = Math.floor(((event.clientX - box.left) / box.width) * n);
  const query = Math.floor(((event.clientY - box.top) / box.height) * n);
  return query >= 0 && query < n && key >= 0 && key < n ? { query, key } : null;
}

/**
 * Fill `el` with the widget and keep it in step with `model` (anywidget's model: get, set, on, off,
 * save_changes). Returns the function that detaches it.
 */
export function mountWidget(el, model) {
  const root = element('div', 'attnscope-widget');
  root.translate = true;
  const grid = section('attnscope-widget-grid', t('explorer.overview.heading'));
  const gridBody = element('div', 'overview-grid');
  grid.node.append(gridBody);
  const map = section('attnscope-widget-map', t('explorer.detail.heading'));
  const mapCanvas = element('canvas', 'attnscope-widget-canvas');
  mapCanvas.setAttribute('role', 'img');
  const mapStatus = element('p', 'attnscope-widget-status');
  mapStatus.translate = false;
  map.node.append(mapCanvas, mapStatus);
  const heads = section('attnscope-widget-heads', t('explorer.headView.heading'));
  const headMount = element('div', 'head-view-mount');
  heads.node.append(headMount);
  const steps = section('attnscope-widget-steps', t('widget.steps.heading'));
  const stepButtons = element('div', 'attnscope-widget-step-buttons');
  stepButtons.setAttribute('role', 'group');
  stepButtons.setAttribute('aria-label', t('widget.steps.heading'));
  const stepCanvas = element('canvas', 'attnscope-widget-canvas');
  stepCanvas.setAttribute('role', 'img');
  const stepNote = element('p', 'attnscope-widget-note', t('widget.steps.needModel'));
  steps.node.append(stepButtons, stepCanvas, stepNote);
  const top = element('div', 'attnscope-widget-top');
  top.append(grid.node, map.node);
  root.append(top, heads.node, steps.node);
  el.replaceChildren(root);

  let maps = decodeMaps(model.get('_maps'), model.get('_shape'));
  let tokens = model.get('tokens');
  let layers = model.get('layers');
  let headList = model.get('heads');
  let step = 'softmax';
  let shownLayer = null;

  const commit = (changes) => {
    for (const [name, value] of Object.entries(changes)) model.set(name, value);
    model.save_changes();
  };

  const overview = createOverview(gridBody, { onSelect: (layer, head) => commit({ layer, head }) });
  const headView = createHeadView(headMount, { onFocus: (index) => commit({ token: index }) });

  function drawGrid() {
    overview.render({ layers, heads: headList, attention: gridOf(maps) });
    shownLayer = null;
  }

  function drawSelection() {
    const layer = model.get('layer');
    const head = model.get('head');
    const place = positionOf(layers, headList, layer, head);
    root.dataset.layer = String(layer);
    root.dataset.head = String(head);
    overview.select(layer, head);
    if (!place) return;
    const n = maps.shape[2];
    const name = t('figure.layerHead', { layer, head });
    map.title.textContent = `${t('explorer.detail.heading')} · ${name}`;
    mapCanvas.setAttribute('aria-label', name);
    paint(mapCanvas, rowsOf(mapAt(maps, place.row, place.col), n), false);
    heads.title.textContent = `${t('explorer.headView.heading')} · ${t('widget.layer', { layer })}`;
    if (shownLayer !== layer) {
      headView.render({ tokens, maps: layerOf(maps, place.row), heads: headList, selected: head });
      shownLayer = layer;
    } else {
      headView.select(head);
    }
  }

  function drawToken() {
    const token = model.get('token');
    root.dataset.token = token === null || token === undefined ? '' : String(token);
    overview.focus(token ?? null);
    headView.focus(token ?? null);
  }

  function drawSteps() {
    const meta = model.get('_steps') ?? {};
    const values = stepsOf(meta, model.get('_step_data'));
    const names = STEPS.filter((name) => name in values);
    stepNote.hidden = names.length > 0;
    stepCanvas.hidden = names.length === 0;
    stepButtons.hidden = names.length === 0;
    if (!names.length) {
      delete root.dataset.step;
      return;
    }
    if (!names.includes(step)) step = names.at(-1);
    stepButtons.replaceChildren(...names.map((name) => {
      const button = element('button', 'attnscope-widget-step', stepText(name).label);
      button.type = 'button';
      button.dataset.step = name;
      button.setAttribute('aria-pressed', String(name === step));
      return button;
    }));
    const label = `${stepText(step).label} · ${t('figure.layerHead', { layer: meta.layer, head: meta.head })}`;
    steps.title.textContent = `${t('widget.steps.heading')} · ${label}`;
    stepCanvas.setAttribute('aria-label', label);
    paint(stepCanvas, values[step], SIGNED.has(step));
    root.dataset.step = step;
  }

  stepButtons.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-step]');
    if (!button) return;
    step = button.dataset.step;
    drawSteps();
  });

  mapCanvas.addEventListener('pointermove', (event) => {
    const cell = cellAt(mapCanvas, event, maps.shape[2]);
    const place = positionOf(layers, headList, model.get('layer'), model.get('head'));
    if (!cell || !place) {
      mapStatus.textContent = '';
      return;
    }
    const weight = mapAt(maps, place.row, place.col)[cell.query * maps.shape[2] + cell.key];
    mapStatus.textContent = t('widget.map.cell', {
      query: tokenLabel(tokens[cell.query]), key: tokenLabel(tokens[cell.key]), weight: weight.toFixed(3),
    });
  });
  mapCanvas.addEventListener('pointerleave', () => { mapStatus.textContent = ''; });
  mapCanvas.addEventListener('click', (event) => {
    const cell = cellAt(mapCanvas, event, maps.shape[2]);
    if (cell) commit({ token: model.get('token') === cell.query ? null : cell.query });
  });

  function reload() {
    maps = decodeMaps(model.get('_maps'), model.get('_shape'));
    tokens = model.get('tokens');
    layers = model.get('layers');
    headList = model.get('heads');
    drawGrid();
    drawSelection();
    drawToken();
  }

  const handlers = [
    ['change:layer change:head', drawSelection], // ui-text: not UI (event names)
    ['change:token', drawToken],
    ['change:_steps change:_step_data', drawSteps],
    ['change:_maps change:_shape change:tokens', reload],
  ];
  for (const [events, handler] of handlers) model.on(events, handler);
  reload();
  drawSteps();
  root.dataset.ready = 'true';
  return () => {
    for (const [events, handler] of handlers) model.off(events, handler);
  };
}
