// ExpArt screens. Sections: a reason (digits, from app.js) chooses Drop; Keep clears the reason.
// Explanation: the words are checkboxes (struck when checked, so the page works without JS); keys
// ←/→ move, X or Space strikes, Shift+X strikes up to the last struck word, Z undoes — as WikiDO's editor.
// Digits, K / D, Enter and S come from app.js.
(function () {
  "use strict";

  function typing(target) {
    var tag = target && target.tagName ? target.tagName.toLowerCase() : "";
    return tag === "textarea" || tag === "select" || (tag === "input" && target.type === "text");
  }

  function sections(root) {
    var form = root.closest("form");
    form.addEventListener("change", function (event) {
      if (event.target.name === "reason" && event.target.checked) {
        form.querySelector("input[name=decision][value=drop]").checked = true;
      } else if (event.target.name === "decision" && event.target.value === "keep") {
        form.querySelectorAll("input[name=reason]").forEach(function (r) { r.checked = false; });
      }
    });
  }

  function explanation(root) {
    var labels = Array.prototype.slice.call(root.querySelectorAll("[data-tokens] .tok"));
    var boxes = labels.map(function (l) { return l.querySelector("input"); });
    var count = root.querySelector("[data-struck-count]");
    var history = [];
    var cursor = 0;
    var anchor = null;

    function paint() {
      labels.forEach(function (l, i) { l.classList.toggle("cursor", i === cursor); });
      var n = boxes.filter(function (b) { return b.checked; }).length;
      count.textContent = n ? n + " word" + (n > 1 ? "s" : "") + " struck." : "";
    }

    function changed() { boxes[0] && boxes[0].dispatchEvent(new Event("change", { bubbles: true })); }

    function strike(i, span) {
      history.push({ checked: boxes.map(function (b) { return b.checked; }), anchor: anchor });
      if (span && anchor !== null) {
        for (var k = Math.min(anchor, i); k <= Math.max(anchor, i); k++) boxes[k].checked = true;
      } else {
        boxes[i].checked = !boxes[i].checked;
      }
      anchor = i;
      cursor = i;
      paint();
      changed();
    }

    labels.forEach(function (l, i) {
      l.addEventListener("click", function (event) {
        event.preventDefault();  // the label would toggle the box itself; strike() does it, with undo and spans
        strike(i, event.shiftKey);
      });
    });

    document.addEventListener("keydown", function (event) {
      if (!root.isConnected) return;  // a screen swapped out (app.js): its keys are gone with it
      if (!labels.length || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
      var key = event.key;
      if (key === "ArrowRight" || key === "ArrowLeft") {
        event.preventDefault();
        cursor = Math.max(0, Math.min(labels.length - 1, cursor + (key === "ArrowRight" ? 1 : -1)));
        paint();
      } else if (key === "x" || key === "X" || key === " ") {
        event.preventDefault();
        strike(cursor, event.shiftKey);
      } else if (key === "z" || key === "Z") {
        event.preventDefault();
        var last = history.pop();
        if (last) {
          boxes.forEach(function (b, i) { b.checked = last.checked[i]; });
          anchor = last.anchor;
          paint();
          changed();
        }
      }
    });
    paint();
  }

  function init() {
    document.querySelectorAll("[data-artwork-sections]").forEach(sections);
    document.querySelectorAll("[data-artwork-explanation]").forEach(explanation);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
  document.addEventListener("vlcurate:screen", init);  // the next screen, swapped in (app.js)
})();
