// ColorSwap screens. Filter: digits choose an image for the caption being chosen for (two digits
// for 10 and up; caption 1, then caption 2), C switches caption (Tab is the browser's), N marks
// "none fits", Z undoes, arrows move the keyboard frame over the images and F (or a click) shows
// the framed image full size. Recaption: Reset buttons restore a caption; a click on an image shows
// it full size; the caret starts at the end of caption 1, and Enter with a caption that must be
// rewritten still unchanged says so without sending. Enter and S are handled by app.js for every screen.
(function () {
  "use strict";

  function typing(target) {
    var tag = target && target.tagName ? target.tagName.toLowerCase() : "";
    return tag === "textarea" || tag === "select" || (tag === "input" && target.type === "text") || (target && target.isContentEditable);
  }

  function setupFilter(root) {
    var form = root.closest("form");
    var figures = Array.prototype.slice.call(root.querySelectorAll(".candidate"));
    var count = figures.length;
    var undo = [];
    var shown = {};
    var focus = 1;
    var cursor = 0;
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
      figures.forEach(function (fig, k) {
        var i = fig.dataset.index;
        fig.classList.toggle("chosen-1", value(1) === i);
        fig.classList.toggle("chosen-2", value(2) === i);
        fig.classList.toggle("cursor", k === cursor);
      });
    }

    function moveCursorTo(v) {
      if (v !== "" && v !== "none") cursor = Number(v);
    }

    function choose(v) {
      var previous = value(focus);
      if (previous !== v) {
        undo.push({ caption: focus, value: previous });
        setValue(focus, v);
        form.dispatchEvent(new Event("change", { bubbles: true }));
      }
      moveCursorTo(v);
      // Caption 1, then caption 2: a choice for caption 1 moves on to caption 2.
      if (focus === 1) focus = 2;
      paint();
    }

    function flush() {
      clearTimeout(timer);
      timer = null;
      var n = Number(buffer);
      buffer = "";
      if (n >= 1 && n <= count) choose(String(n - 1));
    }

    function columns() {
      var top = figures[0].offsetTop, k = 0;
      while (k < figures.length && figures[k].offsetTop === top) k++;
      return Math.max(1, k);
    }

    function openFull(k) {
      var link = figures[k] && figures[k].querySelector("a.full-size");
      if (!link || !window.vlcurateFullView) return;
      cursor = k;
      paint();
      window.vlcurateFullView.open(link.getAttribute("href"), "Candidate image " + (k + 1) + " at full size");
    }

    // `shown` holds what each caption showed before a click changed it, so Z undoes clicks too.
    root.addEventListener("change", function (event) {
      var input = event.target;
      if (!input.name || input.name.indexOf("choice_") !== 0) return;
      var n = Number(input.name.slice(-1));
      undo.push({ caption: n, value: shown[n] });
      focus = n === 1 ? 2 : n;
      moveCursorTo(input.value);
      paint();
    });

    // A click on a caption box makes it the one being chosen for.
    root.querySelectorAll(".caption-target").forEach(function (box) {
      box.addEventListener("click", function (event) {
        if (event.target.closest("input, label")) return;
        focus = Number(box.dataset.caption);
        paint();
      });
    });

    // A focused candidate (Tab or click) is the one F opens.
    root.addEventListener("focusin", function (event) {
      var fig = event.target.closest && event.target.closest(".candidate");
      if (fig) { cursor = figures.indexOf(fig); paint(); }
    });

    document.addEventListener("keydown", function (event) {
      if (!root.isConnected) return;  // a screen swapped out (app.js): its keys are gone with it
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
      if (key === "c" || key === "C") {
        // Tab is left to the browser: it walks the page and never switches caption.
        event.preventDefault();
        focus = focus === 1 ? 2 : 1;
        paint();
      } else if (key === "n" || key === "N") {
        event.preventDefault();
        choose("none");
      } else if (key === "f" || key === "F") {
        event.preventDefault();
        openFull(cursor);
      } else if (key === "ArrowRight" || key === "ArrowLeft" || key === "ArrowUp" || key === "ArrowDown") {
        event.preventDefault();
        var step = key === "ArrowRight" ? 1 : key === "ArrowLeft" ? -1 : (key === "ArrowDown" ? 1 : -1) * columns();
        cursor = Math.max(0, Math.min(count - 1, cursor + step));
        paint();
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

    root.querySelectorAll("a.full-size").forEach(function (link) {
      link.addEventListener("click", function (event) {
        if (!window.vlcurateFullView) return;
        event.preventDefault();
        openFull(figures.indexOf(link.closest(".candidate")));
      });
    });

    if (value(1) !== "" && value(2) === "") focus = 2;
    moveCursorTo(value(focus) || value(1));
    paint();
  }

  function setupRecaption(root) {
    root.querySelectorAll(".chosen-image a").forEach(function (link) {
      link.addEventListener("click", function (event) {
        if (!window.vlcurateFullView) return;
        event.preventDefault();
        window.vlcurateFullView.open(link.getAttribute("href"), link.querySelector("img").alt + " at full size");
      });
    });
    root.querySelectorAll("[data-reset]").forEach(function (button) {
      button.addEventListener("click", function () {
        var input = document.getElementById(button.dataset.reset);
        input.value = button.dataset.original;
        input.dispatchEvent(new Event("input", { bubbles: true }));
        input.focus();
      });
    });
    var inputs = Array.prototype.slice.call(root.querySelectorAll("input[data-original]"));
    // The caret starts at the end of a caption (rewriting mostly adds to it), not before its first word.
    inputs.forEach(function (input) {
      var end = function () { input.setSelectionRange(input.value.length, input.value.length); };
      end();
      input.addEventListener("focus", end, { once: true });
    });
    // A pair that must be rewritten is not sent while a caption is unchanged: the screen says so at
    // once (the server refuses it too). Skip still goes.
    var form = root.closest("form"), note = root.querySelector("[data-unchanged-note]");
    if (!form || root.dataset.required === undefined || form.dataset.unchangedCheck) return;
    form.dataset.unchangedCheck = "1";
    form.addEventListener("submit", function (event) {
      if (event.submitter && event.submitter.hasAttribute("formaction")) return;
      var same = inputs.filter(function (input) { return oneLine(input.value) === oneLine(input.dataset.original); });
      note.hidden = !same.length;
      if (!same.length) return;
      event.preventDefault();
      event.stopPropagation();  // before app.js sends it
      note.textContent = (same.length === 2 ? "Both captions are" : "Caption " + same[0].name.slice(-1) + " is") +
        " unchanged: this pair's captions were made by rules and must be rewritten.";
      same[0].focus();
    });
  }

  function oneLine(text) { return text.split(/\s+/).filter(Boolean).join(" ").toLowerCase(); }

  function init() {
    document.querySelectorAll("[data-colorswap-filter]").forEach(setupFilter);
    document.querySelectorAll(".colorswap-recaption").forEach(setupRecaption);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
  document.addEventListener("vlcurate:screen", init);  // the next screen, swapped in (app.js)
})();
