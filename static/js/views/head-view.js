// The head view of one layer: every query token in a column on the left, every key token in a column on
// the right, and a line from query i to key j for each head, its opacity the weight a_ij, its colour the
// head's. Hovering (or keyboard-focusing) a token keeps only its lines: a query's to every key, or every
// query's to a key; clicking it (Enter) keeps them until it is clicked again.
//
// So that it opens legibly, the view first shows one head (the explorer's selected head, `select()`; it
// follows that head until the learner picks heads with the toggles) and, of every token's lines, each query
// token's LIMIT_DEFAULT strongest per head: at most LIMIT_DEFAULT x N lines. The "lines per token" menu
// shows the strongest one, three or every line of weight >= CUTOFF; a hovered or clicked token shows all of
// its own lines.
//
// Drawn on canvas so that 512 tokens x 12 heads stays fluid:
// * what to draw is worked out in views/head-view-layout.js (pure: sparse lines by row and column, the
//   lines crossing the rows in view grouped by head and opacity, the per-frame budget) and stroked by
//   views/head-view-paint.js; the elements are built by views/head-view-dom.js;
// * the canvases are the size of the scrolled viewport (sticky in it), not of the whole column;
// * the lines of every token sit on one canvas, a token's lines on a second one above it: hovering draws
//   at most heads x N lines on the second, leaving it shows the first again without drawing anything.
// This module keeps the state (the layer, the visible heads, the hovered and the clicked token) and
// answers the events.
//
// For tests and tools the container carries what is shown: data-mode ("all", "query" or "key"),
// data-limit (the lines per query token and head of every token's lines: "1", "3" or "all"),
// data-token (the token's index, or ""), data-heads (the visible heads, comma-separated), data-lines (how
// many lines of weight >= CUTOFF the state has, in view or not), data-drawn (how many the canvas on show
// stroked: those crossing the rows in view) and data-from (the lowest weight stroked: CUTOFF, or higher when
// the budget cut); `container.headViewLines()` returns the stroked lines as {head, query, key, weight}
// typed arrays.
import { headColour } from '../figures/colormap.js';
import { kvRuns } from '../figures/kv-groups.js';
import { buildHeadView, headToggle, kvToggleGroup, tokenButton, writeStatus, writeWords } from './head-view-dom.js';
import {
  LIMIT_DEFAULT, ROW, allLines, canvasSize, countLines, emptyDrawing, keyMove, layerLines, linesOf, planLines, sameSize, sameToken,
  scrollFor, selectionOf,
} from './head-view-layout.js';
import { clearLines, paintLines, sizeCanvas } from './head-view-paint.js';

export { CUTOFF } from './head-view-layout.js';

/**
 * @param {HTMLElement} container an empty element; the view fills it
 * @param {{onFocus?: (index: number|null) => void, onHeads?: (visible: number[]) => void}} [options]
 *   onFocus: a token was clicked (its index) or unclicked (null); onHeads: the head toggles changed
 * @returns {{render: Function, focus: (index: number|null) => void, setHeads: (visible: number[]) => void,
 *   select: (head: number) => void}}
 */
