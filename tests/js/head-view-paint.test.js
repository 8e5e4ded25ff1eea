// The head view's painter (static/js/views/head-view-paint.js) on a canvas whose 2D context records every
// call: a plan of views/head-view-layout.js becomes one path per group, in the right place, colour and opacity.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { ALL, INSET, ROW, layerLines, planLines } from '../../static/js/views/head-view-layout.js';
import { clearLines, paintLines, sizeCanvas } from '../../static/js/views/head-view-paint.js';

/** A canvas stand-in whose context records method calls and the style each stroke() used. */
function recordingCanvas(width = 100, height = 60) {
  const calls = [];
  const ctx = { globalAlpha: 1, strokeStyle: '#000', lineWidth: 1, lineCap: 'butt' };
  for (const name of ['setTransform', 'clearRect', 'beginPath', 'moveTo', 'lineTo']) {
    ctx[name] = (...args) => calls.push([name, ...args]);
  }
  ctx.stroke = () => calls.push(['stroke', ctx.strokeStyle, ctx.globalAlpha, ctx.lineWidth]);
  return { width, height, style: {}, calls, ctx, getContext: (kind) => (kind === '2d' ? ctx : null) };
}

test('paintLines clears in device px, then strokes each group as one path in layout px', () => {
  const n = 3;
  const maps = [Float32Array.from([0.6, 0.4, 0, 0, 1, 0, 0.5, 0, 0.5]), Float32Array.from([1, 0, 0, 0, 1, 0, 0, 0, 1])];
  const layer = layerLines(maps, [4, 9], n);
  const plan = planLines({ layer, visible: new Set([4, 9]), chosen: ALL, top: 0, height: n * ROW, width: 80 });
  const canvas = recordingCanvas(160, 108);
  paintLines(canvas, plan, { dpr: 2, offset: 5, colours: ['red', 'blue'] });
  const { calls, ctx } = canvas;
  assert.deepEqual(calls.slice(0, 3), [['setTransform', 1, 0, 0, 1, 0, 0], ['clearRect', 0, 0, 160, 108], ['setTransform', 2, 0, 0, 2, 0, -10]]);
  const strokes = calls.filter(([name]) => name === 'stroke');
  assert.deepEqual(strokes, plan.groups.map((g) => ['stroke', g.head === 0 ? 'red' : 'blue', g.alpha, 1]));
  assert.equal(calls.filter(([name]) => name === 'beginPath').length, plan.groups.length);
  // every line from the query column's edge to the key column's, at the plan's heights
  const moves = calls.filter(([name]) => name === 'moveTo');
  const lines = calls.filter(([name]) => name === 'lineTo');
  assert.equal(moves.length, plan.drawing.entries.length);
  const ends = plan.groups.flatMap((g) => [...g.ends]);
  assert.deepEqual(moves.map(([, x, y]) => [x, y]), ends.filter((_, i) => i % 2 === 0).map((y) => [INSET, y]));
  assert.deepEqual(lines.map(([, x, y]) => [x, y]), ends.filter((_, i) => i % 2 === 1).map((y) => [80 - INSET, y]));
  assert.equal(ctx.globalAlpha, 1);
  assert.equal(ctx.lineCap, 'butt');
});

test('paintLines without a plan only clears; clearLines clears in the current transform', () => {
  const canvas = recordingCanvas(30, 40);
  paintLines(canvas, null, {});
  assert.deepEqual(canvas.calls, [['setTransform', 1, 0, 0, 1, 0, 0], ['clearRect', 0, 0, 30, 40]]);
  canvas.calls.length = 0;
  clearLines(canvas);
  assert.deepEqual(canvas.calls, [['clearRect', 0, 0, 30, 40]]);
});

test('sizeCanvas sets device px and CSS px', () => {
  const canvas = recordingCanvas();
  sizeCanvas(canvas, { width: 301, height: 99.5, dpr: 1.5 });
  assert.equal(canvas.width, 452);
  assert.equal(canvas.height, 149);
  assert.deepEqual(canvas.style, { width: '301px', height: '99.5px' });
});
