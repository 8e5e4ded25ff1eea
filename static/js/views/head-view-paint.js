// The head view's canvas work: sizing a canvas for a layout (views/head-view-layout.js canvasSize) and
// stroking a plan of lines (planLines) on it. Nothing here decides what is drawn.

/** Give a canvas the size {width, height} in CSS px at `dpr` device px per CSS px. */
export function sizeCanvas(canvas, { width, height, dpr }) {
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
}

/** Clear what the canvas shows, in its current transform (a hidden canvas keeps its transform). */
export function clearLines(canvas) {
  canvas.getContext('2d').clearRect(0, 0, canvas.width, canvas.height);
}

/**
 * Clear the canvas and stroke a plan: one path per group, in the group's head colour and opacity.
 * @param {HTMLCanvasElement} canvas
 * @param {ReturnType<import('./head-view-layout.js').planLines>|null} plan null: only clear
 * @param {{dpr: number, offset: number, colours: string[]}} where offset: the CSS px of the first row in
 *   view (the plan's y of the canvas's top); colours[h]: head position h's CSS colour
 */
export function paintLines(canvas, plan, { dpr, offset, colours }) {
  const ctx = canvas.getContext('2d');
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  if (!plan) return;
  ctx.setTransform(dpr, 0, 0, dpr, 0, -offset * dpr);
  ctx.lineWidth = plan.lineWidth;
  ctx.lineCap = 'butt';
  const { x0, x1 } = plan;
  for (const { head, alpha, ends } of plan.groups) {
    ctx.strokeStyle = colours[head];
    ctx.globalAlpha = alpha;
    ctx.beginPath();
    for (let i = 0; i < ends.length; i += 2) {
      ctx.moveTo(x0, ends[i]);
      ctx.lineTo(x1, ends[i + 1]);
    }
    ctx.stroke();
  }
  ctx.globalAlpha = 1;
}
