// The glimpse lab's canvas view (/glimpse): one watched test canvas of one run's latest evaluation, drawn as a grey
// image with the chosen decoding step's weights over its 9 cells (soft: a tint and the weight in each cell; hard:
// the cell glimpsed, outlined), the digits on it and the digits read, and a sentence saying where that step looked
// and what it wrote. The run, the canvas (buttons) and the step (a slider) are chosen beside it.
import { argmax, canvasFigure, cellOf, emitted, HARD, tokenText } from '../../figures/glimpse.js';
import { t } from '../../i18n/index.js';
import { oneAtATime } from '../../labs/one-at-a-time.js';
import { renderFigure } from '../plot.js';

/**
 * A view over `els` {run, canvases, step, stepLabel, plot, target, output, says}; `evalsOf(run)` gives a run's eval
 * events so far. `draw()` redraws the chosen run's latest evaluation (keeping the canvas and step when they exist).
 */
export function createLook(els, evalsOf) {
  let canvas = 0;
  let drawnKey = '';

  function canvasButtons(count) {
    if (els.canvases.children.length === count) return;
    els.canvases.replaceChildren(...Array.from({ length: count }, (_, i) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'glimpse-button';
      button.dataset.canvas = String(i);
      button.textContent = String(i + 1);
      button.setAttribute('aria-label', t('glimpse.look.canvasN', { n: i + 1 }));
      button.addEventListener('click', () => {
        canvas = i;
        els.step.value = '0';
        draw();
      });
      return button;
    }));
  }

  const draw = oneAtATime(drawChosen);

  async function drawChosen() {
    const run = els.run.value;
    const latest = evalsOf(run)?.at(-1) ?? null;
    if (!latest) {
      els.plot.replaceChildren();
      delete els.plot.dataset.run;
      for (const el of [els.target, els.output, els.says, els.stepLabel]) el.textContent = '';
      els.step.max = '0';
      return;
    }
    canvasButtons(latest.glimpses.length);
    canvas = Math.min(canvas, latest.glimpses.length - 1);
    for (const button of els.canvases.children) button.setAttribute('aria-pressed', String(Number(button.dataset.canvas) === canvas));
    const watched = latest.glimpses[canvas];
    const steps = watched.regions.length;
    const step = Math.min(Number(els.step.value) || 0, steps - 1);
    els.step.max = String(steps - 1);
    els.step.value = String(step);
    els.stepLabel.textContent = t('glimpse.look.step', { n: step + 1, total: steps });
    const hard = HARD.includes(run);
    const key = `${run}|${latest.step}|${canvas}|${step}`;
    if (key !== drawnKey) {
      drawnKey = key;
      const size = Math.min(300, Math.max(200, els.plot.clientWidth || 300));
      await renderFigure(els.plot, canvasFigure(watched, step, { hard, size }), { filename: `attnscope-glimpse-${run}-canvas${canvas + 1}-step${step + 1}` });
    }
    Object.assign(els.plot.dataset, { run, canvas: String(canvas), step: String(step), evalStep: String(latest.step) });
    els.target.textContent = t('glimpse.look.target', { digits: watched.target.join(' ') });
    els.output.textContent = t('glimpse.look.output', { digits: watched.output.length ? watched.output.join(' ') : t('glimpse.look.nothing') });
    const weights = watched.regions[step];
    const cell = argmax(weights);
    const { row, column } = cellOf(cell);
    const wrote = tokenText(emitted(watched, step));
    els.says.textContent = t(hard ? 'glimpse.look.saysHard' : 'glimpse.look.saysSoft', {
      n: step + 1, row: row + 1, column: column + 1, weight: weights[cell].toFixed(2), wrote, trained: latest.step,
    });
  }

  els.run.addEventListener('change', () => {
    els.step.value = '0';
    draw();
  });
  els.step.addEventListener('input', () => draw());
  return { draw };
}
