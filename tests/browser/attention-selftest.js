'use strict';
// attention-selftest.js: the self-test of the attention page (nmt/attention-page.js), which
// tests/browser/run.sh adds, after tests/browser/selftest.js, to the pages it checks (users'
// pages do not carry it). Opened with #selftest, it hovers and focuses every output token like
// a user, checks what the page shows against the page's own data, and writes PASS or FAIL
// into #selftest-result, which run.sh reads from headless Chromium's DOM dump.

function selftest() {
  const results = tally(), check = results.check;
  let synthesized = 0;
  const near = (shown, value, tol) => Math.abs(parseFloat(shown) - value) <= tol;
  const data = JSON.parse(document.getElementById('alignment-data').textContent);
  check(sentences.length === data.sentences.length, 'every sentence drawn');
  check(document.querySelectorAll('section.sentence').length === sentences.length,
    'one section per sentence');
  sentences.forEach((s) => {
    const where = 'sentence ' + s.n, sec = document.getElementById('sentence-' + s.n);
    check(sec !== null, where + ': drawn');
    if (!sec) return;
    check(sec.querySelector('h2 .source').textContent === s.d.source, where + ': source verbatim');
    check(sec.querySelector('h2 .translation').textContent === s.d.translation,
      where + ': translation verbatim');
    if (s.d.reference !== null)
      check(sec.querySelector('q.reference').textContent === s.d.reference,
        where + ': reference verbatim');
    const cols = sec.querySelectorAll('th.src');
    check(cols.length === s.S, where + ': one column per source token');
    cols.forEach((th, i) => {
      check(th.textContent === s.d.src[i], where + ': source token ' + i + ' verbatim');
      const upright = getComputedStyle(th.firstChild).writingMode === 'horizontal-tb';
      check(upright === (Array.from(s.d.src[i]).length <= 2),
        where + ': source token ' + i + ' on its side only when longer than two characters');
    });
    check(sec.querySelector('h2 .num').textContent === s.n + '.',
      where + ': numbered as its input');
    for (let t = 0; t < s.T; t++) {
      const at = where + ' step ' + (t + 1);
      let sum = 0;
      for (let i = 0; i < s.S; i++) sum += s.alpha[t * s.S + i];
      check(Math.abs(sum - 1) <= 1e-4, at + ': weights sum to ' + sum.toFixed(6));
      for (let i = 0; i < s.S; i++)
        check(s.alpha[t * s.S + i] <= s.alpha[t * s.S + s.peak[t]], at + ': largest weight');
      // hovering any cell of the row and focusing its token both select it
      for (const how of ['hover', 'focus']) {
        deselect();
        if (document.activeElement && document.activeElement !== document.body)
          document.activeElement.blur();
        if (how === 'hover') {
          s.cells[t][s.S - 1].dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
        } else {
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
      s.heads[t].dispatchEvent(new KeyboardEvent('keydown',
        { key: 'ArrowDown', bubbles: true, cancelable: true }));
      const after = sentences[s.k + 1];
      const next = t + 1 < s.T ? s.heads[t + 1] : after ? after.heads[0] : s.heads[t];
      check(document.activeElement === next, at + ': ArrowDown moves to the next token');
    }
  });
  // the page's own script and this one
  check(document.scripts.length === 3,
    'no script element but the page\u2019s own (' + document.scripts.length + ')');
  check(!document.documentElement.hasAttribute('xpwned'), 'no script from the text ran');
  pageErrors.forEach((e) => check(false, 'JavaScript error: ' + e));
  report(verdict(results, synthesized ? ' (the window had no focus: ' + synthesized
    + ' focus events dispatched by hand)' : ''));
}

// Row t of s is selected, drawn from the data, and its worked step shows the data's numbers.
function checkRow(s, t, at, check, near) {
  const d = s.d;
  let sum = 0;
  for (let i = 0; i < s.S; i++) sum += Math.exp(s.e[t * s.S + i]);
  // the text of the first match of css inside node, so that a missing element fails a check
  const text = (node, css) => {
    const n = node.querySelector(css);
    return n ? n.textContent : '(missing ' + css + ')';
  };
  check(current && current.s === s && current.t === t, at + ': selected');
  check(document.querySelectorAll('tr.sel').length === 1 && s.rows[t].classList.contains('sel'),
    at + ': only its row highlighted');
  check(s.heads[t].textContent === d.tgt[t], at + ': output token verbatim');
  s.cells[t].forEach((td, i) => {
    const w = s.alpha[t * s.S + i];
    check(td.textContent === w.toFixed(2) && td.style.backgroundColor === colour(w),
      at + ': cell ' + i + ' shows its weight');
    check(td.classList.contains('peak') === (i === s.peak[t]),
      at + ': cell ' + i + ' marked as largest only if it is');
  });
  const rows = s.panel.querySelectorAll('tbody tr');
  check(text(s.panel, 'h3') === 'Step ' + (t + 1) + ' of ' + s.T, at + ': panel shows this step');
  check(rows.length === s.S, at + ': one worked line per source token');
  rows.forEach((tr, i) => {
    const e = s.e[t * s.S + i], w = s.alpha[t * s.S + i], cell = (c) => text(tr, '.' + c);
    const bar = tr.querySelector('.bar');
    check(cell('tok') === d.src[i], at + ': line ' + i + ' source token');
    check(near(cell('e'), e, 5e-4 + 1e-9), at + ': e_' + i + ' shown ' + cell('e') + ', data ' + e);
    check(Math.abs(parseFloat(cell('exp')) - Math.exp(e)) <= 5e-4 * Math.exp(e),
      at + ': exp(e_' + i + ')');
    check(near(cell('alpha'), w, 5e-5 + 1e-6),
      at + ': alpha_' + i + ' shown ' + cell('alpha') + ', data ' + w.toFixed(6));
    check(Math.abs(parseFloat(bar ? bar.style.width : 'NaN') - 100 * w) <= 0.01,
      at + ': bar ' + i + ' as long as alpha');
    check(tr.classList.contains('marked') === (i === s.peak[t]),
      at + ': line ' + i + ' marked as largest only if it is');
  });
  check(Math.abs(parseFloat(text(s.panel, 'tfoot .sum')) - sum) <= 1e-5 * sum, at + ': sum of exp');
  check(text(s.panel, '.chosen .tok') === d.tgt[t], at + ': chosen token');
  check(near(text(s.panel, '.chosen .prob'), s.prob[t], 5e-5 + 1e-9), at + ': its probability');
}

if (location.hash === '#selftest') {
  try {
    selftest();
  } catch (err) {
    report('FAIL the self-test stopped: ' + err.message + '\n' + err.stack);
  }
}
