// The head view of one layer: every query token in a column on the left, every key token in a column on
// the right, and a line from query i to key j for each head, its opacity the weight a_ij, its colour the
// head's. Hovering (or keyboard-focusing) a token keeps only its lines: a query's to every key, or every
// query's to a key; clicking it (Enter) keeps them until it is clicked again.
//
// Drawn on canvas so that 512 tokens x 12 heads stays fluid:
// * render() keeps, per head, only the weights of at least CUTOFF (said in the legend), by query row and
//   by key column (CSR indices), so a token's lines are found without scanning the N x N maps;
// * the canvases are the size of the scrolled viewport (sticky in it), not of the whole column, and draw
//   only the lines that cross the rows in view, grouped by head and by opacity (one stroke per group);
// * the lines of every token sit on one canvas, a token's lines on a second one above it: hovering draws
//   at most heads x N lines on the second, leaving it shows the first again without drawing anything.
//
// At most MAX_DRAWN lines are stroked in a frame: when more cross the view (every token's lines at 512
// tokens), the strongest are, and the view says from which weight.
//
// For tests and tools the container carries what is shown: data-mode ("all", "query" or "key"),
// data-token (the token's index, or ""), data-heads (the visible heads, comma-separated), data-lines (how
// many lines of weight >= CUTOFF the state has, in view or not), data-drawn (how many the canvas on show
// stroked: those crossing the rows in view) and data-from (the lowest weight stroked: CUTOFF, or higher when
// the budget cut); `container.headViewLines()` returns the stroked lines as {head, query, key, weight}
// typed arrays.
import { tokenLabel } from '../figures/axes.js';
import { headColour } from '../figures/colormap.js';
import { t, tNodes } from '../i18n/index.js';

/** Weights below this are not drawn (a line of opacity 0.01 is all but invisible anyway). */
export const CUTOFF = 0.01;
const ROW = 18; // CSS px per token row
const LEVELS = 50; // opacities drawn: weight rounded to a multiple of 1 / LEVELS (at least 1 / LEVELS)
// Lines stroked per frame at most. Software canvas strokes of lines across the view cost about 50 µs each
// in headless Chromium on a 2-core machine: 1,500 keep a frame near 75 ms. A query token never has more
// than heads x 100 lines (its row sums to 1, so at most 100 weights reach 0.01); the view of every token
// or of a key taken by many queries may have more, and then the strongest are drawn (said on the view).
const MAX_DRAWN = 1500;
const MAX_CANVAS = 16384; // device px: a canvas side Chromium draws without falling back
const INSET = 3; // px between a line's end and its token column
const SPREAD = 0.6; // share of a row over which the heads' line ends are spread

const STEP = { ArrowUp: -1, ArrowDown: 1, PageUp: -10, PageDown: 10 }; // ui-text: not UI (key names)

