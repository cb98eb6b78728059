/*
 * align_html.c: alignments as one self-contained interactive HTML page (see align_write.h).
 * The page lists the sentences, draws a heatmap per sentence (output tokens as rows, source
 * tokens as columns) and, for the output token under the pointer or the keyboard focus, works
 * that decoding step out as the course notes do: each score e_ti, exp, their sum, the weights
 * alpha_ti as bars, the chosen token and its probability. CSS and JavaScript are inline and
 * nothing is fetched, so the file reads offline from file://. Opened with #selftest, the page
 * drives itself and writes PASS or FAIL into #selftest-result (tests/browser/run.sh).
 *
 * Tokens are never markup: the data travels as JSON in a <script type="application/json">
 * element with '<', '>', '&' and U+2028/9 escaped as \uXXXX (so no "</script" or "<!--" can
 * end it early), and the page builds its DOM with textContent only.
 *
 * Size: two matrices of floats as JSON text would be ~1 MB for 100 sentences of 20 tokens, so
 * each cell is one 4-character code (24 bits, base64url digits) of q_ti = lse_t - e_ti, where
 * lse_t = log sum_i exp(e_ti): the page recovers the score e_ti = lse_t - q_ti and the weight
 * alpha_ti = exp(-q_ti), both to 1e-5, from one number. The probabilities travel as codes of
 * -log p_t. A row of codes that does not belong to its scores then shows as a row of weights
 * that does not sum to 1, which the self-test checks.
 */
#include "nmt/align_write.h"

#include <math.h>
#include <string.h>

#include "nmt/markup.h"

