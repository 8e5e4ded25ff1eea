// The animation controller of the walkthrough: which step is shown, whether it
// plays, and how fast. It owns no element: `onStep` draws a step (and may return a
// promise); `subscribe` tells the controls what to show. While playing, the next
// step starts `interval` ms after the previous one has finished drawing, so no
// step is ever skipped, whatever the speed.

/**
 * @param {{steps: string[], onStep: (step: string, index: number) => (void|Promise<void>),
 *          interval?: number}} options
 */
export function createStepper({ steps, onStep, interval = 2400 }) {
  const state = { steps: [...steps], index: 0, playing: false, interval };
  const listeners = new Set();
  let last = state.steps.length - 1;
  let timer = null;

  const snapshot = () => ({ ...state, step: state.steps[state.index] });
  const emit = () => {
    for (const listener of listeners) listener(snapshot());
  };

  async function show(index) {
    state.index = Math.min(last, Math.max(0, index));
    emit();
    await onStep(state.steps[state.index], state.index);
  }

  function stopTimer() {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  }

  function schedule() {
    stopTimer();
    timer = setTimeout(async () => {
      timer = null;
      if (!state.playing) return;
      await show(state.index + 1);
      if (!state.playing) return;
      if (state.index >= last) pause();
      else schedule();
    }, state.interval);
  }

  /** Play from the current step (from the first one when at the end). */
  async function play() {
    if (state.playing) return;
    state.playing = true;
    if (state.index >= last) {
      await show(0);
      if (!state.playing) return;
    } else {
      emit();
    }
    schedule();
  }

  function pause() {
    stopTimer();
    if (!state.playing) return;
    state.playing = false;
    emit();
  }

  const toggle = () => (state.playing ? pause() : play());

  /** Show step `index` (or a step name); user navigation stops playback. */
  function seek(target) {
    pause();
    const index = typeof target === 'string' ? state.steps.indexOf(target) : target;
    return show(index < 0 ? 0 : index);
  }

  /** Redraw the current step (the data changed), without touching playback. */
  const refresh = () => onStep(state.steps[state.index], state.index);

  /** Milliseconds between two steps while playing. */
  function setSpeed(ms) {
    state.interval = ms;
    emit();
    if (state.playing) schedule();
  }

  /**
   * Walk other steps from now on (a model whose block has other steps): the current step stays shown when
   * the new list has it, else the first one; nothing is drawn (the caller shows or refreshes).
   */
  function setSteps(steps) {
    if (steps.length === state.steps.length && steps.every((step, i) => step === state.steps[i])) return;
    const current = state.steps[state.index];
    state.steps = [...steps];
    last = state.steps.length - 1;
    state.index = Math.max(0, state.steps.indexOf(current));
    emit();
  }

  function subscribe(listener) {
    listeners.add(listener);
    listener(snapshot());
    return () => listeners.delete(listener);
  }

  return {
    play,
    pause,
    toggle,
    seek,
    next: () => seek(state.index + 1),
    prev: () => seek(state.index - 1),
    refresh,
    setSpeed,
    setSteps,
    subscribe,
    get state() {
      return snapshot();
    },
  };
}
