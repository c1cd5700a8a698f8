// loopx web: live updates and countdowns. No framework, no build step.
// The page works without it (links and "more" are plain links); with it,
// the page follows the state ref: a "head" event from /events that names
// another revision than the page's makes it fetch its own URL again and
// swap in the new <main>, keeping the scroll position and the focus.
(function () {
  'use strict';
  var body = document.body;
  var live = document.getElementById('live');
  var offset = 0; // the server's clock minus this browser's, in ms

  function syncClock() {
    var n = Date.parse(body.getAttribute('data-now') || '');
    offset = isNaN(n) ? 0 : n - Date.now();
  }

  function words(ms) {
    var s = Math.floor(Math.abs(ms) / 1000);
    var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60), r = s % 60;
    var pad = function (x) { return (x < 10 ? '0' : '') + x; };
    if (d > 0) return d + 'd ' + pad(h) + 'h';
    if (h > 0) return h + 'h ' + pad(m) + 'm';
    if (m > 0) return m + 'm ' + pad(r) + 's';
    return r + 's';
  }

  // Expiries already sent back to the server: an expiry the server still
  // judges in force (its clock is fixed, or behind) is not asked again.
  var asked = {};

  function tick() {
    var now = Date.now() + offset;
    var lapsed = false;
    var els = document.querySelectorAll('time.countdown');
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      var at = Date.parse(el.getAttribute('datetime'));
      if (isNaN(at)) continue;
      var left = at - now;
      var text = left > 0 ? words(left) + ' left' : 'expired ' + words(left) + ' ago';
      if (el.textContent !== text) el.textContent = text;
      if (left <= 0) {
        if (!el.classList.contains('expired')) el.classList.add('expired');
        var key = el.getAttribute('datetime');
        if (!asked[key] && !el.closest('.lapsed')) { asked[key] = true; lapsed = true; }
      }
    }
    // Expiry changes the board without a commit: ask the server to judge.
    if (lapsed) refresh('a holder expired');
  }

  var busy = false, again = false;

  function refresh(why) {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { cache: 'no-store', credentials: 'same-origin', headers: { 'Accept': 'text/html' } })
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var fresh = doc.querySelector('main');
        var old = document.querySelector('main');
        if (!fresh || !old) return;
        var focusId = document.activeElement && document.activeElement.id;
        var x = window.scrollX, y = window.scrollY;
        old.replaceWith(document.adoptNode(fresh));
        body.setAttribute('data-rev', doc.body.getAttribute('data-rev') || '');
        body.setAttribute('data-now', doc.body.getAttribute('data-now') || '');
        document.title = doc.title;
        window.scrollTo(x, y);
        if (focusId) {
          var f = document.getElementById(focusId);
          if (f && f.focus) f.focus({ preventScroll: true });
        }
        syncClock();
        tick();
        say('Updated: ' + why + ' (revision ' + (body.getAttribute('data-rev') || '').slice(0, 12) + ')', true);
      })
      .catch(function (e) { say('Update failed: ' + e.message, false); })
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(why); }
      });
  }

  function say(text, on) {
    if (!live) return;
    live.textContent = text;
    live.classList.toggle('on', !!on);
  }

  function connect() {
    if (!window.EventSource) { say('read-only (no live updates in this browser)', false); return; }
    var es = new EventSource('/events');
    es.addEventListener('open', function () { say('live', true); });
    es.addEventListener('head', function (e) {
      if (e.data && e.data !== body.getAttribute('data-rev')) refresh('the state ref moved');
    });
    es.addEventListener('error', function () { say('reconnecting…', false); });
  }

  syncClock();
  tick();
  setInterval(tick, 1000);
  connect();
})();
