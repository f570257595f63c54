// vigil status page auto-refresh: every data-refresh-ms, fetch this page and
// swap in each element marked data-live (by id), keeping typed form values.
// Without JavaScript a <noscript> meta refresh reloads the whole page instead.
(function () {
  "use strict";
  var ms = parseInt(document.body.getAttribute("data-refresh-ms"), 10);
  if (!(ms > 0) || !window.fetch || !window.DOMParser) return;
  var busy = false;
  function tick() {
    if (busy || document.hidden) return;
    var active = document.activeElement;
    if (active && active.closest && active.closest("form") && active.tagName === "INPUT") return;
    busy = true;
    fetch(location.href, { headers: { "Accept": "text/html" }, cache: "no-store", credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var tokens = {};
        document.querySelectorAll("input[name=token]").forEach(function (el) {
          var f = el.closest("form");
          if (f && el.value) tokens[f.getAttribute("data-fault-form")] = el.value;
        });
        document.querySelectorAll("[data-live]").forEach(function (el) {
          if (!el.id) return;
          var fresh = doc.getElementById(el.id);
          if (fresh) el.replaceWith(document.importNode(fresh, true));
        });
        document.querySelectorAll("input[name=token]").forEach(function (el) {
          var f = el.closest("form");
          var v = f && tokens[f.getAttribute("data-fault-form")];
          if (v) el.value = v;
        });
        document.getElementById("conn").hidden = true;
      })
      .catch(function () { document.getElementById("conn").hidden = false; })
      .then(function () { busy = false; });
  }
  setInterval(tick, ms);
})();
