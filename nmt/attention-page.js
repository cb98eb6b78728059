'use strict';
// attention-page.js: the page `bin/align --format html` writes (nmt/align_html.c), after
// nmt/heatmap.js in the same script element. The page lists the sentences; for each it
// draws the heatmap of its attention weights from the data element (4-character codes, see
// align_html.c) and, for the output token pointed at or focused (Tab, arrow keys, across
// sentences), works that step's softmax out. #s2t3 opens with step 3 of sentence 2 shown.
// What the page shows is checked by tests/browser/attention-selftest.js, which the browser
// tests add to the pages they open.

// Each code is 4 characters of this alphabet, a 24-bit number n; the value is n * UNIT.
const DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const UNIT = 1e-5;
const DIGIT_VALUE = new Map(Array.from(DIGITS, (c, d) => [c, d]));

function decode(codes, n, what) {
  if (typeof codes !== 'string' || codes.length !== 4 * n)
    throw new Error(what + ': expected ' + n + ' codes');
  const out = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    let v = 0;
    for (let j = 0; j < 4; j++) {
      const d = DIGIT_VALUE.get(codes[4 * k + j]);
      if (d === undefined) throw new Error(what + ': bad code ' + k);
      v = v * 64 + d;
    }
    out[k] = v * UNIT;
  }
  return out;
}

// The number a sentence is shown with: its input's own (line or argument), which the page keeps
// when refused inputs (blank lines) are left out; else its place on the page.
function label(d, k) { return Number.isInteger(d.n) && d.n > 0 ? d.n : k + 1; }

// One sentence: e_ti = lse_t - q_ti and alpha_ti = exp(-q_ti), row t at [t * S + i].
function unpack(d, k) {
  const S = d.src.length, T = d.tgt.length, what = 'sentence ' + label(d, k);
  const q = decode(d.q, S * T, what + ' weights');
  const nlp = decode(d.nlp, T, what + ' probabilities');
  if (!Array.isArray(d.lse) || d.lse.length !== T)
    throw new Error(what + ': expected ' + T + ' sums');
  const e = new Float64Array(S * T), alpha = new Float64Array(S * T), prob = new Float64Array(T);
  for (let t = 0; t < T; t++) {
    prob[t] = Math.exp(-nlp[t]);
    for (let i = 0; i < S; i++) {
      e[t * S + i] = d.lse[t] - q[t * S + i];
      alpha[t * S + i] = Math.exp(-q[t * S + i]);
    }
  }
  return {
    d: d, k: k, n: label(d, k), S: S, T: T, e: e, alpha: alpha, prob: prob,
    peak: peaks(alpha, S, T), src: d.src, tgt: d.tgt, heads: [], cells: [], rows: [], panel: null,
  };
}

const sentences = [];
let current = null; // { s, t } of the selected row

function render(s, parent) {
  const d = s.d, sec = el('section', 'sentence');
  sec.id = 'sentence-' + s.n;
  const h = el('h2');
  h.append(el('span', 'num', s.n + '.'), ' ', el('span', 'source', d.source),
    el('span', 'arrow', ' \u2192 '), el('span', 'translation', d.translation));
  sec.append(h);
  if (d.reference !== null) {
    const note = el('p', 'note');
    note.append('Forced decoding (teacher forcing) of the reference ',
      el('q', 'reference', d.reference), ': the rows are its tokens.');
    sec.append(note);
  }
  if (!d.complete) sec.append(el('p', 'note', 'The output stopped before </s> (length limit).'));
  const layout = el('div', 'layout'), grid = el('div', 'grid'), map = heatmapTable(s);
  Object.assign(s, { heads: map.heads, cells: map.cells, rows: map.rows });
  map.rows.forEach((tr, t) => {
    const th = map.heads[t];
    tr.dataset.t = t;
    th.tabIndex = 0;
    th.addEventListener('focus', () => select(s, t));
    th.addEventListener('keydown', (ev) => move(s, t, ev));
  });
  map.table.addEventListener('mouseover', (ev) => {
    const tr = ev.target.closest('tr[data-t]');
    if (tr) select(s, Number(tr.dataset.t));
  });
  grid.append(map.table, summary(s));
  s.panel = el('div', 'step');
  s.panel.setAttribute('aria-live', 'polite');
  s.panel.append(el('p', 'hint', 'Point at an output token (or focus it with Tab, then use the '
    + 'arrow keys) to see that decoding step worked out.'));
  layout.append(grid, s.panel);
  sec.append(layout);
  parent.append(sec);
}

