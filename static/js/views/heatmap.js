// The large heatmap of the selected head. The only Plotly caller on the page.
const CONFIG = {
  displaylogo: false,
  showSendToCloud: false, // plotly.js 4 would offer to upload the chart to Plotly Cloud
  plotlyServerURL: '',
  responsive: true,
  modeBarButtonsToRemove: ['select2d', 'lasso2d', 'autoScale2d'],
  toImageButtonOptions: { filename: 'attnscope-head', scale: 2 },
};

/** Draw (or update in place) a figure from figures/heatmap.js into gd. */
export function renderHeatmap(gd, figure) {
  return window.Plotly.react(gd, figure.data, figure.layout, CONFIG);
}
