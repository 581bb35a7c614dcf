// VOLDOGER verify screen: L picks the LLM's label, O the original one; + / − zoom both images
// together (0 resets); E focuses the paraphrase field once chosen, typing there chooses "edit";
// Esc leaves a text field. K / D / P / E / digits, Enter and S come from app.js (data-key).
(function () {
  "use strict";

  function typing(target) {
    var tag = target && target.tagName ? target.tagName.toLowerCase() : "";
    return tag === "textarea" || tag === "select" || (tag === "input" && target.type === "text");
  }

  function setup(root) {
    var zoom = 1;
    var level = root.querySelector("[data-zoom-level]");
    var field = root.querySelector("[data-paraphrase-field]");
    var edit = root.querySelector("input[name=paraphrase][value=edit]");

    function setZoom(z) {
      zoom = Math.min(8, Math.max(1, Math.round(z * 100) / 100));
      root.style.setProperty("--vd-zoom", zoom);
      if (level) level.textContent = Math.round(zoom * 100) + "%";
    }

    function pick(value) {
      if (!value) return;
      var radio = root.querySelector('input[name=label][value="' + CSS.escape(value) + '"]');
      if (radio) {
        radio.checked = true;
        radio.focus();
        radio.dispatchEvent(new Event("change", { bubbles: true }));
      }
    }

    if (edit && field) {
      edit.addEventListener("change", function () { if (edit.checked) { field.focus(); field.select(); } });
      field.addEventListener("input", function () {
        if (!edit.checked) { edit.checked = true; edit.dispatchEvent(new Event("change", { bubbles: true })); field.focus(); }
      });
    }

    // The frames scroll together, so a zoomed detail is in view on both sides.
    var frames = Array.prototype.slice.call(root.querySelectorAll("[data-zoom-frame]"));
    frames.forEach(function (f) {
      f.addEventListener("scroll", function () {
        frames.forEach(function (g) { if (g !== f) { g.scrollTop = f.scrollTop; g.scrollLeft = f.scrollLeft; } });
      });
    });

    document.addEventListener("keydown", function (event) {
      if (!root.isConnected) return;  // a screen swapped out (app.js): its keys are gone with it
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (typing(event.target)) {
        if (event.key === "Escape") event.target.blur();
        return;
      }
      var key = event.key;
      if (key === "+" || key === "=") { setZoom(zoom * 1.5); event.preventDefault(); }
      else if (key === "-" || key === "−" || key === "_") { setZoom(zoom / 1.5); event.preventDefault(); }
      else if (key === "0") { setZoom(1); event.preventDefault(); }
      else if (key === "l" || key === "L") { pick(root.dataset.llmLabel); event.preventDefault(); }
      else if (key === "o" || key === "O") { pick(root.dataset.originalLabel); event.preventDefault(); }
    });
  }

  function init() {
    var root = document.querySelector("[data-voldoger]");
    if (root && !root.dataset.ready) { root.dataset.ready = "1"; setup(root); }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
  document.addEventListener("vlcurate:screen", init);  // the next screen, swapped in (app.js)
  document.addEventListener("htmx:afterSettle", init);
})();
