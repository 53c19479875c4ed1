/* The worker status page: polls its JSON view and redraws the table's figures, adding rows for new workers.
   No inline script (the Content-Security-Policy forbids it), no framework. */
(function () {
  "use strict";
  var INTERVAL = 3000;
  var FIELDS = ["active", "done", "returned", "timed_out", "median_seconds", "hours_worked", "earned", "hourly"];

  function shown(field, value, w) {
    if (value === null || value === undefined) {
      return field === "hourly" && w.hourly_note ? "\u2014 (" + w.hourly_note + ")" : "\u2014";
    }
    if (field === "median_seconds" && value < 1) { return "< 1"; }
    return field === "earned" || field === "hourly" ? "$" + value : String(value);
  }

  function rowFor(tbody, worker, workerId) {
    var rows = tbody.querySelectorAll("tr[data-worker]");
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].getAttribute("data-worker") === worker) { return rows[i]; }
    }
    var tr = document.createElement("tr");
    tr.setAttribute("data-worker", worker);
    var name = document.createElement("td");
    // The worker's name opens their worker view, as in the rows drawn by the server.
    var base = tbody.closest("table").getAttribute("data-worker-url");
    if (base && workerId) {
      var link = document.createElement("a");
      link.href = base + encodeURIComponent(workerId) + "/";
      link.className = "worker-link";
      link.textContent = worker;
      name.appendChild(link);
    } else {
      name.textContent = worker;
    }
    tr.appendChild(name);
    FIELDS.forEach(function (field) {
      var td = document.createElement("td");
      td.className = "num";
      td.setAttribute("data-field", field);
      tr.appendChild(td);
    });
    tbody.appendChild(tr);
    return tr;
  }

  function update(root, data) {
    var tbody = root.querySelector("tbody");
    data.workers.forEach(function (w) {
      var tr = rowFor(tbody, w.worker, w.worker_id);
      FIELDS.forEach(function (field) {
        var cell = tr.querySelector("[data-field=" + field + "]");
        cell.textContent = shown(field, w[field], w);
        if (field === "hourly" && w.below_floor) {
          var flag = document.createElement("strong");
          flag.className = "warning";
          flag.textContent = "below the floor";
          cell.appendChild(document.createTextNode(" "));
          cell.appendChild(flag);
        }
      });
      tr.classList.toggle("below-floor", w.below_floor);
    });
    ["active_workers", "active_assignments", "below_floor"].forEach(function (key) {
      var el = root.querySelector("[data-field=" + key + "]");
      if (el) { el.textContent = data[key]; }
    });
    var warning = root.querySelector("#floor-warning");
    if (warning) { warning.hidden = !data.below_floor; }
    var none = root.querySelector("#no-workers");
    if (none) { none.hidden = data.workers.length > 0; }
  }

  function poll(root) {
    fetch(root.getAttribute("data-poll-url"), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (data) { update(root, data); }
        window.setTimeout(function () { poll(root); }, INTERVAL);
      })
      .catch(function () { window.setTimeout(function () { poll(root); }, INTERVAL * 3); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var root = document.getElementById("worker-status");
    if (root) { window.setTimeout(function () { poll(root); }, INTERVAL); }
  });
})();
