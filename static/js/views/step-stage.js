// The stage of the walkthrough: one step of multi-head attention with its title,
// explanation (i18n/steps.js) and figures (figures/steps.js). Both /steps and
// /toy draw through it. When a step is drawn, the stage element carries
// data-step="<step>" (and data-head, data-query) for whoever waits on it.
import { stepSpec } from '../figures/steps.js';
import { stepNote, stepText } from '../i18n/steps.js';
import { drawGrid } from './figure-grid.js';

/**
 * @param {HTMLElement} root holding #stage-title, #stage-body, #stage-note and #stage-grid
 * @param {{lang?: string}} options the language of the explanations
 */
export function createStepStage(root, { lang = 'en' } = {}) {
  const title = root.querySelector('#stage-title');
  const body = root.querySelector('#stage-body');
  const note = root.querySelector('#stage-note');
  const grid = root.querySelector('#stage-grid');
  let data = null;
  let selection = { head: 0, query: 0 };
  let seq = 0;

  function placeholders() {
    const query = Math.min(selection.query, data.queryLabels.length - 1);
    return {
      scale: data.scale.toFixed(4),
      dHead: data.dHead,
      nHeads: data.nHeads,
      head: selection.head,
      query: `${query} (“${data.queryLabels[query]}”)`,
    };
  }

  /** Use new data (a StepData from figures/steps.js) and a new head/query from now on. */
  function setData(stepData, { head, query }) {
    data = stepData;
    selection = { head, query };
  }

  /** Draw `step` of the current data. Resolves when drawn (or superseded by a later call). */
  async function show(step) {
    if (!data) return;
    const mine = ++seq;
    const text = stepText(step, placeholders());
    const spec = stepSpec(data, step, { ...selection, width: grid.clientWidth || 1200 });
    title.textContent = text.title;
    body.textContent = text.body;
    note.textContent = spec.noteKey ? stepNote(spec.noteKey) : '';
    note.hidden = !spec.noteKey;
    root.setAttribute('aria-busy', 'true');
    await drawGrid(grid, spec);
    if (mine !== seq) return;
    root.dataset.step = step;
    root.dataset.head = String(selection.head);
    root.dataset.query = String(selection.query);
    root.setAttribute('aria-busy', 'false');
  }

  return { setData, show };
}
