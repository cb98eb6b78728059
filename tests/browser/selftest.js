'use strict';
// selftest.js: what the two pages' self-tests share. The browser tests put it before each of
// them in the one script element they add to a page (run.sh: attention-selftest.js, live.sh:
// live-selftest.js): a tally of checks, and the element #selftest-result (a pre) that the
// verdict goes in, which the tests read from headless Chromium's DOM dump.

// check(ok, what) counts a check and keeps the words of the first 30 that failed.
function tally() {
  const t = { checks: 0, failed: 0, fails: [] };
  t.check = (ok, what) => {
    t.checks++;
    if (!ok && t.failed++ < 30) t.fails.push(what);
  };
  return t;
}

// FAIL with the failures' words, or PASS, the number of checks and `passed`.
function verdict(t, passed) {
  if (t.fails.length)
    return 'FAIL ' + t.failed + ' of ' + t.checks + ' checks:\n' + t.fails.join('\n');
  return 'PASS ' + t.checks + ' checks' + passed;
}

// Puts text at the end of the page as the result.
function report(text) {
  const out = document.createElement('pre');
  out.id = 'selftest-result';
  out.textContent = text;
  document.body.append(out);
}
