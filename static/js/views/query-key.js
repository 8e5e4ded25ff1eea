// The query/key view (bertviz's "neuron view") of one query: q, the keys k_j (of the key
// window, for long inputs), their products dimension by dimension, and the sums, which are the
// query's row of the scores. Linked to the walkthrough's scores step; hidden for additive and linear scores.
import { queryKeySpec } from '../figures/steps.js';
import { t } from '../i18n/index.js';
import { drawGrid } from './figure-grid.js';

/**
 * @param {HTMLElement} root holding #qk-grid, #qk-check, #qk-jump and the key window's
 *   #qk-window, #qk-window-text, #qk-keys-prev and #qk-keys-next
 * @param {{onJump: () => void, onMoveKeys: (direction: number, windows: object) => void}} options
 *   onJump: show the scores step; onMoveKeys: move the key window by `direction` halves
 */
export function createQueryKeyView(root, { onJump, onMoveKeys }) {
  const grid = root.querySelector('#qk-grid');
  const check = root.querySelector('#qk-check');
  const bar = root.querySelector('#qk-window');
  const barText = root.querySelector('#qk-window-text');
  const prev = root.querySelector('#qk-keys-prev');
  const next = root.querySelector('#qk-keys-next');
  let windows = null;
  root.querySelector('#qk-jump').addEventListener('click', () => onJump());
  prev.addEventListener('click', () => windows && onMoveKeys(-1, windows));
  next.addEventListener('click', () => windows && onMoveKeys(1, windows));

  /** Draw the view of selection.query and selection.head (and selection.keys, the key window). */
  async function render(stepData, selection) {
    // Additive and linear scores are no dot product q·k_j: the scores step shows how they are made.
    root.hidden = stepData.variant === 'additive' || stepData.variant === 'linear';
    if (root.hidden) return;
    const spec = queryKeySpec(stepData, { ...selection, width: grid.clientWidth || 1200 });
    let worst = 0;
    spec.sums.forEach((sum, j) => {
      worst = Math.max(worst, Math.abs(sum - spec.scores[j]));
    });
    const query = Math.min(selection.query, stepData.queryLabels.length - 1);
    const { keys } = spec.windows;
    windows = spec.windows;
    check.textContent = t('walk.qk.check', { query, diff: worst.toExponential(1) });
    bar.hidden = !keys.windowed;
    barText.textContent = t('walk.qk.window', { from: keys.start, to: keys.end - 1, n: keys.n });
    prev.disabled = keys.start === 0;
    next.disabled = keys.end === keys.n;
    await drawGrid(grid, spec);
    root.dataset.query = String(query);
    root.dataset.head = String(selection.head);
    root.dataset.keys = String(keys.start);
  }

  /** Outline the view while the walkthrough shows the scores step. */
  function setLinked(linked) {
    root.classList.toggle('is-linked', linked);
  }

  return { render, setLinked };
}
