/* HIT pages: fill answer boxes by selecting words of the sentence, check typed answers, avoid double submits. */
(function () {
  "use strict";
  var sentence = document.getElementById("sentence");
  var form = document.getElementById("hit-form");
  var active = null;      // the answer box that receives selections
  var anchor = null;      // first token of a shift-click range

  function normalise(text) { return text.replace(/\s+/g, " ").trim(); }

  if (sentence) {
    var text = sentence.getAttribute("data-text");
    var plain = normalise(text);
    var answers = Array.prototype.slice.call(document.querySelectorAll("input.answer"));

    var check = function (input) {
      var value = normalise(input.value);
      input.classList.toggle("mismatch", value !== "" && plain.indexOf(value) === -1);
      input.title = input.classList.contains("mismatch") ? "Not a piece of the sentence" : "";
    };
    answers.forEach(function (input) {
      input.addEventListener("focus", function () {
        answers.forEach(function (other) { other.classList.remove("receiving"); });
        active = input; anchor = null; input.classList.add("receiving");
      });
      input.addEventListener("input", function () { check(input); });
      check(input);
    });

    var fill = function (start, end) {
      if (!active) {
        active = answers.filter(function (i) { return !i.disabled && i.value === ""; })[0] || null;
        if (!active) { return; }
      }
      active.value = text.slice(start, end);
      check(active);
      active.dispatchEvent(new Event("input", { bubbles: true }));
    };

    sentence.addEventListener("click", function (event) {
      var tok = event.target.closest(".tok");
      if (!tok || (window.getSelection && String(window.getSelection()).length > 1)) { return; }
      var start = +tok.getAttribute("data-start"), end = +tok.getAttribute("data-end");
      if (event.shiftKey && anchor) {
        fill(Math.min(anchor.start, start), Math.max(anchor.end, end));
      } else {
        anchor = { start: start, end: end };
        fill(start, end);
      }
    });

    sentence.addEventListener("mouseup", function () {
      var selection = window.getSelection ? window.getSelection() : null;
      if (!selection || selection.isCollapsed) { return; }
      var toks = Array.prototype.filter.call(sentence.querySelectorAll(".tok"), function (tok) {
        return selection.containsNode(tok, true);
      });
      if (toks.length) {
        fill(+toks[0].getAttribute("data-start"), +toks[toks.length - 1].getAttribute("data-end"));
        selection.removeAllRanges();
      }
    });

    // Keep the receiving box when the mouse goes down on the sentence (it would blur the input).
    sentence.addEventListener("mousedown", function (event) { if (active) { event.preventDefault(); } });
  }

  if (form) {
    form.addEventListener("submit", function (event) {
      if (form.dataset.sent === "1") { event.preventDefault(); return; }
      form.dataset.sent = "1";
      window.setTimeout(function () { form.dataset.sent = ""; }, 4000);
    });
  }
})();
