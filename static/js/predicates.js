/* Predicate editing: selecting words in a sentence fills that sentence's "add" form with the span and its offset;
   after removing, adding or undoing, the page comes back where the researcher was (not at the top). */
(function () {
  "use strict";
  var key = "predicates-scroll:" + window.location.pathname;
  var store = null;
  try { store = window.sessionStorage; } catch (e) { store = null; }
  if (store && store.getItem(key) !== null) {
    var y = +store.getItem(key);
    store.removeItem(key);
    window.scrollTo(0, y);
  }
  document.addEventListener("submit", function () { if (store) { store.setItem(key, String(window.scrollY)); } });
  document.addEventListener("mouseup", function () {
    var selection = window.getSelection();
    if (!selection || selection.isCollapsed || !selection.rangeCount) { return; }
    var range = selection.getRangeAt(0);
    var node = range.startContainer.nodeType === 1 ? range.startContainer : range.startContainer.parentNode;
    var sentence = node.closest(".selectable-text");
    if (!sentence || !sentence.contains(range.endContainer)) { return; }
    var before = document.createRange();
    before.setStart(sentence, 0);
    before.setEnd(range.startContainer, range.startOffset);
    var raw = range.toString();
    // Trim the selection to whole characters without surrounding spaces; keep the offset in step.
    var lead = raw.length - raw.replace(/^\s+/, "").length;
    var span = raw.trim();
    if (!span) { return; }
    var form = sentence.parentNode.querySelector("form.add-predicate");
    if (!form) { return; }
    form.elements.span.value = span;
    form.elements.start.value = before.toString().length + lead;
    form.elements.span.focus();
  });
  // Typing by hand: the offset no longer applies, the server finds the text.
  document.querySelectorAll("form.add-predicate input[name=span]").forEach(function (input) {
    input.addEventListener("input", function () { input.form.elements.start.value = ""; });
  });
})();
