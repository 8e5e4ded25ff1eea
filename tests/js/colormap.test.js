// The colour scales of every attention picture (static/js/figures/colormap.js) against references written
// here, independently of the module: viridis at Plotly's stops and ColorBrewer's RdBu, each interpolated
// linearly in RGB. Ported from test_colour_scales in tests/e2e/test_head_view.py, with its tolerances.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import * as m from '../../static/js/figures/colormap.js';

// ---- the references (a port of the Python test's) ------------------------------------------------------

/** Python's round(): halves to the even neighbour (Math.round sends them up). */
function pyRound(x) {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

const rgbOf = (colour) => [1, 3, 5].map((j) => parseInt(colour.slice(j, j + 2), 16));
const clamp = (x, low, high) => Math.min(Math.max(x, low), high);

// Viridis, as Plotly lists it (positions 16k/255 and 1): an independent copy of the page's sequential scale.
const VIRIDIS = [
  '#440154', '#48186a', '#472d7b', '#424086', '#3b528b', '#33638d', '#2c728e', '#26828e', '#21918c',
  '#1fa088', '#28ae80', '#3fbc73', '#5ec962', '#84d44b', '#addc30', '#d8e219', '#fde725',
];
const STOPS = VIRIDIS.map((c, i) => [i === VIRIDIS.length - 1 ? 1.0 : (16 * i) / 255, rgbOf(c)]);

function viridis(x) {
  x = clamp(x, 0.0, 1.0);
  for (let i = 0; i + 1 < STOPS.length; i += 1) {
    const [p0, a] = STOPS[i];
    const [p1, b] = STOPS[i + 1];
    if (x <= p1) {
      const f = (x - p0) / (p1 - p0);
      return a.map((u, c) => pyRound(u + (b[c] - u) * f));
    }
  }
  return STOPS[STOPS.length - 1][1];
}

// ColorBrewer "RdBu", 11 classes, from -1 (blue) through 0 (white) to +1 (red).
const RDBU = ['#053061', '#2166ac', '#4393c3', '#92c5de', '#d1e5f0', '#f7f7f7', '#fddbc7', '#f4a582', '#d6604d', '#b2182b',
  '#67001f'];

function rdbu(v) {
  const x = ((clamp(v, -1.0, 1.0) + 1) / 2) * (RDBU.length - 1);
  const i = Math.min(Math.trunc(x), RDBU.length - 2);
  const [a, b] = RDBU.slice(i, i + 2).map(rgbOf);
  return a.map((u, c) => pyRound(u + (b[c] - u) * (x - i)));
}

// ---- helpers -------------------------------------------------------------------------------------------

const VALUES = [-1.5, -1, -0.73, -0.2, -0.01, 0, 0.004, 0.3, 0.5, 0.91, 1, 2];
const parse = (text) => text.match(/\d+/g).map(Number);
const worst = (got, want) => {
  assert.equal(got.length, want.length);
  return Math.max(...Array.from(got, (value, c) => Math.abs(value - want[c])));
};
/** pytest.approx's default: relative 1e-6, absolute 1e-12. */
const approx = (got, want) => Math.abs(got - want) <= Math.max(1e-6 * Math.abs(want), 1e-12);
const round6 = (p) => Math.round(p * 1e6) / 1e6;

// The references themselves, so that a wrong copy of a table is caught here and not blamed on the page.
test('the references: viridis and RdBu at their ends and middle', () => {
  assert.deepEqual(viridis(0), [0x44, 0x01, 0x54]);
  assert.deepEqual(viridis(1), [0xfd, 0xe7, 0x25]);
  assert.deepEqual(viridis(128 / 255), rgbOf('#21918c'));
  assert.deepEqual(rdbu(-1), [0x05, 0x30, 0x61]);
  assert.deepEqual(rdbu(0), [0xf7, 0xf7, 0xf7]);
  assert.deepEqual(rdbu(1), [0x67, 0x00, 0x1f]);
  assert.deepEqual(rdbu(0.1), [(0xf7 + 0xfd) / 2, (0xf7 + 0xdb) / 2, (0xf7 + 0xc7) / 2].map(pyRound));
  assert.equal(pyRound(2.5), 2);
  assert.equal(pyRound(3.5), 4);
});

// ---- the page's scales ---------------------------------------------------------------------------------

test('diverging(v) is RdBu: blue at -1, white at 0, red at +1, clamped outside, within 1 per channel', () => {
  for (const v of VALUES) assert.ok(worst(m.diverging(v), rdbu(v)) <= 1, `v=${v}: ${m.diverging(v)} vs ${rdbu(v)}`);
});

test('sequential(v) is viridis, clamped to [0, 1], within 1 per channel', () => {
  for (const v of VALUES) assert.ok(worst(m.sequential(v), viridis(v)) <= 1, `v=${v}: ${m.sequential(v)} vs ${viridis(v)}`);
  assert.equal(m.colormap, m.sequential);
});

test('applyGamma(v, 0.5) is the square root of v clamped to [0, 1]', () => {
  for (const v of VALUES) {
    const want = clamp(v, 0, 1) ** 0.5;
    assert.ok(approx(m.applyGamma(v, 0.5), want), `v=${v}: ${m.applyGamma(v, 0.5)} vs ${want}`);
  }
});

test("PLOTLY_SEQUENTIAL lists viridis at Plotly's stops", () => {
  const got = m.PLOTLY_SEQUENTIAL.map(([p, c]) => [round6(p), parse(c)]);
  assert.deepEqual(got, STOPS.map(([p, c]) => [round6(p), c]));
});

test('PLOTLY_DIVERGING lists RdBu at evenly spaced stops, blue first and white in the middle', () => {
  const got = m.PLOTLY_DIVERGING.map(([p, c]) => [p, parse(c)]);
  assert.deepEqual(got[0][1], rdbu(-1));
  assert.deepEqual(got[5][1], rdbu(0));
  assert.equal(got.length, RDBU.length);
  got.forEach(([p, c], i) => {
    assert.ok(Math.abs(p - i / (RDBU.length - 1)) < 1e-12, `stop ${i} at ${p}`);
    assert.deepEqual(c, rgbOf(RDBU[i]));
  });
});

test('plotlyColorscale({gamma: 0.5}) colours weight share p as viridis(p^0.5): small weights lifted', () => {
  const scale = m.plotlyColorscale({ gamma: 0.5 }).map(([p, c]) => [p, parse(c)]);
  assert.ok(scale.length > 2);
  assert.equal(scale[0][0], 0);
  assert.equal(scale[scale.length - 1][0], 1);
  for (const [p, c] of scale) assert.ok(worst(c, viridis(p ** 0.5)) <= 1, `p=${p}: ${c} vs ${viridis(p ** 0.5)}`);
  // With gamma 1 it is the plain scale, as a fresh copy (Plotly may keep and change it).
  const plain = m.plotlyColorscale();
  assert.deepEqual(plain, m.PLOTLY_SEQUENTIAL.map(([p, c]) => [p, c]));
  assert.notEqual(plain, m.PLOTLY_SEQUENTIAL);
});

test('differencePixels is symmetric around 0: -max the bluest, 0 white, +max the reddest', () => {
  const pixels = m.differencePixels([[-0.2, 0], [0.1, 0.2]]);
  assert.equal(pixels.length, 4 * 4);
  [-0.2, 0, 0.1, 0.2].forEach((v, i) => {
    const rgb = Array.from(pixels.slice(4 * i, 4 * i + 3));
    assert.ok(worst(rgb, rdbu(v / 0.2)) <= 1, `v=${v}: ${rgb} vs ${rdbu(v / 0.2)}`);
    assert.equal(pixels[4 * i + 3], 255, 'opaque');
  });
});

test('differencePixels: an all-zero map and NaN are white, and a given maxAbs sets the range', () => {
  const white = rdbu(0);
  const zeros = m.differencePixels([[0, 0], [0, 0]]); // maxAbs 0
  for (let i = 0; i < 4; i += 1) assert.ok(worst(Array.from(zeros.slice(4 * i, 4 * i + 3)), white) <= 1, `pixel ${i}`);
  const withNaN = m.differencePixels([[NaN, 1], [-1, 0]]);
  assert.ok(worst(Array.from(withNaN.slice(0, 3)), white) <= 1, 'NaN');
  const ranged = m.differencePixels([[0.1, -0.4], [0, 0]], 0.2); // 0.1 of 0.2: half-way to red; -0.4 beyond: the bluest
  assert.ok(worst(Array.from(ranged.slice(0, 3)), rdbu(0.5)) <= 1);
  assert.ok(worst(Array.from(ranged.slice(4, 7)), rdbu(-1)) <= 1);
});