export function createHeadView(container, { onFocus, onHeads } = {}) {
  const els = buildHeadView(container);
  const { base, overlay, body, queries, keys, scroller, toggles } = els;

  // the layer on show: tokens, head numbers (heads[i] drawn from maps[i]), colours[i], sparse lines per head
  let layer = { ...layerLines([], [], 0), tokens: [], colours: [] };
  let visible = new Set(); // head numbers
  let selected = null; // the explorer's selected head: the one head shown until the learner picks heads
  let picked = false; // the learner picked the heads shown (toggles, All, None)
  let limit = LIMIT_DEFAULT; // lines per query token and head of every token's lines
  let hovered = null; // {side: 'query'|'key', index}
  let focused = null; // the clicked token: {side, index}
  let stale = true; // the canvas of every token's lines must be drawn again (scroll, size, heads, data)
  let size = { width: 0, height: 0, dpr: 1 };
  let frame = 0;
  const drawings = { base: emptyDrawing(), overlay: emptyDrawing() }; // what each canvas shows
  let marked = null; // the token button marked as the one whose lines are shown

  writeWords(els, limit);
  container.dataset.limit = els.limit.value;
  container.headViewLines = () => linesOf(layer, selectionOf(hovered, focused).mode === 'all' ? drawings.base : drawings.overlay);

  // ---- drawing ----

  /** Fit the canvases to the viewport; false when their size is unchanged. */
  function measure() {
    const next = canvasSize({
      rows: layer.n, viewHeight: scroller.clientHeight, laneWidth: els.lanes.clientWidth, pixelRatio: window.devicePixelRatio,
    });
    if (sameSize(next, size)) return false;
    els.stage.style.height = `${next.height}px`;
    sizeCanvas(base, next);
    sizeCanvas(overlay, next);
    size = next;
    return true;
  }

  /** Draw the chosen lines that cross the rows in view on `canvas`; returns what it drew. */
  function draw(canvas, chosen) {
    if (!layer.n) {
      paintLines(canvas, null, {});
      return emptyDrawing();
    }
    const offset = Math.max(0, els.stage.getBoundingClientRect().top - els.lanes.getBoundingClientRect().top);
    const plan = planLines({ layer, visible, chosen, top: offset, height: size.height, width: size.width });
    paintLines(canvas, plan, { dpr: size.dpr, offset, colours: layer.colours });
    return plan.drawing;
  }

  /** Shows the lines of the selection: every token's (drawn again only when stale) or one token's. */
  function paint() {
    if (frame) cancelAnimationFrame(frame);
    frame = 0;
    const chosen = selectionOf(hovered, focused, limit);
    if (stale && (chosen.mode === 'all' || !layer.n)) {
      drawings.base = draw(base, allLines(limit));
      stale = false;
    }
    if (chosen.mode === 'all') {
      clearLines(overlay);
      drawings.overlay = emptyDrawing();
    } else {
      drawings.overlay = draw(overlay, chosen);
    }
    base.hidden = chosen.mode !== 'all';
    overlay.hidden = chosen.mode === 'all';
    const drawing = chosen.mode === 'all' ? drawings.base : drawings.overlay;
    writeStatus(container, els, { chosen, visible, count: countLines(layer, visible, chosen), drawing, tokens: layer.tokens });
    markToken(chosen);
  }

  function schedule() {
    if (!frame) frame = requestAnimationFrame(paint);
  }

  // ---- tokens ----

  const columnOf = (side) => (side === 'key' ? keys : queries);

  function markToken(chosen) {
    marked?.classList.remove('is-active');
    marked = chosen.index === null ? null : columnOf(chosen.mode).children[chosen.index] ?? null;
    marked?.classList.add('is-active');
  }

  function setFocused(next) {
    if (focused) columnOf(focused.side).children[focused.index]?.setAttribute('aria-pressed', 'false');
    focused = next;
    if (focused) columnOf(focused.side).children[focused.index]?.setAttribute('aria-pressed', 'true');
  }

  function hover(next) {
    if (sameToken(next, hovered)) return;
    hovered = next;
    paint();
  }

  const tokenOf = (button) => ({ side: button.dataset.side, index: Number(button.dataset.index) });

  function tokenFrom(event) {
    const button = event.target.closest?.('button.head-view-token');
    return button && body.contains(button) ? button : null;
  }

  /** The token the keyboard is on (focus-visible), as a hover. */
  function keyboardToken() {
    const active = document.activeElement;
    if (!(active instanceof HTMLElement) || !active.matches('button.head-view-token:focus-visible')) return null;
    return body.contains(active) ? tokenOf(active) : null;
  }

  body.addEventListener('pointerover', (event) => {
    const button = tokenFrom(event);
    hover(button ? tokenOf(button) : keyboardToken());
  });
  body.addEventListener('pointerleave', () => hover(keyboardToken()));
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
    const token = tokenOf(button);
    const again = sameToken(focused, token);
    setFocused(again ? null : token);
    paint();
    onFocus?.(again ? null : token.index);
  });

  body.addEventListener('keydown', (event) => {
    const button = tokenFrom(event);
    if (!button) return;
    if (event.key === 'Escape') {
      if (focused === null) return;
      event.preventDefault();
      setFocused(null);
      paint();
      onFocus?.(null);
      return;
    }
    const next = keyMove(event.key, Number(button.dataset.index), layer.n);
    if (!next) return;
    event.preventDefault();
    const column = next.column === 'same' ? button.parentElement : columnOf(next.column);
    const target = column.children[next.index];
    if (!target) return;
    button.tabIndex = -1;
    target.tabIndex = 0;
    target.focus();
  });

  // ---- heads ----

  function applyHeads(next, notify) {
    if (notify) picked = true;
    visible = new Set(layer.heads.filter((head) => next.has(head)));
    stale = true;
    for (const button of toggles.querySelectorAll('button.head-view-toggle')) {
      button.setAttribute('aria-pressed', String(visible.has(Number(button.dataset.head))));
    }
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
  els.allButton.addEventListener('click', () => applyHeads(new Set(layer.heads), true));
  els.noneButton.addEventListener('click', () => applyHeads(new Set(), true));

  els.limit.addEventListener('change', () => {
    limit = els.limit.value === 'all' ? Infinity : Number(els.limit.value);
    container.dataset.limit = els.limit.value;
    stale = true;
    paint();
  });

  /** The heads a layer opens with: the selected head, or every head when the layer lacks it. */
  const openingHeads = () => new Set(layer.heads.includes(selected) ? [selected] : layer.heads);

  // ---- scrolling and size ----

  scroller.addEventListener('scroll', () => {
    stale = true;
    schedule();
  }, { passive: true });
  const resize = new ResizeObserver(() => {
    if (!layer.n || !measure()) return;
    stale = true;
    paint();
  });
  resize.observe(scroller);

  /**
   * Draw one layer.
   * @param {{tokens: object[], maps: Float32Array[], heads: number[], colours?: string[], selected?: number}} input
   *   maps[i] is head heads[i]'s row-major N x N map (query, key); colours[i] its CSS colour (default:
   *   figures/colormap.js); selected: the head shown first (default: every head)
   */
  function render({ tokens, maps, heads, colours, selected: head, nHeads = null, nKvHeads = null }) {
    if (head !== undefined) selected = head;
    const sameHeads = heads.length === layer.heads.length && heads.every((head, i) => head === layer.heads[i]);
    layer = {
      ...layerLines(maps, heads, tokens.length),
      tokens,
      colours: heads.map((head, i) => colours?.[i] ?? headColour(head)),
    };
    if (!sameHeads) picked = false;
    if (!sameHeads || (!picked && head !== undefined)) visible = openingHeads();
    hovered = null;
    if (focused && focused.index >= layer.n) focused = null;
    stale = true;
    writeWords(els, limit);
    body.style.setProperty('--rows', String(layer.n));
    body.style.setProperty('--row', `${ROW}px`);
    queries.replaceChildren(...tokens.map((token, i) => tokenButton(token, i, 'query')));
    keys.replaceChildren(...tokens.map((token, i) => tokenButton(token, i, 'key')));
    setFocused(focused);
    const buttons = layer.heads.map((head, h) => headToggle(head, layer.colours[h], visible.has(head)));
    // grouped-query attention: the toggles of the heads sharing a key-value head side by side, labelled
    const runs = kvRuns(layer.heads, nHeads ?? layer.heads.length, nKvHeads);
    toggles.replaceChildren(...(runs.length
      ? runs.map((run) => kvToggleGroup(run.kv, buttons.slice(run.start, run.start + run.count)))
      : buttons));
    measure();
    paint();
  }

  /** Keep only the lines of query token `index` (null: every token's). */
  function focus(index) {
    const next = index === null || index === undefined || index >= layer.n ? null : { side: 'query', index };
    if (next?.index === focused?.index) return; // a clicked key keeps its side
    setFocused(next);
    if (next) {
      const top = scrollFor(next.index, scroller.scrollTop, scroller.clientHeight);
      if (top !== null) scroller.scrollTop = top;
    }
    paint();
  }

  /** Show only these heads (head numbers). */
  function setHeads(visibleHeads) {
    applyHeads(new Set(visibleHeads), false);
  }

  /** The explorer selected another head: the view shows it alone, unless the learner picked heads. */
  function select(head) {
    selected = head;
    if (!picked && layer.heads.includes(head)) applyHeads(new Set([head]), false);
  }

  return { render, focus, setHeads, select };
}