// For screen readers (and print): each output token, the source token it attends to most.
function summary(s) {
  const table = el('table', 'summary sr-only'), head = el('tr');
  table.append(el('caption', null, 'Sentence ' + s.n + ' as a table: each output token, its '
    + 'probability, and the source token it attends to most.'));
  ['output token', 'probability', 'most attended source token', 'weight'].forEach((x) => {
    const th = el('th', null, x);
    th.scope = 'col';
    head.append(th);
  });
  table.appendChild(el('thead')).append(head);
  const body = el('tbody');
  for (let t = 0; t < s.T; t++) {
    const tr = el('tr'), i = s.peak[t];
    tr.append(el('td', null, s.tgt[t]), el('td', null, s.prob[t].toFixed(4)),
      el('td', null, s.src[i]), el('td', null, s.alpha[t * s.S + i].toFixed(4)));
    body.append(tr);
  }
  table.append(body);
  return table;
}

function deselect() {
  if (current) {
    current.s.rows[current.t].classList.remove('sel');
    current.s.panel.replaceChildren();
  }
  current = null;
}

function select(s, t) {
  if (current && current.s === s && current.t === t) return;
  if (current) current.s.rows[current.t].classList.remove('sel');
  current = { s: s, t: t };
  s.rows[t].classList.add('sel');
  showStep(s, t);
}

// Step t (0-based) of sentence s: the softmax of its row, then the chosen token.
function showStep(s, t) {
  const p = s.panel, row = t * s.S;
  p.replaceChildren();
  p.append(el('h3', null, 'Step ' + (t + 1) + ' of ' + s.T));
  p.append(el('p', 'formula', FORMULAS[s.d.score](t + 1, 'i') + ' (' + s.d.score + ')'));
  const e = s.e.subarray(row, row + s.S), alpha = s.alpha.subarray(row, row + s.S);
  p.append(softmaxTable(t + 1, s.src, e, alpha, s.peak[t]).table);
  const chosen = el('p', 'chosen');
  chosen.append('Chosen token ', el('b', 'tok', s.tgt[t]), ' with probability ',
    el('b', 'prob', s.prob[t].toFixed(4)), '; it attends most to ',
    el('b', 'peak-tok', s.src[s.peak[t]]),
    ' (\u03b1 = ' + s.alpha[row + s.peak[t]].toFixed(4) + ').');
  p.append(chosen);
}

// Arrow keys move between output tokens (right and down to the next), across sentences at
// either end.
function move(s, t, ev) {
  const arrow = ARROWS[ev.key], step = arrow ? arrow[0] + arrow[1] : 0;
  if (!step) return;
  let target = null;
  if (t + step >= 0 && t + step < s.T) target = s.heads[t + step];
  else if (sentences[s.k + step]) {
    const n = sentences[s.k + step];
    target = n.heads[step > 0 ? 0 : n.T - 1];
  }
  if (target) {
    ev.preventDefault();
    target.focus();
  }
}

function build() {
  const data = JSON.parse(document.getElementById('alignment-data').textContent);
  const list = document.getElementById('sentence-list');
  const main = document.getElementById('sentences');
  data.sentences.forEach((d, k) => {
    const s = unpack(d, k), li = el('li'), a = el('a');
    sentences.push(s);
    li.value = s.n; // the list counts as the input did, blank lines included
    a.href = '#sentence-' + s.n;
    a.append(el('span', 'source', d.source), ' \u2192 ', el('span', 'translation', d.translation));
    li.append(a);
    list.append(li);
    render(s, main);
  });
  // #s2t3 selects step 3 of sentence 2; otherwise the first step is shown
  const m = /^#s(\d+)t(\d+)$/.exec(location.hash);
  const s = m ? sentences.find((x) => x.n === Number(m[1])) : sentences[0];
  if (s) select(s, m ? Math.min(Number(m[2]), s.T) - 1 : 0);
}

try {
  build();
} catch (err) {
  pageErrors.push(err.message);
  document.getElementById('sentences').append(el('p', 'note', 'The page could not be drawn: '
    + err.message));
}
