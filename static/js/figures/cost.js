// Numbers of the cost page in readable form (exact digits, powers of ten, decimal and binary byte
// units) and the figure of memory against sequence length. Pure: no DOM, no fetch; the numbers
// themselves come from GET /api/v1/cost (model/lab/cost.py holds the formulas).
import { t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, TEXT_COLOUR } from './axes.js';

const DECIMAL_UNITS = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB']; // ui-text: not UI (SI byte units)
const BINARY_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB']; // ui-text: not UI (IEC byte units)
const SI_PREFIXES = ['', 'k', 'M', 'G', 'T', 'P', 'E'];
const SUPERSCRIPT = { '-': '⁻', 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹' };

export const STANDARD_COLOUR = '#c92a2a';
export const FLASH_COLOUR = '#2457c5';
export const KV_COLOUR = '#2b8a3e';

/** Exact digits with the locale's grouping: 1280000000000 -> "1,280,000,000,000". */
export function exact(n, locale = 'en') {
  return new Intl.NumberFormat(locale, { maximumFractionDigits: 0 }).format(n);
}

/** At most `digits` significant digits, trailing zeros dropped: 1.1641532 -> "1.16". */
export function significant(x, digits = 3) {
  if (x === 0) return '0';
  return String(Number(x.toPrecision(digits)));
}

/** n as m × 10^k with three significant digits ("1.28 × 10¹²"); below `from` just the digits. */
export function scientific(n, from = 10000) {
  if (Math.abs(n) < Math.max(from, 10)) return String(n);
  let k = Math.floor(Math.log10(Math.abs(n)));
  let m = Number((n / 10 ** k).toPrecision(3));
  if (Math.abs(m) >= 10) { // 9.995e12 rounds to 10.0
    m /= 10;
    k += 1;
  }
  const power = String(k).split('').map((c) => SUPERSCRIPT[c]).join('');
  return `${significant(m)} × 10${power}`;
}

/** The largest unit of `base`^i (i < units.length) that leaves at least 1, and the value in it. */
function scaled(n, base, units) {
  let i = 0;
  while (i < units.length - 1 && n >= base ** (i + 1)) i += 1;
  return { value: n / base ** i, unit: units[i] };
}

/** Bytes in decimal units (1 kB = 1000 B, 1 TB = 10¹² B): "1.28 TB". */
export function decimalBytes(n) {
  const { value, unit } = scaled(n, 1000, DECIMAL_UNITS);
  return `${significant(value)} ${unit}`;
}

/** Bytes in binary units (1 KiB = 1024 B, 1 GiB = 2³⁰ B, 1 TiB = 2⁴⁰ B): "1.16 TiB". */
export function binaryBytes(n) {
  const { value, unit } = scaled(n, 1024, BINARY_UNITS);
  return `${significant(value)} ${unit}`;
}

/** Bytes in the binary unit 1024^power with `decimals` decimals, no grouping: (1.28e12, 3) -> "1192.09 GiB". */
export function inBinaryUnit(n, power, decimals = 2) {
  return `${(n / 1024 ** power).toFixed(decimals)} ${BINARY_UNITS[power]}`;
}

/** A count with an SI prefix: 41798860800000 -> "41.8 T"; below 1000 the digits. */
export function siCount(n) {
  const { value, unit } = scaled(n, 1000, SI_PREFIXES);
  return unit ? `${significant(value)} ${unit}` : String(n);
}

/** The powers of 1000 from below `low` to above `high`, as tick positions labelled in decimal units. */
export function byteTicks(low, high) {
  const values = [];
  const text = [];
  for (let i = 0; i < DECIMAL_UNITS.length + 2; i += 1) {
    const v = 1000 ** i;
    if (v * 1000 < low) continue;
    if (v > high * 1000) break;
    values.push(v);
    text.push(i < DECIMAL_UNITS.length ? `1 ${DECIMAL_UNITS[i]}` : `10${String(3 * i).split('').map((c) => SUPERSCRIPT[c]).join('')} B`);
  }
  return { values, text };
}

/**
 * One layer's memory against S on log–log axes: the standard attention matrix (B·H·S²·b),
 * FlashAttention's working set ((B·H·S·D + 2·B·H·S)·b) and the KV cache (2·B·S·G·D·b), as GET
 * /api/v1/cost's `curve` gives them, with the current S marked on each.
 * @param {{seq_len: number[], attention_matrix_bytes: number[], flash_attention_bytes: number[],
 *   kv_cache_bytes: number[]}} curve
 * @param {number} seqLen the current S (one of curve.seq_len)
 */
export function memoryFigure(curve, seqLen, { height = 380 } = {}) {
  const hover = (ys) => ys.map((y) => `${exact(y)} B · ${decimalBytes(y)} · ${binaryBytes(y)}`);
  const at = curve.seq_len.indexOf(seqLen);
  const all = [...curve.attention_matrix_bytes, ...curve.flash_attention_bytes, ...curve.kv_cache_bytes];
  const ticks = byteTicks(Math.min(...all), Math.max(...all));
  const line = (name, ys, colour, dash) => ({
    type: 'scatter',
    mode: 'lines+markers',
    name,
    x: curve.seq_len,
    y: ys,
    customdata: hover(ys),
    line: { width: 2.5, color: colour, dash },
    marker: { size: 5, color: colour },
    hovertemplate: `S = %{x}<br>%{customdata}<extra>%{fullData.name}</extra>`,
  });
  const data = [
    line(t('cost.plot.standard'), curve.attention_matrix_bytes, STANDARD_COLOUR, 'solid'),
    line(t('cost.plot.flash'), curve.flash_attention_bytes, FLASH_COLOUR, 'solid'),
    line(t('cost.plot.kv'), curve.kv_cache_bytes, KV_COLOUR, 'dash'),
  ];
  if (at >= 0) {
    const ys = [curve.attention_matrix_bytes[at], curve.flash_attention_bytes[at], curve.kv_cache_bytes[at]];
    data.push({
      type: 'scatter',
      mode: 'markers',
      name: t('cost.plot.current', { seqLen: exact(seqLen) }),
      x: [seqLen, seqLen, seqLen],
      y: ys,
      customdata: hover(ys),
      marker: { size: 13, color: HIGHLIGHT, symbol: 'circle-open', line: { width: 3, color: HIGHLIGHT } },
      hovertemplate: `S = %{x}<br>%{customdata}<extra>%{fullData.name}</extra>`,
    });
  }
  return {
    data,
    layout: {
      font: { family: FONT, size: 12, color: TEXT_COLOUR },
      paper_bgcolor: '#ffffff',
      plot_bgcolor: '#ffffff',
      hoverlabel: { font: { family: FONT, size: 12 } },
      height,
      margin: { t: 8, r: 12, b: 48, l: 72 },
      legend: { orientation: 'h', x: 0, y: 1.02, yanchor: 'bottom' },
      shapes: at >= 0 ? [{
        type: 'line', xref: 'x', yref: 'paper', x0: seqLen, x1: seqLen, y0: 0, y1: 1,
        line: { color: HIGHLIGHT, width: 1.5, dash: 'dot' },
      }] : [],
      xaxis: { type: 'log', dtick: 1, title: { text: t('cost.plot.x'), standoff: 6 }, exponentformat: 'power', gridcolor: '#eef0f4' },
      yaxis: {
        type: 'log', title: { text: t('cost.plot.y'), standoff: 6 }, gridcolor: '#eef0f4',
        tickvals: ticks.values, ticktext: ticks.text,
      },
    },
  };
}

// ---- the measured sweep (bench/flash_sweep.py's file) -------------------------------------------

export const SWEEP_METHODS = ['naive', 'tiled', 'sdpa'];
const SWEEP_COLOURS = { naive: STANDARD_COLOUR, tiled: '#7048e8', sdpa: FLASH_COLOUR };

/** The file's results as one row per N: {n, naive, tiled, sdpa}, each a result object (or undefined). */
export function sweepRows(sweep) {
  const lengths = [...new Set(sweep.results.map((r) => r.n))].sort((a, b) => a - b);
  return lengths.map((n) => Object.fromEntries([
    ['n', n], ...SWEEP_METHODS.map((m) => [m, sweep.results.find((r) => r.n === n && r.method === m)]),
  ]));
}

/** Seconds in a readable unit: 0.000233 -> "233 µs", 0.0145 -> "14.5 ms", 1.63 -> "1.63 s". */
export function duration(seconds) {
  if (seconds < 1e-3) return `${significant(seconds * 1e6)} µs`;
  if (seconds < 1) return `${significant(seconds * 1e3)} ms`;
  return `${significant(seconds)} s`;
}

/** Tick labels of N: 256, 512, 1k, 2k, … (k = 1024: the lengths are powers of 2). */
function lengthTicks(lengths) {
  return { tickvals: lengths, ticktext: lengths.map((n) => (n >= 1024 && n % 1024 === 0 ? `${n / 1024}k` : String(n))) };
}

function sweepLayout(yTitle, height, lengths, extra = {}) {
  return {
    font: { family: FONT, size: 12, color: TEXT_COLOUR },
    paper_bgcolor: '#ffffff',
    plot_bgcolor: '#ffffff',
    hoverlabel: { font: { family: FONT, size: 12 } },
    height,
    margin: { t: 8, r: 12, b: 48, l: 72 },
    legend: { orientation: 'h', x: 0, y: 1.02, yanchor: 'bottom' },
    xaxis: { type: 'log', title: { text: t('cost.sweep.x'), standoff: 6 }, gridcolor: '#eef0f4', ...lengthTicks(lengths) },
    yaxis: { type: 'log', title: { text: yTitle, standoff: 6 }, gridcolor: '#eef0f4', ...extra },
  };
}

/**
 * The measured peak memory against N on log–log axes: one line per method (a refused case or a peak of
 * 0 bytes, which a log axis cannot show, has no point), and the N × N float32 matrix 4·N² dotted.
 */
export function sweepMemoryFigure(sweep, { height = 340 } = {}) {
  const rows = sweepRows(sweep);
  const lines = SWEEP_METHODS.map((m) => {
    const kept = rows.filter((r) => r[m] && !r[m].refused && r[m].peak_rss_bytes > 0);
    const ys = kept.map((r) => r[m].peak_rss_bytes);
    return {
      type: 'scatter', mode: 'lines+markers', name: t(`cost.sweep.${m}`), x: kept.map((r) => r.n), y: ys,
      customdata: ys.map((y) => `${exact(y)} B · ${binaryBytes(y)}`),
      line: { width: 2.5, color: SWEEP_COLOURS[m] }, marker: { size: 6, color: SWEEP_COLOURS[m] },
      hovertemplate: 'N = %{x}<br>%{customdata}<extra>%{fullData.name}</extra>',
    };
  });
  const matrix = rows.map((r) => 4 * r.n * r.n);
  lines.push({
    type: 'scatter', mode: 'lines', name: t('cost.sweep.matrixLine'), x: rows.map((r) => r.n), y: matrix,
    customdata: matrix.map((y) => `${exact(y)} B · ${binaryBytes(y)}`),
    line: { width: 1.5, color: '#868e96', dash: 'dot' },
    hovertemplate: 'N = %{x}<br>%{customdata}<extra>%{fullData.name}</extra>',
  });
  const all = lines.flatMap((l) => l.y);
  const ticks = byteTicks(Math.min(...all), Math.max(...all));
  const lengths = rows.map((r) => r.n);
  return { data: lines, layout: sweepLayout(t('cost.sweep.memory.y'), height, lengths, { tickvals: ticks.values, ticktext: ticks.text }) };
}

/** The measured best time against N on log–log axes, one line per method (refused cases have no point). */
export function sweepTimeFigure(sweep, { height = 340 } = {}) {
  const rows = sweepRows(sweep);
  const data = SWEEP_METHODS.map((m) => {
    const kept = rows.filter((r) => r[m] && !r[m].refused);
    const ys = kept.map((r) => r[m].seconds);
    return {
      type: 'scatter', mode: 'lines+markers', name: t(`cost.sweep.${m}`), x: kept.map((r) => r.n), y: ys,
      customdata: ys.map(duration),
      line: { width: 2.5, color: SWEEP_COLOURS[m] }, marker: { size: 6, color: SWEEP_COLOURS[m] },
      hovertemplate: 'N = %{x}<br>%{customdata}<extra>%{fullData.name}</extra>',
    };
  });
  return { data, layout: sweepLayout(t('cost.sweep.time.y'), height, rows.map((r) => r.n), { exponentformat: 'power' }) };
}
