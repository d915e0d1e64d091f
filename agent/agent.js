/* changedigest digester agent: reports a summary of this page. See agent/summary.go. */
(function () {
'use strict';
var E = "%E%", T = "%T%", W = /[\t\n\f\r ]+/g, X = 'http://www.w3.org/1999/xhtml', H = null, F = null, B = null, S = 0;
function skip(n) {
  return n.nodeType != 3 && (n.nodeType != 1 || n.namespaceURI != X || /^(script|style|noscript|template|iframe|object|embed)$/.test(n.localName));
}
function title(n) {
  for (var k = n.firstElementChild, r; k; k = k.nextElementSibling) {
    if (k.namespaceURI != X || k.localName == 'template') continue;
    if (k.localName == 'title') return k;
    if ((r = title(k))) return r;
  }
  return null;
}
function words(k, re) {
  var w = ((k.getAttribute('id') || '') + ' ' + (k.getAttribute('class') || '')).toLowerCase().split(/[^a-z0-9]+/);
  for (var i = 0; i < w.length; i++) if (re.test(w[i])) return true;
  return false;
}
function role(k) { return (k.getAttribute('role') || '').toLowerCase(); }
function regions(n, a) {
  for (var k = n.firstChild; k; k = k.nextSibling) {
    if (k.nodeType != 1 || skip(k)) continue;
    if (!a) {
      if (!H && (k.localName == 'header' || role(k) == 'banner' || words(k, /^(header|masthead)$/))) { H = k; continue; }
      if (k.localName == 'footer' || role(k) == 'contentinfo' || words(k, /^footer$/)) { F = k; continue; }
    }
    regions(k, a || k.localName == 'article' || k.localName == 'main');
  }
}
function score(n) {
  var t = 0, l = 0, c = 1, k, r, d, s;
  for (k = n.firstChild; k; k = k.nextSibling) {
    if (skip(k) || k === H || k === F) continue;
    if (k.nodeType == 3) { t += k.data.replace(W, '').length; continue; }
    r = score(k);
    t += r[0]; l += k.localName == 'a' ? r[0] : r[1]; c += r[2];
  }
  if (/^(body|main|article|section|div|td)$/.test(n.localName) && t > 0 && 2 * l <= t) {
    d = t - l; s = d * d / c;
    if (!B || s > S) { B = n; S = s; }
  }
  return [t, l, c];
}
function text(n) {
  var s = '';
  for (var k = n.firstChild; k; k = k.nextSibling) {
    if (skip(k) || k === H || k === F) continue;
    s += k.nodeType == 3 ? k.data : text(k);
  }
  return s;
}
function md5(str) {
  var d = new TextEncoder().encode(str.replace(W, ' ').replace(/^ | $/g, '')), n = d.length, w = [], K = [], R = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21],
    h = [1732584193, -271733879, -1732584194, 271733878], m = ((n + 8) >> 6 << 4) + 16, i, j, a, b, c, e, f, g, x, o = '';
  for (i = 0; i < 64; i++) K[i] = Math.floor(Math.abs(Math.sin(i + 1)) * 4294967296) | 0;
  for (i = 0; i < m; i++) w[i] = 0;
  for (i = 0; i < n; i++) w[i >> 2] |= d[i] << (i % 4 * 8);
  w[n >> 2] |= 128 << (n % 4 * 8);
  w[m - 2] = n * 8 | 0; w[m - 1] = n / 536870912 | 0;
  for (i = 0; i < m; i += 16) {
    a = h[0]; b = h[1]; c = h[2]; e = h[3];
    for (j = 0; j < 64; j++) {
      if (j < 16) { f = (b & c) | (~b & e); g = j; }
      else if (j < 32) { f = (e & b) | (~e & c); g = (5 * j + 1) % 16; }
      else if (j < 48) { f = b ^ c ^ e; g = (3 * j + 5) % 16; }
      else { f = c ^ (b | ~e); g = 7 * j % 16; }
      x = (a + f + K[j] + w[i + g]) | 0; f = R[(j >> 4) * 4 + j % 4];
      a = e; e = c; c = b; b = (b + ((x << f) | (x >>> (32 - f)))) | 0;
    }
    h[0] = h[0] + a | 0; h[1] = h[1] + b | 0; h[2] = h[2] + c | 0; h[3] = h[3] + e | 0;
  }
  for (i = 0; i < 16; i++) o += ((h[i >> 2] >>> (i % 4 * 8)) & 255 | 256).toString(16).slice(1);
  return o;
}
function run() {
  try {
    var doc = document, body = doc.body, t = doc.documentElement && title(doc.documentElement), s, p;
    if (body) { regions(body, false); score(body); }
    s = [md5(t ? [].map.call(t.childNodes, function (k) { return k.nodeType == 3 ? k.data : ''; }).join('') : ''),
      md5(H ? text(H) : ''), md5(B ? text(B) : ''), md5(F ? text(F) : '')].join('.');
    p = new URLSearchParams();
    p.set('t', T); p.set('u', location.href); p.set('s', s);
    fetch(E, { method: 'POST', body: p, keepalive: true, mode: 'cors', credentials: 'omit' })['catch'](function () {});
  } catch (err) {}
}
if (document.readyState == 'loading') addEventListener('DOMContentLoaded', run); else run();
})();
