'use strict';
// live-selftest.js: the self-test of the live page (live/live.js), which tests/browser/live.sh
// adds, after tests/browser/selftest.js, to the pages it makes (live/make-page.sh --selftest);
// users' pages do not carry it. Opened with #selftest, it drives the page like a user and checks it
// against what bin/align wrote for the same model (the references element), then writes PASS
// or FAIL into #selftest-result, which live.sh reads from headless Chromium's DOM dump.

const TOLERANCE = 1e-5;
// An int8 model's steps (the forced decoder, float on the weights' values) against its search
// (int8 products): the same computation but for the rounding of each product's input rows.
const INT8_STEP_TOLERANCE = 1e-2;
// the largest difference seen between a step's numbers and the search's (int8 models)
const stepGap = { worst: 0 };

function typeAndTranslate(text, beam, nbest) {
  document.getElementById('source').value = text;
  const search = beam > 1 ? 'beam' : 'greedy';
  document.querySelector('input[name="search"][value="' + search + '"]').checked = true;
  document.getElementById('beam').value = String(Math.max(beam, 2));
  document.getElementById('nbest').value = String(nbest);
  document.getElementById('translate').click();
}

function selftest() {
  const results = tally(), check = results.check, scriptsBefore = document.scripts.length;
  const near = (a, b, tol) => Math.abs(a - b) <= tol;
  const refs = JSON.parse(document.getElementById('references').textContent).runs;
  let sentences = 0;
  check(refs.length > 0, 'the page holds references from bin/align');
  refs.forEach((run) => run.sentences.forEach((ref, k) => {
    const where = 'beam ' + run.beam + ' sentence ' + (k + 1);
    sentences++;
    typeAndTranslate(ref.source, run.beam, Math.min(2, run.beam));
    const h = page.hyps[0];
    check(h !== undefined,
      where + ': translated (' + document.getElementById('status').textContent + ')');
    if (!h) return;
    check(h.text === ref.translation,
      where + ': translation "' + h.text + '", bin/align "' + ref.translation + '"');
    check(JSON.stringify(h.src) === JSON.stringify(ref.src_tokens), where + ': source tokens');
    check(JSON.stringify(h.tgt) === JSON.stringify(ref.tgt_tokens), where + ': output tokens');
    check(ref.alpha.length === h.T && ref.prob.length === h.T, where + ': rows');
    for (let t = 0; t < Math.min(h.T, ref.alpha.length); t++) {
      const at = where + ' step ' + (t + 1);
      check(near(h.prob[t], ref.prob[t], TOLERANCE),
        at + ': p ' + h.prob[t] + ', bin/align ' + ref.prob[t]);
      for (let i = 0; i < h.S; i++) {
        const w = h.alpha[t * h.S + i];
        check(near(w, ref.alpha[t][i], TOLERANCE),
          at + ': alpha_' + i + ' ' + w + ', bin/align ' + ref.alpha[t][i]);
      }
    }
    checkShown(h, where, check, near);
  }));
  check(sentences > 0, 'at least one reference sentence');
  hostile(check);
  check(document.scripts.length === scriptsBefore,
    'no script element added (' + document.scripts.length + ')');
  check(!document.documentElement.hasAttribute('xpwned'), 'no script from the text ran');
  pageErrors.forEach((e) => check(false, 'JavaScript error: ' + e));
  const first = page.timings.first, tm = page.timings;
  report(verdict(results, ', ' + sentences + ' sentences against bin/align to 1e-5')
    + (page.engine.info.int8 ? '\n8-bit weights: the steps\u2019 float decoder within '
      + INT8_STEP_TOLERANCE + ' of the search (at most ' + stepGap.worst.toExponential(2) + ')'
      : '')
    + '\nfirst translation: ' + (first === null ? 'none' : first.toFixed(0)
      + ' ms after the page started loading') + ' (model decoded in ' + tm.decode.toFixed(0)
    + ' ms, module ready in ' + tm.module.toFixed(0) + ' ms, model opened in '
    + tm.open.toFixed(0) + ' ms)');
}

