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

// The edit-and-replay form's value: says beside the field whether text that looks like
// JSON parses, and offers a Format button that indents valid JSON. Formatting rewrites
// only the whitespace between tokens, never a number or a string: JSON.parse would round
// an integer past 2^53, and a replay must send the digits the operator sees.
(function () {
  "use strict";
  var field = document.getElementById("edit-value");
  var check = document.getElementById("edit-value-check");
  var encoding = document.getElementById("edit-value-encoding");
  if (!field || !check) { return; }
  var button = document.createElement("button");
  button.type = "button";
  button.id = "edit-value-format";
  button.textContent = "Format JSON";
  check.parentNode.insertBefore(button, check);

  function pad(n) { return new Array(n + 1).join("  "); }
  function format(text) {
    var out = "", depth = 0, inString = false, escaped = false;
    for (var i = 0; i < text.length; i++) {
      var c = text.charAt(i);
      if (inString) {
        out += c;
        if (escaped) { escaped = false; } else if (c === "\\") { escaped = true; } else if (c === "\"") { inString = false; }
        continue;
      }
      if (c === " " || c === "\t" || c === "\n" || c === "\r") { continue; }
      if (c === "\"") { inString = true; out += c; continue; }
      if (c === "{" || c === "[") {
        var j = i + 1;
        while (j < text.length && " \t\n\r".indexOf(text.charAt(j)) >= 0) { j++; }
        if (text.charAt(j) === (c === "{" ? "}" : "]")) { out += c + text.charAt(j); i = j; continue; }
        depth++;
        out += c + "\n" + pad(depth);
        continue;
      }
      if (c === "}" || c === "]") { depth--; out += "\n" + pad(depth) + c; continue; }
      if (c === ",") { out += ",\n" + pad(depth); continue; }
      if (c === ":") { out += ": "; continue; }
      out += c;
    }
    return out;
  }
  function validate() {
    var asText = !encoding || encoding.value === "text";
    var v = field.value.trim();
    button.disabled = true;
    check.className = "field-check";
    if (!asText || v === "") { check.textContent = ""; return; }
    if (v.charAt(0) !== "{" && v.charAt(0) !== "[") { check.textContent = "Text, not JSON."; return; }
    try {
      JSON.parse(v);
      check.textContent = "Valid JSON.";
      check.className = "field-check ok";
      button.disabled = false;
    } catch (e) {
      check.textContent = "Not valid JSON: " + e.message;
      check.className = "field-check invalid";
    }
  }
  button.addEventListener("click", function () {
    field.value = format(field.value.trim());
    validate();
  });
  field.addEventListener("input", validate);
  if (encoding) { encoding.addEventListener("change", validate); }
  validate();
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
