// The explanation of each step of multi-head attention (keys step.<name>.label / .title / .body
// of the dictionaries, and step.<name>.<variant>.title / .body where a variant does the step its own
// way: figures/steps.js stepVariant); {scale}, {dHead}, {nHeads}, {head}, {query}, {temperature}
// and {seed} are filled in by the page.
import { t } from './index.js';

/**
 * The label, title and body of `step` in the page's language, placeholders filled from `values`;
 * the title and body of its `variant` when one is given.
 */
export function stepText(step, values = {}, variant = null) {
  const key = variant ? `step.${step}.${variant}` : `step.${step}`;
  return {
    label: t(`step.${step}.label`),
    title: t(`${key}.title`, values),
    body: t(`${key}.body`, values),
  };
}

/** A note shown with a step (noMask, causal, window, windowShort), placeholders filled from `values`. */
export function stepNote(key, values = {}) {
  return t(`step.note.${key}`, values);
}
