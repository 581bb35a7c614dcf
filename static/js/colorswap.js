// ColorSwap screens. Filter: digits choose an image for the focused caption (two digits for 10 and
// up), Tab switches caption, N marks "none fits", Z undoes, a click on an image shows it full size.
// Recaption: Reset buttons restore a caption. Enter and S are handled by app.js for every screen.
(function () {
  "use strict";

  function typing(target) {
    var tag = target && target.tagName ? target.tagName.toLowerCase() : "";
    return tag === "textarea" || tag === "select" || (tag === "input" && target.type === "text") || (target && target.isContentEditable);
  }

  function setupFilter(root) {
    var form = root.closest("form");
    var count = root.querySelectorAll(".candidate").length;
    var undo = [];
    var shown = {};
    var focus = 1;
    var buffer = "";
    var timer = null;

    function value(n) {
      var checked = form.querySelector('input[name="choice_' + n + '"]:checked');
      return checked ? checked.value : "";
    }

    function setValue(n, v) {
      form.querySelectorAll('input[name="choice_' + n + '"]').forEach(function (r) { r.checked = r.value === v; });
    }

    function paint() {
      [1, 2].forEach(function (n) {
        var v = value(n);
        var label = root.querySelector('[data-choice-label="' + n + '"]');
        label.textContent = v === "" ? "— choose an image" : v === "none" ? "— none fits" : "— image " + (Number(v) + 1);
        root.querySelector('[data-caption="' + n + '"]').classList.toggle("focused", focus === n);
      });
      shown = { 1: value(1), 2: value(2) };
      // One image for both captions can't be submitted: say why at once, and hold the submit.
      var same = value(1) !== "" && value(1) !== "none" && value(1) === value(2);
      var message = same ? "Image " + (Number(value(1)) + 1) + " cannot fit both captions: their colours are swapped. " +
        "Choose another image for one caption, or mark \u201cnone fits\u201d (N)." : "";
      form.querySelectorAll('input[name="choice_2"]').forEach(function (r) { r.setCustomValidity(message); });
      var clash = root.querySelector("[data-clash]");
      clash.textContent = message;
      clash.hidden = !same;
      root.querySelectorAll(".candidate").forEach(function (fig) {
        var i = fig.dataset.index;
        fig.classList.toggle("chosen-1", value(1) === i);
        fig.classList.toggle("chosen-2", value(2) === i);
      });
    }

    function choose(v) {
      var previous = value(focus);
      if (previous === v) return;
      undo.push({ caption: focus, value: previous });
      setValue(focus, v);
      form.dispatchEvent(new Event("change", { bubbles: true }));
      // Caption 1, then caption 2: move on once the focused caption is answered.
      if (focus === 1 && value(2) === "") focus = 2;
      paint();
    }

    function flush() {
      clearTimeout(timer);
      timer = null;
      var n = Number(buffer);
      buffer = "";
      if (n >= 1 && n <= count) choose(String(n - 1));
    }

    // `shown` holds what each caption showed before a click changed it, so Z undoes clicks too.
    root.addEventListener("change", function (event) {
      var input = event.target;
      if (!input.name || input.name.indexOf("choice_") !== 0) return;
      var n = Number(input.name.slice(-1));
      undo.push({ caption: n, value: shown[n] });
      focus = n === 1 && value(2) === "" ? 2 : n;
      paint();
    });

    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
      var key = event.key;
      if (/^[0-9]$/.test(key)) {
        event.preventDefault();
        buffer += key;
        // Wait for a second digit only while one could still name an image.
        if (Number(buffer) * 10 > count || buffer.length >= String(count).length) flush();
        else { clearTimeout(timer); timer = setTimeout(flush, 600); }
        return;
      }
      if (key === "Tab") {
        event.preventDefault();
        focus = focus === 1 ? 2 : 1;
        paint();
      } else if (key === "n" || key === "N") {
        event.preventDefault();
        choose("none");
      } else if (key === "z" || key === "Z") {
        event.preventDefault();
        var last = undo.pop();
        if (!last) return;
        setValue(last.caption, last.value);
        focus = last.caption;
        form.dispatchEvent(new Event("change", { bubbles: true }));
        paint();
      }
    });

    var dialog = root.querySelector("[data-full-view]");
    root.querySelectorAll("a.full-size").forEach(function (link) {
      link.addEventListener("click", function (event) {
        if (!dialog || !dialog.showModal) return;
        event.preventDefault();
        dialog.querySelector("img").src = link.getAttribute("href");
        dialog.showModal();
      });
    });
    if (dialog) {
      dialog.addEventListener("click", function (event) {
        if (event.target === dialog || event.target.closest("[data-close]")) dialog.close();
      });
    }

    if (value(1) !== "" && value(2) === "") focus = 2;
    paint();
  }

  function setupRecaption(root) {
    root.querySelectorAll("[data-reset]").forEach(function (button) {
      button.addEventListener("click", function () {
        var input = document.getElementById(button.dataset.reset);
        input.value = button.dataset.original;
        input.dispatchEvent(new Event("input", { bubbles: true }));
        input.focus();
      });
    });
  }

  function init() {
    document.querySelectorAll("[data-colorswap-filter]").forEach(setupFilter);
    document.querySelectorAll(".colorswap-recaption").forEach(setupRecaption);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
