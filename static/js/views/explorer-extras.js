// The explorer's head view (views/head-view.js: every head of the selected layer as lines from
// query tokens to key tokens) and its export buttons (views/export.js: the large map as PNG or SVG,
// the numbers on screen as JSON or CSV with what they are). Both modules load when first needed.
import { headColour } from '../figures/colormap.js';
import { tokenLabel } from '../figures/axes.js';

const optional = (path) => import(path).catch(() => null);

/**
 * @param {{root: HTMLElement, missing: HTMLElement, layerNote: HTMLElement}} els
 * @param {{onFocus: (index: number|null) => void}} options
 */
export function createHeadViewPanel(els, { onFocus }) {
  let view = null;
  let loading = null;
  let wanted = null; // the last focus asked for, applied once the view exists
  let head = null; // the selected head: the one head the view shows first

  const ready = () => {
    loading ??= optional('./head-view.js').then((module) => {
      if (!module || typeof module.createHeadView !== 'function') {
        els.missing.hidden = false;
        return null;
      }
      view = module.createHeadView(els.root, { onFocus });
      return view;
    });
    return loading;
  };

  return {
    /** Show one layer's heads: maps[h] a row-major Float32Array N x N (heads[h] its head index). */
    async render({ tokens, maps, heads, layer, label, nHeads = null, nKvHeads = null }) {
      els.layerNote.textContent = label;
      const shown = await ready();
      if (!shown) return;
      shown.render({
        tokens, maps, heads, colours: heads.map((h) => headColour(h)), selected: head ?? undefined, nHeads, nKvHeads,
      });
      if (wanted !== null) shown.focus(wanted);
      els.root.dataset.layer = String(layer);
    },
    focus(index) {
      wanted = index;
      if (view) view.focus(index);
    },
    /** The explorer's selected head: shown alone until the learner picks heads in the view. */
    select(index) {
      head = index;
      if (view && typeof view.select === 'function') view.select(index);
    },
  };
}

const FIRST_WORDS = 5;

/** "attnscope-layer2-head5-the-cat-sat" */
export function exportName({ text, layer, head, kind }) {
  const words = text.trim().split(/\s+/).slice(0, FIRST_WORDS).join('-').replace(/[^\p{L}\p{N}-]+/gu, '');
  return ['attnscope', kind, `layer${layer}`, kind === 'mean' || kind === 'rollout' ? null : `head${head}`, words]
    .filter(Boolean).join('-');
}

/**
 * Wire the four export buttons. `current()` returns what is on screen: {gd, meta, tokens, matrix, name}
 * (null while nothing is drawn).
 */
export function bindExport({ png, svg, json, csv }, current) {
  const run = async (format) => {
    const shown = current();
    const module = await optional('./export.js');
    if (!shown || !module) return;
    if (format === 'png' || format === 'svg') {
      await module.exportFigure(shown.gd, format, shown.name);
      return;
    }
    const labels = shown.tokens.map((token) => tokenLabel(token));
    const version = typeof module.attnscopeVersion === 'function' ? await module.attnscopeVersion() : null;
    module.exportNumbers(format, {
      meta: { ...shown.meta, version }, rows: labels, cols: labels, matrix: shown.matrix, filename: shown.name,
    });
  };
  png.addEventListener('click', () => run('png'));
  svg.addEventListener('click', () => run('svg'));
  json.addEventListener('click', () => run('json'));
  csv.addEventListener('click', () => run('csv'));
}
