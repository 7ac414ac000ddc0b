// Progressive enhancement only: every page works without this script.
// An element with data-poll="<url>" is refreshed from that JSON every second: each child
// with data-field="<name>" gets the field's value as text (or as the value of a
// <progress>). When the answer says finished, the page reloads to show the final state.
// A page being left (a form sent, a link followed) stops: a reload would cancel that
// navigation, and with it the answer to the form (a cancel's one-time "Job cancelled.").
(function () {
  "use strict";
  var box = document.querySelector("[data-poll]");
  if (!box) { return; }
  var url = box.getAttribute("data-poll");
  var leaving = false;
  window.addEventListener("beforeunload", function () { leaving = true; });
  function tick() {
    if (leaving) { return; }
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.json(); })
      .then(function (p) {
        if (leaving) { return; }
        box.querySelectorAll("[data-field]").forEach(function (el) {
          var v = p[el.getAttribute("data-field")];
          if (v === undefined) { return; }
          if (el.tagName === "PROGRESS") { el.value = v; } else { el.textContent = String(v); }
        });
        if (p.finished) { window.location.reload(); return; }
        window.setTimeout(tick, 1000);
      })
      .catch(function () { window.setTimeout(tick, 5000); });
  }
  window.setTimeout(tick, 1000);
})();

// A time picker (input[type=datetime-local][data-for=<name>]) writes the time it picks, in
// the browser's time zone, into the text field <name> as RFC 3339 UTC; the text field is
// what the form sends, so relative times ("-2h") stay typeable.
// A button with data-copy="<id>" copies that element's text to the clipboard.
(function () {
  "use strict";
  document.querySelectorAll("input.time-picker[data-for]").forEach(function (picker) {
    var field = picker.form && picker.form.elements[picker.getAttribute("data-for")];
    if (!field) { return; }
    picker.addEventListener("change", function () {
      var t = new Date(picker.value);
      if (!isNaN(t.getTime())) { field.value = t.toISOString().replace(".000Z", "Z"); }
    });
  });
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = document.getElementById(button.getAttribute("data-copy"));
      if (!source || !navigator.clipboard) { return; }
      navigator.clipboard.writeText(source.textContent).then(function () { button.textContent = "Copied"; });
    });
  });
})();
