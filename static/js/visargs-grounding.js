// VisArgs grounding screen: one box per premise with the mouse or the keyboard — B makes a box,
// arrows move it, Shift+arrows size it, A / Shift+A take suggested boxes, digits pick the premise,
// + / − zoom.
(function () {
  "use strict";

  var typing = window.visargs.typing, changed = window.visargs.changed;

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
      if (!root.isConnected) return;  // a screen swapped out (app.js): its keys are gone with it
      if (!drag) return;
      var p = point(event), s = drag.start, b = drag.box, i = current();
      if (drag.mode === "draw") setBox(i, { x: Math.min(s.x, p.x), y: Math.min(s.y, p.y), w: Math.abs(p.x - s.x), h: Math.abs(p.y - s.y) });
      else if (drag.mode === "move") setBox(i, { x: b.x + p.x - s.x, y: b.y + p.y - s.y, w: b.w, h: b.h });
      else setBox(i, { x: b.x, y: b.y, w: b.w + p.x - s.x, h: b.h + p.y - s.y });
    });
    window.addEventListener("mouseup", function () {
      if (!root.isConnected) return;  // a screen swapped out (app.js): its keys are gone with it
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
      if (!root.isConnected) return;  // a screen swapped out (app.js): its keys are gone with it
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
      } else if ((key === "b" || key === "B") && !event.altKey && !b) {
        // A box to start from: centred, half the image's width and height (a quarter of it).
        // Only for a premise without one, so that a stray B never undoes a drawn box.
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

  function init() { document.querySelectorAll("[data-visargs-grounding]").forEach(setupGrounding); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
  document.addEventListener("vlcurate:screen", init);  // the next screen, swapped in (app.js)
})();
