// The query/key view (bertviz's "neuron view") of one query: q, every key k_j,
// their products dimension by dimension, and the sums, which are the query's row
// of the scores. Linked to the walkthrough's scores step.
import { queryKeySpec } from '../figures/steps.js';
import { drawGrid } from './figure-grid.js';

/**
 * @param {HTMLElement} root holding #qk-grid, #qk-check and #qk-jump
 * @param {{onJump: () => void}} options onJump: show the scores step
 */
export function createQueryKeyView(root, { onJump }) {
  const grid = root.querySelector('#qk-grid');
  const check = root.querySelector('#qk-check');
  root.querySelector('#qk-jump').addEventListener('click', () => onJump());

  /** Draw the view of selection.query and selection.head. */
  async function render(stepData, selection) {
    const spec = queryKeySpec(stepData, selection);
    let worst = 0;
    spec.sums.forEach((sum, j) => {
      worst = Math.max(worst, Math.abs(sum - spec.scores[j]));
    });
    const query = Math.min(selection.query, stepData.queryLabels.length - 1);
    check.textContent =
      `Each row sum q·k_j is score (${query}, j): row ${query} of the scores step ` +
      `(largest difference ${worst.toExponential(1)}, float rounding).`;
    await drawGrid(grid, spec);
    root.dataset.query = String(query);
    root.dataset.head = String(selection.head);
  }

  /** Outline the view while the walkthrough shows the scores step. */
  function setLinked(linked) {
    root.classList.toggle('is-linked', linked);
  }

  return { render, setLinked };
}
