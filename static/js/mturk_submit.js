// The answers are stored on the platform already: the HIT page's browser draft can go, and MTurk is told at once
// (the button stays for browsers without JS).
(function () {
  "use strict";
  var form = document.getElementById("mturk-submit");
  try { window.localStorage.removeItem("hit-draft:" + form.getAttribute("data-draft")); } catch (e) { /* denied */ }
  form.submit();
})();