enum { CODE_CHARS = 4, CODE_MAX = (1 << 24) - 1 };
static const double CODE_UNIT = 1e-5; /* value of one step of a code; the page uses the same */
static const char CODE_DIGITS[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The page's style sheet. */
static const char *const PAGE_CSS[] = {
    ":root { --sel: #e6550d; --ink: #1a1a1a; --muted: #5a5a5a; }",
    "body { font-family: system-ui, \"DejaVu Sans\", \"Noto Sans\", \"Noto Sans CJK SC\", \"Noto "
    "Sans CJK JP\", \"Microsoft YaHei\", sans-serif; color: var(--ink); margin: 1.5em; "
    "line-height: 1.4; }",
    "h1 { font-size: 1.5em; margin: 0 0 .3em; }",
    "h2 { font-size: 1.1em; margin: 1.6em 0 .5em; font-weight: 600; }",
    "h2 .num { color: var(--muted); }",
    "h2 .arrow { color: var(--muted); }",
    ".hint, .note, caption { color: var(--muted); font-size: .9em; }",
    ".legend { display: flex; align-items: center; gap: .5em; font-size: .9em; margin: .6em 0; }",
    ".legend .ramp { display: inline-block; width: 12em; height: 1em; border: 1px solid #888; "
    "background: linear-gradient(to right, rgb(255,255,255), rgb(107,174,214), rgb(8,48,107)); }",
    "nav ol { margin: .3em 0; padding-left: 2em; }",
    ".layout { display: flex; flex-wrap: wrap; gap: 2em; align-items: flex-start; }",
    ".grid { overflow-x: auto; max-width: 100%; }",
    "table.heatmap { border-collapse: collapse; font-size: 12px; }",
    "table.heatmap caption { caption-side: bottom; text-align: left; padding-top: .4em; max-width: "
    "40em; }",
    "table.heatmap th { font-weight: normal; }",
    "th.src { vertical-align: bottom; padding: 0 0 4px; }",
    "th.src span { writing-mode: vertical-rl; text-orientation: mixed; display: inline-block; "
    "max-height: 9em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }",
    "th.tgt { text-align: right; padding: 0 .5em; max-width: 12em; overflow: hidden; "
    "text-overflow: ellipsis; white-space: nowrap; cursor: pointer; }",
    "th.tgt:focus { outline: 2px solid var(--sel); outline-offset: -2px; }",
    "tr.sel th.tgt { background: #fdd0a2; font-weight: 600; }",
    "td.cell { width: 36px; min-width: 36px; height: 26px; text-align: center; font-size: 10px; "
    "border: 1px solid #d0d0d0; padding: 0; }",
    "td.cell.dark { color: #fff; }",
    "td.cell.faint { color: transparent; }",
    "td.cell.peak { outline: 2px solid #111; outline-offset: -3px; font-weight: 700; }",
    "tr.sel td.cell { box-shadow: inset 0 3px 0 var(--sel), inset 0 -3px 0 var(--sel); }",
    ".step { min-width: 24em; max-width: 46em; font-size: .92em; }",
    ".step h3 { font-size: 1em; margin: 0 0 .3em; }",
    ".step .formula { font-family: \"DejaVu Sans Mono\", monospace; font-size: .9em; color: "
    "var(--muted); }",
    ".step table { border-collapse: collapse; }",
    ".step th, .step td { padding: .1em .6em; text-align: right; border-bottom: 1px solid #e4e4e4; "
    "}",
    ".step td.tok, .step th.tok { text-align: left; max-width: 14em; overflow: hidden; "
    "text-overflow: ellipsis; white-space: nowrap; }",
    ".step td.barcell { width: 10em; text-align: left; }",
    ".step .bar { display: inline-block; height: .8em; background: rgb(49,130,189); "
    "vertical-align: middle; }",
    ".step tr.peak td { font-weight: 700; }",
    ".step tfoot td { border-bottom: none; border-top: 2px solid #999; }",
    ".chosen b { font-weight: 700; }",
    ".sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 "
    "0); white-space: nowrap; }",
    "#selftest-result { border: 2px solid #333; padding: .5em; white-space: pre-wrap; }",
    "@media print {",
    "  body { margin: 0; font-size: 10pt; }",
    "  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }",
    "  nav, .hint, .step { display: none; }",
    "  section { break-inside: avoid; }",
    "  tr.sel td.cell { box-shadow: none; }",
    "  tr.sel th.tgt { background: none; font-weight: normal; }",
    "  .sr-only { position: static; width: auto; height: auto; overflow: visible; clip: auto; "
    "white-space: normal; }",
    "  table.summary { border-collapse: collapse; margin-top: .5em; font-size: 9pt; }",
    "  table.summary th, table.summary td { border: 1px solid #bbb; padding: .1em .4em; }",
    "}",
};

/* The page's script: builds the DOM from the data, the interaction, and #selftest. */
static const char *const PAGE_SCRIPT[] = {
    "'use strict';",
    "// Errors anywhere on the page are kept for the self-test, which fails on any.",
    "const pageErrors = [];",
    "window.onerror = (message, source, line) => { pageErrors.push(String(message) + ' (line ' + "
    "line + ')'); };",
    "",
    "// Each code is 4 characters of this alphabet, a 24-bit number n; the value is n * UNIT.",
    "const DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';",
    "const UNIT = 1e-5;",
    "const DIGIT_VALUE = new Map(Array.from(DIGITS, (c, d) => [c, d]));",
    "",
    "function decode(codes, n, what) {",
    "  if (typeof codes !== 'string' || codes.length !== 4 * n)",
    "    throw new Error(what + ': expected ' + n + ' codes');",
    "  const out = new Float64Array(n);",
    "  for (let k = 0; k < n; k++) {",
    "    let v = 0;",
    "    for (let j = 0; j < 4; j++) {",
    "      const d = DIGIT_VALUE.get(codes[4 * k + j]);",
    "      if (d === undefined) throw new Error(what + ': bad code ' + k);",
    "      v = v * 64 + d;",
    "    }",
    "    out[k] = v * UNIT;",
    "  }",
    "  return out;",
    "}",
    "",
    "// One sentence: e_ti = lse_t - q_ti and alpha_ti = exp(-q_ti), row t at [t * S + i].",
    "function unpack(d, k) {",
    "  const S = d.src.length, T = d.tgt.length, what = 'sentence ' + (k + 1);",
    "  const q = decode(d.q, S * T, what + ' weights'), nlp = decode(d.nlp, T, what + ' "
    "probabilities');",
    "  if (!Array.isArray(d.lse) || d.lse.length !== T) throw new Error(what + ': expected ' + T + "
    "' sums');",
    "  const e = new Float64Array(S * T), alpha = new Float64Array(S * T), prob = new "
    "Float64Array(T);",
    "  const peak = new Int32Array(T);",
    "  for (let t = 0; t < T; t++) {",
    "    prob[t] = Math.exp(-nlp[t]);",
    "    for (let i = 0; i < S; i++) {",
    "      e[t * S + i] = d.lse[t] - q[t * S + i];",
    "      alpha[t * S + i] = Math.exp(-q[t * S + i]);",
    "      if (alpha[t * S + i] > alpha[t * S + peak[t]]) peak[t] = i;",
    "    }",
    "  }",
    "  return { d: d, k: k, S: S, T: T, e: e, alpha: alpha, prob: prob, peak: peak, heads: [], "
    "cells: [], rows: [], panel: null };",
    "}",
    "",
    "// The worked softmax of step t, as the course notes do it: exp of each score, their sum, "
    "ratios.",
    "function softmax(s, t) {",
    "  const ex = [];",
    "  let sum = 0;",
    "  for (let i = 0; i < s.S; i++) { ex.push(Math.exp(s.e[t * s.S + i])); sum += ex[i]; }",
    "  return { ex: ex, sum: sum, alpha: ex.map((x) => x / sum) };",
    "}",
    "",
    "// The colour scale of the SVG heatmaps: white, mid blue at 0.5, dark blue at 1.",
    "const SCALE = [[0, 255, 255, 255], [0.5, 107, 174, 214], [1, 8, 48, 107]];",
    "function colour(w) {",
    "  w = w > 0 ? Math.min(w, 1) : 0;",
    "  const a = SCALE[w <= 0.5 ? 0 : 1], b = SCALE[w <= 0.5 ? 1 : 2], f = (w - a[0]) / (b[0] - "
    "a[0]);",
    "  return 'rgb(' + [1, 2, 3].map((j) => Math.round(a[j] + f * (b[j] - a[j]))).join(', ') + "
    "')';",
    "}",
    "",
    "function fmtExp(x) { return x >= 1e-3 && x < 1e5 ? x.toPrecision(4) : x.toExponential(3); }",
    "function fmtSum(x) { return x >= 1e-3 && x < 1e6 ? x.toPrecision(6) : x.toExponential(5); }",
    "",
    "// Elements are made with textContent only: data never becomes markup.",
    "function el(tag, cls, text) {",
    "  const n = document.createElement(tag);",
    "  if (cls) n.className = cls;",
    "  if (text !== undefined) n.textContent = text;",
    "  return n;",
    "}",
    "",
    "const sentences = [];",
    "let current = null; // { s, t } of the selected row",
    "",
    "function render(s, parent) {",
    "  const d = s.d, sec = el('section', 'sentence');",
    "  sec.id = 'sentence-' + (s.k + 1);",
    "  const h = el('h2');",
    "  h.append(el('span', 'num', (s.k + 1) + '.'), ' ', el('span', 'source', d.source), "
    "el('span', 'arrow', ' \\u2192 '), el('span', 'translation', d.translation));",
    "  sec.append(h);",
    "  if (d.reference !== null) {",
    "    const note = el('p', 'note');",
    "    note.append('Forced decoding (teacher forcing) of the reference ', el('q', 'reference', "
    "d.reference), ': the rows are its tokens.');",
    "    sec.append(note);",
    "  }",
    "  if (!d.complete) sec.append(el('p', 'note', 'The output stopped before </s> (length "
    "limit).'));",
    "  const layout = el('div', 'layout'), grid = el('div', 'grid'), table = el('table', "
    "'heatmap');",
    "  table.append(el('caption', null, 'Attention weights \\u03b1: one row per output token, one "
    "column per source token (</s> included); each row sums to 1. The outlined cell is each "
    "row\\u2019s largest weight.'));",
    "  const head = el('tr'), corner = el('th', 'corner');",
    "  corner.scope = 'col';",
    "  corner.append(el('span', 'sr-only', 'output token'));",
    "  head.append(corner);",
    "  d.src.forEach((tok) => {",
    "    const th = el('th', 'src');",
    "    th.scope = 'col';",
    "    th.title = tok;",
    "    th.append(el('span', null, tok));",
    "    head.append(th);",
    "  });",
    "  table.appendChild(el('thead')).append(head);",
    "  const body = el('tbody');",
    "  for (let t = 0; t < s.T; t++) {",
    "    const tr = el('tr'), th = el('th', 'tgt', d.tgt[t]);",
    "    tr.dataset.t = t;",
    "    th.scope = 'row';",
    "    th.tabIndex = 0;",
    "    th.title = d.tgt[t];",
    "    th.addEventListener('focus', () => select(s, t));",
    "    th.addEventListener('keydown', (ev) => move(s, t, ev));",
    "    tr.append(th);",
    "    const cells = [];",
    "    for (let i = 0; i < s.S; i++) {",
    "      const w = s.alpha[t * s.S + i], td = el('td', 'cell', w.toFixed(2));",
    "      td.style.backgroundColor = colour(w);",
    "      if (w > 0.55) td.classList.add('dark');",
    "      if (w < 0.1) td.classList.add('faint');",
    "      if (i === s.peak[t]) td.classList.add('peak');",
    "      td.title = d.tgt[t] + ' \\u2190 ' + d.src[i] + ': ' + w.toFixed(4);",
    "      cells.push(td);",
    "      tr.append(td);",
    "    }",
    "    s.heads.push(th);",
    "    s.cells.push(cells);",
    "    s.rows.push(tr);",
    "    body.append(tr);",
    "  }",
    "  table.append(body);",
    "  table.addEventListener('mouseover', (ev) => {",
    "    const tr = ev.target.closest('tr[data-t]');",
    "    if (tr) select(s, Number(tr.dataset.t));",
    "  });",
    "  grid.append(table, summary(s));",
    "  s.panel = el('div', 'step');",
    "  s.panel.setAttribute('aria-live', 'polite');",
    "  s.panel.append(el('p', 'hint', 'Point at an output token (or focus it with Tab, then use "
    "the arrow keys) to see that decoding step worked out.'));",
    "  layout.append(grid, s.panel);",
    "  sec.append(layout);",
    "  parent.append(sec);",
    "}",
    "",
    "// For screen readers (and print): each output token, the source token it attends to most.",
    "function summary(s) {",
    "  const table = el('table', 'summary sr-only'), head = el('tr');",
    "  table.append(el('caption', null, 'Sentence ' + (s.k + 1) + ' as a table: each output token, "
    "its probability, and the source token it attends to most.'));",
    "  ['output token', 'probability', 'most attended source token', 'weight'].forEach((x) => { "
    "const th = el('th', null, x); th.scope = 'col'; head.append(th); });",
    "  table.appendChild(el('thead')).append(head);",
    "  const body = el('tbody');",
    "  for (let t = 0; t < s.T; t++) {",
    "    const tr = el('tr'), i = s.peak[t];",
    "    tr.append(el('td', null, s.d.tgt[t]), el('td', null, s.prob[t].toFixed(4)), el('td', "
    "null, s.d.src[i]), el('td', null, s.alpha[t * s.S + i].toFixed(4)));",
    "    body.append(tr);",
    "  }",
    "  table.append(body);",
    "  return table;",
    "}",
    "",
    "function deselect() {",
    "  if (current) {",
    "    current.s.rows[current.t].classList.remove('sel');",
    "    current.s.panel.replaceChildren();",
    "  }",
    "  current = null;",
    "}",
    "",
    "function select(s, t) {",
    "  if (current && current.s === s && current.t === t) return;",
    "  if (current) current.s.rows[current.t].classList.remove('sel');",
    "  current = { s: s, t: t };",
    "  s.rows[t].classList.add('sel');",
    "  showStep(s, t);",
    "}",
    "",
    "function showStep(s, t) {",
    "  const d = s.d, sm = softmax(s, t), p = s.panel;",
    "  p.replaceChildren();",
    "  p.append(el('h3', null, 'Step ' + (t + 1) + ' of ' + s.T));",
    "  const lhs = 'e_' + (t + 1) + 'i = ', query = 's_' + t, formula = {",
    "    additive: lhs + 'v\\u1d40 tanh(W_q ' + query + ' + W_k h_i + b)',",
    "    dot: lhs + query + ' \\u00b7 h_i',",
    "    general: lhs + query + ' \\u00b7 (W_a h_i)',",
    "    scaled_dot: lhs + '(W_q ' + query + ') \\u00b7 (W_k h_i) / \\u221aA'}[d.score];",
    "  p.append(el('p', 'formula', formula + '    \\u03b1_' + (t + 1) + 'i = exp(e_' + (t + 1) + "
    "'i) / \\u03a3_j exp(e_' + (t + 1) + 'j)'));",
    "  const table = el('table', 'worked'), head = el('tr');",
    "  [['i', ''], ['source token', 'tok'], ['e_ti', ''], ['exp(e_ti)', ''], ['\\u03b1_ti', ''], "
    "['', 'barcell']].forEach((c) => { const th = el('th', c[1], c[0]); th.scope = 'col'; "
    "head.append(th); });",
    "  table.appendChild(el('thead')).append(head);",
    "  const body = el('tbody');",
    "  for (let i = 0; i < s.S; i++) {",
    "    const tr = el('tr', i === s.peak[t] ? 'peak' : ''), bar = el('span', 'bar'), barcell = "
    "el('td', 'barcell');",
    "    bar.style.width = (sm.alpha[i] * 100).toFixed(2) + '%';",
    "    bar.setAttribute('aria-hidden', 'true');",
    "    barcell.append(bar);",
    "    tr.append(el('td', 'i', String(i)), el('td', 'tok', d.src[i]), el('td', 'e', s.e[t * s.S "
    "+ i].toFixed(3)), el('td', 'exp', fmtExp(sm.ex[i])), el('td', 'alpha', "
    "sm.alpha[i].toFixed(4)), barcell);",
    "    body.append(tr);",
    "  }",
    "  table.append(body);",
    "  const foot = el('tr');",
    "  foot.append(el('td', null, ''), el('td', 'tok', 'sum'), el('td', null, ''), el('td', 'sum', "
    "fmtSum(sm.sum)), el('td', null, '1.0000'), el('td', null, ''));",
    "  table.appendChild(el('tfoot')).append(foot);",
    "  p.append(table);",
    "  const chosen = el('p', 'chosen');",
    "  chosen.append('Chosen token ', el('b', 'tok', d.tgt[t]), ' with probability ', el('b', "
    "'prob', s.prob[t].toFixed(4)), '; it attends most to ', el('b', 'peak-tok', "
    "d.src[s.peak[t]]), ' (\\u03b1 = ' + s.alpha[t * s.S + s.peak[t]].toFixed(4) + ').');",
    "  p.append(chosen);",
    "}",
    "",
    "// Arrow keys move between output tokens, across sentences at either end.",
    "function move(s, t, ev) {",
    "  const step = ev.key === 'ArrowDown' || ev.key === 'ArrowRight' ? 1 : ev.key === 'ArrowUp' "
    "|| ev.key === 'ArrowLeft' ? -1 : 0;",
    "  if (!step) return;",
    "  let target = null;",
    "  if (t + step >= 0 && t + step < s.T) target = s.heads[t + step];",
    "  else if (sentences[s.k + step]) { const n = sentences[s.k + step]; target = n.heads[step > "
    "0 ? 0 : n.T - 1]; }",
    "  if (target) { ev.preventDefault(); target.focus(); }",
    "}",
    "",
    "function build() {",
    "  const data = JSON.parse(document.getElementById('alignment-data').textContent);",
    "  const list = document.getElementById('sentence-list'), main = "
    "document.getElementById('sentences');",
    "  data.sentences.forEach((d, k) => {",
    "    const s = unpack(d, k), li = el('li'), a = el('a');",
    "    sentences.push(s);",
    "    a.href = '#sentence-' + (k + 1);",
    "    a.append(el('span', 'source', d.source), ' \\u2192 ', el('span', 'translation', "
    "d.translation));",
    "    li.append(a);",
    "    list.append(li);",
    "    render(s, main);",
    "  });",
    "  // #s2t3 selects step 3 of sentence 2; otherwise the first step is shown",
    "  const m = /^#s(\\d+)t(\\d+)$/.exec(location.hash);",
    "  const s = m ? sentences[Number(m[1]) - 1] : sentences[0];",
    "  if (s) select(s, m ? Math.min(Number(m[2]), s.T) - 1 : 0);",
    "}",
    "",
    "// ---- #selftest: drives the page like a user and checks what it shows against the data ----",
    "function selftest() {",
    "  let checks = 0;",
    "  const fails = [];",
    "  let synthesized = 0;",
    "  let failed = 0;",
    "  const check = (ok, what) => { checks++; if (!ok && failed++ < 30) fails.push(what); };",
    "  const near = (shown, value, tol) => Math.abs(parseFloat(shown) - value) <= tol;",
    "  check(sentences.length === "
    "JSON.parse(document.getElementById('alignment-data').textContent).sentences.length, 'every "
    "sentence drawn');",
    "  check(document.querySelectorAll('section.sentence').length === sentences.length, 'one "
    "section per sentence');",
    "  sentences.forEach((s) => {",
    "    const where = 'sentence ' + (s.k + 1), sec = document.getElementById('sentence-' + (s.k + "
    "1));",
    "    check(sec !== null, where + ': drawn');",
    "    if (!sec) return;",
    "    check(sec.querySelector('h2 .source').textContent === s.d.source, where + ': source text "
    "verbatim');",
    "    check(sec.querySelector('h2 .translation').textContent === s.d.translation, where + ': "
    "translation verbatim');",
    "    if (s.d.reference !== null) check(sec.querySelector('q.reference').textContent === "
    "s.d.reference, where + ': reference verbatim');",
    "    const cols = sec.querySelectorAll('th.src');",
    "    check(cols.length === s.S, where + ': one column per source token');",
    "    cols.forEach((th, i) => check(th.textContent === s.d.src[i], where + ': source token ' + "
    "i + ' verbatim'));",
    "    for (let t = 0; t < s.T; t++) {",
    "      const at = where + ' step ' + (t + 1);",
    "      let sum = 0;",
    "      for (let i = 0; i < s.S; i++) sum += s.alpha[t * s.S + i];",
    "      check(Math.abs(sum - 1) <= 1e-4, at + ': weights sum to ' + sum.toFixed(6));",
    "      for (let i = 0; i < s.S; i++) check(s.alpha[t * s.S + i] <= s.alpha[t * s.S + "
    "s.peak[t]], at + ': largest weight');",
    "      // hovering any cell of the row and focusing its token both select it",
    "      for (const how of ['hover', 'focus']) {",
    "        deselect();",
    "        if (document.activeElement && document.activeElement !== document.body) "
    "document.activeElement.blur();",
    "        if (how === 'hover') s.cells[t][s.S - 1].dispatchEvent(new MouseEvent('mouseover', { "
    "bubbles: true }));",
    "        else {",
    "          s.heads[t].focus();",
    "          // a browser window without the system focus moves the focus but fires no focus "
    "event",
    "          if (!(current && current.s === s && current.t === t) && !document.hasFocus()) {",
    "            synthesized++;",
    "            s.heads[t].dispatchEvent(new FocusEvent('focus'));",
    "          }",
    "        }",
    "        checkRow(s, t, at + ' (' + how + ')', check, near);",
    "      }",
    "      check(document.activeElement === s.heads[t], at + ': token has the focus');",
    "      s.heads[t].dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: "
    "true, cancelable: true }));",
    "      const next = t + 1 < s.T ? s.heads[t + 1] : sentences[s.k + 1] ? sentences[s.k + "
    "1].heads[0] : s.heads[t];",
    "      check(document.activeElement === next, at + ': ArrowDown moves to the next token');",
    "    }",
    "  });",
    "  check(document.scripts.length === 2, 'no script element but the page\\u2019s own (' + "
    "document.scripts.length + ')');",
    "  check(!document.documentElement.hasAttribute('xpwned'), 'no script from the text ran');",
    "  pageErrors.forEach((e) => check(false, 'JavaScript error: ' + e));",
    "  const out = document.getElementById('selftest-result');",
    "  out.hidden = false;",
    "  out.textContent = fails.length ? 'FAIL ' + failed + ' of ' + checks + ' checks:\\n' + "
    "fails.join('\\n') : 'PASS ' + checks + ' checks' + (synthesized ? ' (the window had no focus: "
    "' + synthesized + ' focus events dispatched by hand)' : '');",
    "}",
    "",
    "// Row t of s is selected, drawn from the data, and its worked step shows the data's numbers.",
    "function checkRow(s, t, at, check, near) {",
    "  const d = s.d, sm = softmax(s, t);",
    "  // the text of the first match of css inside node, so that a missing element fails a check",
    "  const text = (node, css) => { const n = node.querySelector(css); return n ? n.textContent : "
    "'(missing ' + css + ')'; };",
    "  check(current && current.s === s && current.t === t, at + ': selected');",
    "  check(document.querySelectorAll('tr.sel').length === 1 && "
    "s.rows[t].classList.contains('sel'), at + ': only its row highlighted');",
    "  check(s.heads[t].textContent === d.tgt[t], at + ': output token verbatim');",
    "  s.cells[t].forEach((td, i) => {",
    "    const w = s.alpha[t * s.S + i];",
    "    check(td.textContent === w.toFixed(2) && td.style.backgroundColor === colour(w), at + ': "
    "cell ' + i + ' shows its weight');",
    "    check(td.classList.contains('peak') === (i === s.peak[t]), at + ': cell ' + i + ' marked "
    "as largest only if it is');",
    "  });",
    "  const rows = s.panel.querySelectorAll('tbody tr');",
    "  check(text(s.panel, 'h3') === 'Step ' + (t + 1) + ' of ' + s.T, at + ': panel shows this "
    "step');",
    "  check(rows.length === s.S, at + ': one worked line per source token');",
    "  rows.forEach((tr, i) => {",
    "    const e = s.e[t * s.S + i], w = s.alpha[t * s.S + i], cell = (c) => text(tr, '.' + c);",
    "    check(cell('tok') === d.src[i], at + ': line ' + i + ' source token');",
    "    check(near(cell('e'), e, 5e-4 + 1e-9), at + ': e_' + i + ' shown ' + cell('e') + ', data "
    "' + e);",
    "    check(Math.abs(parseFloat(cell('exp')) - Math.exp(e)) <= 5e-4 * Math.exp(e), at + ': "
    "exp(e_' + i + ')');",
    "    check(near(cell('alpha'), w, 5e-5 + 1e-6), at + ': alpha_' + i + ' shown ' + "
    "cell('alpha') + ', data ' + w.toFixed(6));",
    "    check(Math.abs(parseFloat(tr.querySelector('.bar') ? tr.querySelector('.bar').style.width "
    ": 'NaN') - 100 * w) <= 0.01, at + ': bar ' + i + ' as long as alpha');",
    "    check(tr.classList.contains('peak') === (i === s.peak[t]), at + ': line ' + i + ' marked "
    "as largest only if it is');",
    "  });",
    "  check(Math.abs(parseFloat(text(s.panel, 'tfoot .sum')) - sm.sum) <= 1e-5 * sm.sum, at + ': "
    "sum of exp');",
    "  check(text(s.panel, '.chosen .tok') === d.tgt[t], at + ': chosen token');",
    "  check(near(text(s.panel, '.chosen .prob'), s.prob[t], 5e-5 + 1e-9), at + ': its "
    "probability');",
    "}",
    "",
    "try {",
    "  build();",
    "} catch (err) {",
    "  pageErrors.push(err.message);",
    "  document.getElementById('sentences').append(el('p', 'note', 'The page could not be drawn: ' "
    "+ err.message));",
    "}",
    "if (location.hash === '#selftest') {",
    "  try { selftest(); } catch (err) {",
    "    const out = document.getElementById('selftest-result');",
    "    out.hidden = false;",
    "    out.textContent = 'FAIL the self-test stopped: ' + err.message + '\\n' + err.stack;",
    "  }",
    "}",
};

static void write_lines(FILE *out, const char *const *lines, size_t n) {
    for (size_t k = 0; k < n; k++) {
        fputs(lines[k], out);
        fputc('\n', out);
    }
}

/* A JSON string that is also safe inside a <script> element: besides JSON's own escapes,
 * '<', '>' and '&' become \u003c, \u003e, \u0026 (no "</script>" or "<!--" can appear), and
 * U+2028 and U+2029 become \u2028 and \u2029 (line ends to older JavaScript parsers). */
static void json_write_script_string(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
            fprintf(out, "\\u%04x", *p);
        else if (p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9))
            fprintf(out, "\\u%04x", 0x2000 + (p[2] - 0x80)), p += 2;
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static void json_script_string_list(FILE *out, char *const *items, int n) {
    fputc('[', out);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', out);
        json_write_script_string(out, items[i]);
    }
    fputc(']', out);
}

