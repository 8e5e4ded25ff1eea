// The /sequence page's numbers and figures: an RNN, a convolution stack and self-attention side by side.
// Pure: no DOM, no fetch. The path-length formulas are model/lab/sequence.py's (a node test checks them
// against a search over the stack's connections); the sweep is bench/sequence_sweep.py's file and the reach
// POST /api/v1/sequence/reach's answer. Every caption's numbers come from a *Summary function here, which a
// node test recomputes from the data.
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, TEXT_COLOUR } from './axes.js';
import { binaryBytes, duration, scientific, significant } from './cost.js';

export const KINDS = ['rnn', 'conv', 'attention'];
export const PHASES = ['forward', 'train'];
export const COLOURS = { rnn: '#c92a2a', conv: '#7048e8', attention: '#2457c5' };
const GREY = '#adb5bd';

// ---- the formulas ----------------------------------------------------------------------------------------

/** Sequential steps from j to i through a recurrence: |i − j|. */
export const rnnSteps = (i, j) => Math.abs(i - j);

/** Self-attention: one step between two positions (none from a position to itself). */
export const attentionSteps = (i, j) => (i === j ? 0 : 1);

/** The receptive field of a causal stack after `layers` layers: 1 + (k − 1)·L, dilated 1 + (k − 1)(2^L − 1). */
export function receptiveField(kernel, layers, dilated) {
  return 1 + (kernel - 1) * (dilated ? 2 ** layers - 1 : layers);
}

/** Layers before i sees j: ⌈|i − j| / (k − 1)⌉; dilated, the fewest L with 1 + (k − 1)(2^L − 1) ≥ |i − j| + 1. */
export function convLayers(i, j, kernel, dilated) {
  const distance = Math.abs(i - j);
  if (!dilated) return Math.ceil(distance / (kernel - 1));
  let layers = 0;
  while (receptiveField(kernel, layers, true) < distance + 1) layers += 1;
  return layers;
}

/** The dilation of layer l (0-based). */
export const dilationOf = (layer, dilated) => (dilated ? 2 ** layer : 1);

/**
 * One dependency path from the earlier position up to the later one through the fewest layers: the position
 * at level 0 (the input) … L (the output); each layer steps back m·dilation, m ≤ k − 1, largest steps first.
 */
export function convPath(i, j, kernel, dilated) {
  const [low, high] = [Math.min(i, j), Math.max(i, j)];
  const layers = convLayers(high, low, kernel, dilated);
  const positions = [high];
  let left = high - low;
  for (let layer = layers - 1; layer >= 0; layer -= 1) {
    const dilation = dilationOf(layer, dilated);
    const step = Math.min(kernel - 1, Math.floor(left / dilation));
    left -= step * dilation;
    positions.push(positions[positions.length - 1] - step * dilation);
  }
  return positions.reverse();
}

/** Everything the "who can see whom" section says, from its state. */
export function pathSummary({ n, i, j, k, dilated }) {
  const low = Math.min(i, j);
  const high = Math.max(i, j);
  const layers = convLayers(high, low, k, dilated);
  return {
    low, high, distance: high - low, rnn: rnnSteps(i, j), conv: layers, attention: attentionSteps(i, j),
    field: receptiveField(k, layers, dilated),
    sequential: { rnn: n, conv: layers, attention: 1 }, // the whole sequence: N steps, one per layer, one
  };
}

// ---- the path figures --------------------------------------------------------------------------------------

function baseLayout(height, extra = {}) {
  return {
    font: { family: FONT, size: 12, color: TEXT_COLOUR },
    paper_bgcolor: '#ffffff',
    plot_bgcolor: '#ffffff',
    hoverlabel: { font: { family: FONT, size: 12 } },
    height,
    margin: { t: 8, r: 12, b: 40, l: 56 },
    showlegend: false,
    ...extra,
  };
}

const positionAxis = (n) => ({
  title: { text: t('sequence.axis.position'), standoff: 4 }, range: [-0.5 - n * 0.01, n - 0.5 + n * 0.01],
  zeroline: false, gridcolor: '#eef0f4',
});

/** Markers for i and j, labelled; `level(position)` is the height of each (0 but in the convolution stack). */
function ends(state, level = () => 0) {
  return {
    type: 'scatter', mode: 'markers+text', x: [state.j, state.i], y: [level(state.j), level(state.i)], text: ['j', 'i'],
    textposition: 'top center', // ui-text: not UI (Plotly's text position)
    marker: { size: 11, color: HIGHLIGHT, line: { width: 1, color: TEXT_COLOUR } }, hoverinfo: 'skip', name: 'ends',
    cliponaxis: false,
  };
}

