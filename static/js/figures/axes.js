// What the figures share: the font, the room a tick label needs, which ticks to label and
// how a label is cut to fit. Pure: no DOM, no fetch.
import { escapeForPlotly } from './escape.js';

// The system's own UI fonts, so Chinese text uses the system's CJK font (nothing is downloaded).
export const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei", sans-serif'; // ui-text: not UI (font families)
export const TEXT_COLOUR = '#1b2330';
export const HIGHLIGHT = '#f08c00'; // the chosen query or head: the orange of the explorer's selected head
export const MARKED = '#e64980'; // rows marked apart from the chosen one (ProbSparse's active queries): pink on viridis
export const LABEL_PX = 12; // vertical room one tick label needs
export const MAX_LABEL_CHARS = 14;

/** Which indices get a tick label: all of them, or every k-th when they would overlap. */
export function tickIndices(n, maxTicks) {
  const step = Math.max(1, Math.ceil(n / Math.max(1, maxTicks)));
  const indices = [];
  for (let i = 0; i < n; i += step) indices.push(i);
  return indices;
}

/** Thinned-out ticks plus the `keep` ones, dropping the ticks too close to those. */
export function keepTicks(ticks, keep, step) {
  if (!keep.length || step <= 1) return ticks;
  const kept = ticks.filter((t) => keep.every((k) => Math.abs(t - k) >= step));
  return [...new Set([...kept, ...keep])].sort((a, b) => a - b);
}

/** Width of a label in "Latin characters": CJK and other wide characters count twice. */
export function labelWidth(text) {
  let width = 0;
  for (const char of String(text)) width += /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/u.test(char) || char.codePointAt(0) > 0xffff ? 2 : 1;
  return width;
}

/** A label cut to a length that fits a tick, escaped for Plotly. */
export function tickLabel(text, max = MAX_LABEL_CHARS) {
  const chars = Array.from(String(text));
  return escapeForPlotly(chars.length > max ? chars.slice(0, max - 1).join('') + '…' : chars.join(''));
}

/** Left margin (px) that fits the longest row label. */
export function labelMargin(labels) {
  const longest = labels.reduce((n, label) => Math.max(n, Math.min(labelWidth(label), MAX_LABEL_CHARS)), 0);
  return Math.round(14 + 7.2 * longest);
}

/**
 * How a token is labelled in figures: its readable `display` form (the API's; older answers have
 * only `text`), marked ⟨UNK⟩ when the model does not know it — it then stands for the characters shown.
 * Raw text: escape it (tickLabel does) before it reaches Plotly.
 * @param {{text: string, display?: string, unknown?: boolean}} token
 */
export function tokenLabel(token) {
  const shown = insertedSpace(token) ? '␣' : visibleToken(token.display ?? token.text);
  return token.unknown ? `${shown}⟨UNK⟩` : shown;
}

/**
 * A token that is nothing but the space a tokenizer put before a text that has none: its display is empty
 * (the text has no such character) and its string is the space sign alone (Llama's "▁" before a first
 * character spelt in bytes, GPT-2's "Ġ" with add_prefix_space). Shown as "␣", not as more bytes ("⋯").
 */
export function insertedSpace(token) {
  return !token.special && token.display === '' && (token.text === '\u2581' || token.text === '\u0120');
}

const WHITESPACE_SIGNS = { ' ': '␣', '\n': '↵', '\r': '↵', '\t': '⇥' };

/**
 * A token's display as something one can see: an empty display (a byte-level token holding only the
 * later bytes of a character the token before shows) as "⋯", a display of whitespace alone as signs,
 * and any other control character as its Unicode picture (␀ … ␟, ␡): a byte-level vocabulary has a token
 * for each control byte (GPT-2's "\u0001"), which would otherwise show as nothing.
 */
export function visibleToken(display) {
  if (display === '') return '⋯';
  if (/^\s+$/u.test(display)) return Array.from(display, (char) => WHITESPACE_SIGNS[char] ?? '␣').join('');
  return display.replace(/[\u0000-\u001f\u007f]/g, (c) => String.fromCharCode(c === '\u007f' ? 0x2421 : 0x2400 + c.charCodeAt(0)));
}

/**
 * The two axes of a square map with row i against column i (attention: queries down, keys across),
 * the first row at the top and one cell as wide as it is tall.
 * @param {{tickvals: number[], ticktext: string[], x: string, y: string, fontSize?: number,
 *   tickangle?: number, standoff?: number}} input ticktext: labels already escaped for Plotly;
 *   x, y: the axis titles
 */
export function squareAxes({ tickvals, ticktext, x, y, fontSize, tickangle = -50, standoff = 6 }) {
  const axis = {
    tickmode: 'array',
    tickvals,
    ticktext,
    ...(fontSize ? { tickfont: { size: fontSize } } : {}),
    showgrid: false,
    zeroline: false,
    showline: false,
    ticks: '',
    automargin: true,
    constrain: 'domain',
  };
  return {
    xaxis: { ...axis, title: { text: x, standoff }, tickangle, side: 'bottom' },
    yaxis: { ...axis, title: { text: y, standoff }, autorange: 'reversed', scaleanchor: 'x', scaleratio: 1 },
  };
}

/**
 * The ticks of a colour bar from zmin to zmax: a round step (1, 2 or 5 × 10^k) that gives at most eight
 * ticks, each written with as many decimals as the step needs, so that no two ticks read the same (a
 * fixed two decimals wrote 0.01 three times on a difference map of ±0.03).
 * @returns {{tickvals: number[], ticktext: string[]}}
 */
export function colorbarTicks(zmin, zmax) {
  const span = zmax - zmin;
  if (!(span > 0) || !Number.isFinite(span)) return { tickvals: [zmin], ticktext: [String(zmin)] };
  const power = 10 ** Math.floor(Math.log10(span / 4));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => span / s <= 7);
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const tickvals = [];
  for (let i = Math.ceil(zmin / step - 1e-9); i <= Math.floor(zmax / step + 1e-9); i += 1) tickvals.push(i * step);
  // (i · step) carries float noise (3 × 0.1 = 0.30000000000000004): toFixed writes the intended number; -0 is 0
  const ticktext = tickvals.map((v) => (Math.abs(v) < step / 2 ? 0 : v).toFixed(decimals));
  return { tickvals, ticktext };
}

/** A slim colour bar beside a map whose colours run from zmin to zmax, its ticks from colorbarTicks. */
export function mapColorbar(zmin, zmax) {
  return {
    thickness: 10, len: 0.9, xpad: 6, outlinewidth: 0, tickfont: { size: 11 }, tickmode: 'array',
    ...colorbarTicks(zmin, zmax),
  };
}
