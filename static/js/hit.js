/* HIT pages: fill the chosen answer box from words of the sentence (click, shift-click, drag or keyboard),
   check typed answers, keyboard shortcuts for verdicts, submit only on purpose (never on a stray Enter),
   a draft kept in the browser until the HIT is submitted, focus on the first error of a refused page. */
(function () {
  "use strict";
  var sentence = document.getElementById("sentence");
  var form = document.getElementById("hit-form");
  var hint = document.getElementById("selection-hint");
  var active = null;      // the answer box that receives picked words: the one the worker chose last
  var anchor = null;      // first token of a shift-click / shift-space range
  var dragged = false;    // a drag just filled the box: the click that ends it must not refill one word
  var tabbing = false;    // the focus is moving by Tab / Shift+Tab: passing through a box does not choose it
  var cameFrom = null;    // the box whose Tab (or Alt+Up) led into the sentence: Tab goes on after it

  function normalise(text) { return text.replace(/\s+/g, " ").trim(); }
  function isTyping(el) {
    return el && (el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && (el.type === "text" || el.type === "search")));
  }
  function say(message) { if (hint) { hint.textContent = message; } }
  function tabStops() {
    return Array.prototype.slice.call(document.querySelectorAll(
      "a[href], button, input, select, textarea, summary, [tabindex]"
    )).filter(function (el) {
      return !el.disabled && el.tabIndex >= 0 && el.type !== "hidden" && el.getClientRects().length > 0;
    });
  }

  var answers = Array.prototype.slice.call(document.querySelectorAll("input.answer"));
  var check = function () {};

  if (sentence) {
    var text = sentence.getAttribute("data-text");
    var plain = normalise(text);
    var toks = Array.prototype.slice.call(sentence.querySelectorAll(".tok"));

    check = function (input) {
      var value = normalise(input.value);
      input.classList.toggle("mismatch", value !== "" && plain.indexOf(value) === -1);
      input.title = input.classList.contains("mismatch") ? "Not a piece of the sentence" : "";
    };
    var setActive = function (input) {
      answers.forEach(function (other) { other.classList.remove("receiving"); other.removeAttribute("aria-describedby"); });
      if (active !== input) { anchor = null; }
      active = input;
      if (input) {
        input.classList.add("receiving");
        if (hint) { input.setAttribute("aria-describedby", "selection-hint"); }
        say("Words you pick go into " + input.getAttribute("aria-label").toLowerCase() +
            " (outlined). Alt+↑: to the sentence; Esc or Alt+↓: back to the box.");
      }
    };
    // A box is chosen by a click, by typing in it, or by going from it to the sentence; moving through the
    // boxes with Tab / Shift+Tab (on the way back to the sentence) leaves the choice alone.
    document.addEventListener("keydown", function (event) {
      if (["Shift", "Control", "Alt", "Meta"].indexOf(event.key) === -1) { tabbing = event.key === "Tab"; }
    }, true);
    document.addEventListener("keyup", function (event) { if (event.key === "Tab") { tabbing = false; } }, true);
    document.addEventListener("pointerdown", function () { tabbing = false; }, true);
    var toSentence = function (from) {
      if (from && answers.indexOf(from) !== -1 && !from.disabled) { setActive(from); }
      cameFrom = from || null;
      sentence.focus();
    };
    var backToBox = function () {
      if (active && !active.disabled) { active.focus(); }
    };
    answers.forEach(function (input) {
      input.addEventListener("focus", function () { if (!tabbing || !active) { setActive(input); } });
      input.addEventListener("input", function () { if (active !== input) { setActive(input); } check(input); });
      input.addEventListener("keydown", function (event) {
        if (event.altKey && event.key === "ArrowUp") { event.preventDefault(); toSentence(input); }
        else if (event.key === "Tab" && !event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey && input === active) {
          // The sentence sits right after the chosen box in the Tab order: forward Tab reaches it too.
          event.preventDefault();
          toSentence(input);
        }
      });
      check(input);
    });
    var fill = function (start, end) {
      if (!active || active.disabled) {
        say("Click in an answer box first, then pick words of the sentence.");
        return false;
      }
      active.value = text.slice(start, end);
      check(active);
      active.dispatchEvent(new Event("input", { bubbles: true }));
      return true;
    };
    var pick = function (tok, extend) {
      var start = +tok.getAttribute("data-start"), end = +tok.getAttribute("data-end");
      if (extend && anchor) {
        fill(Math.min(anchor.start, start), Math.max(anchor.end, end));
      } else if (fill(start, end)) {
        anchor = { start: start, end: end };
      }
    };

    sentence.addEventListener("click", function (event) {
      var tok = event.target.closest(".tok");
      if (dragged) { dragged = false; return; }
      if (!tok) { return; }
      pick(tok, event.shiftKey);
      if (active) { active.focus({ preventScroll: true }); }
    });

    // On the document: a drag that starts in the sentence may end beyond it.
    document.addEventListener("mouseup", function () {
      var selection = window.getSelection ? window.getSelection() : null;
      dragged = false;
      if (!selection || selection.isCollapsed || !String(selection).trim()) { return; }
      if (!sentence.contains(selection.anchorNode)) { return; }
      var covered = toks.filter(function (tok) { return selection.containsNode(tok, true); });
      if (!covered.length) { return; }
      dragged = true;
      if (fill(+covered[0].getAttribute("data-start"), +covered[covered.length - 1].getAttribute("data-end"))) {
        anchor = { start: +covered[0].getAttribute("data-start"), end: +covered[0].getAttribute("data-end") };
      }
      selection.removeAllRanges();
      if (active) { active.focus({ preventScroll: true }); }
    });
    // A shift-click must extend the answer, not the browser's text selection.
    sentence.addEventListener("mousedown", function (event) {
      if (event.shiftKey && event.target.closest(".tok")) { event.preventDefault(); }
    });

    // Keyboard: the sentence is one tab stop (a tabindex on each word would stop the mouse from selecting
    // across words); a cursor word moves with the arrows, Space/Enter picks it, Shift extends, Escape goes back.
    var current = 0;
    sentence.setAttribute("tabindex", "0");
    sentence.setAttribute("role", "group");
    toks.forEach(function (tok, i) { tok.id = tok.id || "tok-" + i; });
    var showCursor = function () {
      toks.forEach(function (tok, i) { tok.classList.toggle("cursor", i === current); });
      if (toks[current]) { sentence.setAttribute("aria-activedescendant", toks[current].id); }
    };
    sentence.setAttribute("aria-label", "Sentence: arrow keys move between words, Space picks a word, Shift+Space extends");
    sentence.addEventListener("focus", showCursor);
    sentence.addEventListener("blur", function () { toks.forEach(function (tok) { tok.classList.remove("cursor"); }); });
    var moveTo = function (i) {
      current = Math.max(0, Math.min(toks.length - 1, i));
      showCursor();
    };
    sentence.addEventListener("blur", function () { window.setTimeout(function () {
      if (document.activeElement !== sentence) { cameFrom = null; }
    }, 0); });
    sentence.addEventListener("keydown", function (event) {
      if (event.target !== sentence || !toks.length) { return; }
      if (event.key === "Tab" && !event.shiftKey && cameFrom) {
        // Entered from a box by Tab: Tab goes on with what follows that box, not back to the top of the form.
        var stops = tabStops(), at = stops.indexOf(cameFrom);
        if (at !== -1 && stops[at + 1]) { event.preventDefault(); cameFrom = null; stops[at + 1].focus(); }
        return;
      }
      if (event.altKey && event.key === "ArrowDown") { event.preventDefault(); backToBox(); return; }
      if (event.altKey) { return; }
      if (event.key === "ArrowRight" || event.key === "ArrowDown") { event.preventDefault(); moveTo(current + 1); }
      else if (event.key === "ArrowLeft" || event.key === "ArrowUp") { event.preventDefault(); moveTo(current - 1); }
      else if (event.key === "Home") { event.preventDefault(); moveTo(0); }
      else if (event.key === "End") { event.preventDefault(); moveTo(toks.length - 1); }
      else if ((event.key === " " || event.key === "Enter") && !event.ctrlKey && !event.metaKey) {
        event.preventDefault();
        pick(toks[current], event.shiftKey);
      } else if (event.key === "Escape" && active) { event.preventDefault(); backToBox(); }
    });
    // From anywhere else on the page (a question, a verdict), Alt+Up goes to the sentence and Alt+Down back.
    document.addEventListener("keydown", function (event) {
      if (!event.altKey || event.defaultPrevented) { return; }
      if (event.key === "ArrowUp" && document.activeElement !== sentence) { event.preventDefault(); toSentence(null); }
      else if (event.key === "ArrowDown" && document.activeElement === sentence) { event.preventDefault(); backToBox(); }
    });
  }

  // Verdict shortcuts: the row holding the focus (else the first unanswered one) gets the verdict.
  var rows = Array.prototype.slice.call(document.querySelectorAll(".presence-row, .verify-row"));
  var keys = { p: "1", n: "0", v: "valid", i: "invalid" };
  var rowOf = function (el) { return el && el.closest ? el.closest(".presence-row, .verify-row") : null; };
  var setVerdict = function (row, value) {
    var radio = row.querySelector(".verdict input[type=radio][value='" + value + "']");
    if (!radio || radio.disabled) { return false; }
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true }));
    var next;
    if (value === "valid") {
      next = row.querySelector("input.answer");           // a valid question needs its answer next
    } else {
      var after = rows[rows.indexOf(row) + 1];
      next = after ? (after.querySelector(".verdict input:checked") || after.querySelector(".verdict input")) : document.getElementById("submit");
    }
    if (next) { next.focus(); }
    return true;
  };
  if (rows.length) {
    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey || isTyping(document.activeElement)) { return; }
      var value = keys[(event.key || "").toLowerCase()];
      if (value === undefined) { return; }
      var row = rowOf(document.activeElement) || rows.filter(function (r) { return !r.querySelector(".verdict input:checked"); })[0];
      if (row && row.querySelector(".verdict input[value='" + value + "']") && setVerdict(row, value)) { event.preventDefault(); }
    });
  }

  if (form) {
    var submitButton = document.getElementById("submit");
    var drafts = window.HitDrafts;
    var draftKey = drafts && form.getAttribute("data-draft") ? drafts.prefix + form.getAttribute("data-draft") : null;
    var statusUrl = form.getAttribute("data-status") || "";

    // Enter in a field never submits (a half-written HIT went out that way); Ctrl/Cmd+Enter submits through
    // the Submit button, so it passes the same checks as a click.
    form.addEventListener("keydown", function (event) {
      if (event.key !== "Enter") { return; }
      var el = event.target;
      if (event.ctrlKey || event.metaKey) {
        event.preventDefault();
        if (submitButton && !submitButton.disabled) {
          if (form.requestSubmit) { form.requestSubmit(submitButton); } else { submitButton.click(); }
        }
        return;
      }
      if (el.tagName === "INPUT" && el.type !== "submit" && el.type !== "button") { event.preventDefault(); }
    });

    var fields = function () {
      return Array.prototype.slice.call(form.querySelectorAll("input[name], textarea[name]")).filter(function (el) {
        return el.type !== "hidden" && el.type !== "submit" && !el.disabled && el.name !== "csrfmiddlewaretoken";
      });
    };
    var values = function () {
      var found = {};
      fields().forEach(function (el) {
        if (el.type === "radio" || el.type === "checkbox") { if (el.checked) { found[el.name] = el.value; } }
        else if (el.value !== "") { found[el.name] = el.value; }
      });
      return found;
    };
    var saveDraft = function (sent) {
      if (!draftKey) { return; }
      var draft = { saved: Date.now(), values: values(), status: statusUrl };
      if (sent) { draft.sent = Date.now(); }
      drafts.write(draftKey, draft);
    };
    var restoreDraft = function () {
      var draft = draftKey ? drafts.read(draftKey) : null;
      if (!draft || !draft.values) { return false; }
      var restored = false;
      fields().forEach(function (el) {
        var value = draft.values[el.name];
        if (value === undefined) { return; }
        if (el.type === "radio") {
          var group = form.querySelectorAll("input[type=radio][name='" + el.name + "']");
          var any = Array.prototype.some.call(group, function (r) { return r.checked; });
          if (!any && el.value === value) { el.checked = true; restored = true; }
        } else if (el.type === "checkbox") {
          if (!el.checked && el.value === value) { el.checked = true; restored = true; }
        } else if (el.value === "") {
          el.value = value; restored = true;
          if (el.classList.contains("answer")) { check(el); }
        }
      });
      if (restored) { say("Your unsent answers were restored from this browser."); }
      return true;
    };
    if (draftKey) {
      drafts.tidy(draftKey);
      var hadDraft = restoreDraft();
      // This HIT's page is back (a refused submission, or the worker came back): its answers are not accepted
      // yet, so the draft stays, holding what the page shows now (a refused page shows what was sent).
      if (hadDraft || document.getElementById("errors-summary") || document.getElementById("refused")) { saveDraft(false); }
      form.addEventListener("input", function () { saveDraft(false); });
      form.addEventListener("change", function () { saveDraft(false); });
    } else if (drafts) {
      drafts.tidy(null);
    }

    // Skip (S) and Return (R), shown on their buttons; never while typing in a box. With answers on the page the
    // key asks to be pressed again, since skipping or returning drops them.
    var actionKeys = Array.prototype.slice.call(form.querySelectorAll("button[data-key]"));
    var confirmBox = document.getElementById("key-confirm");
    var armed = null, armedAt = 0;
    if (actionKeys.length) {
      document.addEventListener("keydown", function (event) {
        if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented || isTyping(document.activeElement)) { return; }
        var key = (event.key || "").toLowerCase();
        var button = actionKeys.filter(function (b) { return b.getAttribute("data-key") === key; })[0];
        if (!button || button.disabled) { return; }
        event.preventDefault();
        var label = button.textContent.replace(/\s+\S+$/, "").trim();
        if (Object.keys(values()).length && (armed !== button || Date.now() - armedAt > 5000)) {
          armed = button; armedAt = Date.now();
          if (confirmBox) {
            confirmBox.textContent = "Press " + key.toUpperCase() + " again to " + label.toLowerCase() +
              " this HIT: what you wrote on it is dropped.";
            confirmBox.hidden = false;
          }
          return;
        }
        armed = null;
        if (confirmBox) { confirmBox.hidden = true; }
        if (form.requestSubmit) { form.requestSubmit(button); } else { button.click(); }
      });
    }

    form.addEventListener("submit", function (event) {
      if (form.dataset.sent === "1") { event.preventDefault(); return; }
      form.dataset.sent = "1";
      // Kept until the server has taken the answers: a refused submission loses nothing, even after leaving.
      saveDraft(true);
      window.setTimeout(function () { form.dataset.sent = ""; }, 4000);
    });

    // A refused submission: go to the first field that needs fixing, without scrolling the layout around.
    if (document.getElementById("errors-summary")) {
      var first = form.querySelector("input.invalid, textarea.invalid, .verdict.invalid input");
      if (first) {
        first.focus({ preventScroll: true });
        first.scrollIntoView({ block: "center" });
      }
    }
  }
})();
