/* An open HIT page: the time left as a countdown and the deadline in the worker's own time, and, without a
   reload, what happened to the HIT's campaign meanwhile (paused: still submit and be paid; cancelled: it can no
   longer be submitted). The page asks the HIT's status address every data-poll seconds and when shown again. */
(function () {
  "use strict";
  var form = document.getElementById("hit-form");
  var url = form ? form.getAttribute("data-status") : null;
  if (!url) { return; }
  var deadline = document.getElementById("deadline");
  var countdown = document.getElementById("countdown");
  var banner = document.getElementById("hit-status");
  var submit = document.getElementById("submit");
  var poll = Math.max(1, +(form.getAttribute("data-poll") || 30));
  var endsAt = null;   // by this browser's clock, from the seconds left the server counted (its clock may differ)
  var timeUp = false;

  function two(n) { return (n < 10 ? "0" : "") + n; }
  function showDeadline() {
    if (!deadline || endsAt === null) { return; }
    var at = new Date(endsAt);
    deadline.textContent = "due by " + at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) + " (your time)";
    deadline.title = at.toString();
  }
  function tick() {
    if (!countdown || endsAt === null) { return; }
    var left = Math.max(0, Math.round((endsAt - Date.now()) / 1000));
    var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
    countdown.textContent = left ? (h ? h + ":" + two(m) : m) + ":" + two(s) + " left" : "time is up";
    countdown.classList.toggle("urgent", left <= 120);
    if (!left && !timeUp) { timeUp = true; check(); }
  }
  function setLeft(seconds) {
    endsAt = Date.now() + seconds * 1000;
    showDeadline();
    tick();
  }
  function show(status) {
    if (typeof status.seconds_left === "number") { setLeft(status.seconds_left); }
    if (banner) {
      banner.textContent = status.notice || "";
      banner.hidden = !status.notice;
      banner.setAttribute("data-campaign", status.campaign || "");
    }
    if (submit) {
      submit.disabled = !status.can_submit;
      submit.title = status.can_submit ? "Ctrl+Enter (⌘+Enter)" : "This HIT can no longer be submitted";
    }
  }
  function check() {
    if (!window.fetch) { return; }
    window.fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" }, cache: "no-store" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (status) { if (status) { show(status); } })
      .catch(function () { /* offline for a moment: the next poll asks again */ });
  }

  if (deadline) { setLeft(+deadline.getAttribute("data-seconds-left") || 0); }
  window.setInterval(tick, 1000);
  window.setInterval(check, poll * 1000);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) { check(); } });
})();
