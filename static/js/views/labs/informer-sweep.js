// The Informer lab's measured sweep (/informer): bench/informer.py's file (static/data/informer-sweep.json; nothing
// is measured on a page load) drawn as one forward's time and peak memory against L for both attentions, log–log,
// and the crossover stated from the file's own times.
import { getInformerSweep } from '../../api.js';
import { crossoverWords, seedsWords, sweepMemoryFigure, sweepTimeFigure } from '../../figures/informer.js';
import { t, tNodes } from '../../i18n/index.js';
import { renderFigure } from '../plot.js';

export async function drawSweep(els, locale) {
  let sweep;
  try {
    sweep = await getInformerSweep();
  } catch {
    els.hint.replaceChildren(...tNodes('informer.sweep.missing', { script: 'python -m bench.informer' }, ['script'])); // ui-text: not UI (a command)
    els.section.dataset.drawn = 'missing';
    els.time.hidden = true;
    els.memory.hidden = true;
    return;
  }
  els.hint.replaceChildren(...tNodes('informer.sweep.hint', {
    machine: sweep.machine, date: sweep.measured ?? '', heads: sweep.heads, d: sweep.d_model, c: sweep.factor,
    script: 'bench/informer.py', // ui-text: not UI (a path)
  }, ['machine', 'date', 'script']));
  await renderFigure(els.time, sweepTimeFigure(sweep), { filename: 'attnscope-informer-forward-time' });
  await renderFigure(els.memory, sweepMemoryFigure(sweep), { filename: 'attnscope-informer-forward-memory' });
  const [key, values] = crossoverWords(sweep, locale);
  els.crossover.textContent = t(key, values);
  const seeds = seedsWords(sweep, locale);
  els.seeds.textContent = seeds ? t(...seeds) : '';
  els.section.dataset.drawn = 'true';
}