// What the page shows for hypothesis h: the n-best list, the heatmap, and every cell's
// worked step, whose numbers must agree with each other and with the search's.
function checkShown(h, where, check, near) {
  const text = (css) => {
    const n = document.querySelector(css);
    return n ? n.textContent : '(missing ' + css + ')';
  };
  check(text('#nbest-list .text') === h.text, where + ': n-best list shows the translation');
  const heads = document.querySelectorAll('#heatmap th.src');
  check(heads.length === h.S, where + ': one column per source token');
  heads.forEach((th, i) => check(th.textContent === h.src[i],
    where + ': source token ' + i + ' verbatim'));
  const view = page.view, tr = h.trace, S = h.S;
  const nearStep = (a, b) => {
    if (!view.int8) return near(a, b, TOLERANCE);
    stepGap.worst = Math.max(stepGap.worst, Math.abs(a - b));
    return near(a, b, INT8_STEP_TOLERANCE);
  };
  for (let t = 0; t < h.T; t++) {
    const at = where + ' step ' + (t + 1);
    check(view.heads[t].textContent === h.tgt[t], at + ': output token verbatim');
    check(nearStep(tr.prob[t], h.prob[t]),
      at + ': the trace\u2019s p ' + tr.prob[t] + ', the search\u2019s ' + h.prob[t]);
    let sum = 0;
    for (let i = 0; i < S; i++) sum += h.alpha[t * S + i];
    check(near(sum, 1, 1e-5), at + ': weights sum to ' + sum);
    for (let i = 0; i < S; i++) {
      const cell = view.cells[t][i], w = h.alpha[t * S + i], traced = tr.alpha[t * S + i];
      check(cell.textContent === w.toFixed(2) && cell.style.backgroundColor === colour(w),
        at + ': cell ' + i + ' shows its weight');
      check(nearStep(traced, w),
        at + ': the trace\u2019s alpha_' + i + ' ' + traced + ', the search\u2019s ' + w);
      cell.focus();
      if (!(view.worked && view.worked.t === t && view.worked.i === i))
        cell.dispatchEvent(new FocusEvent('focus'));
      const worked = view.worked, cellAt = at + ' cell ' + i;
      check(worked && worked.t === t && worked.i === i, at + ': cell ' + i + ' opens its step');
      if (!worked) continue;
      const e = tr.energy[t * S + i], own = worked.own;
      check(near(own.dot, e, 1e-5 * (1 + Math.abs(e))),
        cellAt + ': the products shown sum to ' + own.dot + ', e = ' + e);
      if (own.hidden)
        own.hidden.forEach((x, j) => check(near(Math.tanh(own.sum[j]), x, 1e-5),
          cellAt + ': tanh of the sum, value ' + j));
      check(near(Math.exp(e) / worked.softmax.sum, traced, 1e-5),
        cellAt + ': exp(e) / sum = alpha');
      const panel = view.panel.textContent;
      check(panel.includes('= ' + fmt(e)), cellAt + ': the step shows e = ' + fmt(e));
      check(panel.includes(fmt(h.prob[t])), cellAt + ': the step shows p = ' + fmt(h.prob[t]));
    }
    let c0 = 0;
    for (let j = 0; j < S; j++) c0 += tr.alpha[t * S + j] * tr.enc_h[j * tr.K];
    check(near(c0, tr.context[t * tr.K], 1e-5 * (1 + Math.abs(c0))),
      at + ': c[0] = sum alpha h[0]');
  }
  // keyboard: ArrowRight from the first cell focuses the second
  if (S > 1) {
    view.cells[0][0].focus();
    view.cells[0][0].dispatchEvent(new KeyboardEvent('keydown',
      { key: 'ArrowRight', bubbles: true, cancelable: true }));
    check(document.activeElement === view.cells[0][1],
      where + ': ArrowRight moves to the next cell');
  }
  // the "what if" box: the translation itself, force-decoded, gives the same weights
  const prefix = h.tgt.filter((tok, t) => t < h.T - (h.complete ? 1 : 0)).join(' ');
  if (prefix !== '' && !h.text.includes('<unk>') && !h.tgt.includes('<unk>')) {
    document.getElementById('prefix').value = prefix;
    document.getElementById('force-button').click();
    const f = page.forced;
    check(f !== null, where + ': what-if force-decodes the translation ('
      + document.getElementById('force-status').textContent + ')');
    // the same tokens (the prefix is tokenized again) give the same weights as the steps
    if (f && h.complete && JSON.stringify(f.tgt) === JSON.stringify(h.tgt))
      for (let k = 0; k < S * h.T; k++)
        check(near(f.alpha[k], tr.alpha[k], TOLERANCE), where + ': what-if weight ' + k);
  }
}

// Hostile text typed into the box: shown as text, refused or translated, the page unbroken.
function hostile(check) {
  // '<' is written \x3c: this script sits inside the page's script element
  const inputs = [
    '\x3cimg src=x onerror="document.documentElement.setAttribute(\'xpwned\',\'img\')"> '
      + '\x3cb>cat\x3c/b> & "dog"',
    '\x3c/script>\x3cscript>document.documentElement.setAttribute("xpwned","script")\x3c/script>',
    '\x3c!-- --> \u2028 javascript:alert(1) \'q\'',
    'the cat '.repeat(1250), // 10,000 characters, 2,500 tokens: refused
    'a'.repeat(10000), // 10,000 characters, one token
    'cat \uD800 dog', '\uDC00', 'the dog \uDBFF', '', '   ',
  ];
  inputs.forEach((text, k) => {
    const where = 'hostile input ' + (k + 1);
    typeAndTranslate(text, 1, 1);
    check(document.getElementById('source').value === text, where + ': the box holds the text');
    const said = document.getElementById('status').textContent;
    const shown = !document.getElementById('result').hidden;
    check(shown !== said.startsWith('Not translated'),
      where + ': translated or refused, not both: ' + said.slice(0, 200));
    if (LONE_SURROGATE.test(text))
      check(said.includes('lone surrogate'), where + ': refused for its lone surrogate');
    if (shown) {
      const cols = document.querySelectorAll('#heatmap th.src');
      const heads = Array.from(cols, (th) => th.textContent);
      check(JSON.stringify(heads) === JSON.stringify(page.hyps[0].src),
        where + ': source tokens verbatim');
      document.getElementById('prefix').value = text;
      document.getElementById('force-button').click();
      const f = page.forced;
      if (f) {
        const rows = document.querySelectorAll('#force-heatmap th.tgt');
        check(Array.from(rows, (th) => th.textContent).join(' ') === f.tgt.join(' '),
          where + ': forced tokens verbatim');
      }
    }
    check(!document.documentElement.hasAttribute('xpwned'),
      where + ': no script from the text ran');
  });
  typeAndTranslate('I love machine learning', 1, 1);
  check(page.hyps.length === 1 && !document.getElementById('result').hidden,
    'the page translates again after the hostile inputs');
}

if (location.hash === '#selftest') {
  try {
    if (page.failure) throw page.failure;
    selftest();
  } catch (err) {
    report('FAIL the page stopped: ' + err.message + '\n' + (err.stack || ''));
  }
}
