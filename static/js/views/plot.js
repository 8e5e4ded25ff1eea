// Plotly calls shared by the views: one config (nothing is ever sent to Plotly's
// cloud), drawing a figure from figures/, and releasing a plot before its element goes.
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

/** The config for Plotly.react; `filename` names a downloaded PNG, `modeBar` false hides the bar. */
export function plotConfig({ filename = 'attnscope', modeBar = true } = {}) {
  return {
    ...BASE_CONFIG,
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
