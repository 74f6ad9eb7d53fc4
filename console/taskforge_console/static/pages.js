/* TaskForge console pages: live refresh and task selection. No inline script anywhere (the
 * Content-Security-Policy forbids it); htmx does the requests, this file only decides when.
 *
 * Live refresh: every element with [data-refresh] has hx-get/hx-trigger="tfrefresh" (see
 * templates/pages/_refresh.html). The selector [data-refresh-select] sets the period (0 = off,
 * 1..60 s), kept in localStorage per browser. Ticks are skipped while the tab is hidden
 * (document.visibilityState), while a region asks to hold ([data-refresh-hold] inside it, e.g.
 * a confirmation step) or while a request of that region is still in flight; when the tab
 * becomes visible again every region refreshes at once.
 *
 * Selection: checkboxes [data-select-item] inside a form [data-select-form] keep their ticks
 * across refreshes (kept in a Set by value); [data-select-all] ticks every visible row.
 */
(function () {
  "use strict";

  var STORAGE_KEY = "taskforge.console.refreshSeconds";
  var DEFAULT_SECONDS = 5;
  var timer = null;
  var selected = new Set();

  function periodSeconds() {
    var stored = null;
    try { stored = window.localStorage.getItem(STORAGE_KEY); } catch (e) { stored = null; }
    var n = stored === null ? DEFAULT_SECONDS : parseInt(stored, 10);
    return isNaN(n) || n < 0 || n > 60 ? DEFAULT_SECONDS : n;
  }

  function savePeriod(seconds) {
    try { window.localStorage.setItem(STORAGE_KEY, String(seconds)); } catch (e) { /* private mode */ }
  }

  function refreshAll() {
    if (document.visibilityState !== "visible") { return; }
    document.querySelectorAll("[data-refresh]").forEach(function (region) {
      if (region.querySelector("[data-refresh-hold]") || region.classList.contains("htmx-request")) { return; }
      window.htmx.trigger(region, "tfrefresh");
    });
    document.dispatchEvent(new CustomEvent("tf:tick"));
  }

  function schedule() {
    if (timer !== null) { window.clearInterval(timer); timer = null; }
    var seconds = periodSeconds();
    document.documentElement.dataset.refreshSeconds = String(seconds);
    if (seconds > 0 && document.visibilityState === "visible") {
      timer = window.setInterval(refreshAll, seconds * 1000);
    }
  }

  function initSelectors() {
    document.querySelectorAll("[data-refresh-select]").forEach(function (select) {
      select.value = String(periodSeconds());
      if (select.value === "") { select.value = String(DEFAULT_SECONDS); }
    });
  }

  function restoreSelection(root) {
    root.querySelectorAll("[data-select-item]").forEach(function (box) {
      box.checked = selected.has(box.value);
    });
    updateCounts();
  }

  function updateCounts() {
    document.querySelectorAll("[data-select-count]").forEach(function (el) {
      el.textContent = String(selected.size);
    });
    document.querySelectorAll("[data-needs-selection]").forEach(function (button) {
      var form = button.form;
      var all = form && form.querySelector("[data-select-matching]");
      button.disabled = selected.size === 0 && !(all && all.checked);
    });
  }

  function syncHiddenIds(form) {
    // The ticked ids that scrolled out of view (another page) still go with the form.
    form.querySelectorAll("input[data-select-carry]").forEach(function (el) { el.remove(); });
    var visible = new Set();
    form.querySelectorAll("[data-select-item]").forEach(function (box) { visible.add(box.value); });
    selected.forEach(function (id) {
      if (!visible.has(id)) {
        var hidden = document.createElement("input");
        hidden.type = "hidden";
        hidden.name = "selected";
        hidden.value = id;
        hidden.setAttribute("data-select-carry", "");
        form.appendChild(hidden);
      }
    });
  }

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target instanceof HTMLSelectElement && target.hasAttribute("data-refresh-select")) {
      savePeriod(parseInt(target.value, 10) || 0);
      schedule();
      return;
    }
    if (!(target instanceof HTMLInputElement)) { return; }
    if (target.hasAttribute("data-select-item")) {
      if (target.checked) { selected.add(target.value); } else { selected.delete(target.value); }
      updateCounts();
    } else if (target.hasAttribute("data-select-all")) {
      var form = target.closest("form") || document;
      form.querySelectorAll("[data-select-item]").forEach(function (box) {
        box.checked = target.checked;
        if (target.checked) { selected.add(box.value); } else { selected.delete(box.value); }
      });
      updateCounts();
    } else if (target.hasAttribute("data-select-matching")) {
      updateCounts();
    }
  });

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form instanceof HTMLFormElement && form.hasAttribute("data-select-form")) {
      syncHiddenIds(form);
    }
  }, true);

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (target instanceof HTMLElement && target.hasAttribute("data-clear-selection")) {
      selected.clear();
      restoreSelection(document);
    }
  });

  document.addEventListener("visibilitychange", function () {
    schedule();
    if (document.visibilityState === "visible" && periodSeconds() > 0) { refreshAll(); }
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    restoreSelection(event.target instanceof Element ? event.target : document);
    initSelectors();
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-select-item]:checked").forEach(function (box) { selected.add(box.value); });
    initSelectors();
    updateCounts();
    schedule();
  });
})();
