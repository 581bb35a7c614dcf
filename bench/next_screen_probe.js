// Injected before the app's scripts on every page (bench/next_screen_bench.py and its browser test):
// the submitting key's time, and the first frame after the next screen is set up and focused: after
// app.js swapped it in ("vlcurate:swapped"), or after a page load's handlers where the screen came
// as a new page; window.__waited is what the annotator waited, window.__parts where it went.
document.addEventListener("keydown", (e) => {
  if (e.key === "Enter") sessionStorage.setItem("submitAt", String(performance.timeOrigin + performance.now()));
}, true);
window.addEventListener("load", () => requestAnimationFrame(() => {
  const at = sessionStorage.getItem("submitAt");
  if (!at) return;
  const nav = performance.getEntriesByType("navigation")[0], start = performance.timeOrigin;
  window.__waited = start + performance.now() - Number(at);
  // Where the wait went: the submit and its redirects, the screen's response, the page itself.
  window.__parts = [start + nav.redirectEnd - Number(at) || start - Number(at), nav.responseEnd - nav.redirectEnd,
                    nav.domContentLoadedEventEnd - nav.responseEnd, performance.now() - nav.domContentLoadedEventEnd];
  sessionStorage.removeItem("submitAt");
}));
document.addEventListener("vlcurate:swapped", () => requestAnimationFrame(() => {
  const at = sessionStorage.getItem("submitAt");
  if (!at) return;
  const mark = (name) => performance.getEntriesByName(name).at(-1).startTime + performance.timeOrigin;
  const now = performance.timeOrigin + performance.now();
  window.__waited = now - Number(at);
  // Key to request, request to answer (the server's work and the transfer), swap and set-up, frame.
  window.__parts = [mark("vlcurate:send") - Number(at), mark("vlcurate:answered") - mark("vlcurate:send"),
                    mark("vlcurate:swapped") - mark("vlcurate:answered"), now - mark("vlcurate:swapped")];
  window.__swapped = true;
  sessionStorage.removeItem("submitAt");
}));
// The next item's images, named in the screen itself: window.__ahead once the browser fetched them.
function waitAhead() {
  const links = [...document.querySelectorAll("link[rel=prefetch]")];
  const done = () => links.every((l) => performance.getEntriesByName(l.href).some((x) => x.responseEnd > 0));
  const poll = () => (done() ? (window.__ahead = true) : setTimeout(poll, 10));
  poll();
}
window.addEventListener("load", waitAhead);
document.addEventListener("vlcurate:swapped", waitAhead);
