// The stage of the walkthrough: one step of multi-head attention with its title,
// explanation (i18n/steps.js) and figures (figures/steps.js). Both /steps and
// /toy draw through it; the steps of the block around the attention (/steps) have
// their text and figures from figures/block.js. When a step is drawn, the stage element carries
// data-step="<step>" (and data-head, data-query, data-keys: the first key of the key window,
// and data-draw-ms: how long the figures took to reach the screen) for whoever waits on it.
//
// Once a step is on screen, the next one is drawn in the background, a figure at a time while the
// page is idle, into a hidden grid of the same width; when the user goes on to it, that grid takes
// the place of the shown one. Anything that changes what it would show (new data, another head, query
// or key window, another width, another step) throws it away.
import { blockSpec, blockText, isBlockStep } from '../figures/block.js';
import { probsparseFacts } from '../figures/probsparse.js';
import { splitFacts, STEPS, stepSpec, stepVariant } from '../figures/steps.js';
import { stepNote, stepText } from '../i18n/steps.js';
import { dataText, drawGrid, releaseGrid } from './figure-grid.js';

const DATA_MARK = '\u0000'; // stands for the query token in the text until it is put in as data

/** Put `text` into `element`, with each DATA_MARK replaced by `data` marked as data (translate="no"). */
function fill(element, text, data) {
  const parts = text.split(DATA_MARK);
  element.replaceChildren(...parts.flatMap((part, i) => (i === 0 ? [part] : [dataText(data), part])));
}

/** Resolves when the page is idle (or after `timeout` ms at the latest). */
const idle = (timeout = 1000) => new Promise((resolve) => {
  if (typeof requestIdleCallback === 'function') requestIdleCallback(() => resolve(), { timeout });
  else setTimeout(resolve, 0);
});

/**
 * @param {HTMLElement} root holding #stage-title, #stage-body, #stage-note and #stage-grid
 * @param {{onDrawn?: (spec: object) => (void|Promise<void>), steps?: () => string[]}} [options] onDrawn gets
 *   each drawn step's spec (its windows and overview); steps: the walk's steps (the next one is drawn ahead)
 */
