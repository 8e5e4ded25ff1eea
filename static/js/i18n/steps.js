// The explanation of each step of multi-head attention (keys step.<name>.label / .title / .body
// of the dictionaries); {scale}, {dHead}, {nHeads}, {head} and {query} are filled in by the page.
import { t } from './index.js';

/** The label, title and body of `step` in the page's language, placeholders filled from `values`. */
export function stepText(step, values = {}) {
  return {
    label: t(`step.${step}.label`),
    title: t(`step.${step}.title`, values),
    body: t(`step.${step}.body`, values),
  };
}

/** A note shown with a step (noMask, causal). */
export function stepNote(key) {
  return t(`step.note.${key}`);
}
