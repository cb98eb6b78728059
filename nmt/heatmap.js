'use strict';
// heatmap.js: what the two attention pages share: the page of `bin/align --format html`
// (nmt/attention-page.js) and the live page of `make live` (live/live.js). Elements made from
// text only, the colour scale, the heatmap of one sentence, the keys that move through it, the
// score formulas and the softmax of one row worked out as the course notes do it. Each page's
// own script follows this one in the same script element (nmt/align_html.c,
// live/make-page.sh) and adds only what that page does. Self-test code is not here: the
// browser tests add it to the pages they check (tests/browser/).

// Errors anywhere on the page are kept for the self-test, which fails on any.
const pageErrors = [];
window.addEventListener('error', (ev) => {
  pageErrors.push(String(ev.message) + ' (line ' + ev.lineno + ')');
});
window.addEventListener('unhandledrejection', (ev) => {
  pageErrors.push('unhandled rejection: ' + String(ev.reason));
});

// Elements are made with textContent only: data never becomes markup.
function el(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}

// The colour scale of the heatmaps (the SVG one's too, nmt/align_svg.c): white, mid blue at
// 0.5, dark blue at 1.
const SCALE = [[0, 255, 255, 255], [0.5, 107, 174, 214], [1, 8, 48, 107]];
function colour(w) {
  w = w > 0 ? Math.min(w, 1) : 0;
  const a = SCALE[w <= 0.5 ? 0 : 1], b = SCALE[w <= 0.5 ? 1 : 2];
  const f = (w - a[0]) / (b[0] - a[0]);
  const rgb = [1, 2, 3].map((j) => Math.round(a[j] + f * (b[j] - a[j])));
  return 'rgb(' + rgb.join(', ') + ')';
}

// A number of a worked step: four decimals, or the exponent form when that would hide it.
function fmt(x) {
  const size = Math.abs(x);
  return size !== 0 && (size < 1e-3 || size >= 1e6) ? x.toExponential(3) : x.toFixed(4);
}
// n significant digits (exp(e) and sums, which span many orders of magnitude).
function digits(x, n) {
  return x >= 1e-3 && x < 1e6 ? x.toPrecision(n) : x.toExponential(n - 1);
}

// The heatmap of one sentence: m has src and tgt (tokens), S and T (their counts), alpha
// (row t at [t * S]) and peak (each row's largest weight). extra, optional, adds columns:
// extra.head (header cells) and extra.row(t) (that row's cells). Returns the table and its
// parts, for the page to wire up: rows, heads (the output tokens) and cells[t][i].
function heatmapTable(m, extra) {
  const table = el('table', 'heatmap'), parts = { table: table, rows: [], heads: [], cells: [] };
  table.append(el('caption', null, 'Attention weights \u03b1: one row per output token, one '
    + 'column per source token (</s> included); each row sums to 1. The outlined cell is each '
    + 'row\u2019s largest weight.'));
  const head = el('tr'), corner = el('th', 'corner');
  corner.scope = 'col';
  corner.append(el('span', 'sr-only', 'output token'));
  head.append(corner);
  m.src.forEach((tok) => {
    const th = el('th', 'src');
    // a label of one or two characters ("i", "a", "猫") turned on its side reads as "-" or
    // ".": only longer labels are rotated
    if (Array.from(tok).length <= 2) th.classList.add('short');
    th.scope = 'col';
    th.title = tok;
    th.append(el('span', null, tok));
    head.append(th);
  });
  if (extra) head.append(...extra.head);
  table.appendChild(el('thead')).append(head);
  const body = el('tbody');
  for (let t = 0; t < m.T; t++) {
    const tr = el('tr'), th = el('th', 'tgt', m.tgt[t]), cells = [];
    th.scope = 'row';
    th.title = m.tgt[t];
    tr.append(th);
    for (let i = 0; i < m.S; i++) {
      const w = m.alpha[t * m.S + i], td = el('td', 'cell', w.toFixed(2));
      td.style.backgroundColor = colour(w);
      if (w > 0.55) td.classList.add('dark');
      if (w < 0.1) td.classList.add('faint');
      if (i === m.peak[t]) td.classList.add('peak');
      td.title = m.tgt[t] + ' \u2190 ' + m.src[i] + ': ' + w.toFixed(4);
      cells.push(td);
      tr.append(td);
    }
    if (extra) tr.append(...extra.row(t));
    parts.rows.push(tr);
    parts.heads.push(th);
    parts.cells.push(cells);
    body.append(tr);
  }
  table.append(body);
  return parts;
}

