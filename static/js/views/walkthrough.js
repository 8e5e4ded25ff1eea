// The walkthrough shared by /steps and /toy (templates/_walkthrough.html): the step list and
// playback controls, the stage that draws one step, and the query/key view, which is linked to
// the scores step.
import { STEPS } from '../figures/steps.js';
import { stepText } from '../i18n/steps.js';
import { createQueryKeyView } from './query-key.js';
import { bindStepControls } from './step-controls.js';
import { createStepStage } from './step-stage.js';
import { createStepper } from './stepper.js';

/**
 * @param {{lang: string, onStep?: (step: string) => void}} options onStep runs after a step is drawn
 * @returns {{stepper: object, show: (data: object, selection: {head: number, query: number},
 *   step?: string) => Promise<boolean>}} show draws new data (at `step`, or the current one); it
 *   resolves false when the page asked for something newer meanwhile
 */
export function createWalkthrough({ lang, onStep = () => {} }) {
  const $ = (id) => document.getElementById(id);
  let hasData = false;
  const stage = createStepStage($('stage'), { lang });
  const queryKey = createQueryKeyView($('qk-panel'), {
    onJump: () => {
      stepper.seek('scores');
      $('walkthrough').scrollIntoView({ behavior: 'smooth', block: 'start' });
    },
  });
  const stepper = createStepper({
    steps: STEPS,
    onStep: async (step) => {
      queryKey.setLinked(step === 'scores');
      if (!hasData) return;
      await stage.show(step);
      onStep(step);
    },
  });
  bindStepControls($('walkthrough'), stepper, (step) => stepText(step).label);

  let drawing = 0;
  async function show(data, selection, step = stepper.state.step) {
    const mine = ++drawing;
    hasData = true;
    stage.setData(data, selection);
    if (step !== stepper.state.step) await stepper.seek(step);
    else await stepper.refresh();
    if (mine !== drawing) return false;
    await queryKey.render(data, selection);
    return true;
  }

  return { stepper, show };
}
