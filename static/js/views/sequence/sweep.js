// The measured sweep on /sequence: bench/sequence_sweep.py's file drawn (forward time, training-step time
// and peak memory against N, log–log, each curve named with its formula) with captions built from its numbers
// by figures/sequence.js's sweepSummary.
import { lang, tNodes } from '../../i18n/index.js';
import { bytes, speed, sweepMemoryFigure, sweepSummary, sweepTimeFigure } from '../../figures/sequence.js';
import { exact, significant } from '../../figures/cost.js';
import { renderFigure } from '../plot.js';

/** The captions' keys and values, from the file's numbers (a node test recomputes them). */
export function sweepWords(sweep, locale = 'en') {
  const s = sweepSummary(sweep);
  const n = (x) => exact(x, locale);
  const phase = (name) => {
    const { crossing, top } = s[name];
    const parts = [];
    if (crossing.n !== null) {
      // "far beyond N = d" only when it is: at least 4 d
      const far = crossing.n >= 4 * s.formulaCrossing;
      parts.push([`sequence.sweep.${far ? 'cross' : 'crossNear'}.${name}`, { n0: n(crossing.between[0]), n1: n(crossing.between[1]), n: n(Math.round(crossing.n)), d: s.formulaCrossing }]);
    } else if (crossing.always === 'attention_faster') {
      parts.push([`sequence.sweep.attentionFaster.${name}`, {}]);
    } else if (crossing.always === 'rnn_faster') {
      parts.push([`sequence.sweep.rnnFaster.${name}`, { d: s.formulaCrossing }]);
    }
    if (top) {
      parts.push(['sequence.sweep.top', {
        n: n(top.n), rnn: speed(top.rnn), conv: speed(top.conv), attention: speed(top.attention),
        ratio: significant(top.attention / top.rnn, 2),
      }]);
    }
    return parts;
  };
  const top = s.forward.top;
  const memory = top ? [['sequence.sweep.memoryCaption', {
    n: n(top.n), rnn: bytes(Math.max(top.bytes.rnn, 0)), conv: bytes(Math.max(top.bytes.conv, 0)), attention: bytes(Math.max(top.bytes.attention, 0)),
  }]] : [];
  const notes = [];
  const skipped = sweep.results.filter((r) => r.skipped);
  if (skipped.length) {
    notes.push(['sequence.sweep.skipped', {
      cases: skipped.map((r) => `${r.kind} ${r.phase} N = ${r.n}`).join(', '), bound: `${sweep.max_bytes / 1e9} GB`,
    }, ['cases']]);
  }
  if (sweep.results.some((r) => typeof r.seconds === 'number' && r.peak_rss_bytes <= 0)) notes.push(['sequence.sweep.zero', {}]);
  return { forward: phase('forward'), train: phase('train'), memory, notes };
}

function fill(el, parts) {
  el.replaceChildren();
  parts.forEach(([key, values, data = []], index) => {
    if (index && lang !== 'zh') el.append(' '); // Chinese sentences follow one another without a space
    el.append(...tNodes(key, values, data));
  });
}

export async function drawSweep(els, sweep, locale) {
  const m = sweep.machine;
  els.hint.replaceChildren(...tNodes('sequence.sweep.hint', {
    d: sweep.d, k: sweep.kernel, low: sweep.conv_layers[String(sweep.lengths[0])],
    high: sweep.conv_layers[String(sweep.lengths[sweep.lengths.length - 1])], script: 'bench/sequence_sweep.py',
  }, ['script']));
  els.machine.replaceChildren(...tNodes('sequence.sweep.machine', {
    date: m.date, cpu: m.cpu, cpus: m.cpu_count, torch: m.torch, threads: m.torch_threads,
  }, ['date', 'cpu', 'torch']));
  if (m.note) els.machine.append(...(lang === 'zh' ? [] : [' ']), ...tNodes('sequence.sweep.underLoad', { load: m.load_average_start[0].toFixed(2) }));
  const words = sweepWords(sweep, locale);
  fill(els.forwardCaption, words.forward);
  fill(els.trainCaption, words.train);
  fill(els.memoryCaption, words.memory);
  fill(els.notes, words.notes);
  await renderFigure(els.forward, sweepTimeFigure(sweep, 'forward'), { filename: 'attnscope-sequence-forward' });
  await renderFigure(els.train, sweepTimeFigure(sweep, 'train'), { filename: 'attnscope-sequence-train' });
  await renderFigure(els.memory, sweepMemoryFigure(sweep, 'forward'), { filename: 'attnscope-sequence-memory' });
  els.section.dataset.drawn = 'true';
}
