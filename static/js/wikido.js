// WikiDO verify screen: a deletion-first caption editor. Click a word to strike it, shift-click to
// strike a span (a click chooses Hallucinated). Once Hallucinated: a word's number jumps the frame
// to it, Shift + a number strikes from the frame through that word, ←/→ move one token as the caption
// reads (in a right-to-left caption, laid out right to left by its dir="auto", ← goes on), X or Space
// strikes, Shift+X strikes up to the last struck word, Z undoes. A (a data-key button) strikes the
// model's underlined words, choosing Hallucinated. F shows the image full size. The text field takes
// insertions and substitutions; once typed in, it wins until "Back to striking words". A caption a model
// rewrote (data-drafted) fills the field the same way until A strikes the underlined words instead.
// C / H / W (verdicts), A, Enter and S come from app.js.
(function () {
  "use strict";

  // The server's tokens (tokenedits.py): letters and digits with the marks written on them.
  var TOKEN = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*(?:['’.\-][\p{L}\p{N}][\p{L}\p{N}\p{M}]*)*|[^\w\s]|_/gu;

  function typing(target) {
    var tag = target && target.tagName ? target.tagName.toLowerCase() : "";
    return tag === "textarea" || tag === "select" || (tag === "input" && target.type === "text");
  }

  function setup(root) {
    var form = root.closest("form");
    var line = root.querySelector("[data-tokens]");
    var spans = Array.prototype.slice.call(line.querySelectorAll(".tok"));
    var rtl = getComputedStyle(line).direction === "rtl";
    var field = root.querySelector("[data-caption-field]");
    var preview = root.querySelector("[data-preview]");
    var restart = root.querySelector("[data-restart]");
    var struck = spans.map(function () { return false; });
    var history = [];
    var cursor = 0;
    var anchor = null;
    var manual = false;
    var drafted = field.hasAttribute("data-drafted"), typed = false;
    var words = [];  // token index of word n + 1
    spans.forEach(function (s, i) { if (s.dataset.n) words.push(i); });
    var buffer = "", striking = false, timer = null;

    function hallucinated() {
      var v = form.querySelector("input[name=verdict]:checked");
      return v && v.value === "hallucinated";
    }

    function text() {
      // Kept words joined with a space wherever the original had any between them.
      var out = "", gap = false, first = true;
      spans.forEach(function (s, i) {
        if (!struck[i]) {
          // No space before closing punctuation or after an opening mark, as the server joins tokens.
          if (!first && gap && !/^[,.;:!?)\]}%'’”،؛؟]$/.test(s.textContent) && !/[(\[{“$]$/.test(out)) out += " ";
          out += s.textContent;
          first = false;
          gap = false;
        }
        if (s.dataset.space === "1") gap = true;
      });
      return out;
    }

    function paint(fromStrikes) {
      spans.forEach(function (s, i) {
        s.classList.toggle("struck", struck[i]);
        s.classList.toggle("cursor", i === cursor && hallucinated() && !manual);
      });
      if (fromStrikes && !manual) {
        field.value = text();
        field.dispatchEvent(new Event("input", { bubbles: true }));
      }
      var n = struck.filter(Boolean).length;
      preview.textContent = manual ? (drafted && !typed ? "The model's rewritten caption: the text field is what is stored."
        : "Edited by hand: the text field is what is stored.") : n ? n + " word" + (n > 1 ? "s" : "") + " struck." : "";
      line.classList.toggle("disabled", manual);
      restart.hidden = !manual;
      if (hallucinated() && !manual) reveal(spans[cursor]);
    }

    // A long caption scrolls in its own box: the framed word is kept in view there (only there: the
    // screen around it stays put).
    function reveal(span) {
      if (!span || line.scrollHeight <= line.clientHeight) return;
      var box = line.getBoundingClientRect(), at = span.getBoundingClientRect();
      if (at.top < box.top) line.scrollTop -= box.top - at.top;
      else if (at.bottom > box.bottom) line.scrollTop += at.bottom - box.bottom;
    }

    function remember() { history.push({ struck: struck.slice(), anchor: anchor }); }

    function choose(verdict) {
      var radio = form.querySelector('input[name=verdict][value="' + verdict + '"]');
      if (radio.checked) return;
      radio.checked = true;
      radio.dispatchEvent(new Event("change", { bubbles: true }));
    }

    function strikeRange(from, to) {
      remember();
      for (var k = Math.min(from, to); k <= Math.max(from, to); k++) struck[k] = true;
      anchor = to;
      cursor = to;
      paint(true);
    }

    function flushNumber() {
      clearTimeout(timer);
      timer = null;
      var n = Number(buffer), strikeTo = striking;
      buffer = "";
      striking = false;
      if (!(n >= 1 && n <= words.length) || manual) return;
      if (strikeTo) strikeRange(cursor, words[n - 1]);
      else { cursor = words[n - 1]; paint(false); }
    }

    // The model's underlined words, struck at once (choosing Hallucinated if needed).
    function acceptSuggestion() {
      choose("hallucinated");
      if (manual && (typed || !drafted)) return;
      manual = false;  // a rewritten caption nobody typed in gives way to the underlined words
      var marked = spans.map(function (s) { return s.classList.contains("unsupported"); });
      if (!marked.some(function (m, i) { return m && !struck[i]; })) return;
      remember();
      marked.forEach(function (m, i) { if (m) struck[i] = true; });
      cursor = marked.lastIndexOf(true);
      anchor = cursor;
      paint(true);
    }

    function strike(i, span) {
      if (manual) return;
      remember();
      if (span && anchor !== null) {
        var lo = Math.min(anchor, i), hi = Math.max(anchor, i);
        for (var k = lo; k <= hi; k++) struck[k] = true;
      } else {
        struck[i] = !struck[i];
      }
      anchor = i;
      cursor = i;
      paint(true);
    }

    // A draft or a re-shown form: recover the strikes when the text is the caption minus words.
    (function restore() {
      var words = field.value.match(TOKEN) || [];
      var j = 0;
      spans.forEach(function (s, i) {
        if (j < words.length && words[j] === s.textContent) { j++; } else { struck[i] = true; }
      });
      if (j < words.length) { struck = spans.map(function () { return false; }); manual = true; }
    })();

    spans.forEach(function (s, i) {
      s.addEventListener("click", function (event) {
        choose("hallucinated");
        strike(i, event.shiftKey);
      });
    });
    field.addEventListener("input", function (event) {
      if (event.isTrusted) { manual = true; typed = true; paint(false); }
    });
    restart.addEventListener("click", function () {
      manual = false;
      paint(true);
    });
    form.addEventListener("change", function (event) {
      if (event.target.name === "verdict") {
        if (hallucinated()) cursor = 0;
        paint(false);
      }
    });
    var accept = root.querySelector("[data-accept]");
    if (accept) accept.addEventListener("click", acceptSuggestion);

    var image = root.querySelector(".wikido-image a.full-size");
    function openImage(event) {
      if (!image || !window.vlcurateFullView) return;
      if (event) event.preventDefault();
      window.vlcurateFullView.open(image.getAttribute("href"), image.querySelector("img").alt + " at full size");
    }
    if (image) image.addEventListener("click", openImage);

    document.addEventListener("keydown", function (event) {
      if (!root.isConnected) return;  // a screen swapped out (app.js): its keys are gone with it
      if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
      var key = event.key;
      if (key === "f" || key === "F") {
        event.preventDefault();
        openImage();
        return;
      }
      if (!hallucinated() || manual) return;
      // Digits by their key position, so Shift + a digit is one too (whatever character it types).
      var digit = /^(?:Digit|Numpad)([0-9])$/.exec(event.code || "");
      if (digit) {
        event.preventDefault();
        if (buffer === "") striking = event.shiftKey;
        buffer += digit[1];
        // Wait for a second digit only while one could still name a word.
        if (Number(buffer) * 10 > words.length || buffer.length >= String(words.length).length) flushNumber();
        else { clearTimeout(timer); timer = setTimeout(flushNumber, 600); }
        return;
      }
      if (key === "ArrowRight" || key === "ArrowLeft") {
        event.preventDefault();
        var onward = (key === "ArrowRight") !== rtl;  // the arrow pointing the way the caption reads goes on
        cursor = Math.max(0, Math.min(spans.length - 1, cursor + (onward ? 1 : -1)));
        paint(false);
      } else if (key === "x" || key === "X" || key === " ") {
        event.preventDefault();
        strike(cursor, event.shiftKey);
      } else if (key === "z" || key === "Z") {
        event.preventDefault();
        if (history.length) {
          var last = history.pop();
          struck = last.struck;
          anchor = last.anchor;
          paint(true);
        }
      }
    });
    paint(false);
  }

  function init() { document.querySelectorAll("[data-wikido]").forEach(setup); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
  document.addEventListener("vlcurate:screen", init);  // the next screen, swapped in (app.js)
})();
