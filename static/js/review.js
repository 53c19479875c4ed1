/* Review page: a second bonus to the same assignment asks first; after an action the page comes back where
   the researcher was (the server redirects to the same page, which would otherwise open at the top). */
(function () {
  "use strict";
  var key = "review-scroll:" + window.location.pathname;
  var store = null;
  try { store = window.sessionStorage; } catch (e) { store = null; }

  if (store) {
    var saved = store.getItem(key);
    if (saved !== null) {
      store.removeItem(key);
      window.scrollTo(0, +saved);
    }
  }

  // Rejecting asks what becomes of the data (kept or excluded): the choice shows with "Reject" chosen.
  function showDataChoice(select) {
    var choice = select.form && select.form.querySelector("[data-reject-only]");
    if (choice) { choice.hidden = select.value !== "reject"; }
  }
  Array.prototype.forEach.call(document.querySelectorAll(".review-form select[name=action]"), showDataChoice);
  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches(".review-form select[name=action]")) { showDataChoice(event.target); }
  });

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.classList.contains("review-form")) {
      var select = form.querySelector("select[name=action]");
      var already = parseFloat(select ? select.getAttribute("data-bonus") : "0") || 0;
      var typed = form.querySelector("input[name=amount]");
      var amount = typed ? typed.value : "";
      // "Approve" with an amount typed pays the bonus too, so it asks the same question.
      var confirmed = form.querySelector("input[name=confirm_second_bonus]");
      // Without JavaScript the researcher ticks "a second bonus"; with it, ticked or not, the page asks once.
      if (select && (select.value === "bonus" || select.value === "approve" && amount) && already > 0 && !(confirmed.type === "checkbox" && confirmed.checked)) {
        amount = amount || "?";
        var worker = form.getAttribute("data-worker") || form.closest("tr").children[2].textContent.trim();
        if (!window.confirm("This assignment already has a $" + already.toFixed(2) + " bonus. Pay " + worker + " a second bonus of $" + amount + "?")) {
          event.preventDefault();
          return;
        }
        if (confirmed.type === "checkbox") { confirmed.checked = true; } else { confirmed.value = "1"; }
      }
    }
    if (store) { store.setItem(key, String(window.scrollY)); }
  });
})();