/** The RNN's chain: every position a grey dot, the |i − j| steps from the earlier to the later one drawn. */
export function rnnPathFigure(state, { height = 120 } = {}) {
  const { n } = state;
  const { low, high } = pathSummary(state);
  const all = Array.from({ length: n }, (_, p) => p);
  const chain = all.slice(low, high + 1);
  const data = [
    { type: 'scatter', mode: 'markers', x: all, y: all.map(() => 0), marker: { size: n > 128 ? 3 : 6, color: GREY },
      hovertemplate: `${t('sequence.axis.position')} %{x}<extra></extra>`, name: 'positions' },
    { type: 'scatter', mode: 'lines+markers', x: chain, y: chain.map(() => 0), name: 'path',
      line: { width: 3, color: COLOURS.rnn }, marker: { size: n > 128 ? 4 : 7, color: COLOURS.rnn },
      hovertemplate: `h%{x}<extra></extra>` },
    ends(state),
  ];
  return { data, layout: baseLayout(height, { xaxis: positionAxis(n), yaxis: { visible: false, range: [-0.6, 1] } }) };
}

/** The positions at each level 0 … L that the output at `high` depends on: [high − (k − 1)·Σ dilations above, high]. */
export function coneSpans(high, layers, kernel, dilated) {
  return Array.from({ length: layers + 1 }, (_, level) => {
    let reach = 0;
    for (let layer = level; layer < layers; layer += 1) reach += (kernel - 1) * dilationOf(layer, dilated);
    return [Math.max(0, high - reach), high];
  });
}

/** The convolution stack: level 0 the input, L the output; the span the output at the later position reads
 * (shaded) and one path through the fewest layers. */
export function convPathFigure(state, { height = null } = {}) {
  const { n, k, dilated } = state;
  const { low, high, conv: layers } = pathSummary(state);
  const spans = coneSpans(high, layers, k, dilated);
  const levels = spans.map((_, level) => level);
  const path = convPath(high, low, k, dilated);
  const data = [
    { type: 'scatter', mode: 'lines', x: [...spans.map((s) => s[0]), ...spans.map((s) => s[1]).reverse()],
      y: [...levels, ...[...levels].reverse()], fill: 'toself', fillcolor: 'rgba(112,72,232,0.12)',
      line: { width: 1, color: 'rgba(112,72,232,0.45)' }, hoverinfo: 'skip', name: 'span' },
    { type: 'scatter', mode: 'lines+markers', x: path, y: levels, name: 'path', line: { width: 3, color: COLOURS.conv },
      marker: { size: 7, color: COLOURS.conv }, hovertemplate: `${t('sequence.axis.layer')} %{y} · ${t('sequence.axis.position')} %{x}<extra></extra>` },
    ends(state, (position) => (position === high ? layers : 0)),
  ];
  const rows = Math.max(layers, 1);
  const tickStep = Math.max(1, Math.ceil(rows / 8));
  return {
    data,
    layout: baseLayout(height ?? Math.min(340, 90 + 24 * rows), {
      xaxis: positionAxis(n),
      yaxis: { title: { text: t('sequence.axis.layer'), standoff: 4 }, range: [-0.5, rows + 0.7], dtick: tickStep, zeroline: false, gridcolor: '#eef0f4' },
    }),
  };
}

/** Self-attention: one arc from the earlier position to the later one. */
export function attentionPathFigure(state, { height = 140 } = {}) {
  const { n } = state;
  const { low, high } = pathSummary(state);
  const steps = 40;
  const xs = Array.from({ length: steps + 1 }, (_, s) => low + ((high - low) * s) / steps);
  const ys = xs.map((_, s) => (high === low ? 0 : Math.sin((Math.PI * s) / steps)));
  const all = Array.from({ length: n }, (_, p) => p);
  const data = [
    { type: 'scatter', mode: 'markers', x: all, y: all.map(() => 0), marker: { size: n > 128 ? 3 : 6, color: GREY },
      hovertemplate: `${t('sequence.axis.position')} %{x}<extra></extra>`, name: 'positions' },
    { type: 'scatter', mode: 'lines', x: xs, y: ys, name: 'path', line: { width: 3, color: COLOURS.attention }, hoverinfo: 'skip' },
    ends(state),
  ];
  return { data, layout: baseLayout(height, { xaxis: positionAxis(n), yaxis: { visible: false, range: [-0.4, 1.5] } }) };
}

// ---- the measured sweep ------------------------------------------------------------------------------------

/** One row per N of a phase: {n, rnn, conv, attention}, each a result object (or undefined). */
export function sweepRows(sweep, phase) {
  const lengths = [...new Set(sweep.results.map((r) => r.n))].sort((a, b) => a - b);
  return lengths.map((n) => Object.fromEntries([
    ['n', n], ...KINDS.map((kind) => [kind, sweep.results.find((r) => r.n === n && r.kind === kind && r.phase === phase)]),
  ]));
}