export function createStepStage(root, { onDrawn = () => {}, steps = () => STEPS } = {}) {
  const title = root.querySelector('#stage-title');
  const body = root.querySelector('#stage-body');
  const note = root.querySelector('#stage-note');
  let grid = root.querySelector('#stage-grid');
  let data = null;
  let selection = { head: 0, query: 0, keys: null };
  let seq = 0;

  // The hidden grid the next step is drawn into: as wide as the stage's, out of sight, out of the
  // accessibility tree and out of the page's scrollable area (no height, its overflow clipped).
  const backstage = document.createElement('div');
  backstage.setAttribute('aria-hidden', 'true');
  backstage.inert = true;
  Object.assign(backstage.style, {
    position: 'absolute', left: '0', top: '0', height: '0', overflow: 'hidden', visibility: 'hidden', pointerEvents: 'none',
  });
  root.append(backstage);
  /** The next step drawn in the background: {step, data, selection, width, spec, grid, done, stopped}. */
  let prepared = null;

  function placeholders() {
    const query = Math.min(selection.query, data.queryLabels.length - 1);
    return {
      scale: data.scale.toFixed(4),
      inverse: (1 / Math.sqrt(data.dHead)).toFixed(4),
      cap: data.softcap,
      dHead: data.dHead,
      dValues: data.dValues,
      nHeads: data.nHeads,
      head: selection.head,
      query: `${query} (“${DATA_MARK}”)`,
      temperature: data.temperature,
      seed: data.seed ?? 0,
      ...(data.source === 'trace' ? splitFacts(data, selection.head) : {}), // key-value heads, RoPE's settings
      ...(data.probsparse ? probsparseFacts(data, selection.head, query) : {}), // ProbSparse: sample, M, active rows
    };
  }

  /** A step's grid: the attention's (figures/steps.js) or the block's around it (figures/block.js). */
  const specOf = (stepData, step, chosen) => (isBlockStep(step) ? blockSpec : stepSpec)(stepData, step, chosen);

  const nameParts = (step) => ['head', selection.head, 'query', selection.query, step];

  function discard() {
    if (!prepared) return;
    prepared.stopped = true;
    releaseGrid(prepared.grid);
    prepared.grid.remove();
    prepared = null;
  }

  /** Use new data (a StepData from figures/steps.js) and a new head/query/key window from now on. */
  function setData(stepData, { head, query, keys = null }) {
    data = stepData;
    selection = { head, query, keys };
    discard();
  }

  /** Start drawing `step` in the background (nothing when it is already being drawn there). */
  function prepare(step) {
    const width = grid.clientWidth || 1200;
    if (prepared && prepared.step === step && prepared.data === data && prepared.selection === selection
      && prepared.width === width) return;
    discard();
    const job = { step, data, selection, width, spec: null, grid: document.createElement('div'), stopped: false, urgent: false };
    job.grid.className = grid.className;
    backstage.style.width = `${grid.getBoundingClientRect().width}px`; // to the fraction of a pixel
    backstage.append(job.grid);
    const pause = async () => {
      if (!job.urgent) await idle();
      return !job.stopped;
    };
    job.done = pause().then((go) => {
      if (!go) return false;
      job.spec = specOf(job.data, step, { ...job.selection, width });
      return drawGrid(job.grid, job.spec, nameParts(step), { pause });
    });
    prepared = job;
  }

  /** Show a step's note (noMask, causal, a sliding window's), its placeholders filled, or none. */
  function showNote(spec) {
    note.textContent = spec.noteKey ? stepNote(spec.noteKey, spec.noteValues) : '';
    note.hidden = !spec.noteKey;
  }

  /**
   * The figures of `step` on screen: the grid drawn in the background when it is that step's, else drawn
   * now. Resolves with the step's spec, or null when a later show() took over meanwhile (`mine`).
   */
  async function figures(step, mine) {
    const width = grid.clientWidth || 1200;
    const job = prepared;
    if (job && job.step === step && job.data === data && job.selection === selection && job.width === width) {
      prepared = null;
      job.urgent = true;
      const drawn = await job.done;
      if (drawn && mine === seq) {
        showNote(job.spec);
        releaseGrid(grid);
        job.grid.id = grid.id;
        grid.replaceWith(job.grid);
        grid = job.grid;
        return job.spec;
      }
      releaseGrid(job.grid);
      job.grid.remove();
      if (mine !== seq) return null;
    }
    discard();
    const spec = specOf(data, step, { ...selection, width });
    showNote(spec);
    await drawGrid(grid, spec, nameParts(step));
    return spec;
  }

  /** Draw `step` of the current data. Resolves when drawn (or superseded by a later call). */
  async function show(step) {
    if (!data) return;
    const mine = ++seq;
    const text = isBlockStep(step) ? blockText(data, step, placeholders()) : stepText(step, placeholders(), stepVariant(data, step));
    const label = data.queryLabels[Math.min(selection.query, data.queryLabels.length - 1)];
    fill(title, text.title, label);
    fill(body, text.body, label);
    root.setAttribute('aria-busy', 'true');
    const started = performance.now();
    const spec = await figures(step, mine);
    const drawMs = performance.now() - started;
    if (mine !== seq) return;
    await onDrawn(spec);
    if (mine !== seq) return;
    root.dataset.drawMs = String(Math.round(drawMs));
    root.dataset.step = step;
    root.dataset.head = String(selection.head);
    root.dataset.query = String(selection.query);
    root.dataset.keys = String(spec.windows.keys.start);
    root.setAttribute('aria-busy', 'false');
    const walk = steps();
    const next = walk[walk.indexOf(step) + 1];
    if (next) prepare(next);
  }

  return { setData, show };
}
