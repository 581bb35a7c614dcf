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

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.querySelector("[data-annotation-form]");
    if (!form || form.dataset.enter === "focused") return;
    var active = document.activeElement;
    if (!active || active === document.body) focusItem(form);
  });

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

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.matches && form.matches("[data-annotation-form]")) {
      form.dataset.sent = "1";
      if (window.htmx) htmx.trigger(form, "htmx:abort");  // a draft save in flight must not race the submit
      form.querySelectorAll("button[type=submit]").forEach(function (b) { b.setAttribute("aria-busy", "true"); });
    }
  });

  // The key help stays as the annotator left it, open or closed, from one screen to the next.
  document.querySelectorAll("[data-key-help]").forEach(function (help) {
    try {
      if (localStorage.getItem("vlcurate.keyHelp") === "open") help.open = true;
      help.addEventListener("toggle", function () { localStorage.setItem("vlcurate.keyHelp", help.open ? "open" : "closed"); });
    } catch (e) { /* storage refused: the help starts closed */ }
  });

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
  var draftForm = document.querySelector("[data-annotation-form][hx-post]");
  if (draftForm) {
    var state = document.getElementById("draft-state");
    var dirty = false;
    var markUnsaved = function () {
      if (draftForm.dataset.sent) return;
      dirty = true;
      if (state) state.innerHTML = '<small class="draft-state unsaved">Unsaved changes…</small>';
    };
    draftForm.addEventListener("input", markUnsaved);
    draftForm.addEventListener("change", markUnsaved);
    document.body.addEventListener("htmx:beforeRequest", function (event) {
      if (event.detail.elt === draftForm && draftForm.dataset.sent) event.preventDefault();
    });
    var isDraft = function (detail) {
      return detail.pathInfo && /\/draft$/.test(detail.pathInfo.requestPath || "");
    };
    document.body.addEventListener("htmx:afterRequest", function (event) {
      if (isDraft(event.detail) && event.detail.successful) dirty = false;
    });
    document.body.addEventListener("htmx:beforeSwap", function (event) {
      if (isDraft(event.detail) && event.detail.xhr.status === 409) {
        event.detail.shouldSwap = true;  // "this item was already submitted", on screen
        event.detail.isError = false;
        dirty = false;
      }
    });
    var flush = function () {
      if (!dirty || draftForm.dataset.sent) return;
      dirty = false;
      fetch(draftForm.getAttribute("hx-post"), {
        method: "POST", body: new URLSearchParams(new FormData(draftForm)), keepalive: true, credentials: "same-origin",
        headers: { "X-CSRF-Token": document.body.dataset.csrf || "", "HX-Request": "true" },
      });
    };
    document.addEventListener("visibilitychange", function () { if (document.visibilityState === "hidden") flush(); });
    window.addEventListener("pagehide", flush);
  }
})();
