// VisArgs screens, shared part: the helpers the stage scripts use (window.visargs), the premises
// screen and the full-size image. Premises: drafts start kept; from a premise's text ↑/↓ (or
// Tab) go to the next premise, Alt+K keeps or drops it, Ctrl+Enter splits at the caret, Alt+↑/↓
// moves it, Escape leaves the text for the screen's keys (N adds, D discards). Every screen with
// an image: Z (or a click) shows it at full size. Structure and grounding have their own scripts;
// Enter, S and D come from app.js.
(function () {
  "use strict";

  function typing(target) {
    var tag = target && target.tagName ? target.tagName.toLowerCase() : "";
    return tag === "textarea" || tag === "select" || (tag === "input" && ["text", "number"].indexOf(target.type) >= 0);
  }

  function changed(form) { form.dispatchEvent(new Event("change", { bubbles: true })); }

  window.visargs = { typing: typing, changed: changed };

  // -- premises -----------------------------------------------------------------------------
  function setupPremises(root) {
    var form = root.closest("form");
    var list = root.querySelector("[data-premise-list]");
    var template = list.querySelector(".premise-row");

    function rows() { return Array.prototype.slice.call(list.querySelectorAll(".premise-row")); }
    function renumber() { rows().forEach(function (li, k) { li.querySelector("[data-pos]").value = k; }); }
    function nextIndex() {
      return rows().reduce(function (m, li) { return Math.max(m, Number(li.dataset.row) + 1); }, 0);
    }
    function newRow(text, after) {
      var li = (template || rows()[0]).cloneNode(true);
      var i = nextIndex();
      li.dataset.row = i;
      li.querySelector("[data-pos]").name = "pos_" + i;
      li.querySelector("[data-keep]").name = "keep_" + i;
      li.querySelector("[data-keep]").checked = !!text;  // an empty row is kept once typed in
      li.querySelector("[data-text]").name = "text_" + i;
      li.querySelector("[data-text]").value = text;
      li.querySelector("[data-text]").removeAttribute("autofocus");
      if (after && after.nextSibling) list.insertBefore(li, after.nextSibling); else list.appendChild(li);
      renumber();
      return li;
    }
    function split(li, caret) {
      var input = li.querySelector("[data-text]");
      var text = input.value;
      var at = caret === undefined || caret === null ? input.selectionStart : caret;
      var left = text.slice(0, at).replace(/[\s;,]+$/, "").trim();
      var right = text.slice(at).replace(/^[\s;,]+/, "").trim();
      if (!left || !right) return;
      input.value = left;
      li.querySelector("[data-keep]").checked = true;
      var added = newRow(right, li);
      added.querySelector("[data-text]").focus();
      changed(form);
    }
    function move(li, step) {
      var all = rows(), k = all.indexOf(li), j = k + step;
      if (j < 0 || j >= all.length) return;
      if (step < 0) list.insertBefore(li, all[j]); else list.insertBefore(all[j], li);
      renumber();
      li.querySelector("[data-text]").focus();
      changed(form);
    }

    list.addEventListener("click", function (event) {
      var button = event.target.closest("button");
      if (!button) return;
      var li = button.closest(".premise-row");
      if (button.hasAttribute("data-split")) split(li, li.querySelector("[data-text]").dataset.caret);
      else if (button.hasAttribute("data-up")) move(li, -1);
      else if (button.hasAttribute("data-down")) move(li, 1);
      else if (button.hasAttribute("data-delete")) { li.remove(); renumber(); changed(form); }
    });
    // The caret is remembered so that the Split button splits where the annotator was typing.
    list.addEventListener("keyup", function (event) { if (event.target.matches("[data-text]")) event.target.dataset.caret = event.target.selectionStart; });
    list.addEventListener("click", function (event) { if (event.target.matches("[data-text]")) event.target.dataset.caret = event.target.selectionStart; }, true);
    list.addEventListener("input", function (event) {
      if (event.target.matches("[data-text]")) event.target.closest(".premise-row").querySelector("[data-keep]").checked = true;
    });
    list.addEventListener("keydown", function (event) {
      var input = event.target;
      if (!input.matches("[data-text]")) return;
      var li = input.closest(".premise-row");
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        split(li, input.selectionStart);
      } else if (event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown")) {
        event.preventDefault();
        move(li, event.key === "ArrowUp" ? -1 : 1);
      } else if (event.altKey && (event.code === "KeyK" || event.key === "k" || event.key === "K")) {
        event.preventDefault();
        var keep = li.querySelector("[data-keep]");
        keep.checked = !keep.checked;
        changed(form);
      } else if (event.key === "Escape") {
        event.preventDefault();
        root.querySelector("[data-side]").focus();  // letters are keys again (N, D, S); Enter submits
      } else if (!event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown")) {
        var all = rows(), k = all.indexOf(li) + (event.key === "ArrowUp" ? -1 : 1);
        if (all[k]) { event.preventDefault(); toText(all[k]); }
      }
    });
    function toText(li) {  // the caret at the end, ready to add to the premise
      var input = li.querySelector("[data-text]");
      input.focus();
      input.setSelectionRange(input.value.length, input.value.length);
    }
    // Adding goes to the first empty row (a spare one) before making a new row.
    function add() {
      var empty = rows().filter(function (li) { return !li.querySelector("[data-text]").value.trim(); })[0];
      (empty || newRow("", null)).querySelector("[data-text]").focus();
    }
    root.querySelector("[data-add-premise]").addEventListener("click", add);
    document.addEventListener("keydown", function (event) {
      if (!root.isConnected) return;  // a screen swapped out (app.js): its keys are gone with it
      if ((event.key === "n" || event.key === "N") && !typing(event.target) && !event.ctrlKey && !event.metaKey && !event.altKey) {
        event.preventDefault();
        add();
      }
    });
    renumber();
  }

  // -- full-size image (premises, structure, equivalence) ------------------------------------------
  function setupZoom(root) {
    var dialog = root.querySelector("[data-zoom-dialog]");
    var full = dialog && dialog.querySelector("[data-full]");
    if (!full || !dialog.showModal) return;
    var scale = 1, back = null;
    function show(z) {
      scale = Math.max(0.1, Math.min(8, z));
      full.style.width = full.naturalWidth ? full.naturalWidth * scale + "px" : "";
      dialog.querySelector("[data-zoom-scale]").textContent = Math.round(scale * 100) + "%";
    }
    function open() {
      back = document.activeElement;
      dialog.showModal();
      show(1);  // real pixels first
      dialog.querySelector(".full-scroll").focus();
    }
    function close() { if (dialog.open) dialog.close(); }
    root.querySelector("[data-zoom-open]").addEventListener("click", open);
    dialog.addEventListener("close", function () { if (back && back.focus) back.focus(); });
    dialog.addEventListener("click", function (event) {
      if (event.target === dialog || event.target.closest("[data-zoom-close]")) close();
      var step = event.target.closest("[data-zoom-step]");
      if (step) show(scale * (step.dataset.zoomStep === "1" ? 1.25 : 0.8));
    });
    // Keys inside the dialog stay there: Enter must not submit the item behind it.
    dialog.addEventListener("keydown", function (event) {
      if (event.key === "Escape") return;
      event.stopPropagation();
      if (event.key === "+" || event.key === "=") { event.preventDefault(); show(scale * 1.25); }
      else if (event.key === "-") { event.preventDefault(); show(scale * 0.8); }
      else if (event.key === "z" || event.key === "Z" || event.key === "Enter") { event.preventDefault(); close(); }
    });
    document.addEventListener("keydown", function (event) {
      if (!root.isConnected) return;  // a screen swapped out (app.js): its keys are gone with it
      if ((event.key === "z" || event.key === "Z") && !dialog.open && !typing(event.target) &&
          !event.ctrlKey && !event.metaKey && !event.altKey) {
        event.preventDefault();
        open();
      }
    });
  }

  function init() {
    document.querySelectorAll("[data-zoomable]").forEach(setupZoom);
    document.querySelectorAll("[data-visargs-premises]").forEach(setupPremises);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
  document.addEventListener("vlcurate:screen", init);  // the next screen, swapped in (app.js)
})();
