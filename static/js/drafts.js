/* Browser drafts of a HIT's answers (localStorage "hit-draft:<id>"), kept until the server has accepted them.
   Sending the form only marks its draft "sent": a refused submission comes back to the same HIT page, which
   keeps the draft; a later page asks the server (the HIT's status address) and drops a sent draft once the
   HIT is no longer open (submitted, returned, skipped or expired). Drafts older than two days go too. */
(function () {
  "use strict";
  var PREFIX = "hit-draft:";
  var MAX_AGE = 2 * 86400000;
  var storage = null;
  try { storage = window.localStorage; } catch (e) { storage = null; }

  function read(key) {
    if (!storage) { return null; }
    try { return JSON.parse(storage.getItem(key) || "null"); } catch (e) { return null; }
  }
  function write(key, draft) {
    if (!storage) { return; }
    try { storage.setItem(key, JSON.stringify(draft)); } catch (e) { /* full or denied */ }
  }
  function remove(key) {
    if (!storage) { return; }
    try { storage.removeItem(key); } catch (e) { /* denied */ }
  }
  function settle(key, draft) {
    if (!draft.sent || !draft.status || !window.fetch) { return; }
    window.fetch(draft.status, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (status) { if (status && status.state !== "assigned") { remove(key); } })
      .catch(function () { /* offline: ask again on the next page */ });
  }
  // Every draft but the current page's: too old, or sent and no longer needed.
  function tidy(current) {
    if (!storage) { return; }
    var keys = [];
    try { for (var k = 0; k < storage.length; k++) { keys.push(storage.key(k)); } } catch (e) { return; }
    keys.forEach(function (key) {
      if (!key || key.indexOf(PREFIX) !== 0 || key === current) { return; }
      var draft = read(key);
      if (!draft || !draft.saved || Date.now() - draft.saved > MAX_AGE) { remove(key); return; }
      settle(key, draft);
    });
  }
  window.HitDrafts = { prefix: PREFIX, available: !!storage, read: read, write: write, remove: remove, tidy: tidy };
  // On a HIT page hit.js tidies (it knows which draft is its own); elsewhere (the task list) this does.
  if (!document.getElementById("hit-form")) { tidy(null); }
})();
