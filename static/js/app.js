// vlcurate page behaviour: CSRF header on htmx requests, and keyboard control of annotation screens.
// Elements opt in with data-key="<key>": radios and checkboxes are chosen, buttons are pressed.
(function () {
  "use strict";

  // A page that answers a form (the next item after a submit) names its own address: the browser
  // shows it instead of the POST's, and a reload asks for the page again instead of re-posting.
  var own = document.body.dataset.url;
  if (own && own !== location.pathname) history.replaceState(null, "", own);

  document.addEventListener("htmx:configRequest", function (event) {
    event.detail.headers["X-CSRF-Token"] = document.body.dataset.csrf || "";
  });

  function typing(target) {
    if (!target || !target.tagName) return false;
    var tag = target.tagName.toLowerCase();
    if (tag === "textarea" || target.isContentEditable) return true;
    if (tag === "input") {
      var type = (target.type || "text").toLowerCase();
      return ["radio", "checkbox", "button", "submit"].indexOf(type) < 0;
    }
    return tag === "select";
  }

  function press(el) {
    if (el.type === "radio" || el.type === "checkbox") {
      el.checked = el.type === "radio" ? true : !el.checked;
      el.focus();
      el.dispatchEvent(new Event("change", { bubbles: true }));
    } else {
      el.click();
    }
  }

  document.addEventListener("keydown", function (event) {
    var form = document.querySelector("[data-annotation-form]");
    if (!form || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Enter") {
      var focused = event.target && event.target.tagName ? event.target : document.body;
      var tag = focused.tagName.toLowerCase();
      if (tag === "textarea") return;
      // A focused link, button or disclosure does what it says (the browser activates it): Enter
      // on Skip skips, on a header link navigates. Only the Submit button, the form's own
      // answer controls, or no particular focus submit; focus outside the form submits nothing.
      var control = tag === "a" || tag === "summary" || tag === "button" ||
        (tag === "input" && ["button", "submit", "reset", "image"].indexOf((focused.type || "").toLowerCase()) >= 0);
      if (control && focused.id !== "submit-button") return;
      if (focused !== document.body && !form.contains(focused)) return;
      // A review decision is taken only by its own control or key, never by Enter from nowhere.
      if (form.dataset.enter === "focused" && (focused === document.body || focused.id !== "submit-button")) {
        event.preventDefault();
        return;
      }
      event.preventDefault();
      if (form.dataset.sent) return;
      if (form.reportValidity()) {
        form.dataset.sent = "1";
        form.requestSubmit(document.getElementById("submit-button"));
      }
      return;
    }
    if (typing(event.target)) return;
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    var target = form.querySelector('[data-key="' + CSS.escape(key) + '"]');
    if (target) {
      event.preventDefault();
      press(target);
    }
  });

  // Focus starts on the screen's first control (one marked `autofocus`, else the first keyed
  // answer, a chosen radio before its unchosen siblings), so keys and Enter act on the item at
  // once; a screen with keys of its own and neither keeps its own focus. Not on a review screen:
  // there Enter must do nothing until the reviewer chooses.
  function firstControl(form) {
    var el = form.querySelector("[autofocus]") || form.querySelector("input[data-key]:not([disabled])");
    if (el && el.type === "radio" && !el.checked) {
      var chosen = form.querySelector('input[type=radio][name="' + CSS.escape(el.name) + '"]:checked');
      if (chosen) el = chosen;
    }
    return el;
  }

  function focusItem(form) {
    var el = firstControl(form);
    if (el) el.focus({ preventScroll: true });
  }

  // At load, and after a swap: unless the screen's own script already focused something.
  function focusScreen() {
    var form = document.querySelector("[data-annotation-form]");
    if (!form || form.dataset.enter === "focused") return;
    var active = document.activeElement;
    if (!active || active === document.body) focusItem(form);
  }
  document.addEventListener("DOMContentLoaded", focusScreen);

  document.addEventListener("click", function (event) {
    var skip = event.target.closest && event.target.closest("[data-skip]");
    var form = document.querySelector("[data-annotation-form]");
    if (!skip || !form) return;
    event.preventDefault();
    if (form.dataset.enter === "focused") {  // to the decisions, none of them taken by the next Enter
      form.tabIndex = -1;
      form.focus();
    } else {
      focusItem(form);
    }
  });

  // Active time on the item (docs/work-log.md): time with the page visible and focused, each gap
  // between two inputs (keys, pointer, wheel, typing) counted up to 30 s, so an idle spell adds no
  // more than that. It starts from what the item's drafts gathered (a reloaded or closed tab loses
  // none), goes with each draft save and with the submit in the hidden `active_seconds` field.
  var IDLE_MS = 30000, activeMs = 0, savedMs = 0, markAt = performance.now();
  var pageFocused = document.hasFocus(), pageVisible = document.visibilityState === "visible";
  function activeField() {
    var form = document.querySelector("[data-annotation-form]");
    return form && form.elements.active_seconds;
  }
  function creditActive() {
    var now = performance.now();
    if (pageFocused && pageVisible) activeMs += Math.min(now - markAt, IDLE_MS);
    markAt = now;
    var field = activeField();
    if (field) field.value = (activeMs / 1000).toFixed(1);
  }
  ["keydown", "pointerdown", "pointermove", "wheel", "input"].forEach(function (type) {
    document.addEventListener(type, creditActive, { capture: true, passive: true });
  });
  window.addEventListener("focus", function () { creditActive(); pageFocused = true; });
  window.addEventListener("blur", function () { creditActive(); pageFocused = false; });
  document.addEventListener("visibilitychange", function () {
    creditActive();
    pageVisible = document.visibilityState === "visible";
  }, { capture: true });
  function setUpActive() {  // a new screen counts on from its item's drafts
    var field = activeField();
    activeMs = savedMs = field ? 1000 * (parseFloat(field.dataset.base) || 0) : 0;
    markAt = performance.now();
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form.matches && form.matches("[data-annotation-form]"))) return;
    if (form.dataset.swapping) { event.preventDefault(); return; }  // the answer is on its way
    creditActive();
    form.dataset.sent = "1";
    if (window.htmx) htmx.trigger(form, "htmx:abort");  // a draft save in flight must not race the submit
    form.querySelectorAll("button[type=submit]").forEach(function (b) { b.setAttribute("aria-busy", "true"); });
    if (form.dataset.enter !== "focused" && window.fetch && window.DOMParser) {
      event.preventDefault();
      sendAndSwap(form, event.submitter);
    }
  });

  // The next screen without a page load: an annotation screen's submit or skip is sent with fetch,
  // and its answer (the next item's screen, the same screen with an error, or the page that says
  // nothing is left) takes the place of this page's body. The browser then neither tears down the
  // page nor parses styles and scripts again; the address and history are as after a real POST:
  // the new screen's own address is pushed, and Back (or Forward) loads the address it finds.
  // Anything else (a page needing other styles or scripts, a failed request) falls back to a real
  // navigation, so the worst case is the plain page load (the submit is idempotent by its key).
  var loadedScripts = {}, loadedStyles = {};
  var shown = own || location.pathname + location.search;  // the address of the page on screen
  document.querySelectorAll("script[src]").forEach(function (el) { loadedScripts[el.src] = true; });
  document.querySelectorAll("link[rel=stylesheet]").forEach(function (el) { loadedStyles[el.href] = true; });

  function absolute(path) { return new URL(path, location.href).href; }

  function sendAndSwap(form, submitter) {
    var action = (submitter && submitter.getAttribute("formaction")) || form.getAttribute("action");
    form.dataset.swapping = "1";
    performance.mark("vlcurate:send");
    fetch(action, {
      method: "POST", body: new URLSearchParams(new FormData(form)), credentials: "same-origin",
      headers: { "Accept": "text/html" },
    }).then(function (response) {
      return response.text().then(function (html) {
        performance.mark("vlcurate:answered");
        var type = response.headers.get("content-type") || "";
        var doc = type.indexOf("text/html") === 0 ? new DOMParser().parseFromString(html, "text/html") : null;
        var landed = new URL(response.url);  // where a redirect led (the page that says nothing is left)
        var url = (doc && doc.body && doc.body.dataset.url) || (response.redirected ? landed.pathname + landed.search : null);
        if (!doc || !swapIn(doc, url)) location.assign(url || location.href);
      });
    }).catch(function () {
      // No answer (the network, a restarting server): post the form the plain way, same key.
      delete form.dataset.swapping;
      form.setAttribute("action", action);
      HTMLFormElement.prototype.submit.call(form);
    });
  }

  function swapIn(doc, url) {
    var foreign = function (list, attr, known) {
      return Array.prototype.some.call(list, function (el) { return !known[absolute(el.getAttribute(attr))]; });
    };
    if (!doc.body || foreign(doc.querySelectorAll("script[src]"), "src", loadedScripts) ||
        foreign(doc.querySelectorAll("link[rel=stylesheet]"), "href", loadedStyles)) return false;
    document.title = doc.title;
    Object.keys(document.body.dataset).forEach(function (k) { delete document.body.dataset[k]; });
    Object.keys(doc.body.dataset).forEach(function (k) { document.body.dataset[k] = doc.body.dataset[k]; });
    // Dialogs the scripts keep for the whole page (the full-size image view) stay.
    var kept = Array.prototype.filter.call(document.body.children, function (el) { return el.matches("[data-persist]"); });
    // A copy first: adopting a node takes it out of the live list of the parsed body.
    var nodes = Array.prototype.slice.call(doc.body.childNodes).map(function (n) { return document.adoptNode(n); });
    document.body.replaceChildren.apply(document.body, nodes.concat(kept));
    if (url && url !== location.pathname + location.search) history.pushState(null, "", url);
    shown = location.pathname + location.search;
    window.scrollTo(0, 0);
    if (window.htmx) htmx.process(document.body);
    // The screen's scripts set up their part of the new screen, then focus goes to its first control.
    document.dispatchEvent(new CustomEvent("vlcurate:screen"));
    setUpScreen();
    focusScreen();
    performance.mark("vlcurate:swapped");
    document.dispatchEvent(new CustomEvent("vlcurate:swapped"));
    return true;
  }

  // Back or Forward to an address whose page this document does not show (an address a swap pushed,
  // here or in the document this one reloaded): the page there is loaded as it is now.
  window.addEventListener("popstate", function () {
    if (location.pathname + location.search !== shown) location.reload();
  });

  // The key help stays as the annotator left it, open or closed, from one screen to the next.
  function setUpKeyHelp() {
    document.querySelectorAll("[data-key-help]").forEach(function (help) {
      try {
        if (localStorage.getItem("vlcurate.keyHelp") === "open") help.open = true;
        help.addEventListener("toggle", function () { localStorage.setItem("vlcurate.keyHelp", help.open ? "open" : "closed"); });
      } catch (e) { /* storage refused: the help starts closed */ }
    });
  }

  // A submitted screen shown again from the back-forward cache asks the server anew: it then says
  // the item was submitted and takes a revision, instead of a form that can no longer send.
  window.addEventListener("pageshow", function (event) {
    var form = document.querySelector("[data-annotation-form]");
    if (event.persisted && form && form.dataset.sent) location.reload();
  });

  // Drafts: nothing typed is lost. The screen says "unsaved" from the first change until the
  // server confirms a save; a hidden or closing page sends what is unsaved at once (keepalive, on
  // pagehide: no beforeunload listener, which would delay every navigation and the page cache);
  // a submitted form cancels draft saves still waiting; a refused save shows its message.
  // `draft` is the screen shown now (a swap brings a new one); the listeners below outlive screens.
  var draft = null;
  function setUpDrafts() {
    var form = document.querySelector("[data-annotation-form][hx-post]");
    draft = form ? { form: form, dirty: false } : null;
    if (!form) return;
    var markUnsaved = function () {
      if (form.dataset.sent || !draft || draft.form !== form) return;
      draft.dirty = true;
      var state = document.getElementById("draft-state");
      if (state) state.innerHTML = '<small class="draft-state unsaved">Unsaved changes…</small>';
    };
    form.addEventListener("input", markUnsaved);
    form.addEventListener("change", markUnsaved);
  }
  var isDraft = function (detail) {
    return detail.pathInfo && /\/draft$/.test(detail.pathInfo.requestPath || "");
  };
  document.body.addEventListener("htmx:configRequest", function (event) {
    if (!draft || event.detail.elt !== draft.form || !/\/draft$/.test(event.detail.path || "")) return;
    creditActive();
    draft.sending = activeMs;
    event.detail.parameters.active_seconds = (activeMs / 1000).toFixed(1);
  });
  document.body.addEventListener("htmx:beforeRequest", function (event) {
    if (draft && event.detail.elt === draft.form && draft.form.dataset.sent) event.preventDefault();
  });
  document.body.addEventListener("htmx:afterRequest", function (event) {
    if (draft && event.detail.elt === draft.form && isDraft(event.detail) && event.detail.successful) {
      draft.dirty = false;
      savedMs = Math.max(savedMs, draft.sending || 0);
    }
  });
  document.body.addEventListener("htmx:beforeSwap", function (event) {
    if (isDraft(event.detail) && event.detail.xhr.status === 409) {
      event.detail.shouldSwap = true;  // "this item was already submitted", on screen
      event.detail.isError = false;
      if (draft) draft.dirty = false;
    }
  });
  // Sent when something is unsaved: a change, or a second or more of active time (the draft then
  // holds what the screen shows, which the screen would show anyway).
  var flush = function () {
    if (!draft || draft.form.dataset.sent) return;
    creditActive();
    if (!draft.dirty && activeMs - savedMs < 1000) return;
    draft.dirty = false;
    savedMs = activeMs;
    fetch(draft.form.getAttribute("hx-post"), {
      method: "POST", body: new URLSearchParams(new FormData(draft.form)), keepalive: true, credentials: "same-origin",
      headers: { "X-CSRF-Token": document.body.dataset.csrf || "", "HX-Request": "true" },
    });
  };
  document.addEventListener("visibilitychange", function () { if (document.visibilityState === "hidden") flush(); });
  window.addEventListener("pagehide", flush);

  // What each screen sets up, at load and after a swap.
  function setUpScreen() {
    setUpActive();
    setUpKeyHelp();
    setUpDrafts();
  }
  setUpScreen();
})();
