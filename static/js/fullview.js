// A full-size view of an image in a dialog: it opens at the image's real pixels (one image pixel
// per screen pixel), scrolls where the image is larger than the window, + and − zoom, 0 returns
// to real size, a click toggles fit-to-window, Escape closes. While it is open, keys go to it
// alone: the screen underneath (choices, Skip, Enter) sees none of them.
(function () {
  "use strict";

  var dialog, img, label, zoom = 1, fit = false;

  function build() {
    dialog = document.createElement("dialog");
    dialog.className = "full-view";
    dialog.setAttribute("data-full-view", "");
    dialog.setAttribute("data-persist", "");  // one dialog for the page: kept when the next screen is swapped in
    dialog.innerHTML =
      '<article class="full-view-box"><div class="full-view-bar"><button type="button" class="secondary small" data-close>Close <kbd>Esc</kbd></button>' +
      '<button type="button" class="secondary small" data-zoom="out" aria-label="Zoom out">−</button>' +
      '<span class="full-view-zoom" data-zoom-label></span>' +
      '<button type="button" class="secondary small" data-zoom="in" aria-label="Zoom in">+</button>' +
      '<strong class="full-view-title" data-title></strong><small class="muted">+ / − zoom · 0 real size · click fits</small></div>' +
      '<div class="full-view-scroll"><img alt=""></div></article>';
    document.body.appendChild(dialog);
    img = dialog.querySelector("img");
    label = dialog.querySelector("[data-zoom-label]");
    img.addEventListener("load", paint);
    img.addEventListener("click", function () {
      if (fit) { fit = false; zoom = 1; } else { fit = true; }
      paint();
    });
    dialog.addEventListener("click", function (event) {
      if (event.target === dialog || event.target.closest("[data-close]")) dialog.close();
      var z = event.target.closest("[data-zoom]");
      if (z) setZoom(z.dataset.zoom === "in" ? zoom * 1.5 : zoom / 1.5);
    });
    window.addEventListener("keydown", function (event) {
      if (!dialog.open) return;
      // The dialog owns the keyboard while open; Escape and Tab keep their native meaning.
      event.stopImmediatePropagation();
      if (event.key === "+" || event.key === "=") { event.preventDefault(); setZoom(zoom * 1.5); }
      else if (event.key === "-" || event.key === "_") { event.preventDefault(); setZoom(zoom / 1.5); }
      else if (event.key === "0") { event.preventDefault(); fit = false; setZoom(1); }
      else if (event.key === "f" || event.key === "F") { event.preventDefault(); dialog.close(); }
    }, true);
  }

  function setZoom(z) {
    zoom = Math.max(0.1, Math.min(16, z));
    fit = false;
    paint();
  }

  function paint() {
    if (!img.naturalWidth) return;
    var real = 1 / (window.devicePixelRatio || 1);
    if (fit) {
      var scale = Math.min(window.innerWidth * 0.9 / img.naturalWidth, (window.innerHeight * 0.8) / img.naturalHeight);
      zoom = scale / real;
    }
    img.style.width = Math.round(img.naturalWidth * real * zoom) + "px";
    img.style.height = Math.round(img.naturalHeight * real * zoom) + "px";
    label.textContent = Math.round(zoom * 100) + " %";
    dialog.dataset.zoom = String(zoom);
  }

  function open(src, alt) {
    if (!dialog) build();
    zoom = 1;
    fit = false;
    img.style.width = img.style.height = "";
    img.alt = alt || "Image at full size";
    dialog.querySelector("[data-title]").textContent = img.alt;
    if (img.getAttribute("src") !== src) img.src = src;
    dialog.showModal();
    paint();
    dialog.querySelector("[data-close]").focus();
  }

  window.vlcurateFullView = { open: open, isOpen: function () { return !!(dialog && dialog.open); } };
})();
