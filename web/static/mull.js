// mull's panel: charts drawn from data-chart attributes with uPlot, and
// nothing else the pages need to be read (each chart's numbers are also in
// a table beside it, so reading works with JavaScript off).
//
// data-chart holds {"x": [unix seconds…], "series": [{"label", "values":
// […], "unit"?}], "unit"?: "tokens" | "usd" | "share", "stacked"?: bool}.
(function () {
  "use strict";
  var palette = ["#0b63c5", "#c0262d", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7d86", "#5f6b76"];

  function fmt(unit) {
    return function (u, v) {
      if (v == null) return "";
      if (unit === "usd") return "$" + (Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(4));
      if (unit === "share") return (v * 100).toFixed(1) + "%";
      return v >= 1e6 ? (v / 1e6).toFixed(1) + "M" : v >= 1e3 ? (v / 1e3).toFixed(1) + "k" : String(v);
    };
  }

  function draw(el) {
    if (el.dataset.drawn || typeof uPlot === "undefined") return;
    var spec;
    try { spec = JSON.parse(el.dataset.chart); } catch (e) { return; }
    if (!spec.x || spec.x.length === 0) return;
    el.dataset.drawn = "1";
    var series = [{}];
    var data = [spec.x];
    spec.series.forEach(function (s, i) {
      var color = s.color || palette[i % palette.length];
      series.push({ label: s.label, stroke: color, fill: spec.stacked ? color + "33" : undefined, width: 2,
        value: fmt(s.unit || spec.unit) });
      data.push(s.values);
    });
    var width = Math.max(320, el.clientWidth || 600);
    var opts = {
      width: width, height: spec.height || 220, series: series,
      axes: [{}, { values: function (u, vals) { return vals.map(function (v) { return fmt(spec.unit)(u, v); }); }, size: 70 }],
      scales: { x: { time: true } },
    };
    new uPlot(opts, data, el);
  }

  function drawAll(root) {
    (root || document).querySelectorAll("[data-chart]").forEach(draw);
  }

  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
  document.addEventListener("htmx:afterSwap", function (e) { drawAll(e.target); });
})();

// A form with data-confirm asks before it is sent (with JavaScript off it
// is sent at once: the destructive actions also show a dry run first).
document.addEventListener("submit", function (e) {
  var msg = e.target && e.target.dataset && e.target.dataset.confirm;
  if (msg && !window.confirm(msg)) e.preventDefault();
}, true);