const ran = (result) => Boolean(result) && typeof result.seconds === 'number';

/**
 * Where attention's measured time first passes the RNN's as N grows (bench/sequence_sweep.py's
 * measured_crossing): the two lengths around it and N by linear interpolation of log t against log N; or
 * `always` ('attention_faster', 'rnn_faster', 'mixed') when the sign never changes.
 */
export function measuredCrossing(sweep, phase) {
  const both = sweepRows(sweep, phase).filter((r) => ran(r.attention) && ran(r.rnn));
  for (let s = 0; s + 1 < both.length; s += 1) {
    const [r0, r1] = [both[s], both[s + 1]];
    if (r0.attention.seconds < r0.rnn.seconds && r1.attention.seconds >= r1.rnn.seconds) {
      const g0 = Math.log(r0.attention.seconds / r0.rnn.seconds);
      const g1 = Math.log(r1.attention.seconds / r1.rnn.seconds);
      const n = Math.exp(Math.log(r0.n) + ((Math.log(r1.n) - Math.log(r0.n)) * -g0) / (g1 - g0));
      return { between: [r0.n, r1.n], n, always: null };
    }
  }
  let always = null;
  if (both.length && both.every((r) => r.attention.seconds < r.rnn.seconds)) always = 'attention_faster';
  else if (both.length && both.every((r) => r.attention.seconds >= r.rnn.seconds)) always = 'rnn_faster';
  else if (both.length) always = 'mixed';
  return { between: null, n: null, always };
}

/** Tick labels of N: 256, 512, 1k, 2k, … */
function lengthTicks(lengths) {
  return { tickvals: lengths, ticktext: lengths.map((n) => (n >= 1024 && n % 1024 === 0 ? `${n / 1024}k` : String(n))) };
}

/** A curve's legend name: the layer and its formula ("GRU · O(N·d²)"). */
export function curveName(sweep, kind, quantity) {
  return `${t(`sequence.kind.${kind}`)} · ${sweep.formulas[kind][quantity]}`;
}

function sweepFigure(sweep, phase, quantity, { height = 320 } = {}) {
  const rows = sweepRows(sweep, phase);
  const field = quantity === 'time' ? 'seconds' : 'peak_rss_bytes';
  const data = KINDS.map((kind) => {
    const kept = rows.filter((r) => ran(r[kind]) && r[kind][field] > 0);
    const ys = kept.map((r) => r[kind][field]);
    return {
      type: 'scatter', mode: 'lines+markers', name: curveName(sweep, kind, quantity), x: kept.map((r) => r.n), y: ys,
      customdata: ys.map((y) => (quantity === 'time' ? duration(y) : binaryBytes(y))),
      line: { width: 2.5, color: COLOURS[kind] }, marker: { size: 6, color: COLOURS[kind] },
      hovertemplate: 'N = %{x}<br>%{customdata}<extra>%{fullData.name}</extra>',
    };
  });
  const lengths = rows.map((r) => r.n);
  const shapes = [];
  const crossing = quantity === 'time' ? measuredCrossing(sweep, phase) : null;
  if (crossing && crossing.n !== null) {
    shapes.push({ type: 'line', xref: 'x', yref: 'paper', x0: crossing.n, x1: crossing.n, y0: 0, y1: 1, line: { color: GREY, width: 1.5, dash: 'dot' } });
  }
  return {
    data,
    layout: baseLayout(height, {
      showlegend: true,
      margin: { t: 8, r: 12, b: 48, l: 72 },
      legend: { orientation: 'h', x: 0, y: 1.02, yanchor: 'bottom' },
      xaxis: { type: 'log', title: { text: t('sequence.axis.n'), standoff: 6 }, gridcolor: '#eef0f4', ...lengthTicks(lengths) },
      yaxis: { type: 'log', title: { text: t(quantity === 'time' ? 'sequence.axis.seconds' : 'sequence.axis.bytes'), standoff: 6 }, gridcolor: '#eef0f4', exponentformat: 'power' },
      shapes,
    }),
  };
}

/** Best time against N, log–log, one curve per layer with its formula; the measured crossing dotted. */
export const sweepTimeFigure = (sweep, phase, options) => sweepFigure(sweep, phase, 'time', options);

/** Peak memory (RSS increase) against N, log–log, one curve per layer with its formula. */
export const sweepMemoryFigure = (sweep, phase, options) => sweepFigure(sweep, phase, 'memory', options);

/** What the sweep's captions say, from its numbers: per phase the crossing and the largest N all three ran at
 * with their times; the memory at that N; and the cases skipped. */
