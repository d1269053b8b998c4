// hookd console: progressive enhancement only; every page works without it.
(function () {
  "use strict";

  // The secret page: a reload must not show (or re-create) the secret, so
  // the address becomes the endpoint's own page at once.
  var secret = document.querySelector("[data-replace-url]");
  if (secret && window.history && history.replaceState) {
    history.replaceState(null, "", secret.getAttribute("data-replace-url"));
  }

  // Copy buttons.
  document.querySelectorAll("[data-copy]").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var input = document.querySelector(btn.getAttribute("data-copy"));
      var said = btn.parentNode.querySelector(".copied");
      var ok = function () { if (said) said.textContent = said.getAttribute("data-copied"); };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(input.value).then(ok, function () { input.select(); document.execCommand("copy"); ok(); });
      } else {
        input.select(); document.execCommand("copy"); ok();
      }
    });
  });

  // The operator's owner menu switches on change.
  document.querySelectorAll("select[data-autosubmit]").forEach(function (sel) {
    sel.addEventListener("change", function () { if (sel.value) sel.form.submit(); });
  });

  // Live delivery rows: refreshed while something is pending, and after a
  // test is sent.
  var live = document.querySelector("[data-live-rows]");
  var timer = null, rounds = 0;
  function refresh() {
    if (!live) return;
    fetch(live.getAttribute("data-live-rows"), { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var body = document.getElementById("delivery-rows");
        body.innerHTML = html;
        rounds++;
        var pending = body.querySelector('tr[data-state="pending"]');
        if ((pending && rounds < 120) || rounds < 3) schedule();
      })
      .catch(function () { schedule(); });
  }
  function schedule() { clearTimeout(timer); timer = setTimeout(refresh, 1000); }
  if (live && document.querySelector('#delivery-rows tr[data-state="pending"]')) schedule();

  // The endpoint form's Try buttons: run the filter or transformation on
  // a sample event (nothing is sent) and show what came of it.
  document.querySelectorAll("button[data-try]").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var what = btn.getAttribute("data-try"), form = btn.form;
      var out = document.getElementById(what + "-output");
      var url = form.querySelector("#url");
      var body = new URLSearchParams({ csrf: form.elements.csrf.value, what: what, code: document.getElementById(what).value, url: url ? url.value : "" });
      btn.disabled = true;
      fetch(btn.getAttribute("data-try-url"), {
        method: "POST", credentials: "same-origin", body: body,
        headers: { Accept: "application/json", "X-CSRF-Token": form.elements.csrf.value }
      }).then(function (r) { return r.json(); }).then(function (res) {
        out.textContent = res.text || (res.error && res.error.message) || res.error || "";
        out.classList.remove("hidden");
        out.classList.toggle("failed", !res.ok);
        out.setAttribute("data-ok", res.ok ? "true" : "false");
      }).finally(function () { btn.disabled = false; });
    });
  });

  // Send test without leaving the page.
  document.querySelectorAll("form[data-async]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var btn = form.querySelector("button");
      btn.disabled = true;
      var data = new FormData(form);
      fetch(form.action, {
        method: "POST", credentials: "same-origin", body: new URLSearchParams(data),
        headers: { Accept: "application/json", "X-CSRF-Token": data.get("csrf") }
      }).then(function (r) {
        return r.json().then(function (body) { return { ok: r.ok, body: body }; });
      }).then(function (res) {
        var note = document.getElementById("async-notice");
        note.classList.remove("hidden");
        // The sentence comes from the page, in its language.
        note.textContent = res.ok ? note.getAttribute("data-sent").replace("{type}", res.body.type).replace("{id}", res.body.event_id) : res.body.error;
        rounds = 0;
        refresh();
      }).finally(function () { btn.disabled = false; });
    });
  });
})();

// In the portal, framed by a producer's page: tell it this page's height,
// only if it is one of the origins allowed to frame the portal.
(function () {
  "use strict";
  var origins = (document.body.getAttribute("data-frame-origins") || "").split(" ").filter(Boolean);
  if (!origins.length || window.parent === window) return;
  var last = 0;
  var post = function () {
    // The body's own height: the document's scrollHeight is never less
    // than the frame, so the frame could grow but never shrink.
    var h = Math.ceil(document.body.getBoundingClientRect().height);
    if (h === last) return;
    last = h;
    origins.forEach(function (o) { window.parent.postMessage({ type: "hookd-portal:height", height: h }, o); });
  };
  post();
  if (window.ResizeObserver) new ResizeObserver(post).observe(document.body);
})();