// Each row's largest weight (the first on a tie), for alpha's T rows of S.
function peaks(alpha, S, T) {
  const peak = new Int32Array(T);
  for (let t = 0; t < T; t++)
    for (let i = 0; i < S; i++) if (alpha[t * S + i] > alpha[t * S + peak[t]]) peak[t] = i;
  return peak;
}

// What an arrow key moves by in the heatmap: [rows, columns].
const ARROWS = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };

// The model's score e_ti of step t (1-based: its query is s_{t-1}) and source token i.
const FORMULAS = {
  additive: (t, i) => 'e_' + t + ',' + i + ' = v\u1d40 tanh(W_q s_' + (t - 1) + ' + W_k h_'
    + i + ' + b)',
  dot: (t, i) => 'e_' + t + ',' + i + ' = s_' + (t - 1) + ' \u00b7 h_' + i,
  general: (t, i) => 'e_' + t + ',' + i + ' = s_' + (t - 1) + ' \u00b7 (W_a h_' + i + ')',
  scaled_dot: (t, i) => 'e_' + t + ',' + i + ' = (W_q s_' + (t - 1) + ') \u00b7 (W_k h_' + i
    + ') / \u221aA',
};

// The softmax of step t (1-based) as the notes do it, a line per source token: its score e,
// exp(e), the weight alpha = exp(e) / sum as a number and a bar; then the sums. The line of
// source token `marked` is highlighted. Returns the table and what it computed: exp(e) and
// their sum.
function softmaxTable(t, src, e, alpha, marked) {
  const ex = Array.from(e, Math.exp), sum = ex.reduce((a, b) => a + b, 0);
  const table = el('table', 'softmax'), head = el('tr');
  table.append(el('caption', null, 'Softmax of step ' + t + ': \u03b1_' + t + ',i = exp(e_'
    + t + ',i) / \u03a3_j exp(e_' + t + ',j)'));
  [['i', 'index'], ['source token', 'tok'], ['e', ''], ['exp(e)', ''], ['\u03b1', ''],
    ['', 'barcell']].forEach((c) => {
    const th = el('th', c[1], c[0]);
    th.scope = 'col';
    head.append(th);
  });
  table.appendChild(el('thead')).append(head);
  const body = el('tbody');
  let total = 0;
  for (let i = 0; i < src.length; i++) {
    const tr = el('tr', i === marked ? 'marked' : ''), bar = el('span', 'bar');
    const barcell = el('td', 'barcell');
    bar.style.width = (alpha[i] * 100).toFixed(2) + '%';
    bar.setAttribute('aria-hidden', 'true');
    barcell.append(bar);
    tr.append(el('td', 'index', String(i)), el('td', 'tok', src[i]), el('td', 'e', fmt(e[i])),
      el('td', 'exp', digits(ex[i], 4)), el('td', 'alpha', alpha[i].toFixed(4)), barcell);
    body.append(tr);
    total += alpha[i];
  }
  table.append(body);
  const foot = el('tr');
  foot.append(el('td'), el('td', 'tok', 'sum'), el('td'), el('td', 'sum', digits(sum, 6)),
    el('td', 'alpha-sum', total.toFixed(4)), el('td'));
  table.appendChild(el('tfoot')).append(foot);
  return { table: table, ex: ex, sum: sum };
}
