/*
 * Rundbrief sign-up helper, for the hosted form and for forms embedded on other
 * websites. No dependencies, no cookies.
 *
 * For every <form data-rundbrief-challenge="{BASE_URL}/v1/subscribe/{token}/challenge">
 * it fetches a stamp and, when the form asks for proof of work, an ALTCHA
 * challenge (v1 scheme: find n with SHA-256(salt + n) = challenge). It fills the
 * hidden field _rb_ts (unless the page already rendered one) and solves the
 * challenge in the background with crypto.subtle, writing the solution into the
 * hidden field altcha. A submit before the solution is ready waits for it. If the
 * challenge endpoint cannot be reached the form is posted as it is; the server
 * then sends the visitor to the hosted form page with a message.
 *
 * crypto.subtle exists only in secure contexts (https, or http://localhost):
 * forms with proof of work need one.
 */
(function () {
  "use strict";

  function field(form, name) {
    return form.querySelector('input[name="' + name + '"]');
  }

  function hexBytes(hex) {
    var out = new Uint8Array(hex.length / 2);
    for (var i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(i * 2, 2), 16);
    return out;
  }

  function equal(a, b) {
    if (a.length !== b.length) return false;
    for (var i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }

  // expires is the challenge's end (unix seconds) from its salt "…?expires=N&".
  function expires(c) {
    var m = /[?&]expires=(\d+)/.exec(c.salt || "");
    return m ? Number(m[1]) : Infinity;
  }

  // solve finds the number in batches of parallel digests and resolves to the
  // base64 JSON payload the server verifies, or null.
  function solve(c) {
    var subtle = window.crypto && window.crypto.subtle;
    if (!subtle || !window.TextEncoder) return Promise.resolve(null);
    var enc = new TextEncoder();
    var want = hexBytes(c.challenge);
    var batch = 500;
    function from(start) {
      if (start > c.maxnumber) return Promise.resolve(null);
      var jobs = [];
      for (var n = start; n < start + batch && n <= c.maxnumber; n++) {
        jobs.push(subtle.digest("SHA-256", enc.encode(c.salt + n)));
      }
      return Promise.all(jobs).then(function (digests) {
        for (var i = 0; i < digests.length; i++) {
          if (equal(new Uint8Array(digests[i]), want)) {
            return btoa(JSON.stringify({
              algorithm: c.algorithm, challenge: c.challenge, number: start + i,
              salt: c.salt, signature: c.signature
            }));
          }
        }
        return from(start + batch);
      });
    }
    return from(0);
  }

  function load(form) {
    return fetch(form.getAttribute("data-rundbrief-challenge"), { credentials: "omit", cache: "no-store" })
      .then(function (res) { return res.ok ? res.json() : null; })
      .then(function (body) {
        var d = body && body.data;
        if (!d) return null;
        var ts = field(form, "_rb_ts");
        if (ts && !ts.value) ts.value = d.stamp;
        if (!d.challenge || !field(form, "altcha")) return null;
        var c = d.challenge;
        return solve(c).then(function (payload) {
          if (payload) field(form, "altcha").value = payload;
          return { expires: expires(c), payload: payload };
        });
      })
      .catch(function () { return null; });
  }

  function setup(form) {
    if (form.getAttribute("data-rundbrief-ready")) return;
    form.setAttribute("data-rundbrief-ready", "1");
    var pending = load(form);
    var sending = false;
    form.addEventListener("submit", function (ev) {
      if (!field(form, "altcha") || sending) return;
      ev.preventDefault();
      sending = true;
      pending.then(function (r) {
        // A challenge that ran out while the page was open is fetched anew.
        if (r && r.expires - 30 < Date.now() / 1000) return load(form);
        return r;
      }).then(function () {
        // The prototype's submit: an input named "submit" may shadow form.submit.
        HTMLFormElement.prototype.submit.call(form);
      });
    });
  }

  function init() {
    var forms = document.querySelectorAll("form[data-rundbrief-challenge]");
    for (var i = 0; i < forms.length; i++) setup(forms[i]);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
