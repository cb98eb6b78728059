'use strict';
// Errors anywhere on the page are kept for the self-test, which fails on any.
const pageErrors = [];
window.onerror = (message, source, line) => { pageErrors.push(String(message) + ' (line ' + line + ')'); };

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
  const q = decode(d.q, S * T, what + ' weights'), nlp = decode(d.nlp, T, what + ' probabilities');
  if (!Array.isArray(d.lse) || d.lse.length !== T) throw new Error(what + ': expected ' + T + ' sums');
  const e = new Float64Array(S * T), alpha = new Float64Array(S * T), prob = new Float64Array(T);
  const peak = new Int32Array(T);
  for (let t = 0; t < T; t++) {
    prob[t] = Math.exp(-nlp[t]);
    for (let i = 0; i < S; i++) {
      e[t * S + i] = d.lse[t] - q[t * S + i];
      alpha[t * S + i] = Math.exp(-q[t * S + i]);
      if (alpha[t * S + i] > alpha[t * S + peak[t]]) peak[t] = i;
    }
  }
  return { d: d, k: k, n: label(d, k), S: S, T: T, e: e, alpha: alpha, prob: prob, peak: peak, heads: [], cells: [], rows: [], panel: null };
}

// The worked softmax of step t, as the course notes do it: exp of each score, their sum, ratios.
function softmax(s, t) {
  const ex = [];
  let sum = 0;
  for (let i = 0; i < s.S; i++) { ex.push(Math.exp(s.e[t * s.S + i])); sum += ex[i]; }
  return { ex: ex, sum: sum, alpha: ex.map((x) => x / sum) };
}

// The colour scale of the SVG heatmaps: white, mid blue at 0.5, dark blue at 1.
const SCALE = [[0, 255, 255, 255], [0.5, 107, 174, 214], [1, 8, 48, 107]];
function colour(w) {
  w = w > 0 ? Math.min(w, 1) : 0;
  const a = SCALE[w <= 0.5 ? 0 : 1], b = SCALE[w <= 0.5 ? 1 : 2], f = (w - a[0]) / (b[0] - a[0]);
  return 'rgb(' + [1, 2, 3].map((j) => Math.round(a[j] + f * (b[j] - a[j]))).join(', ') + ')';
}

function fmtExp(x) { return x >= 1e-3 && x < 1e5 ? x.toPrecision(4) : x.toExponential(3); }
function fmtSum(x) { return x >= 1e-3 && x < 1e6 ? x.toPrecision(6) : x.toExponential(5); }

// Elements are made with textContent only: data never becomes markup.
function el(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}

const sentences = [];
let current = null; // { s, t } of the selected row

function render(s, parent) {
  const d = s.d, sec = el('section', 'sentence');
  sec.id = 'sentence-' + s.n;
  const h = el('h2');
  h.append(el('span', 'num', s.n + '.'), ' ', el('span', 'source', d.source), el('span', 'arrow', ' \u2192 '), el('span', 'translation', d.translation));
  sec.append(h);
  if (d.reference !== null) {
    const note = el('p', 'note');
    note.append('Forced decoding (teacher forcing) of the reference ', el('q', 'reference', d.reference), ': the rows are its tokens.');
    sec.append(note);
  }
  if (!d.complete) sec.append(el('p', 'note', 'The output stopped before </s> (length limit).'));
  const layout = el('div', 'layout'), grid = el('div', 'grid'), table = el('table', 'heatmap');
  table.append(el('caption', null, 'Attention weights \u03b1: one row per output token, one column per source token (</s> included); each row sums to 1. The outlined cell is each row\u2019s largest weight.'));
  const head = el('tr'), corner = el('th', 'corner');
  corner.scope = 'col';
  corner.append(el('span', 'sr-only', 'output token'));
  head.append(corner);
  d.src.forEach((tok) => {
    const th = el('th', 'src');
    // a label of one or two characters ("i", "a") turned on its side reads as "-" or ".":
    // only longer labels are rotated
    if (Array.from(tok).length <= 2) th.classList.add('short');
    th.scope = 'col';
    th.title = tok;
    th.append(el('span', null, tok));
    head.append(th);
  });
  table.appendChild(el('thead')).append(head);
  const body = el('tbody');
  for (let t = 0; t < s.T; t++) {
    const tr = el('tr'), th = el('th', 'tgt', d.tgt[t]);
    tr.dataset.t = t;
    th.scope = 'row';
    th.tabIndex = 0;
    th.title = d.tgt[t];
    th.addEventListener('focus', () => select(s, t));
    th.addEventListener('keydown', (ev) => move(s, t, ev));
    tr.append(th);
    const cells = [];
    for (let i = 0; i < s.S; i++) {
      const w = s.alpha[t * s.S + i], td = el('td', 'cell', w.toFixed(2));
      td.style.backgroundColor = colour(w);
      if (w > 0.55) td.classList.add('dark');
      if (w < 0.1) td.classList.add('faint');
      if (i === s.peak[t]) td.classList.add('peak');
      td.title = d.tgt[t] + ' \u2190 ' + d.src[i] + ': ' + w.toFixed(4);
      cells.push(td);
      tr.append(td);
    }
    s.heads.push(th);
    s.cells.push(cells);
    s.rows.push(tr);
    body.append(tr);
  }
  table.append(body);
  table.addEventListener('mouseover', (ev) => {
    const tr = ev.target.closest('tr[data-t]');
    if (tr) select(s, Number(tr.dataset.t));
  });
  grid.append(table, summary(s));
  s.panel = el('div', 'step');
  s.panel.setAttribute('aria-live', 'polite');
  s.panel.append(el('p', 'hint', 'Point at an output token (or focus it with Tab, then use the arrow keys) to see that decoding step worked out.'));
  layout.append(grid, s.panel);
  sec.append(layout);
  parent.append(sec);
}

