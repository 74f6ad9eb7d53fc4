/* TaskForge console dashboard charts (uPlot). No inline script: the dashboard marks a container
 * [data-charts] with data-src, the URL of the per-minute series (JSON, see pages/dashboard.py:
 * {"minutes": [unix seconds...], "queues": {"<queue>": {"succeeded": [...], "failed": [...],
 * "wait_p50": [...], "wait_p95": [...]}}}, one value per minute, null where nothing finished).
 * A queue selector [data-chart-queue] picks one queue or all of them. The charts reload on every
 * live-refresh tick (the "tf:tick" event of pages.js), so they pause with the rest of the page.
 */
(function () {
  "use strict";

  var PALETTE = ["#2454c5", "#b3261e", "#2e7d32", "#9a5b00", "#6a1b9a", "#00838f", "#5d4037", "#c2185b",
                 "#455a64", "#827717"];
  var state = { data: null, queue: "", charts: [] };

  function sum(arrays, length) {
    var out = [];
    for (var i = 0; i < length; i++) {
      var total = 0;
      arrays.forEach(function (a) { total += a[i] || 0; });
      out.push(total);
    }
    return out;
  }

  function throughputSpec(data, queue) {
    var names = queue ? [queue] : Object.keys(data.queues);
    var n = data.minutes.length;
    var succeeded = sum(names.map(function (q) { return data.queues[q].succeeded; }), n);
    var failed = sum(names.map(function (q) { return data.queues[q].failed; }), n);
    return {
      title: "Attempts finished per minute" + (queue ? " (" + queue + ")" : " (all queues)"),
      series: [{ label: "succeeded", stroke: "#2e7d32", width: 2 }, { label: "failed", stroke: "#b3261e", width: 2 }],
      data: [data.minutes, succeeded, failed],
      unit: ""
    };
  }

  function latencySpec(data, queue) {
    if (queue) {
      var q = data.queues[queue];
      return {
        title: "Queue wait of first attempts, seconds (" + queue + ")",
        series: [{ label: "p50", stroke: "#2454c5", width: 2 }, { label: "p95", stroke: "#9a5b00", width: 2 }],
        data: [data.minutes, q.wait_p50, q.wait_p95],
        unit: "s"
      };
    }
    var names = Object.keys(data.queues);
    return {
      title: "Queue wait of first attempts, p95 per queue, seconds",
      series: names.map(function (name, i) {
        return { label: name, stroke: PALETTE[i % PALETTE.length], width: 2 };
      }),
      data: [data.minutes].concat(names.map(function (name) { return data.queues[name].wait_p95; })),
      unit: "s"
    };
  }

  function options(spec, width) {
    return {
      title: spec.title,
      width: width,
      height: 220,
      scales: { x: { time: true }, y: { range: function (u, min, max) { return [0, Math.max(1, max || 0) * 1.1]; } } },
      series: [{ label: "minute" }].concat(spec.series.map(function (s) {
        return { label: s.label, stroke: s.stroke, width: s.width, spanGaps: false, points: { show: false } };
      })),
      axes: [{}, { label: spec.unit, size: 50 }]
    };
  }

  function draw(container) {
    var data = state.data;
    if (!data) { return; }
    var slots = container.querySelectorAll("[data-chart]");
    var specs = [throughputSpec(data, state.queue), latencySpec(data, state.queue)];
    state.charts.forEach(function (chart) { chart.destroy(); });
    state.charts = [];
    slots.forEach(function (slot, i) {
      var spec = specs[i];
      if (!spec) { return; }
      slot.replaceChildren();
      var width = Math.max(280, slot.clientWidth || 600);
      state.charts.push(new window.uPlot(options(spec, width), spec.data, slot));
    });
  }

  function fillQueues(container) {
    var select = container.querySelector("[data-chart-queue]");
    if (!select || !state.data) { return; }
    var wanted = [""].concat(Object.keys(state.data.queues));
    var have = Array.prototype.map.call(select.options, function (o) { return o.value; });
    if (wanted.join("\n") === have.join("\n")) { return; }
    select.replaceChildren();
    wanted.forEach(function (name) {
      var option = document.createElement("option");
      option.value = name;
      option.textContent = name || "all queues";
      select.appendChild(option);
    });
    if (wanted.indexOf(state.queue) < 0) { state.queue = ""; }
    select.value = state.queue;
  }

  function load(container) {
    var status = container.querySelector("[data-chart-status]");
    fetch(container.dataset.src, { headers: { "Accept": "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (data) {
        state.data = data;
        if (status) { status.textContent = data.note || ""; }
        fillQueues(container);
        draw(container);
        container.dataset.loaded = "1";
      })
      .catch(function (error) {
        if (status) { status.textContent = "charts not updated: " + error.message; }
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var container = document.querySelector("[data-charts]");
    if (!container || !window.uPlot) { return; }
    var select = container.querySelector("[data-chart-queue]");
    if (select) {
      select.addEventListener("change", function () { state.queue = select.value; draw(container); });
    }
    var resizeTimer = null;
    window.addEventListener("resize", function () {
      window.clearTimeout(resizeTimer);
      resizeTimer = window.setTimeout(function () { draw(container); }, 200);
    });
    document.addEventListener("tf:tick", function () { load(container); });
    load(container);
  });
})();
