// The console's accessibility and layout checks, run in the page under test. It returns
// one line per problem: an empty list is a pass. What it checks, in the spirit of axe-core:
// no horizontal overflow at the viewport's width, landmarks and a skip link, one h1 and no
// skipped heading level, a scope on every table header, a label on every form control,
// aria-current on the nav, and WCAG AA contrast of every piece of visible text against
// the background it is drawn on.
(function (viewportWidth) {
  "use strict";
  var problems = [];
  function where(el) {
    var s = el.tagName.toLowerCase();
    if (el.id) { s += "#" + el.id; }
    if (el.className && typeof el.className === "string") { s += "." + el.className.trim().split(/\s+/).join("."); }
    var t = (el.textContent || "").trim().slice(0, 40);
    return s + (t ? " \"" + t + "\"" : "");
  }
  function visible(el) {
    if (el.getClientRects().length === 0) { return false; }
    var cs = getComputedStyle(el);
    return cs.visibility !== "hidden" && cs.display !== "none" && Number(cs.opacity) > 0;
  }

  // Layout: the page is no wider than the screen; a wide table scrolls inside itself.
  var sw = document.scrollingElement.scrollWidth;
  if (sw > viewportWidth || sw > window.innerWidth) {
    var wide = Array.from(document.querySelectorAll("body *")).filter(function (el) {
      return visible(el) && el.getBoundingClientRect().right > viewportWidth + 1;
    }).slice(0, 3).map(where);
    problems.push("page is " + sw + " px wide at a " + viewportWidth + " px viewport; past the edge: " + wide.join(", "));
  }

  // Landmarks.
  if (document.querySelectorAll("main").length !== 1) { problems.push("not exactly one <main>"); }
  if (document.querySelectorAll("body > header").length !== 1) { problems.push("not exactly one page <header>"); }
  var skip = document.querySelector("a.skip");
  var focusable = document.querySelector("a[href], button, input:not([type=hidden]), select, textarea, summary");
  if (!skip || focusable !== skip || skip.getAttribute("href") !== "#main" || !document.getElementById("main")) {
    problems.push("the first focusable element is not a skip link to #main");
  }
  document.querySelectorAll("nav").forEach(function (n) {
    if (!n.getAttribute("aria-label") && !n.getAttribute("aria-labelledby")) { problems.push("nav without a label: " + where(n)); }
  });
  var current = document.querySelectorAll("header nav [aria-current=page]");
  if (current.length > 1) { problems.push("more than one nav link is aria-current"); }

  // Headings: one h1, and no level skipped on the way down.
  var hs = Array.from(document.querySelectorAll("h1, h2, h3, h4, h5, h6"));
  if (hs.filter(function (h) { return h.tagName === "H1"; }).length !== 1) { problems.push("not exactly one h1"); }
  var last = 0;
  hs.forEach(function (h) {
    var level = Number(h.tagName[1]);
    if (level > last + 1) { problems.push("heading level skipped: h" + level + " after h" + last + ": " + where(h)); }
    last = level;
  });

  // Tables: every header cell says what it heads.
  document.querySelectorAll("th").forEach(function (th) {
    var scope = th.getAttribute("scope");
    if (scope !== "col" && scope !== "row") { problems.push("th without scope: " + where(th)); }
  });

  // Forms: every control has a label.
  document.querySelectorAll("input, select, textarea").forEach(function (c) {
    if (c.type === "hidden") { return; }
    if ((c.labels && c.labels.length > 0) || c.getAttribute("aria-label") || c.getAttribute("aria-labelledby")) { return; }
    problems.push("control without a label: " + where(c) + " name=" + c.getAttribute("name"));
  });

  // Contrast (WCAG 2 AA): 4.5:1, or 3:1 for large text.
  function rgba(s) {
    var m = s.match(/rgba?\(([^)]+)\)/);
    if (!m) { return null; }
    var p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  }
  function over(top, bottom) {
    var a = top.a + bottom.a * (1 - top.a);
    if (a === 0) { return { r: 0, g: 0, b: 0, a: 0 }; }
    function mix(c) { return (top[c] * top.a + bottom[c] * bottom.a * (1 - top.a)) / a; }
    return { r: mix("r"), g: mix("g"), b: mix("b"), a: a };
  }
  function backdrop(el) {
    var layers = [];
    for (var e = el; e && e.nodeType === 1; e = e.parentElement) {
      var c = rgba(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) { break; } }
    }
    var dark = matchMedia("(prefers-color-scheme: dark)").matches;
    var bg = dark ? { r: 18, g: 18, b: 18, a: 1 } : { r: 255, g: 255, b: 255, a: 1 };
    for (var i = layers.length - 1; i >= 0; i--) { bg = over(layers[i], bg); }
    return bg;
  }
  function lum(c) {
    function ch(v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }
    return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b);
  }
  var skipTags = { SCRIPT: 1, STYLE: 1, TITLE: 1, OPTION: 1, PROGRESS: 1, DATALIST: 1, NOSCRIPT: 1 };
  var checked = 0;
  document.querySelectorAll("body *").forEach(function (el) {
    if (skipTags[el.tagName.toUpperCase()] || !visible(el)) { return; }
    var own = Array.from(el.childNodes).some(function (n) { return n.nodeType === 3 && n.textContent.trim() !== ""; });
    if (!own) { return; }
    var cs = getComputedStyle(el);
    var svg = el instanceof SVGElement;
    var fg = rgba(svg ? cs.fill : cs.color);
    if (!fg) { problems.push("no colour for " + where(el)); return; }
    var bg = backdrop(el);
    fg = over(fg, bg);
    var l1 = lum(fg), l2 = lum(bg);
    var ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    var px = parseFloat(cs.fontSize), bold = Number(cs.fontWeight) >= 700;
    var need = (px >= 24 || (bold && px >= 18.66)) ? 3 : 4.5;
    checked++;
    if (ratio < need) {
      problems.push("contrast " + ratio.toFixed(2) + ":1 (needs " + need + ") at " + px + " px: " + where(el) +
        " " + cs.color + " on rgb(" + [bg.r, bg.g, bg.b].map(Math.round).join(",") + ")");
    }
  });
  if (checked === 0) { problems.push("no text checked for contrast"); }
  return problems;
})
