// The walkthrough's controls: the clickable list of steps (a progress bar),
// previous / play-pause / next, a slider over the steps and the speed.
// They drive a stepper (views/stepper.js) and show its state.
import { t } from '../i18n/index.js';

/**
 * @param {HTMLElement} root the element holding #step-list, #step-prev, #step-play, #step-next,
 *   #step-slider, #step-position and #step-speed
 * @param {ReturnType<import('./stepper.js').createStepper>} stepper
 * @param {(step: string) => string} labelOf the short name of a step, in the page's language
 */
export function bindStepControls(root, stepper, labelOf) {
  const $ = (selector) => root.querySelector(selector);
  const list = $('#step-list');
  const prev = $('#step-prev');
  const play = $('#step-play');
  const next = $('#step-next');
  const slider = $('#step-slider');
  const position = $('#step-position');
  const speed = $('#step-speed');
  let steps = [];
  let buttons = [];

  /** The step list's buttons for the steps `names` (again whenever the walk's steps change). */
  function build(names) {
    steps = names;
    buttons = steps.map((step, index) => {
      const item = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'step-item';
      button.dataset.step = step;
      const number = document.createElement('span');
      number.className = 'step-number';
      number.textContent = String(index + 1);
      const name = document.createElement('span');
      name.className = 'step-name';
      name.textContent = labelOf(step);
      button.append(number, name);
      item.append(button);
      return button;
    });
    list.replaceChildren(...buttons.map((button) => button.parentElement));
    slider.min = '0';
    slider.max = String(steps.length - 1);
    slider.step = '1';
  }

  list.addEventListener('click', (event) => {
    const button = event.target.closest('button.step-item');
    if (button) stepper.seek(button.dataset.step);
  });
  prev.addEventListener('click', () => stepper.prev());
  next.addEventListener('click', () => stepper.next());
  play.addEventListener('click', () => stepper.toggle());
  slider.addEventListener('input', () => stepper.seek(Number(slider.value)));
  speed.addEventListener('change', () => stepper.setSpeed(Number(speed.value)));
  stepper.setSpeed(Number(speed.value));

  stepper.subscribe(({ index, playing, steps: now }) => {
    if (now !== steps) build(now);
    buttons.forEach((button, i) => {
      if (i === index) button.setAttribute('aria-current', 'step');
      else button.removeAttribute('aria-current');
      button.classList.toggle('is-done', i < index);
    });
    slider.value = String(index);
    slider.setAttribute('aria-valuetext', t('walk.sliderValue', { n: index + 1, total: steps.length, label: labelOf(steps[index]) }));
    position.textContent = `${index + 1} / ${steps.length}`;
    play.textContent = t(playing ? 'walk.pause' : 'walk.play');
    play.setAttribute('aria-pressed', playing ? 'true' : 'false');
    prev.disabled = index === 0;
    next.disabled = index === steps.length - 1;
  });
}