/* One code: value >= 0 in steps of CODE_UNIT, as four base64url digits, most significant
 * first. Values past the largest code (weights below ~1e-73) and NaN get the largest. */
static void write_code(FILE *out, double value) {
    double steps = value / CODE_UNIT;
    long n = !(steps < CODE_MAX) ? CODE_MAX : steps > 0 ? lround(steps) : 0;
    char digits[CODE_CHARS];
    for (int j = CODE_CHARS - 1; j >= 0; j--, n >>= 6) digits[j] = CODE_DIGITS[n & 63];
    fwrite(digits, 1, CODE_CHARS, out);
}

/* log sum_i exp(e_i) of one row, shifted by the largest score so that nothing overflows. */
static double log_sum_exp(const real *e, int n) {
    double top = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++) top = fmax(top, e[i]);
    if (!isfinite(top)) return top;
    for (int i = 0; i < n; i++) sum += exp(e[i] - top);
    return top + log(sum);
}

static void write_sentence(FILE *out, const Alignment *a) {
    fputs("{\"source\":", out);
    json_write_script_string(out, a->source);
    fputs(",\"translation\":", out);
    json_write_script_string(out, a->translation);
    fputs(",\"reference\":", out);
    if (a->reference)
        json_write_script_string(out, a->reference);
    else
        fputs("null", out);
    fprintf(out, ",\"score\":\"%s\",\"complete\":%d,\"src\":", score_name(a->score),
            a->complete ? 1 : 0);
    json_script_string_list(out, a->src_tokens, a->cols);
    fputs(",\"tgt\":", out);
    json_script_string_list(out, a->tgt_tokens, a->rows);
    fputs(",\"lse\":[", out);
    for (int t = 0; t < a->rows; t++) {
        double lse = log_sum_exp(a->energy + (size_t)t * a->cols, a->cols);
        fprintf(out, t ? ",%.6f" : "%.6f", isfinite(lse) ? lse : 0.0);
    }
    fputs("],\"nlp\":\"", out);
    for (int t = 0; t < a->rows; t++)
        write_code(out, a->prob[t] > 0 ? -log((double)a->prob[t]) : INFINITY);
    fputs("\",\n\"q\":\"", out);
    for (int t = 0; t < a->rows; t++) {
        const real *e = a->energy + (size_t)t * a->cols;
        double lse = log_sum_exp(e, a->cols);
        for (int i = 0; i < a->cols; i++) write_code(out, lse - e[i]);
    }
    fputs("\"}", out);
}

