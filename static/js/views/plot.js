// Plotly calls shared by the views: one config (nothing is ever sent to Plotly's
// cloud), drawing a figure from figures/, and releasing a plot before its element goes.
import { lang, t } from '../i18n/index.js';

const BASE_CONFIG = Object.freeze({
  displaylogo: false,
  showSendToCloud: false, // plotly.js 4 would offer to upload the chart to Plotly Cloud
  plotlyServerURL: '',
  responsive: true,
  modeBarButtonsToRemove: ['select2d', 'lasso2d', 'autoScale2d'],
});

/**
 * A file name for a downloaded figure that says what it shows: "attnscope-layer2-head5-the-cat-sat".
 * Parts are joined with "-"; text keeps letters and digits of any script (so Chinese text stays
 * readable) and is cut to its first words.
 * @param {...(string|number|null|undefined)} parts
 */
export function downloadName(...parts) {
  const words = parts
    .filter((part) => part !== null && part !== undefined && String(part).trim() !== '')
    .map((part) => String(part).toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-+|-+$/g, ''))
    .filter(Boolean)
    .join('-');
  return ['attnscope', Array.from(words).slice(0, 80).join('').replace(/-+$/, '')].filter(Boolean).join('-');
}

// Plotly's own words (its modebar's tooltips and notices) in the page's language: Plotly looks
// them up by their English text, which is the key of its dictionary.
const PLOTLY_WORDS = {
  'Download plot as a PNG': 'plotly.download', // ui-text: not UI (Plotly's key)
  'Download plot': 'plotly.download', // ui-text: not UI (Plotly's key)
  Zoom: 'plotly.zoom',
  Pan: 'plotly.pan',
  'Zoom in': 'plotly.zoomIn', // ui-text: not UI (Plotly's key)
  'Zoom out': 'plotly.zoomOut', // ui-text: not UI (Plotly's key)
  'Reset axes': 'plotly.reset', // ui-text: not UI (Plotly's key)
  Autoscale: 'plotly.autoscale',
  'Double-click to zoom back out': 'plotly.zoomBack', // ui-text: not UI (Plotly's key)
  'Taking snapshot - this may take a few seconds': 'plotly.snapshot', // ui-text: not UI (Plotly's key)
  'Snapshot succeeded': 'plotly.snapshotDone', // ui-text: not UI (Plotly's key)
  'Sorry, there was a problem downloading your image!': 'plotly.snapshotFailed', // ui-text: not UI (Plotly's key)
};
const LOCALE = `attnscope-${lang}`;
const LOCALES = {
  [LOCALE]: { dictionary: Object.fromEntries(Object.entries(PLOTLY_WORDS).map(([words, key]) => [words, t(key)])) },
};

/** The config for Plotly.react; `filename` names a downloaded PNG, `modeBar` false hides the bar. */
export function plotConfig({ filename = 'attnscope', modeBar = true } = {}) {
  return {
    ...BASE_CONFIG,
    locale: LOCALE,
    locales: LOCALES,
    displayModeBar: modeBar ? 'hover' : false,
    toImageButtonOptions: { filename, scale: 2 },
  };
}

/** Draw (or update in place) a {data, layout} figure into gd. */
export function renderFigure(gd, figure, options) {
  return window.Plotly.react(gd, figure.data, figure.layout, plotConfig(options));
}

/** Free a plot's listeners before its element is removed. */
export function releaseFigure(gd) {
  if (gd && gd.classList && gd.classList.contains('js-plotly-plot')) window.Plotly.purge(gd);
}