// For screen readers (and print): each output token, the source token it attends to most.
function summary(s) {
  const table = el('table', 'summary sr-only'), head = el('tr');
  table.append(el('caption', null, 'Sentence ' + s.n + ' as a table: each output token, its probability, and the source token it attends to most.'));
  ['output token', 'probability', 'most attended source token', 'weight'].forEach((x) => { const th = el('th', null, x); th.scope = 'col'; head.append(th); });
  table.appendChild(el('thead')).append(head);
  const body = el('tbody');
  for (let t = 0; t < s.T; t++) {
    const tr = el('tr'), i = s.peak[t];
    tr.append(el('td', null, s.d.tgt[t]), el('td', null, s.prob[t].toFixed(4)), el('td', null, s.d.src[i]), el('td', null, s.alpha[t * s.S + i].toFixed(4)));
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

function showStep(s, t) {
  const d = s.d, sm = softmax(s, t), p = s.panel;
  p.replaceChildren();
  p.append(el('h3', null, 'Step ' + (t + 1) + ' of ' + s.T));
  const lhs = 'e_' + (t + 1) + 'i = ', query = 's_' + t, formula = {
    additive: lhs + 'v\u1d40 tanh(W_q ' + query + ' + W_k h_i + b)',
    dot: lhs + query + ' \u00b7 h_i',
    general: lhs + query + ' \u00b7 (W_a h_i)',
    scaled_dot: lhs + '(W_q ' + query + ') \u00b7 (W_k h_i) / \u221aA'}[d.score];
  p.append(el('p', 'formula', formula + '    \u03b1_' + (t + 1) + 'i = exp(e_' + (t + 1) + 'i) / \u03a3_j exp(e_' + (t + 1) + 'j)'));
  const table = el('table', 'worked'), head = el('tr');
  [['i', ''], ['source token', 'tok'], ['e_ti', ''], ['exp(e_ti)', ''], ['\u03b1_ti', ''], ['', 'barcell']].forEach((c) => { const th = el('th', c[1], c[0]); th.scope = 'col'; head.append(th); });
  table.appendChild(el('thead')).append(head);
  const body = el('tbody');
  for (let i = 0; i < s.S; i++) {
    const tr = el('tr', i === s.peak[t] ? 'peak' : ''), bar = el('span', 'bar'), barcell = el('td', 'barcell');
    bar.style.width = (sm.alpha[i] * 100).toFixed(2) + '%';
    bar.setAttribute('aria-hidden', 'true');
    barcell.append(bar);
    tr.append(el('td', 'i', String(i)), el('td', 'tok', d.src[i]), el('td', 'e', s.e[t * s.S + i].toFixed(3)), el('td', 'exp', fmtExp(sm.ex[i])), el('td', 'alpha', sm.alpha[i].toFixed(4)), barcell);
    body.append(tr);
  }
  table.append(body);
  const foot = el('tr');
  foot.append(el('td', null, ''), el('td', 'tok', 'sum'), el('td', null, ''), el('td', 'sum', fmtSum(sm.sum)), el('td', null, '1.0000'), el('td', null, ''));
  table.appendChild(el('tfoot')).append(foot);
  p.append(table);
  const chosen = el('p', 'chosen');
  chosen.append('Chosen token ', el('b', 'tok', d.tgt[t]), ' with probability ', el('b', 'prob', s.prob[t].toFixed(4)), '; it attends most to ', el('b', 'peak-tok', d.src[s.peak[t]]), ' (\u03b1 = ' + s.alpha[t * s.S + s.peak[t]].toFixed(4) + ').');
  p.append(chosen);
}

// Arrow keys move between output tokens, across sentences at either end.
function move(s, t, ev) {
  const step = ev.key === 'ArrowDown' || ev.key === 'ArrowRight' ? 1 : ev.key === 'ArrowUp' || ev.key === 'ArrowLeft' ? -1 : 0;
  if (!step) return;
  let target = null;
  if (t + step >= 0 && t + step < s.T) target = s.heads[t + step];
  else if (sentences[s.k + step]) { const n = sentences[s.k + step]; target = n.heads[step > 0 ? 0 : n.T - 1]; }
  if (target) { ev.preventDefault(); target.focus(); }
}

function build() {
  const data = JSON.parse(document.getElementById('alignment-data').textContent);
  const list = document.getElementById('sentence-list'), main = document.getElementById('sentences');
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

// ---- #selftest: drives the page like a user and checks what it shows against the data ----
function selftest() {
  let checks = 0;
  const fails = [];
  let synthesized = 0;
  let failed = 0;
  const check = (ok, what) => { checks++; if (!ok && failed++ < 30) fails.push(what); };
  const near = (shown, value, tol) => Math.abs(parseFloat(shown) - value) <= tol;
  check(sentences.length === JSON.parse(document.getElementById('alignment-data').textContent).sentences.length, 'every sentence drawn');
  check(document.querySelectorAll('section.sentence').length === sentences.length, 'one section per sentence');
  sentences.forEach((s) => {
    const where = 'sentence ' + s.n, sec = document.getElementById('sentence-' + s.n);
    check(sec !== null, where + ': drawn');
    if (!sec) return;
    check(sec.querySelector('h2 .source').textContent === s.d.source, where + ': source text verbatim');
    check(sec.querySelector('h2 .translation').textContent === s.d.translation, where + ': translation verbatim');
    if (s.d.reference !== null) check(sec.querySelector('q.reference').textContent === s.d.reference, where + ': reference verbatim');
    const cols = sec.querySelectorAll('th.src');
    check(cols.length === s.S, where + ': one column per source token');
    cols.forEach((th, i) => check(th.textContent === s.d.src[i], where + ': source token ' + i + ' verbatim'));
    cols.forEach((th, i) => check((getComputedStyle(th.firstChild).writingMode === 'horizontal-tb') === (Array.from(s.d.src[i]).length <= 2), where + ': source token ' + i + ' turned on its side only when longer than two characters'));
    check(sec.querySelector('h2 .num').textContent === s.n + '.', where + ': numbered as its input');
    for (let t = 0; t < s.T; t++) {
      const at = where + ' step ' + (t + 1);
      let sum = 0;
      for (let i = 0; i < s.S; i++) sum += s.alpha[t * s.S + i];
      check(Math.abs(sum - 1) <= 1e-4, at + ': weights sum to ' + sum.toFixed(6));
      for (let i = 0; i < s.S; i++) check(s.alpha[t * s.S + i] <= s.alpha[t * s.S + s.peak[t]], at + ': largest weight');
      // hovering any cell of the row and focusing its token both select it
      for (const how of ['hover', 'focus']) {
        deselect();
        if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
        if (how === 'hover') s.cells[t][s.S - 1].dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
        else {
          s.heads[t].focus();
          // a browser window without the system focus moves the focus but fires no focus event
          if (!(current && current.s === s && current.t === t) && !document.hasFocus()) {
            synthesized++;
            s.heads[t].dispatchEvent(new FocusEvent('focus'));
          }
        }
        checkRow(s, t, at + ' (' + how + ')', check, near);
      }
      check(document.activeElement === s.heads[t], at + ': token has the focus');
      s.heads[t].dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true, cancelable: true }));
      const next = t + 1 < s.T ? s.heads[t + 1] : sentences[s.k + 1] ? sentences[s.k + 1].heads[0] : s.heads[t];
      check(document.activeElement === next, at + ': ArrowDown moves to the next token');
    }
  });
  check(document.scripts.length === 2, 'no script element but the page\u2019s own (' + document.scripts.length + ')');
  check(!document.documentElement.hasAttribute('xpwned'), 'no script from the text ran');
  pageErrors.forEach((e) => check(false, 'JavaScript error: ' + e));
  const out = document.getElementById('selftest-result');
  out.hidden = false;
  out.textContent = fails.length ? 'FAIL ' + failed + ' of ' + checks + ' checks:\n' + fails.join('\n') : 'PASS ' + checks + ' checks' + (synthesized ? ' (the window had no focus: ' + synthesized + ' focus events dispatched by hand)' : '');
}

