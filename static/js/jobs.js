/* Polls a JSON status URL and updates the page: job progress bars and the campaign progress table.
   Elements: [data-poll-url] with data-kind="job" or "campaign". No framework, no build step. */
(function () {
  "use strict";
  var INTERVAL = 1000;

  function text(root, selector, value) {
    var el = root.querySelector(selector);
    if (el) { el.textContent = value; }
  }

  function updateJob(root, data) {
    var bar = root.querySelector(".progress");
    if (bar) {
      bar.setAttribute("aria-valuenow", data.percent);
      bar.querySelector("span").style.width = data.percent + "%";
    }
    text(root, "[data-field=state]", data.state);
    text(root, "[data-field=percent]", data.percent + "%");
    text(root, "[data-field=steps]", data.total ? data.done + " / " + data.total : "");
    text(root, "[data-field=message]", data.message);
    var problems = root.querySelector("[data-field=problems]");
    if (problems && data.problems && data.problems.length && !problems.children.length) {
      data.problems.forEach(function (p) {
        var li = document.createElement("li");
        li.textContent = p;
        problems.appendChild(li);
      });
    }
    var link = root.querySelector("[data-field=result]");
    if (link && data.result_url) {
      link.href = data.result_url;
      link.hidden = false;
    }
    root.setAttribute("data-state", data.state);
    return data.finished;
  }

  function updateCampaign(root, data) {
    var stageAppeared = Object.keys(data.stages).some(function (slug) {
      var row = root.querySelector("tr[data-stage='" + slug + "']");
      return data.stages[slug] && row && !row.querySelector("[data-field=total]");
    });
    if (data.state !== root.getAttribute("data-state") || stageAppeared) {
      // A new stage row or other controls (pause, resume...): the server draws them, so load the page again.
      window.location.reload();
      return true;
    }
    text(root, "[data-field=state]", data.state_label);
    root.setAttribute("data-state", data.state);
    Object.keys(data.stages).forEach(function (slug) {
      var row = root.querySelector("tr[data-stage='" + slug + "']");
      var stage = data.stages[slug];
      if (!row || !stage) { return; }
      ["total", "waiting", "in_progress", "done", "redo"].forEach(function (key) {
        text(row, "[data-field=" + key + "]", stage[key]);
      });
      var bar = row.querySelector(".progress");
      if (bar) {
        bar.setAttribute("aria-valuenow", stage.percent);
        bar.querySelector("span").style.width = stage.percent + "%";
      }
      text(row, "[data-field=assignments]", (stage.submitted || 0) + " / " + stage.slots + " (" + stage.percent + "%)");
    });
    text(root, "[data-field=settled]", data.settled);
    text(root, "[data-field=cost]", "$" + data.cost_so_far);
    // Stop polling once nothing can change any more.
    return data.state === "finished" || data.state === "cancelled" || data.state === "draft";
  }

  function poll(root) {
    var url = root.getAttribute("data-poll-url");
    var update = root.getAttribute("data-kind") === "campaign" ? updateCampaign : updateJob;
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (data && update(root, data)) { return; }
        window.setTimeout(function () { poll(root); }, INTERVAL);
      })
      .catch(function () { window.setTimeout(function () { poll(root); }, INTERVAL * 3); });
  }

  document.querySelectorAll("[data-poll-url]").forEach(poll);
})();
