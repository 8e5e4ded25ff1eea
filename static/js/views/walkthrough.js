// The walkthrough shared by /steps and /toy (templates/_walkthrough.html): the step list and
// playback controls, the stage that draws one step, the window navigator (long inputs), and the
// query/key view, which is linked to the scores step.
import { blockLabel, isBlockStep } from '../figures/block.js';
import { movedKeys, STEPS } from '../figures/steps.js';
import { stepText } from '../i18n/steps.js';
import { createQueryKeyView } from './query-key.js';
import { bindStepControls } from './step-controls.js';
import { createStepStage } from './step-stage.js';
import { createStepper } from './stepper.js';
import { createWindowNav } from './window-nav.js';

/**
 * @param {{onStep?: (step: string) => void,
 *   onSelect?: ((change: {query?: number, keys: number|null}) => void) | null}} [options]
 *   onStep runs after a step is drawn. onSelect gets the user's moves of the window (a new query
 *   and/or the first key of the key window, null: keys around the query); a page that keeps
 *   them in its URL passes it and calls show() again; without it the walkthrough redraws itself.
 * @returns {{stepper: object, show: (data: object, selection: {head: number, query: number,
 *   keys?: number|null}, step?: string) => Promise<boolean>}} show draws new data (at `step`, or the
 *   current one); it resolves false when the page asked for something newer meanwhile
 */
export function createWalkthrough({ onStep = () => {}, onSelect = null } = {}) {
  const $ = (id) => document.getElementById(id);
  let data = null;
  let selection = { head: 0, query: 0, keys: null };

  function select(change) {
    if (!data) return;
    if (onSelect) onSelect(change);
    else show(data, { ...selection, ...change });
  }

  const nav = createWindowNav($('stage-window'), { onMove: select });
  const stage = createStepStage($('stage'), {
    onDrawn: (spec) => nav.render(spec, selection.keys === null),
    steps: () => stepper.state.steps,
  });
  const queryKey = createQueryKeyView($('qk-panel'), {
    onJump: () => {
      stepper.seek('scores');
      $('walkthrough').scrollIntoView({ behavior: 'smooth', block: 'start' });
    },
    onMoveKeys: (direction, windows) => select({ keys: movedKeys(windows, direction) }),
  });
  const stepper = createStepper({
    steps: STEPS,
    onStep: async (step) => {
      queryKey.setLinked(step === 'scores');
      if (!data) return;
      await stage.show(step);
      onStep(step);
    },
  });
  bindStepControls($('walkthrough'), stepper, (step) => (isBlockStep(step) ? blockLabel(step) : stepText(step).label));

  let drawing = 0;
  async function show(stepData, chosen, step = stepper.state.step) {
    const mine = ++drawing;
    data = stepData;
    selection = { head: chosen.head, query: chosen.query, keys: chosen.keys ?? null };
    stage.setData(data, selection);
    stepper.setSteps(data.walk ?? STEPS); // a model's block adds its steps after the attention's (figures/block.js)
    if (step !== stepper.state.step) await stepper.seek(step);
    else await stepper.refresh();
    if (mine !== drawing) return false;
    await queryKey.render(data, selection);
    return true;
  }

  return { stepper, show };
}