export function sweepSummary(sweep) {
  const phases = Object.fromEntries(PHASES.map((phase) => {
    const full = sweepRows(sweep, phase).filter((r) => KINDS.every((kind) => ran(r[kind])));
    const top = full[full.length - 1] ?? null;
    return [phase, {
      crossing: measuredCrossing(sweep, phase),
      top: top && { n: top.n, ...Object.fromEntries(KINDS.map((kind) => [kind, top[kind].seconds])), bytes: Object.fromEntries(KINDS.map((kind) => [kind, top[kind].peak_rss_bytes])) },
      skipped: sweep.results.filter((r) => r.phase === phase && r.skipped).map((r) => ({ kind: r.kind, n: r.n })),
    }];
  }));
  return { formulaCrossing: sweep.d, ...phases };
}

/** Seconds and bytes in words for captions. */
export const speed = (seconds) => duration(seconds);
export const bytes = (n) => binaryBytes(n);
export const ratio = (x) => (x >= 1e5 ? scientific(Math.round(x), 1e5) : significant(x, 2));

// ---- the reach ---------------------------------------------------------------------------------------------

/** The gradient norms against the input position, log y: one curve per layer; exact zeros (the convolution
 * beyond its receptive field), which a log axis cannot show, are left out. */
export function reachFigure(answer, { height = 320 } = {}) {
  const data = KINDS.map((kind) => {
    const xs = [];
    const ys = [];
    answer[kind].forEach((g, j) => {
      if (g > 0) {
        xs.push(j);
        ys.push(g);
      }
    });
    return {
      type: 'scatter', mode: answer.length > 96 ? 'lines' : 'lines+markers', name: t(`sequence.kind.${kind}`), x: xs, y: ys,
      line: { width: 2.2, color: COLOURS[kind] }, marker: { size: 4, color: COLOURS[kind] },
      hovertemplate: `j = %{x}<br>%{y:.3g}<extra>%{fullData.name}</extra>`,
    };
  });
  return {
    data,
    layout: baseLayout(height, {
      showlegend: true,
      margin: { t: 8, r: 12, b: 48, l: 64 },
      legend: { orientation: 'h', x: 0, y: 1.02, yanchor: 'bottom' },
      xaxis: { title: { text: t('sequence.axis.input'), standoff: 6 }, range: [-0.5, answer.length - 0.5], zeroline: false, gridcolor: '#eef0f4' },
      yaxis: { type: 'log', title: { text: t('sequence.axis.gradient'), standoff: 6 }, gridcolor: '#eef0f4', exponentformat: 'power' },
    }),
  };
}

/** The convolution stack's receptive field after each layer (bars), with the sequence length N dotted. */
export function receptiveFieldFigure(answer, { height = 260 } = {}) {
  const layers = answer.receptive_field.map((_, l) => l + 1);
  return {
    data: [{
      type: 'bar', x: layers, y: answer.receptive_field, marker: { color: COLOURS.conv }, name: t('sequence.kind.conv'),
      text: answer.receptive_field.map(String), textposition: 'outside', cliponaxis: false,
      hovertemplate: `${t('sequence.axis.layer')} %{x}: %{y}<extra></extra>`,
    }],
    layout: baseLayout(height, {
      margin: { t: 20, r: 12, b: 44, l: 56 },
      xaxis: { title: { text: t('sequence.axis.layer'), standoff: 4 }, dtick: 1 },
      yaxis: { title: { text: t('sequence.axis.field'), standoff: 4 }, rangemode: 'tozero', gridcolor: '#eef0f4' },
      shapes: [{ type: 'line', xref: 'paper', x0: 0, x1: 1, y0: answer.length, y1: answer.length, line: { color: GREY, width: 1.5, dash: 'dot' } }],
    }),
  };
}

/**
 * What the reach's caption says, from the answer's numbers. The GRU's norms fall so fast that far back they
 * pass below the smallest float32 number and read 0: `far` is the farthest position whose norm is not 0, and
 * `rnnZeros` how many positions before it read 0.
 */
export function reachSummary(answer) {
  const n = answer.length;
  const { rnn, conv, attention } = answer;
  const field = answer.receptive_field[answer.receptive_field.length - 1];
  const zeros = conv.filter((g) => g === 0).length;
  const far = Math.max(0, rnn.findIndex((g) => g > 0));
  return {
    n, last: n - 1, near: n - 2, far, rnnZeros: rnn.filter((g) => g === 0).length,
    rnnNear: rnn[n - 2], rnnFar: rnn[far], rnnFades: far < n - 2 && rnn[far] < rnn[n - 2], rnnRatio: rnn[n - 2] / rnn[far],
    attentionMin: Math.min(...attention), attentionMax: Math.max(...attention),
    field: Math.min(field, n), fieldFull: field, zeros, layers: answer.layers,
  };
}