// Row t of s is selected, drawn from the data, and its worked step shows the data's numbers.
function checkRow(s, t, at, check, near) {
  const d = s.d, sm = softmax(s, t);
  // the text of the first match of css inside node, so that a missing element fails a check
  const text = (node, css) => { const n = node.querySelector(css); return n ? n.textContent : '(missing ' + css + ')'; };
  check(current && current.s === s && current.t === t, at + ': selected');
  check(document.querySelectorAll('tr.sel').length === 1 && s.rows[t].classList.contains('sel'), at + ': only its row highlighted');
  check(s.heads[t].textContent === d.tgt[t], at + ': output token verbatim');
  s.cells[t].forEach((td, i) => {
    const w = s.alpha[t * s.S + i];
    check(td.textContent === w.toFixed(2) && td.style.backgroundColor === colour(w), at + ': cell ' + i + ' shows its weight');
    check(td.classList.contains('peak') === (i === s.peak[t]), at + ': cell ' + i + ' marked as largest only if it is');
  });
  const rows = s.panel.querySelectorAll('tbody tr');
  check(text(s.panel, 'h3') === 'Step ' + (t + 1) + ' of ' + s.T, at + ': panel shows this step');
  check(rows.length === s.S, at + ': one worked line per source token');
  rows.forEach((tr, i) => {
    const e = s.e[t * s.S + i], w = s.alpha[t * s.S + i], cell = (c) => text(tr, '.' + c);
    check(cell('tok') === d.src[i], at + ': line ' + i + ' source token');
    check(near(cell('e'), e, 5e-4 + 1e-9), at + ': e_' + i + ' shown ' + cell('e') + ', data ' + e);
    check(Math.abs(parseFloat(cell('exp')) - Math.exp(e)) <= 5e-4 * Math.exp(e), at + ': exp(e_' + i + ')');
    check(near(cell('alpha'), w, 5e-5 + 1e-6), at + ': alpha_' + i + ' shown ' + cell('alpha') + ', data ' + w.toFixed(6));
    check(Math.abs(parseFloat(tr.querySelector('.bar') ? tr.querySelector('.bar').style.width : 'NaN') - 100 * w) <= 0.01, at + ': bar ' + i + ' as long as alpha');
    check(tr.classList.contains('peak') === (i === s.peak[t]), at + ': line ' + i + ' marked as largest only if it is');
  });
  check(Math.abs(parseFloat(text(s.panel, 'tfoot .sum')) - sm.sum) <= 1e-5 * sm.sum, at + ': sum of exp');
  check(text(s.panel, '.chosen .tok') === d.tgt[t], at + ': chosen token');
  check(near(text(s.panel, '.chosen .prob'), s.prob[t], 5e-5 + 1e-9), at + ': its probability');
}

try {
  build();
} catch (err) {
  pageErrors.push(err.message);
  document.getElementById('sentences').append(el('p', 'note', 'The page could not be drawn: ' + err.message));
}
if (location.hash === '#selftest') {
  try { selftest(); } catch (err) {
    const out = document.getElementById('selftest-result');
    out.hidden = false;
    out.textContent = 'FAIL the self-test stopped: ' + err.message + '\n' + err.stack;
  }
}
