// The answers are stored on the platform already: tell MTurk at once (the button stays for browsers without JS).
document.getElementById("mturk-submit").submit();
