// "Copy" buttons of the invitation links (a campaign's "Invite workers" page).
document.querySelectorAll(".copy-link").forEach(function (button) {
  button.addEventListener("click", function () {
    var field = button.parentNode.querySelector(".invite-url");
    field.select();
    var done = function () { button.textContent = "Copied"; };
    if (navigator.clipboard && window.isSecureContext) { navigator.clipboard.writeText(button.dataset.url).then(done, function () { document.execCommand("copy"); done(); }); }
    else { document.execCommand("copy"); done(); }
  });
});
