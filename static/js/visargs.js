// VisArgs screens. Premises: drafts start kept; from a premise's text ↑/↓ (or Tab) go to the
// next premise, Alt+K keeps or drops it, Ctrl+Enter splits at the caret, Alt+↑/↓ moves it,
// Escape leaves the text for the screen's keys (N adds, D discards). Structure: step chips are
// one Tab stop per step (arrows walk them, A takes every premise no step uses yet), and a step
// concluding C says the conclusion unless written otherwise. Grounding: draw, move and resize one
// box per premise with the mouse or the keyboard (B makes a box, A/Shift+A take suggested ones),
// zoom. Every screen: Z shows the image at full size. Enter, S and D come from app.js.
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
      if ((event.key === "n" || event.key === "N") && !typing(event.target) && !event.ctrlKey && !event.metaKey && !event.altKey) {
        event.preventDefault();
        add();
      }
    });
    renumber();
  }

  // -- structure --------------------------------------------------------------------------------
  function setupStructure(root) {
    var vpCount = Number(root.dataset.vpCount);
    var cpList = root.querySelector("[data-cp-list]");
    var steps = root.querySelector("[data-steps]");
    var conclusion = root.querySelector("[data-conclusion]");
    // Changes are announced from inside the side column, so that the live check (and the draft) follow.

    function cpRows() { return Array.prototype.slice.call(cpList.querySelectorAll("[data-cp-row]")); }
    function stepRows() { return Array.prototype.slice.call(steps.querySelectorAll("[data-step-row]")); }
    // Only one empty spare row of each list is shown (CSS); keys and buttons go to shown rows.
    function shown(rows) { return rows.filter(function (row) { return row.getClientRects().length > 0; }); }
    function emptyStep() { return shown(stepRows()).filter(function (row) { return !row.querySelector("[data-chips] input:checked"); })[0]; }
    function emptyCp() { return shown(cpRows()).filter(function (li) { return !li.querySelector("input").value.trim(); })[0]; }
    function chipsOf(row) { return Array.prototype.slice.call(row.querySelectorAll("[data-chips] input")); }
    function shownChips(row) { return chipsOf(row).filter(function (c) { return !c.parentNode.hidden; }); }

    // One Tab stop per step's chips (roving tabindex): the chip last focused, else the first.
    function rove(row, chip) {
      var all = chipsOf(row);
      chip = chip || all.filter(function (c) { return c.tabIndex === 0; })[0] || all[0];
      all.forEach(function (c) { c.tabIndex = c === chip ? 0 : -1; });
      return chip;
    }
    function focusChip(row, k) {
      var all = shownChips(row);
      var chip = all[Math.max(0, Math.min(k, all.length - 1))];
      if (chip) { rove(row, chip); chip.focus(); }
    }

    // A step's conclusion follows the rows until the annotator picks one: the last step with
    // inputs concludes C, each earlier one its own IC; a step concluding C says the conclusion
    // until its text is written otherwise.
    function autoOutputs() {
      var rows = stepRows();
      var used = rows.filter(function (row) { return chipsOf(row).some(function (c) { return c.checked; }); });
      rows.forEach(function (row, k) {
        var select = row.querySelector("[data-out]");
        if (select.hasAttribute("data-auto")) {
          var want = used.indexOf(row) < 0 ? "" : row === used[used.length - 1] ? "C" : "IC" + (k + 1);
          if (select.value !== want) select.value = want;
        }
        sayConclusion(row);
      });
    }
    function sayConclusion(row) {
      var text = row.querySelector("[data-step-text]");
      var concludesC = row.querySelector("[data-out]").value === "C";
      if (concludesC && (!text.value || text.hasAttribute("data-auto"))) {
        text.value = conclusion.value.trim();
        text.setAttribute("data-auto", "");
      } else if (!concludesC && text.hasAttribute("data-auto")) {
        text.value = "";
        text.removeAttribute("data-auto");
      }
    }
    function takeUnused(row) {
      var used = {};
      stepRows().forEach(function (r) { chipsOf(r).forEach(function (c) { if (c.checked) used[c.value] = true; }); });
      var cps = cpRows();
      chipsOf(row).forEach(function (c) {
        var kind = c.value.slice(0, 2);
        var written = kind !== "CP" || (cps[Number(c.value.slice(2)) - 1] && cps[Number(c.value.slice(2)) - 1].querySelector("input").value.trim());
        if ((kind === "VP" || kind === "CP") && !used[c.value] && written) c.checked = true;
      });
    }

    // Chips of empty commonsense rows (spares) stay out of sight unless ticked.
    function hideEmptyCps() {
      var empty = {};
      cpRows().forEach(function (li, k) { if (!li.querySelector("input").value.trim()) empty["CP" + (k + 1)] = true; });
      stepRows().forEach(function (row) {
        chipsOf(row).forEach(function (c) {
          c.parentNode.hidden = !!empty[c.value] && !c.checked;
          if (c.parentNode.hidden && c.tabIndex === 0) rove(row, chipsOf(row)[0]);
        });
      });
    }
    cpList.addEventListener("input", hideEmptyCps);

    steps.addEventListener("change", function (event) {
      if (event.target.matches("[data-out]")) event.target.removeAttribute("data-auto");
      autoOutputs();
    }, true);
    steps.addEventListener("input", function (event) {
      if (event.target.matches("[data-step-text]")) event.target.removeAttribute("data-auto");
    });
    conclusion.addEventListener("input", function () { stepRows().forEach(sayConclusion); });
    steps.addEventListener("focusin", function (event) {
      if (event.target.matches("[data-chips] input")) rove(event.target.closest("[data-step-row]"), event.target);
    });
    steps.addEventListener("keydown", function (event) {
      var target = event.target;
      var row = target.closest("[data-step-row]");
      if (!row || event.ctrlKey || event.metaKey) return;
      var rows = shown(stepRows()), r = rows.indexOf(row);
      if (target.matches("[data-step-text]") && !event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown")) {
        var other = rows[r + (event.key === "ArrowUp" ? -1 : 1)];
        if (other) { event.preventDefault(); other.querySelector("[data-step-text]").focus(); }
        return;
      }
      if (!target.matches("[data-chips] input") || event.altKey) return;
      var chips = shownChips(row), k = chips.indexOf(target);
      var digit = /^Digit([1-9])$/.exec(event.code || "");
      if (event.key === "ArrowLeft" || event.key === "ArrowRight") {
        event.preventDefault();
        focusChip(row, k + (event.key === "ArrowLeft" ? -1 : 1));
      } else if (event.key === "Home" || event.key === "End") {
        event.preventDefault();
        focusChip(row, event.key === "Home" ? 0 : chips.length - 1);
      } else if (event.key === "ArrowUp" || event.key === "ArrowDown") {
        var next = rows[r + (event.key === "ArrowUp" ? -1 : 1)];
        event.preventDefault();
        if (next) focusChip(next, k);
      } else if (event.key === "a" || event.key === "A") {
        event.preventDefault();
        takeUnused(row);
        autoOutputs();
        changed(steps);
      } else if (digit) {
        // Digits tick VP1–VP9 of this step, Shift+digits CP1–CP9.
        var name = (event.shiftKey ? "CP" : "VP") + digit[1];
        var chip = chips.filter(function (c) { return c.value === name; })[0];
        event.preventDefault();
        if (chip) {
          chip.checked = !chip.checked;
          rove(row, chip);
          chip.focus();
          autoOutputs();
          changed(steps);
        }
      }
    });
    cpList.addEventListener("keydown", function (event) {
      if (event.altKey || !event.target.matches("input") || (event.key !== "ArrowUp" && event.key !== "ArrowDown")) return;
      var rows = shown(cpRows()), other = rows[rows.indexOf(event.target.closest("[data-cp-row]")) + (event.key === "ArrowUp" ? -1 : 1)];
      if (other) { event.preventDefault(); other.querySelector("input").focus(); }
    });

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
        rove(row, null);
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
      autoOutputs();
      hideEmptyCps();
      changed(steps);
    }

    root.querySelector("[data-add-cp]").addEventListener("click", function () {
      var spare = emptyCp();
      if (spare) { spare.querySelector("input").focus(); return; }
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
      var spare = emptyStep();
      if (spare) { focusChip(spare, 0); return; }
      var last = stepRows()[stepRows().length - 1];
      var row = last.cloneNode(true);
      var next = stepRows().reduce(function (m, r) { return Math.max(m, Number(r.dataset.stepRow) + 1); }, 0);
      row.dataset.stepRow = next;
      row.removeAttribute("data-start");
      row.querySelectorAll("input[type=checkbox]").forEach(function (b) { b.checked = false; b.removeAttribute("autofocus"); });
      row.querySelector("[data-out]").name = "step_out_" + next;
      row.querySelector("[data-out]").value = "";
      row.querySelector("[data-out]").setAttribute("data-auto", "");
      var text = row.querySelector("input[type=text]");
      text.name = "step_text_" + next;
      text.value = "";
      text.removeAttribute("data-auto");
      steps.appendChild(row);
      rebuild(null);
      focusChip(row, 0);
    });
    stepRows().forEach(function (row) { rove(row, null); });
    hideEmptyCps();
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

    function pick(k) {
      var radio = items[k].querySelector("input[name=current_vp]");
      radio.checked = true;
      radio.dispatchEvent(new Event("change", { bubbles: true }));
    }
    // After taking a suggestion the next premise still without a box becomes current.
    function nextWithout(i) {
      for (var k = 1; k <= items.length; k++) {
        var j = (i + k) % items.length;
        if (!box(j)) return j;
      }
      return i;
    }

    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || typing(event.target)) return;
      var key = event.key, i = current(), b = box(i);
      if (/^[1-9]$/.test(key) && Number(key) <= items.length) {
        event.preventDefault();
        pick(Number(key) - 1);
      } else if ((key === "a" || key === "A") && event.shiftKey) {
        event.preventDefault();
        items.forEach(function (_, k) { if (!box(k) && suggested(k)) setBox(k, suggested(k)); });
        pick(nextWithout(i));
        changed(form);
      } else if ((key === "a" || key === "A") && suggested(i)) {
        event.preventDefault();
        setBox(i, suggested(i));
        pick(nextWithout(i));
        changed(form);
      } else if ((key === "b" || key === "B") && !event.altKey) {
        // A box to start from: centred, half the image's width and height (a quarter of it).
        event.preventDefault();
        var W = img.naturalWidth, H = img.naturalHeight;
        setBox(i, { x: W / 4, y: H / 4, w: W / 2, h: H / 2 });
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
      // The whole image in view at first (the stage is capped by the screen's height); zoom in for small regions.
      var scroll = root.querySelector(".box-scroll");
      var room = scroll.clientWidth, tall = parseFloat(getComputedStyle(scroll).maxHeight) || 0;
      var fit = Math.min(room > 0 ? room / img.naturalWidth : 1, tall > 0 ? (tall - 2) / img.naturalHeight : 1);
      if (fit < 1) zoom = fit;
      paint();
    }
    if (img.complete && img.naturalWidth) start(); else img.addEventListener("load", start);
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
    document.querySelectorAll("[data-visargs-structure]").forEach(setupStructure);
    document.querySelectorAll("[data-visargs-grounding]").forEach(setupGrounding);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