function element(tag, className, attributes = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

/** One head's weights of at least CUTOFF, in query-row order, with row and column indices. */
function sparseHead(map, n) {
  let count = 0;
  for (let i = 0; i < n * n; i += 1) if (map[i] >= CUTOFF) count += 1;
  const query = new Uint16Array(count);
  const key = new Uint16Array(count);
  const weight = new Float32Array(count);
  const rowStart = new Uint32Array(n + 1);
  const keyCount = new Uint32Array(n + 1);
  let e = 0;
  for (let q = 0; q < n; q += 1) {
    rowStart[q] = e;
    const base = q * n;
    for (let k = 0; k < n; k += 1) {
      const w = map[base + k];
      if (w >= CUTOFF) {
        query[e] = q;
        key[e] = k;
        weight[e] = w;
        keyCount[k + 1] += 1;
        e += 1;
      }
    }
  }
  rowStart[n] = e;
  const keyStart = new Uint32Array(n + 1);
  for (let k = 0; k < n; k += 1) keyStart[k + 1] = keyStart[k] + keyCount[k + 1];
  const byKey = new Uint32Array(count); // entry indices, by key column
  const fill = keyStart.slice(0, n);
  for (let i = 0; i < count; i += 1) {
    byKey[fill[key[i]]] = i;
    fill[key[i]] += 1;
  }
  return { query, key, weight, rowStart, keyStart, byKey, count };
}

/**
 * @param {HTMLElement} container an empty element; the view fills it
 * @param {{onFocus?: (index: number|null) => void, onHeads?: (visible: number[]) => void}} [options]
 *   onFocus: a token was clicked (its index) or unclicked (null); onHeads: the head toggles changed
 * @returns {{render: Function, focus: (index: number|null) => void, setHeads: (visible: number[]) => void}}
 */
export function createHeadView(container, { onFocus, onHeads } = {}) {
  container.classList.add('head-view');

  const toolbar = element('div', 'head-view-heads', { role: 'group' });
  const allButton = element('button', 'head-view-all', { type: 'button' });
  const noneButton = element('button', 'head-view-none', { type: 'button' });
  const toggles = element('div', 'head-view-toggles');
  toolbar.append(allButton, noneButton, toggles);
  const legend = element('p', 'head-view-legend hint');
  const status = element('p', 'head-view-status');
  const scroller = element('div', 'head-view-scroll');
  const body = element('div', 'head-view-body');
  const queries = element('div', 'head-view-tokens head-view-queries', { role: 'group' });
  const keys = element('div', 'head-view-tokens head-view-keys', { role: 'group' });
  const lanes = element('div', 'head-view-lanes');
  const stage = element('div', 'head-view-stage');
  const base = element('canvas', 'head-view-base', { role: 'img' });
  const overlay = element('canvas', 'head-view-overlay', { 'aria-hidden': 'true' });
  stage.append(base, overlay);
  lanes.append(stage);
  body.append(queries, lanes, keys);
  scroller.append(body);
  container.replaceChildren(toolbar, legend, status, scroller);

  let tokens = [];
  let heads = []; // head numbers, heads[i] drawn from maps[i]
  let colours = [];
  let sparse = []; // sparseHead per heads[i]
  let visible = new Set();
  let n = 0;
  let hovered = null; // {side: 'query'|'key', index}
  let focused = null; // the clicked token: {side, index}
  let stale = true; // the canvas of every token's lines must be drawn again (scroll, size, heads, data)
  let layout = { width: 0, height: 0, offset: 0, dpr: 1 };
  let frame = 0;

  function words() {
    toolbar.setAttribute('aria-label', t('headView.heads'));
    allButton.textContent = t('headView.all');
    noneButton.textContent = t('headView.none');
    legend.textContent = t('headView.legend', { cutoff: String(CUTOFF) });
    queries.setAttribute('aria-label', t('headView.queries'));
    keys.setAttribute('aria-label', t('headView.keys'));
  }
  words();

  // ---- what is shown ----

  /** The state's lines: {mode, index}; a hovered token wins over the clicked one. */
  function selection() {
    if (hovered) return { mode: hovered.side, index: hovered.index };
    if (focused) return { mode: focused.side, index: focused.index };
    return { mode: 'all', index: null };
  }

  /** Calls visit(entry index) for each line of head position h in the selection. */
  function eachLineOf(h, { mode, index }, visit) {
    const s = sparse[h];
    if (mode === 'all') {
      for (let e = 0; e < s.count; e += 1) visit(e);
    } else if (mode === 'query') {
      for (let e = s.rowStart[index]; e < s.rowStart[index + 1]; e += 1) visit(e);
    } else {
      for (let i = s.keyStart[index]; i < s.keyStart[index + 1]; i += 1) visit(s.byKey[i]);
    }
  }

  function countLines(chosen) {
    let count = 0;
    for (let h = 0; h < heads.length; h += 1) {
      if (!visible.has(heads[h])) continue;
      const s = sparse[h];
      if (chosen.mode === 'all') count += s.count;
      else if (chosen.mode === 'query') count += s.rowStart[chosen.index + 1] - s.rowStart[chosen.index];
      else count += s.keyStart[chosen.index + 1] - s.keyStart[chosen.index];
    }
    return count;
  }

  container.headViewLines = () => linesOfDrawing(selection().mode === 'all' ? baseDrawing : overlayDrawing);

  // ---- drawing ----

  function measure() {
    const total = n * ROW;
    const view = scroller.clientHeight || total;
    const height = Math.max(1, Math.min(total, view));
    const width = Math.max(1, lanes.clientWidth);
    const dpr = Math.min(window.devicePixelRatio || 1, MAX_CANVAS / height, MAX_CANVAS / width);
    if (width === layout.width && height === layout.height && dpr === layout.dpr) return false;
    stage.style.height = `${height}px`;
    for (const canvas of [base, overlay]) {
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(height * dpr);
      canvas.style.width = `${width}px`;
      canvas.style.height = `${height}px`;
    }
    layout = { width, height, dpr, offset: 0 };
    return true;
  }

  const levelOf = (w) => Math.min(LEVELS, Math.max(1, Math.round(w * LEVELS)));

  /** A head's lines end a little above or below the row's middle, so that heads on the same pair stay apart. */
  function spread(h) {
    return heads.length > 1 ? ((h / (heads.length - 1)) - 0.5) * SPREAD * ROW : 0;
  }

  /** What a canvas shows: the lines it stroked (head position, entry), of how many in view, from which weight. */
  const emptyDrawing = () => ({ heads: new Uint8Array(0), entries: new Uint32Array(0), inView: 0, from: CUTOFF });
  let baseDrawing = emptyDrawing();
  let overlayDrawing = emptyDrawing();

  /**
   * Draws the chosen lines that cross the rows in view: all of them, or when there are more than MAX_DRAWN,
   * the strongest (every line of the highest opacity levels that fit in MAX_DRAWN).
   */
  function draw(canvas, chosen) {
    const ctx = canvas.getContext('2d');
    const { width, height, dpr } = layout;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    if (!n) return emptyDrawing();
    const offset = Math.max(0, stage.getBoundingClientRect().top - lanes.getBoundingClientRect().top);
    layout.offset = offset;
    const top = offset;
    const bottom = offset + height;

    // the lines in view, with their opacity level, by head
    const picked = [];
    const histogram = new Uint32Array(LEVELS + 1);
    let inView = 0;
    for (let h = 0; h < heads.length; h += 1) {
      const entries = [];
      const levels = [];
      if (visible.has(heads[h])) {
        const s = sparse[h];
        eachLineOf(h, chosen, (e) => {
          const yq = (s.query[e] + 0.5) * ROW;
          const yk = (s.key[e] + 0.5) * ROW;
          if ((yq < top && yk < top) || (yq > bottom && yk > bottom)) return;
          const level = levelOf(s.weight[e]);
          entries.push(e);
          levels.push(level);
          histogram[level] += 1;
        });
      }
      inView += entries.length;
      picked.push({ entries, levels });
    }
    let lowest = 1; // the lowest opacity level drawn
    let kept = inView;
    while (kept > MAX_DRAWN && lowest <= LEVELS) {
      kept -= histogram[lowest];
      lowest += 1;
    }

    ctx.setTransform(dpr, 0, 0, dpr, 0, -offset * dpr);
    ctx.lineWidth = chosen.mode === 'all' ? 1 : 1.5;
    ctx.lineCap = 'butt';
    const x0 = INSET;
    const x1 = width - INSET;
    const drawnHeads = new Uint8Array(kept);
    const drawnEntries = new Uint32Array(kept);
    let d = 0;
    const start = new Uint32Array(LEVELS + 2);
    for (let h = 0; h < heads.length; h += 1) {
      const { entries, levels } = picked[h];
      if (!entries.length) continue;
      // a counting sort of the head's lines by level: one stroke per level
      start.fill(0);
      for (const level of levels) start[level + 1] += 1;
      for (let l = 1; l <= LEVELS + 1; l += 1) start[l] += start[l - 1];
      const order = new Uint32Array(entries.length);
      const fill = start.slice();
      for (let i = 0; i < entries.length; i += 1) {
        order[fill[levels[i]]] = entries[i];
        fill[levels[i]] += 1;
      }
      const s = sparse[h];
      const shift = spread(h);
      ctx.strokeStyle = colours[h];
      for (let level = lowest; level <= LEVELS; level += 1) {
        if (start[level] === start[level + 1]) continue;
        ctx.globalAlpha = level / LEVELS;
        ctx.beginPath();
        for (let i = start[level]; i < start[level + 1]; i += 1) {
          const e = order[i];
          ctx.moveTo(x0, (s.query[e] + 0.5) * ROW + shift);
          ctx.lineTo(x1, (s.key[e] + 0.5) * ROW + shift);
          drawnHeads[d] = h;
          drawnEntries[d] = e;
          d += 1;
        }
        ctx.stroke();
      }
    }
    ctx.globalAlpha = 1;
    return { heads: drawnHeads, entries: drawnEntries, inView, from: lowest > 1 ? (lowest - 0.5) / LEVELS : CUTOFF };
  }

  /** The drawn lines as {head, query, key, weight} typed arrays. */
  function linesOfDrawing({ heads: positions, entries }) {
    const count = entries.length;
    const out = {
      head: new Uint16Array(count), query: new Uint16Array(count), key: new Uint16Array(count),
      weight: new Float32Array(count),
    };
    for (let i = 0; i < count; i += 1) {
      const s = sparse[positions[i]];
      const e = entries[i];
      out.head[i] = heads[positions[i]];
      out.query[i] = s.query[e];
      out.key[i] = s.key[e];
      out.weight[i] = s.weight[e];
    }
    return out;
  }

  function describe(chosen, count, drawing) {
    const shown = [...visible].sort((a, b) => a - b);
    const drawn = drawing.entries.length;
    container.dataset.mode = chosen.mode;
    container.dataset.token = chosen.index === null ? '' : String(chosen.index);
    container.dataset.heads = shown.join(',');
    container.dataset.lines = String(count);
    container.dataset.drawn = String(drawn);
    container.dataset.from = String(drawing.from);
    const what = chosen.mode === 'all' ? [t('headView.showingAll', { lines: count, heads: shown.length })]
      : tNodes(chosen.mode === 'query' ? 'headView.showingQuery' : 'headView.showingKey', {
        lines: count, heads: shown.length, index: chosen.index, token: tokenLabel(tokens[chosen.index]),
      }, ['token']);
    const cut = drawn < drawing.inView
      ? t('headView.cut', { drawn, total: drawing.inView, weight: drawing.from.toFixed(2) }) : '';
    status.replaceChildren(...what, ...(cut ? [' ', cut] : []));
    base.setAttribute('aria-label', status.textContent);
  }

  /** Shows the lines of the selection: every token's (drawn again only when stale) or one token's. */
  function paint() {
    if (frame) cancelAnimationFrame(frame);
    frame = 0;
    const chosen = selection();
    if (stale && (chosen.mode === 'all' || !n)) {
      baseDrawing = draw(base, { mode: 'all', index: null });
      stale = false;
    }
    if (chosen.mode === 'all') {
      overlay.getContext('2d').clearRect(0, 0, overlay.width, overlay.height);
      overlayDrawing = emptyDrawing();
      base.hidden = false;
      overlay.hidden = true;
    } else {
      overlayDrawing = draw(overlay, chosen);
      base.hidden = true;
      overlay.hidden = false;
    }
    describe(chosen, countLines(chosen), chosen.mode === 'all' ? baseDrawing : overlayDrawing);
    markTokens(chosen);
  }

  function schedule() {
    if (!frame) frame = requestAnimationFrame(paint);
  }

  // ---- tokens ----

  function tokenButton(token, index, side) {
    const button = element('button', `head-view-token${token.special ? ' is-special' : ''}${token.segment === 1 ? ' is-segment-1' : ''}`, {
      type: 'button', 'data-index': String(index), 'data-side': side,
    });
    button.translate = false;
    button.textContent = tokenLabel(token);
    button.setAttribute('aria-label', t(side === 'query' ? 'headView.query' : 'headView.key', { index, token: tokenLabel(token) }));
    button.setAttribute('aria-pressed', 'false');
    button.tabIndex = index === 0 ? 0 : -1;
    return button;
  }

  let marked = [];
  function markTokens(chosen) {
    for (const button of marked) button.classList.remove('is-active');
    marked = [];
    if (chosen.index === null) return;
    const column = chosen.mode === 'query' ? queries : keys;
    const button = column.children[chosen.index];
    if (button) {
      button.classList.add('is-active');
      marked.push(button);
    }
  }

  const columnOf = (side) => (side === 'key' ? keys : queries);

  function setFocused(next) {
    if (focused) columnOf(focused.side).children[focused.index]?.setAttribute('aria-pressed', 'false');
    focused = next;
    if (focused) columnOf(focused.side).children[focused.index]?.setAttribute('aria-pressed', 'true');
  }

  function scrollToRow(index) {
    const y = index * ROW;
    if (y < scroller.scrollTop || y + ROW > scroller.scrollTop + scroller.clientHeight) {
      scroller.scrollTop = Math.max(0, y - scroller.clientHeight / 2);
    }
  }

  function tokenFrom(event) {
    const button = event.target.closest?.('button.head-view-token');
    return button && body.contains(button) ? button : null;
  }

  body.addEventListener('pointerover', (event) => {
    const button = tokenFrom(event);
    const next = button ? { side: button.dataset.side, index: Number(button.dataset.index) } : keyboardToken();
    if (next?.side === hovered?.side && next?.index === hovered?.index) return;
    hovered = next;
    paint();
  });
  body.addEventListener('pointerleave', () => {
    const next = keyboardToken();
    if (next?.side === hovered?.side && next?.index === hovered?.index) return;
    hovered = next;
    paint();
  });

  /** The token the keyboard is on (focus-visible), as a hover. */
  function keyboardToken() {
    const active = document.activeElement;
    if (!(active instanceof HTMLElement) || !active.matches('button.head-view-token:focus-visible')) return null;
    return body.contains(active) ? { side: active.dataset.side, index: Number(active.dataset.index) } : null;
  }

  body.addEventListener('focusin', () => {
    const token = keyboardToken();
    if (token) {
      hovered = token;
      paint();
    }
  });
  body.addEventListener('focusout', (event) => {
    if (hovered && !(event.relatedTarget instanceof Node && body.contains(event.relatedTarget))) {
      hovered = null;
      paint();
    }
  });

  body.addEventListener('click', (event) => {
    const button = tokenFrom(event);
    if (!button) return;
    const index = Number(button.dataset.index);
    const { side } = button.dataset;
    const again = focused?.index === index && focused?.side === side;
    setFocused(again ? null : { side, index });
    paint();
    onFocus?.(again ? null : index);
  });

  body.addEventListener('keydown', (event) => {
    const button = tokenFrom(event);
    if (!button) return;
    const index = Number(button.dataset.index);
    let next = null;
    if (event.key in STEP) next = { column: button.parentElement, index: index + STEP[event.key] };
    else if (event.key === 'Home') next = { column: button.parentElement, index: 0 }; // ui-text: not UI (a key name)
    else if (event.key === 'End') next = { column: button.parentElement, index: n - 1 }; // ui-text: not UI (a key name)
    else if (event.key === 'ArrowLeft') next = { column: queries, index };
    else if (event.key === 'ArrowRight') next = { column: keys, index };
    else if (event.key === 'Escape' && focused !== null) {
      event.preventDefault();
      setFocused(null);
      paint();
      onFocus?.(null);
      return;
    }
    if (!next) return;
    event.preventDefault();
    const target = next.column.children[Math.max(0, Math.min(n - 1, next.index))];
    if (!target) return;
    button.tabIndex = -1;
    target.tabIndex = 0;
    target.focus();
  });

  // ---- heads ----

  function drawToggles() {
    toggles.replaceChildren(...heads.map((head, h) => {
      const button = element('button', 'head-view-toggle', {
        type: 'button', 'data-head': String(head), 'aria-pressed': String(visible.has(head)),
      });
      button.setAttribute('aria-label', t('headView.toggle', { head }));
      button.title = t('headView.toggle', { head });
      const swatch = element('span', 'head-view-swatch', { 'aria-hidden': 'true' });
      swatch.style.backgroundColor = colours[h];
      button.append(swatch, `H${head}`);
      return button;
    }));
  }

  function applyHeads(next, notify) {
    visible = new Set(heads.filter((head) => next.has(head)));
    stale = true;
    for (const button of toggles.children) button.setAttribute('aria-pressed', String(visible.has(Number(button.dataset.head))));
    paint();
    if (notify) onHeads?.([...visible].sort((a, b) => a - b));
  }

  toggles.addEventListener('click', (event) => {
    const button = event.target.closest('button.head-view-toggle');
    if (!button) return;
    const head = Number(button.dataset.head);
    const next = new Set(visible);
    if (next.has(head)) next.delete(head); else next.add(head);
    applyHeads(next, true);
  });
  allButton.addEventListener('click', () => applyHeads(new Set(heads), true));
  noneButton.addEventListener('click', () => applyHeads(new Set(), true));

  // ---- layout ----

  scroller.addEventListener('scroll', () => {
    stale = true;
    schedule();
  }, { passive: true });
  const resize = new ResizeObserver(() => {
    if (!n || !measure()) return;
    stale = true;
    paint();
  });
  resize.observe(scroller);

  /**
   * Draw one layer.
   * @param {{tokens: object[], maps: Float32Array[], heads: number[], colours?: string[]}} input maps[i] is
   *   head heads[i]'s row-major N x N map (query, key); colours[i] its CSS colour (default: figures/colormap.js)
   */
  function render({ tokens: nextTokens, maps, heads: nextHeads, colours: nextColours }) {
    const sameHeads = nextHeads.length === heads.length && nextHeads.every((head, i) => head === heads[i]);
    tokens = nextTokens;
    n = tokens.length;
    heads = [...nextHeads];
    colours = heads.map((head, i) => nextColours?.[i] ?? headColour(head));
    sparse = maps.map((map) => sparseHead(map, n));
    if (!sameHeads) visible = new Set(heads);
    hovered = null;
    if (focused && focused.index >= n) focused = null;
    stale = true;
    words();
    body.style.setProperty('--rows', String(n));
    body.style.setProperty('--row', `${ROW}px`);
    queries.replaceChildren(...tokens.map((token, i) => tokenButton(token, i, 'query')));
    keys.replaceChildren(...tokens.map((token, i) => tokenButton(token, i, 'key')));
    setFocused(focused);
    drawToggles();
    measure();
    paint();
  }

  /** Keep only the lines of query token `index` (null: every token's). */
  function focus(index) {
    const next = index === null || index === undefined || index >= n ? null : { side: 'query', index };
    if (next?.index === focused?.index) return; // a clicked key keeps its side
    setFocused(next);
    if (next) scrollToRow(next.index);
    paint();
  }

  /** Show only these heads (head numbers). */
  function setHeads(visibleHeads) {
    applyHeads(new Set(visibleHeads), false);
  }

  return { render, focus, setHeads };
}
