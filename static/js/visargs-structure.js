// VisArgs structure screen: step chips are one Tab stop per step (arrows walk them, A takes every
// premise no step uses yet, digits tick VPs, Shift+digits CPs); a step's conclusion follows the
// rows until chosen, and a step concluding C says the conclusion until written otherwise.
(function () {
  "use strict";

  var changed = window.visargs.changed;

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

  function init() { document.querySelectorAll("[data-visargs-structure]").forEach(setupStructure); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
  document.addEventListener("vlcurate:screen", init);  // the next screen, swapped in (app.js)
})();
