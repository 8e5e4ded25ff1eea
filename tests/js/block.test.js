// The rest of the Transformer block on /steps (static/js/figures/block.js): the walk's order for every kind
// of block, the numbers its captions say (a norm's mean and variance or mean square, the units the activation
// left near zero, the activation recomputed for every token) recomputed here by a separate loop, and a
// control where a wrong activation must make the page's check fail.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import {
  ACTIVATIONS, activationCheck, agrees, aloneCheck, BLOCK_STEPS, blockFacts, blockSpec, blockText, flowNorms, flowSteps, nearZero,
  normStats, num, walkSteps,
} from '../../static/js/figures/block.js';
import { STEPS } from '../../static/js/figures/steps.js';
import en from '../../static/js/i18n/en.js';

const close = (a, b, tol = 1e-12) => assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${a} vs ${b}`);

// ---- a small block computed in float64 from seeded weights (N = 3 tokens, D = 4, d_ff = 8) ----

function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x ^= x + Math.imul(x ^ (x >>> 7), 61 | x);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296 * 4 - 2; // in [−2, 2)
  };
}
const matrix = (next, rows, cols) => Array.from({ length: rows }, () => Array.from({ length: cols }, next));
const matmul = (X, W) => X.map((row) => W[0].map((_, j) => row.reduce((s, x, k) => s + x * W[k][j], 0)));
const add = (X, Y) => X.map((row, i) => row.map((v, j) => v + Y[i][j]));

/** LayerNorm or RMSNorm of each row, written out again here (not figures/block.js's normStats). */
function normRows(X, kind, weight, bias, eps) {
  return X.map((row) => {
    const n = row.length;
    const mean = kind === 'rms' ? 0 : row.reduce((s, v) => s + v, 0) / n;
    const second = row.reduce((s, v) => s + (v - mean) ** 2, 0) / n;
    return row.map((v, d) => ((v - mean) / Math.sqrt(second + eps)) * weight[d] + (bias ? bias[d] : 0));
  });
}

/** A trace-like StepData with a block: post-norm BERT-style (LayerNorm, GELU) or pre-norm Llama-style (RMSNorm, gated SiLU). */
function makeTrace(order, { gated = false, last = false, activation = gated ? 'silu' : 'gelu', sandwich = false } = {}) {
  const next = random(order === 'post' ? 11 : 23);
  const N = 3;
  const D = 4;
  const F = 8;
  const kind = order === 'post' ? 'layer' : 'rms';
  const eps = order === 'post' ? 1e-12 : 1e-6;
  const weights = () => ({ weight: Array.from({ length: D }, () => 1 + next() / 4), bias: kind === 'layer' ? Array.from({ length: D }, () => next() / 4) : null });
  const act = ACTIVATIONS[activation];
  const X = matrix(next, N, D);
  const attention = matrix(next, N, D); // the attention's output (steps.output): any numbers will do here
  const Win = matrix(next, D, F);
  const Wgate = matrix(next, D, F);
  const Wout = matrix(next, F, D);
  const arrays = { block_input: X };
  const params = {};
  const steps = ['block_input'];
  const record = (name, value) => { arrays[name] = value; steps.push(name); };
  const norm = (name, input) => {
    params[name] = weights();
    record(name, normRows(input, kind, params[name].weight, params[name].bias, eps));
    return arrays[name];
  };
  const mlp = (input) => {
    if (gated) {
      record('mlp_gate', matmul(input, Wgate));
      record('mlp_gate_act', arrays.mlp_gate.map((row) => row.map(act)));
      record('mlp_hidden', matmul(input, Win));
      record('mlp_act', arrays.mlp_gate_act.map((row, i) => row.map((g, j) => g * arrays.mlp_hidden[i][j])));
    } else {
      record('mlp_hidden', matmul(input, Win));
      record('mlp_act', arrays.mlp_hidden.map((row) => row.map(act)));
    }
    record('mlp_out', matmul(arrays.mlp_act, Wout));
    return arrays.mlp_out;
  };
  if (order === 'post') {
    record('add_1', add(X, attention));
    const h = norm('norm_1', arrays.add_1);
    record('add_2', add(h, mlp(h)));
    norm('norm_2', arrays.add_2);
  } else {
    norm('norm_1', X);
    const sub1 = sandwich ? norm('post_norm_1', attention) : attention;
    record('add_1', add(X, sub1));
    const m = mlp(norm('norm_2', arrays.add_1));
    const sub2 = sandwich ? norm('post_norm_2', m) : m;
    record('add_2', add(arrays.add_1, sub2));
    if (last) norm('final_norm', arrays.add_2);
  }
  const captionKey = (name) => (['norm_1', 'norm_2', 'add_1', 'add_2'].includes(name) ? `steps.block.${name}.${order}`
    : gated && ['mlp_hidden', 'mlp_act'].includes(name) ? `steps.block.${name}.gated` : `steps.block.${name}`);
  const labels = ['[CLS]', 'cat', 'sat'];
  return {
    queryLabels: labels,
    keyLabels: labels,
    dModel: D,
    layer: last ? 1 : 0,
    nLayers: 2,
    steps: { output: attention },
    block: {
      order, norm: kind, eps, activation, gated, d_ff: F, arrays, params,
      steps: steps.map((name) => ({ name, caption_key: captionKey(name), shape: [N, arrays[name][0].length] })),
      output_step: order === 'post' ? 'norm_2' : 'add_2',
    },
  };
}

// ---- the walk ----------------------------------------------------------------------------

test('the walk: post-norm goes on after the output; pre-norm starts at the stream and its norm, gated and sandwich steps in order', () => {
  assert.deepEqual(walkSteps(null), [...STEPS]);
  const post = makeTrace('post').block;
  assert.deepEqual(walkSteps(post), [...STEPS, 'add_1', 'norm_1', 'mlp_hidden', 'mlp_act', 'mlp_out', 'add_2', 'norm_2']);
  const llama = makeTrace('pre', { gated: true, last: true }).block;
  assert.deepEqual(walkSteps(llama), ['block_input', 'norm_1', ...STEPS, 'add_1', 'norm_2', 'mlp_gate', 'mlp_gate_act',
    'mlp_hidden', 'mlp_act', 'mlp_out', 'add_2', 'final_norm']);
  const gemma = makeTrace('pre', { gated: true, sandwich: true }).block;
  const walk = walkSteps(gemma);
  assert.ok(walk.indexOf('post_norm_1') === walk.indexOf('output') + 1 && walk.indexOf('post_norm_2') === walk.indexOf('add_2') - 1, walk.join());
  for (const step of walk) assert.ok(STEPS.includes(step) || BLOCK_STEPS.includes(step), step);
  assert.deepEqual(flowSteps(post), ['block_input', 'attention', 'add_1', 'norm_1', 'mlp_out', 'add_2', 'norm_2']);
  assert.deepEqual(flowSteps(llama), ['block_input', 'norm_1', 'attention', 'add_1', 'norm_2', 'mlp_out', 'add_2', 'final_norm']);
});

// ---- the numbers ----------------------------------------------------------------------------

test('normStats: LayerNorm by hand (mean 3, variance 3.5) and RMSNorm (mean square 12.5)', () => {
  const x = [1, 2, 3, 6];
  const layer = normStats(x, 'layer', 0);
  close(layer.mean, 3);
  close(layer.variance, 3.5);
  layer.normalised.forEach((v, d) => close(v, (x[d] - 3) / Math.sqrt(3.5)));
  const rms = normStats(x, 'rms', 0.5);
  close(rms.meanSquare, 12.5);
  close(rms.denominator, Math.sqrt(13));
  assert.equal(rms.mean, null);
});

test('the activations at known points, and nearZero counts |a| under 1% of the row\'s largest', () => {
  close(ACTIVATIONS.gelu(1), 0.8413447460685429, 2e-7);
  close(ACTIVATIONS.gelu(-2), -0.04550026389635842, 2e-7);
  close(ACTIVATIONS.gelu_new(1), 0.8411919906082768);
  close(ACTIVATIONS.silu(1), 0.7310585786300049);
  assert.equal(ACTIVATIONS.relu(-3), 0);
  const row = [10, -0.05, 0.0999, 0.1, -3, 0];
  assert.deepEqual(nearZero(row), { count: 3, threshold: 0.1 }); // −0.05, 0.0999 and 0; 0.1 is not under 0.1
});

test('blockFacts: each caption\'s numbers recomputed from the arrays by the loops above', () => {
  for (const T of [makeTrace('post'), makeTrace('pre', { gated: true, last: true }), makeTrace('pre', { gated: true, sandwich: true, activation: 'gelu_pytorch_tanh' })]) {
    const A = T.block.arrays;
    for (const q of [0, 2]) {
      for (const name of T.block.steps.map((s) => s.name)) {
        const f = blockFacts(T, name, q);
        close(f.after, Math.hypot(...A[name][q]));
        if (f.kind === 'norm') {
          const input = { norm_1: T.block.order === 'post' ? A.add_1 : A.block_input, norm_2: T.block.order === 'post' ? A.add_2 : A.add_1,
            post_norm_1: T.steps.output, post_norm_2: A.mlp_out, final_norm: A.add_2 }[name][q];
          const n = input.length;
          if (T.block.norm === 'layer') {
            const mean = input.reduce((s, v) => s + v, 0) / n;
            close(f.mean, mean);
            close(f.variance, input.reduce((s, v) => s + (v - mean) ** 2, 0) / n);
          } else {
            close(f.meanSquare, input.reduce((s, v) => s + v * v, 0) / n);
          }
          assert.ok(f.recomputedDiff < 1e-12, `${name}: ${f.recomputedDiff}`);
        }
        if (f.kind === 'add') assert.ok(f.recomputedDiff < 1e-12);
        if (f.kind === 'act' || f.kind === 'product') {
          const row = A[name][q];
          const top = Math.max(...row.map(Math.abs));
          assert.equal(f.nearZero, row.filter((v) => Math.abs(v) < 0.01 * top).length);
          assert.equal(f.width, 8);
          assert.ok(agrees(f.check), `${name}: ${f.check.diff}`);
        }
      }
    }
  }
});

test('the activation check is a real one: GELU\'s numbers checked as GELU (tanh) or SiLU fail it', () => {
  const T = makeTrace('post');
  assert.ok(agrees(activationCheck(T.block, 'mlp_act')));
  for (const wrong of ['gelu_new', 'silu', 'relu']) {
    const check = activationCheck({ ...T.block, activation: wrong }, 'mlp_act');
    assert.ok(!agrees(check), `${wrong}: ${check.diff}`);
  }
  // one number of the model's output changed by 10⁻³: found
  const arrays = { ...T.block.arrays, mlp_act: T.block.arrays.mlp_act.map((row) => [...row]) };
  arrays.mlp_act[1][3] += 1e-3;
  assert.ok(!agrees(activationCheck({ ...T.block, arrays }, 'mlp_act')));
});

test('the MLP-alone check passes rows run alone and finds one number changed', () => {
  const T = makeTrace('post');
  const out = T.block.arrays.mlp_out;
  assert.equal(aloneCheck(T.block), null, 'no mlp_alone in the trace: no check');
  const alone = out.map((row) => row.map((v) => v + 1e-7)); // float rounding of a batch of one
  assert.ok(agrees(aloneCheck({ ...T.block, arrays: { ...T.block.arrays, mlp_alone: alone } })));
  const changed = out.map((row) => [...row]);
  changed[2][1] += 1e-2; // row 2 as if another token had reached it
  const check = aloneCheck({ ...T.block, arrays: { ...T.block.arrays, mlp_alone: changed } });
  assert.ok(!agrees(check) && Math.abs(check.diff - 1e-2) < 1e-9);
});

// ---- the captions and the text ----------------------------------------------------------------

const captions = (spec) => spec.items.filter((item) => item.type === 'plot').map((item) => [].concat(item.caption).map((p) => (typeof p === 'string' ? p : p.data)).join(''));

test('the captions say the recomputed numbers: μ and σ², ms, the units near zero, ‖·‖ before and after', () => {
  const post = makeTrace('post');
  const q = 1;
  const x = post.block.arrays.add_1[q];
  const mean = x.reduce((s, v) => s + v, 0) / 4;
  const variance = x.reduce((s, v) => s + (v - mean) ** 2, 0) / 4;
  const norm1 = captions(blockSpec(post, 'norm_1', { query: q, width: 1200 })).join(' | ');
  assert.ok(norm1.includes(`μ = ${num(mean)}`) && norm1.includes(`σ² = ${num(variance)}`), norm1);
  assert.ok(norm1.includes(`${num(Math.hypot(...x))} → ${num(Math.hypot(...post.block.arrays.norm_1[q]))}`), norm1);

  const act = captions(blockSpec(post, 'mlp_act', { query: q, width: 390 })).join(' | ');
  const row = post.block.arrays.mlp_act[q];
  const top = Math.max(...row.map(Math.abs));
  const count = row.filter((v) => Math.abs(v) < 0.01 * top).length;
  const negative = post.block.arrays.mlp_hidden[q].filter((v) => v < 0).length;
  assert.ok(act.includes(`${count} of 8 units near zero`) && act.includes(`${negative} had a negative input`), act);
  assert.ok(act.includes('✓ recomputed here for every token'), act);

  const llama = makeTrace('pre', { gated: true, last: true });
  const y = llama.block.arrays.add_2[q];
  const final = captions(blockSpec(llama, 'final_norm', { query: q, width: 1400 })).join(' | ');
  assert.ok(final.includes(`ms = ${num(y.reduce((s, v) => s + v * v, 0) / 4)}`), final);
  assert.ok(!final.includes('β'), 'RMSNorm has no β');
  const product = captions(blockSpec(llama, 'mlp_act', { query: q, width: 1400 })).join(' | ');
  const prow = llama.block.arrays.mlp_act[q];
  const ptop = Math.max(...prow.map(Math.abs));
  assert.ok(product.includes(`${prow.filter((v) => Math.abs(v) < 0.01 * ptop).length} of 8 units near zero`), product);
  assert.ok(product.includes('SiLU(g) ⊙ u'), product);
  const flow = flowNorms(llama, q);
  assert.equal(flow.length, 8);
  close(flow.find((f) => f.step === 'attention').norm, Math.hypot(...llama.steps.output[q]));
});

test('titles are true for each kind: the norm\'s name and place, the gate, what reads the layer\'s output', () => {
  const post = makeTrace('post');
  const pre = makeTrace('pre', { gated: true, last: true });
  const gemma = makeTrace('pre', { gated: true, sandwich: true, activation: 'gelu_pytorch_tanh' });
  assert.equal(blockText(post, 'norm_1', { query: '1' }).title, 'LayerNorm after the first residual sum (post-norm)');
  assert.equal(blockText(pre, 'norm_1', { query: '1' }).title, 'RMSNorm before the attention (pre-norm)');
  assert.equal(blockText(pre, 'mlp_act', {}).title, 'Gated: SiLU(g) ⊙ u');
  assert.equal(blockText(post, 'mlp_act', {}).title, 'Activation: GELU(h)');
  assert.equal(blockText(gemma, 'mlp_gate_act', {}).title, 'GELU (tanh) of the gate');
  assert.equal(blockText(gemma, 'add_1', {}).title, 'Residual sum: x + norm(attention(norm(x)))');
  assert.equal(blockText(pre, 'add_1', {}).title, 'Residual sum: x + attention(norm(x))');
  assert.equal(blockText(post, 'add_2', {}).title, 'Residual sum: x + MLP(x)');
  assert.ok(blockText(post, 'norm_1', {}).body.includes('ε = 1e−12'));
  assert.ok(blockText(post, 'norm_2', {}).body.endsWith(en['steps.block.output.next'].replace('{layer}', '0').replace('{next}', '1')));
  assert.ok(blockText(pre, 'add_2', {}).body.endsWith(en['steps.block.output.lastPre']));
  assert.ok(!blockText(pre, 'norm_2', {}).body.includes(en['steps.block.output.lastPre']));
  // every caption key the server names has a title and a body, every step a label
  for (const T of [post, pre, gemma]) {
    for (const { name, caption_key: key } of T.block.steps) {
      assert.ok(key in en && `${key}.body` in en, key);
      assert.ok(`steps.block.label.${name}` in en, name);
    }
  }
});