int alignment_write_html(FILE *out, const Alignment *list, int n, Error *err) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>Attention",
          out);
    if (n > 0) {
        fputs(": ", out);
        xml_write_text(out, list[0].source);
    }
    fputs("</title>\n<style>\n", out);
    write_lines(out, PAGE_CSS, sizeof PAGE_CSS / sizeof PAGE_CSS[0]);
    fputs("</style>\n</head>\n<body>\n<header>\n<h1>Where the decoder looks</h1>\n"
          "<p class=\"hint\">Each heatmap shows the attention weights \u03b1<sub>ti</sub> "
          "of one translation: row t is output token t, column i is source token i. Point at "
          "an output token, or press Tab and the arrow keys, to see that step of the softmax "
          "worked out.</p>\n"
          "<div class=\"legend\" aria-hidden=\"true\"><span>\u03b1 = 0</span>"
          "<span class=\"ramp\"></span><span>1</span></div>\n"
          "<nav aria-label=\"sentences\"><ol id=\"sentence-list\"></ol></nav>\n</header>\n"
          "<main id=\"sentences\"></main>\n"
          "<noscript><p>This page draws its heatmaps with JavaScript; the numbers are in the "
          "alignment-data element of its source.</p></noscript>\n"
          "<pre id=\"selftest-result\" hidden></pre>\n"
          "<!-- alignment-data: per sentence its texts and tokens; lse[t] = log sum_i "
          "exp(e_ti); nlp and q hold 4-character codes (base64url digits of a 24-bit number "
          "times 1e-5): nlp[t] = -log p_t, q[t*S+i] = lse[t] - e_ti, so alpha_ti = "
          "exp(-q[t*S+i]) -->\n"
          "<script type=\"application/json\" id=\"alignment-data\">\n{\"sentences\":[\n",
          out);
    for (int k = 0; k < n; k++) {
        if (k) fputs(",\n", out);
        write_sentence(out, &list[k]);
    }
    fputs("\n]}\n</script>\n<script>\n", out);
    write_lines(out, PAGE_SCRIPT, sizeof PAGE_SCRIPT / sizeof PAGE_SCRIPT[0]);
    fputs("</script>\n</body>\n</html>\n", out);
    return stream_status(out, err);
}
