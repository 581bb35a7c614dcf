// VisArgs screens. Premises: rows to keep, edit, split at the caret (Ctrl+Enter), move (Alt+↑/↓),
// delete and add (N). Structure: add and delete commonsense premises and steps, keeping the step
// chips in line with the premises. Grounding: draw, move and resize one box per premise with the
// mouse or the keyboard, zoom, and take suggested boxes (A). Enter, S and D come from app.js.
(function () {
  "use strict";

  function typing(target) {
    var tag = target && target.tagName ? target.tagName.toLowerCase() : "";
    return tag === "textarea" || tag === "select" || (tag === "input" && ["text", "number"].indexOf(target.type) >= 0);
  }

  function changed(form) { form.dispatchEvent(new Event("change", { bubbles: true })); }

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
      li.querySelector("[data-keep]").checked = true;
      li.querySelector("[data-text]").name = "text_" + i;
      li.querySelector("[data-text]").value = text;
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
      } else if (!event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown")) {
        var all = rows(), k = all.indexOf(li) + (event.key === "ArrowUp" ? -1 : 1);
        if (all[k]) { event.preventDefault(); all[k].querySelector("[data-text]").focus(); }
      }
    });
    root.querySelector("[data-add-premise]").addEventListener("click", function () {
      newRow("", null).querySelector("[data-text]").focus();
    });
    document.addEventListener("keydown", function (event) {
      if ((event.key === "n" || event.key === "N") && !typing(event.target) && !event.ctrlKey && !event.metaKey && !event.altKey) {
        event.preventDefault();
        newRow("", null).querySelector("[data-text]").focus();
      }
    });
    renumber();
  }

  // -- structure --------------------------------------------------------------------------------
  function setupStructure(root) {
    var form = root.closest("form");
    var vpCount = Number(root.dataset.vpCount);
    var cpList = root.querySelector("[data-cp-list]");
    var steps = root.querySelector("[data-steps]");

    function cpRows() { return Array.prototype.slice.call(cpList.querySelectorAll("[data-cp-row]")); }
    function stepRows() { return Array.prototype.slice.call(steps.querySelectorAll("[data-step-row]")); }

    // Chips and outputs follow the number of premises and steps; `remap` renames CPs after a deletion.
    function rebuild(remap) {
      cpRows().forEach(function (li, k) { li.querySelector("[data-cp-label]").textContent = "CP" + (k + 1); });
      var nodes = [];
      for (var v = 1; v <= vpCount; v++) nodes.push("VP" + v);
      for (var c = 1; c <= cpRows().length; c++) nodes.push("CP" + c);
      var ics = stepRows().map(function (_, k) { return "IC" + (k + 1); });
      nodes = nodes.concat(ics);
      stepRows().forEach(function (row, k) {
        var i = row.dataset.stepRow;
        var chips = row.querySelector("[data-chips]");
        var checked = {};
        chips.querySelectorAll("input:checked").forEach(function (box) {
          var name = remap ? remap(box.value) : box.value;
          if (name) checked[name] = true;
        });
        chips.textContent = "";
        nodes.forEach(function (node) {
          var label = document.createElement("label");
          label.className = "chip " + node.slice(0, 2).toLowerCase();
          var box = document.createElement("input");
          box.type = "checkbox";
          box.name = "step_in_" + i;
          box.value = node;
          box.checked = !!checked[node];
          label.appendChild(box);
          label.appendChild(document.createTextNode(node));
          chips.appendChild(label);
        });
        row.querySelector(".step-num").textContent = k + 1;
        var select = row.querySelector("[data-out]");
        var current = select.value;
        select.textContent = "";
        [""].concat(ics, ["C"]).forEach(function (o) {
          var option = document.createElement("option");
          option.value = o;
          option.textContent = o || "…";
          option.selected = o === current;
          select.appendChild(option);
        });
      });
      changed(form);
    }

    root.querySelector("[data-add-cp]").addEventListener("click", function () {
      var li = cpRows()[0].cloneNode(true);
      var next = cpRows().reduce(function (m, r) { return Math.max(m, Number(r.querySelector("input").name.slice(3)) + 1); }, 0);
      li.querySelector("input").name = "cp_" + next;
      li.querySelector("input").value = "";
      cpList.appendChild(li);
      rebuild(null);
      li.querySelector("input").focus();
    });
    cpList.addEventListener("click", function (event) {
      if (!event.target.closest("[data-delete-cp]")) return;
      var li = event.target.closest("[data-cp-row]");
      var gone = cpRows().indexOf(li) + 1;
      if (cpRows().length === 1) { li.querySelector("input").value = ""; rebuild(null); return; }
      li.remove();
      rebuild(function (node) {
        if (node.slice(0, 2) !== "CP") return node;
        var k = Number(node.slice(2));
        return k === gone ? null : k > gone ? "CP" + (k - 1) : node;
      });
    });
    root.querySelector("[data-add-step]").addEventListener("click", function () {
      var last = stepRows()[stepRows().length - 1];
      var row = last.cloneNode(true);
      var next = stepRows().reduce(function (m, r) { return Math.max(m, Number(r.dataset.stepRow) + 1); }, 0);
      row.dataset.stepRow = next;
      row.querySelectorAll("input[type=checkbox]").forEach(function (b) { b.checked = false; });
      row.querySelector("[data-out]").name = "step_out_" + next;
      row.querySelector("[data-out]").value = "";
      var text = row.querySelector("input[type=text]");
      text.name = "step_text_" + next;
      text.value = "";
      steps.appendChild(row);
      rebuild(null);
    });
  }

  // -- grounding --------------------------------------------------------------------------------
  function setupGrounding(root) {
    var form = root.closest("form");
    var canvas = root.querySelector("[data-canvas]");
    var img = root.querySelector("[data-image]");
    if (!img) return;
    var items = Array.prototype.slice.call(root.querySelectorAll("[data-vp]"));
    var zoom = 1;
    var drag = null;

    function current() {
      var r = form.querySelector("input[name=current_vp]:checked");
      return r ? Number(r.value) : 0;
    }
    function field(i, f) { return items[i].querySelector("[data-" + f + "]"); }
    function box(i) {
      var b = ["x", "y", "w", "h"].map(function (f) { return field(i, f).value === "" ? null : Number(field(i, f).value); });
      return b.indexOf(null) >= 0 ? null : { x: b[0], y: b[1], w: b[2], h: b[3] };
    }
    function setBox(i, b) {
      var W = img.naturalWidth, H = img.naturalHeight;
      var w = Math.max(1, Math.min(Math.round(b.w), W)), h = Math.max(1, Math.min(Math.round(b.h), H));
      var x = Math.max(0, Math.min(Math.round(b.x), W - w)), y = Math.max(0, Math.min(Math.round(b.y), H - h));
      field(i, "x").value = x; field(i, "y").value = y; field(i, "w").value = w; field(i, "h").value = h;
      paint();
    }
    function suggested(i) {
      var raw = items[i].dataset.suggested;
      if (!raw) return null;
      var s = JSON.parse(raw);
      return { x: s.startX, y: s.startY, w: s.w, h: s.h };
    }
    function rect(b, cls, label) {
      var d = document.createElement("div");
      d.className = "box " + cls;
      d.style.left = b.x * zoom + "px"; d.style.top = b.y * zoom + "px";
      d.style.width = b.w * zoom + "px"; d.style.height = b.h * zoom + "px";
      d.dataset.label = label;
      canvas.appendChild(d);
      return d;
    }
    function paint() {
      canvas.querySelectorAll(".box").forEach(function (d) { d.remove(); });
      img.style.width = img.naturalWidth * zoom + "px";
      canvas.style.width = img.naturalWidth * zoom + "px";
      canvas.style.height = img.naturalHeight * zoom + "px";
      root.querySelector("[data-zoom-label]").textContent = Math.round(zoom * 100) + "%";
      items.forEach(function (li, i) {
        var b = box(i), s = suggested(i);
        if (s && (!b || i === current())) rect(s, "suggested" + (i === current() ? " current" : ""), String(i + 1));
        if (b) rect(b, i === current() ? "current" : "", String(i + 1));
        li.classList.toggle("has-box", !!b);
        li.classList.toggle("current", i === current());
      });
    }
    function point(event) {
      var r = canvas.getBoundingClientRect();
      return { x: (event.clientX - r.left) / zoom, y: (event.clientY - r.top) / zoom };
    }

    canvas.addEventListener("mousedown", function (event) {
      if (event.button !== 0) return;
      event.preventDefault();
      var p = point(event), i = current(), b = box(i), grip = 8 / zoom;
      if (b && Math.abs(p.x - (b.x + b.w)) < grip && Math.abs(p.y - (b.y + b.h)) < grip) drag = { mode: "resize", start: p, box: b };
      else if (b && p.x >= b.x && p.x <= b.x + b.w && p.y >= b.y && p.y <= b.y + b.h) drag = { mode: "move", start: p, box: b };
      else drag = { mode: "draw", start: p, box: null };
    });
    window.addEventListener("mousemove", function (event) {
      if (!drag) return;
      var p = point(event), s = drag.start, b = drag.box, i = current();
      if (drag.mode === "draw") setBox(i, { x: Math.min(s.x, p.x), y: Math.min(s.y, p.y), w: Math.abs(p.x - s.x), h: Math.abs(p.y - s.y) });
      else if (drag.mode === "move") setBox(i, { x: b.x + p.x - s.x, y: b.y + p.y - s.y, w: b.w, h: b.h });
      else setBox(i, { x: b.x, y: b.y, w: b.w + p.x - s.x, h: b.h + p.y - s.y });
    });
    window.addEventListener("mouseup", function () {
      if (drag) { drag = null; changed(form); }
    });
    root.addEventListener("change", function (event) {
      if (event.target.name === "current_vp" || event.target.type === "number") paint();
    });
    root.querySelectorAll("[data-zoom]").forEach(function (b) {
      b.addEventListener("click", function () { setZoom(zoom * (b.dataset.zoom === "1" ? 1.25 : 0.8)); });
    });
    function setZoom(z) { zoom = Math.max(0.1, Math.min(8, z)); paint(); }

    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || typing(event.target)) return;
      var key = event.key, i = current(), b = box(i);
      if (/^[1-9]$/.test(key) && Number(key) <= items.length) {
        event.preventDefault();
        var radio = items[Number(key) - 1].querySelector("input[name=current_vp]");
        radio.checked = true;
        radio.dispatchEvent(new Event("change", { bubbles: true }));
      } else if ((key === "a" || key === "A") && suggested(i)) {
        event.preventDefault();
        setBox(i, suggested(i));
        changed(form);
      } else if (key === "+" || key === "=") { event.preventDefault(); setZoom(zoom * 1.25); }
      else if (key === "-") { event.preventDefault(); setZoom(zoom * 0.8); }
      else if (b && ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown"].indexOf(key) >= 0) {
        event.preventDefault();
        var d = event.altKey ? 10 : 1;
        var dx = key === "ArrowLeft" ? -d : key === "ArrowRight" ? d : 0;
        var dy = key === "ArrowUp" ? -d : key === "ArrowDown" ? d : 0;
        if (event.shiftKey) setBox(i, { x: b.x, y: b.y, w: b.w + dx, h: b.h + dy });
        else setBox(i, { x: b.x + dx, y: b.y + dy, w: b.w, h: b.h });
        changed(form);
      }
    });

    function start() {
      // Fit wide images to the stage at first; zoom in for small regions.
      var room = root.querySelector(".box-scroll").clientWidth;
      if (img.naturalWidth > room && room > 0) zoom = room / img.naturalWidth;
      paint();
    }
    if (img.complete && img.naturalWidth) start(); else img.addEventListener("load", start);
  }

  function init() {
    document.querySelectorAll("[data-visargs-premises]").forEach(setupPremises);
    document.querySelectorAll("[data-visargs-structure]").forEach(setupStructure);
    document.querySelectorAll("[data-visargs-grounding]").forEach(setupGrounding);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
