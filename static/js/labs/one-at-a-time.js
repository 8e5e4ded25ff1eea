// A view that several controls redraw (a select, a slider) must not let two drawings run at once: each fetches and
// then draws in several awaited steps, so a slow earlier drawing could finish last and leave the view showing a
// choice the learner has already changed. oneAtATime runs the drawings in turn and skips any that a later call has
// made pointless, so the last call always draws last, reading the controls as they are when it starts.

/** Wraps the async `draw` (no arguments: it reads the page) so that its calls run one after another; returns a
 *  function that queues a drawing and resolves (or rejects) when that call's turn is over. */
export function oneAtATime(draw) {
  let tail = Promise.resolve();
  let queued = 0;
  return () => {
    queued += 1;
    tail = tail.catch(() => {}).then(() => {
      queued -= 1;
      return queued > 0 ? undefined : draw(); // a later call is waiting: it will draw the newer choice
    });
    return tail;
  };
}
