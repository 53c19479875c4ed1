/* The import check reads every file and runs spaCy over the references: say it is working (it took 11 s
   without a sign). A file of its own: the Content-Security-Policy allows no inline script. */
(function () {
  var form = document.getElementById("upload-form"), busy = document.getElementById("import-busy");
  if (!form || !busy) return;
  form.addEventListener("submit", function () {
    var started = Date.now(), button = document.getElementById("preview");
    busy.hidden = false;
    button.disabled = true;
    button.textContent = "Checking…";
    window.setInterval(function () {
      document.getElementById("import-elapsed").textContent = Math.round((Date.now() - started) / 1000) + " s";
    }, 1000);
  });
})();
