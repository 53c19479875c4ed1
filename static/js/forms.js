/* Behaviour the pages once wrote inline (the Content-Security-Policy allows no inline script):
   data-autosubmit sends its form when changed; data-confirm asks before its button acts. */
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    var field = event.target;
    if (field.hasAttribute && field.hasAttribute("data-autosubmit") && field.form) { field.form.submit(); }
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-confirm]") : null;
    if (button && !window.confirm(button.getAttribute("data-confirm"))) { event.preventDefault(); }
  });
})();
