'use strict';
// live.js: the script of the live attention page (live/page.html, written by live/make-page.sh
// with `make live`), after nmt/heatmap.js in the same script element. The model's checkpoint
// is in the page as base64; the translation library runs as WebAssembly (make wasm,
// live/live.c), so every number shown is the C engine's own: the search's weights and
// probabilities, and for a cell the vectors of that step (the --explain trace of bin/align).
// The page only lays them out and adds them up where the notes do (the sum W_q s + W_k h + b,
// the products of a dot product, the softmax's sum).
//
// Hostile text: the page builds its DOM with textContent only; what the engine returns is
// JSON read with JSON.parse. The self-test (tests/browser/live-selftest.js) is added only to
// the pages the browser tests make.

const SHOWN_VALUES = 6; // values of a long vector shown before "show all"
const SHOWN_TERMS = 4; // terms of a long sum written out

// a factor of a product: negatives in parentheses, as the notes write them
function factor(x) { return x < 0 ? '(' + fmt(x) + ')' : fmt(x); }

// ---- the engine: the WebAssembly module and one opened model ----

// A lone surrogate (half of a UTF-16 pair) is not a character: it has no UTF-8 form.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

class Engine {
  constructor(module, bytes) {
    this.m = module;
    const at = module._malloc(bytes.length);
    if (!at) throw new Error('out of memory for the model');
    module.HEAPU8.set(bytes, at);
    this.handle = module._live_open(at, bytes.length);
    module._free(at);
    if (!this.handle) throw new Error('out of memory opening the model');
    this.info = JSON.parse(module.UTF8ToString(module._live_info(this.handle)));
    if (this.info.error) throw new Error(this.info.error);
  }

  // Calls fn with the texts as NUL-terminated UTF-8 in the module's memory; returns its JSON.
  call(texts, fn) {
    const m = this.m, at = [];
    try {
      for (const text of texts) {
        const bytes = new TextEncoder().encode(text), p = m._malloc(bytes.length + 1);
        if (!p) throw new Error('out of memory for the text');
        at.push(p);
        m.HEAPU8.set(bytes, p);
        m.HEAPU8[p + bytes.length] = 0;
      }
      return JSON.parse(m.UTF8ToString(fn.apply(null, at)));
    } finally {
      at.forEach((p) => m._free(p));
    }
  }

  translate(text, beam, nbest) {
    return this.call([text], (p) => this.m._live_translate(this.handle, p, beam, nbest));
  }

  force(text, target) {
    return this.call([text, target], (p, q) => this.m._live_force(this.handle, p, q));
  }
}

// Why the page will not pass text to the engine (null: it may).
function refusal(text) {
  const lone = LONE_SURROGATE.exec(text);
  if (lone) {
    const code = lone[0].charCodeAt(0).toString(16).toUpperCase();
    return 'the text holds a lone surrogate (U+' + code + ' at character ' + (lone.index + 1)
      + '), which is not a character';
  }
  return null;
}

// ---- views: a hypothesis's heatmap and its worked steps ----

// One hypothesis as arrays, with its trace (the forced decoder's vectors of every step).
function unpackHyp(h) {
  return Object.assign({ S: h.cols, T: h.rows, peak: peaks(h.alpha, h.cols, h.rows) }, h);
}

// A vector: its first values, its length, and a button that shows all of it.
function vector(values, name) {
  const box = el('span', 'vector'), n = values.length;
  const shown = (all) => '[' + (all ? values : values.slice(0, SHOWN_VALUES)).map(fmt).join(', ')
    + (all || n <= SHOWN_VALUES ? ']' : ', \u2026]');
  const head = el('span', 'values', shown(false));
  box.append(head, el('span', 'len', ' (' + n + ' values)'));
  if (n > SHOWN_VALUES) {
    const button = el('button', 'expand', 'show all');
    button.type = 'button';
    button.setAttribute('aria-expanded', 'false');
    button.setAttribute('aria-label', 'show all ' + n + ' values of ' + name);
    button.addEventListener('click', () => {
      const open = button.getAttribute('aria-expanded') !== 'true';
      head.textContent = shown(open);
      button.setAttribute('aria-expanded', String(open));
      button.textContent = open ? 'show fewer' : 'show all';
    });
    box.append(' ', button);
  }
  return box;
}

// "a_0*b_0 + a_1*b_1 + ... (n terms)" over the first few terms of a dot product.
function products(a, b) {
  const terms = [];
  for (let j = 0; j < a.length && j < SHOWN_TERMS; j++)
    terms.push(factor(a[j]) + '\u00d7' + factor(b[j]));
  return terms.join(' + ') + (a.length > SHOWN_TERMS ? ' + \u2026 (' + a.length + ' terms)' : '');
}

function slice(array, row, width) { return array.slice(row * width, (row + 1) * width); }

// One line of the worked step: a label, the formula's left side and what it equals.
function line(list, label, lhs, value, cls) {
  const dt = el('dt', null, label), dd = el('dd', cls);
  dd.append(el('span', 'lhs', lhs + ' = '));
  if (typeof value === 'string') dd.append(el('span', 'num', value));
  else dd.append(value);
  list.append(dt, dd);
  return dd;
}

// The score e_ti worked out from the trace, for the model's score. Writes into list and
// returns the numbers the page computed itself (for the self-test).
function workScore(list, score, tr, t, i, S) {
  const T1 = t + 1, q = slice(tr.projected, t, tr.F), k = slice(tr.keys, i, tr.F);
  const e = tr.energy[t * S + i], own = {}, eName = 'e_' + T1 + ',' + i;
  if (score === 'additive') {
    const sum = q.map((x, j) => x + k[j]), hid = slice(tr.hidden, t * S + i, tr.A);
    line(list, 'query', 'W_q s_' + t, vector(q, 'W_q s_' + t));
    line(list, 'key', 'W_k h_' + i + ' + b', vector(k, 'W_k h_' + i + ' + b'));
    line(list, 'sum', 'W_q s_' + t + ' + W_k h_' + i + ' + b', vector(sum, 'the sum'));
    line(list, 'tanh', 'tanh(sum)', vector(hid, 'tanh of the sum'));
    line(list, 'v', 'v', vector(tr.v, 'v'));
    line(list, 'score', eName + ' = v \u00b7 tanh(sum)', products(tr.v, hid) + ' = ' + fmt(e),
      'score');
    own.sum = sum;
    own.hidden = hid;
    own.dot = tr.v.reduce((acc, x, j) => acc + x * hid[j], 0);
  } else {
    const scaled = score === 'scaled_dot';
    const qName = scaled ? 'W_q s_' + t : 's_' + t;
    const kName = score === 'dot' ? 'h_' + i : score === 'general' ? 'W_a h_' + i : 'W_k h_' + i;
    line(list, 'query', qName, vector(q, qName));
    line(list, 'key', kName, vector(k, kName));
    own.dot = q.reduce((acc, x, j) => acc + x * k[j], 0);
    if (scaled) {
      const root = Math.sqrt(tr.A);
      line(list, 'dot', '(' + qName + ') \u00b7 (' + kName + ')',
        products(q, k) + ' = ' + fmt(own.dot));
      line(list, 'score', eName + ' = that / \u221a' + tr.A,
        fmt(own.dot) + ' / ' + fmt(root) + ' = ' + fmt(e), 'score');
      own.dot /= root;
    } else {
      line(list, 'score', eName + ' = ' + qName + ' \u00b7 ' + kName,
        products(q, k) + ' = ' + fmt(e), 'score');
    }
  }
  return own;
}

// Step t (0-based) for source position i, in panel, from hypothesis h.
function showCell(view, t, i) {
  const h = view.h, tr = h.trace, S = h.S, T1 = t + 1, panel = view.panel, score = view.score;
  panel.replaceChildren();
  panel.append(el('h3', null, 'Step ' + T1 + ', source token ' + i + ': \u201c' + h.src[i]
    + '\u201d \u2192 \u201c' + h.tgt[t] + '\u201d'));
  panel.append(el('p', 'formula', FORMULAS[score](T1, i) + ' (' + score + ')'));
  const list = el('dl', 'worked');
  line(list, 'state', 'q_' + T1 + ' = s_' + t, vector(slice(tr.query, t, tr.D), 's_' + t));
  const own = workScore(list, score, tr, t, i, S);
  panel.append(list);
  const sm = softmaxTable(T1, h.src, slice(tr.energy, t, S), slice(tr.alpha, t, S), i);
  panel.append(sm.table);
  const context = el('dl', 'worked'), c = slice(tr.context, t, tr.K);
  line(context, 'context', 'c_' + T1 + ' = \u03a3_j \u03b1_' + T1 + 'j h_j', vector(c, 'c_' + T1));
  const first = [];
  for (let j = 0; j < S; j++)
    first.push(factor(tr.alpha[t * S + j]) + '\u00d7' + factor(tr.enc_h[j * tr.K]));
  const terms = S > SHOWN_TERMS * 2
    ? first.slice(0, SHOWN_TERMS).join(' + ') + ' + \u2026 (' + S + ' terms)' : first.join(' + ');
  line(context, 'its first value', 'c_' + T1 + '[0]', terms + ' = ' + fmt(c[0]));
  line(context, 'output', 'p(' + h.tgt[t] + ')', fmt(h.prob[t]), 'chosen');
  panel.append(context);
  // an int8 model: the heatmap and p are the search's (int8 products), the step the forced
  // decoder's, whose decoder runs in float on the weights' values (as bin/align --explain)
  if (view.int8)
    panel.append(el('p', 'note', '8-bit weights: the heatmap and p come from the search, which '
      + 'multiplies with int8 products; this step\u2019s vectors are computed in float from the '
      + 'weights\u2019 values s\u00b7q, so its weights can differ from the heatmap\u2019s in the '
      + 'last digits.'));
  view.worked = { t: t, i: i, own: own, softmax: sm };
}

// The heatmap of hypothesis h in box, its steps in panel; compare (optional) is a hypothesis
// whose most attended source token each row is set against.
function heatmap(box, panel, h, score, compare) {
  const view = {
    h: h, panel: panel, score: score, int8: page.engine.info.int8 === 1, cells: [], heads: [],
    focus: null, worked: null,
  };
  panel.replaceChildren(el('p', 'hint', 'Point at a cell, or focus it with Tab and move with '
    + 'the arrow keys, to see its step worked out.'));
  const extra = { head: [el('th', 'p', 'p')], row: (t) => {
    const p = h.prob[t], cells = [el('td', 'p', p < 1e-3 ? p.toExponential(1) : p.toFixed(3))];
    if (compare) {
      const mine = h.src[h.peak[t]], theirs = t < compare.T ? compare.src[compare.peak[t]] : null;
      cells.push(el('td', 'compare', theirs === null ? mine + ' (no such row above)'
        : mine === theirs ? mine + ' (same)' : mine + ' (above: ' + theirs + ')'));
    }
    return cells;
  } };
  if (compare) extra.head.push(el('th', 'compare', 'most attended (translation above)'));
  const map = heatmapTable(h, extra);
  map.cells.forEach((row, t) => row.forEach((td, i) => {
    td.tabIndex = t === 0 && i === 0 ? 0 : -1;
    td.addEventListener('focus', () => select(view, t, i));
    td.addEventListener('mouseenter', () => select(view, t, i));
    td.addEventListener('keydown', (ev) => move(view, t, i, ev));
  }));
  view.cells = map.cells;
  view.heads = map.heads;
  box.replaceChildren(map.table);
  return view;
}

function select(view, t, i) {
  if (view.focus) view.focus.classList.remove('sel');
  view.focus = view.cells[t][i];
  view.focus.classList.add('sel');
  view.cells.forEach((row) => row.forEach((td) => { td.tabIndex = -1; }));
  view.focus.tabIndex = 0;
  showCell(view, t, i);
}

// Arrow keys move between cells; Home and End to a row's ends.
function move(view, t, i, ev) {
  const arrow = ARROWS[ev.key];
  const to = arrow ? [t + arrow[0], i + arrow[1]]
    : ev.key === 'Home' ? [t, 0] : ev.key === 'End' ? [t, view.h.S - 1] : null;
  if (!to || !view.cells[to[0]] || !view.cells[to[0]][to[1]]) return;
  ev.preventDefault();
  view.cells[to[0]][to[1]].focus();
}

// ---- the page ----

const page = {
  engine: null, result: null, hyps: [], chosen: 0, view: null, forced: null, forceView: null,
  source: '', firstTranslation: null, timings: {},
};

function status(id, text, cls) {
  const p = document.getElementById(id);
  p.className = cls || '';
  p.textContent = text;
}

function searchOptions() {
  const beamChosen = document.querySelector('input[name="search"]:checked').value === 'beam';
  const beam = beamChosen ? Number(document.getElementById('beam').value) : 1;
  const nbest = Number(document.getElementById('nbest').value);
  const max = page.engine ? page.engine.info.max_beam : 16;
  const b = Number.isInteger(beam) && beam >= 1 ? Math.min(beam, max) : 1;
  return { beam: b, nbest: Number.isInteger(nbest) && nbest >= 1 ? Math.min(nbest, b) : 1 };
}

// Translates the text box's sentence and draws the result (or says why it cannot).
function translate() {
  const text = document.getElementById('source').value, opt = searchOptions();
  const result = document.getElementById('result'), whatif = document.getElementById('whatif');
  page.source = text;
  page.result = null;
  page.hyps = [];
  if (!page.engine) return status('status', 'The model is not loaded.', 'error');
  const why = refusal(text);
  if (why) {
    result.hidden = true;
    whatif.hidden = true;
    return status('status', 'Not translated: ' + why + '.', 'refused');
  }
  const start = performance.now();
  const answer = page.engine.translate(text, opt.beam, opt.nbest);
  const ms = performance.now() - start;
  page.result = answer;
  if (answer.error || answer.refused) {
    result.hidden = true;
    whatif.hidden = true;
    return status('status', 'Not translated: ' + (answer.error || answer.refused), 'refused');
  }
  page.hyps = answer.hyps.map(unpackHyp);
  if (!page.hyps.length) {
    result.hidden = true;
    return status('status', 'No hypothesis finished within the length limit.', 'refused');
  }
  const n = page.hyps.length;
  status('status', (opt.beam > 1 ? 'Beam search of ' + opt.beam : 'Greedy search') + ', ' + n
    + ' hypothes' + (n > 1 ? 'es' : 'is') + ' in ' + ms.toFixed(0) + ' ms'
    + (answer.unknown ? '; ' + answer.unknown + ' source token(s) unknown to the model (<unk>)'
      : '') + '.');
  const list = document.getElementById('nbest-list');
  list.replaceChildren();
  page.hyps.forEach((h, k) => {
    const li = el('li'), button = el('button', 'hyp');
    button.type = 'button';
    button.append(el('span', 'text', h.text), el('span', 'score', ' log p = '
      + h.logprob.toFixed(3) + ', score ' + h.score.toFixed(3)));
    button.addEventListener('click', () => choose(k));
    li.append(button);
    list.append(li);
  });
  result.hidden = false;
  whatif.hidden = false;
  choose(0);
  if (page.firstTranslation === null) page.firstTranslation = performance.now();
}

function choose(k) {
  page.chosen = k;
  document.querySelectorAll('#nbest-list button')
    .forEach((b, j) => b.setAttribute('aria-pressed', String(j === k)));
  page.view = heatmap(document.getElementById('heatmap'), document.getElementById('step'),
    page.hyps[k], page.engine.info.score, null);
  select(page.view, 0, page.hyps[k].peak[0]);
}

// Force-decodes the prefix box's tokens as the translation of the translated sentence.
function force() {
  const prefix = document.getElementById('prefix').value;
  const box = document.getElementById('force-heatmap');
  const panel = document.getElementById('force-step');
  page.forced = null;
  box.replaceChildren();
  panel.replaceChildren();
  if (!page.engine || !page.hyps.length)
    return status('force-status', 'Translate a sentence first.', 'refused');
  const why = refusal(prefix);
  if (why) return status('force-status', 'Not force-decoded: ' + why + '.', 'refused');
  const answer = page.engine.force(page.source, prefix);
  if (answer.error || answer.refused)
    return status('force-status', 'Not force-decoded: ' + (answer.error || answer.refused),
      'refused');
  page.forced = unpackHyp(answer.hyps[0]);
  status('force-status', 'Teacher forcing of ' + (page.forced.T - 1) + ' token(s): log p = '
    + page.forced.logprob.toFixed(3) + '.');
  page.forceView = heatmap(box, panel, page.forced, page.engine.info.score, page.hyps[page.chosen]);
}

function base64Bytes(text) {
  const binary = atob(text.replace(/\s+/g, ''));
  const out = new Uint8Array(binary.length);
  for (let k = 0; k < binary.length; k++) out[k] = binary.charCodeAt(k);
  return out;
}

// The module is compiled synchronously (make wasm: WASM_ASYNC_COMPILATION=0; it is small),
// so the page is ready before the load event, and a self-test added after this script runs
// before it too: headless Chromium's --dump-dom then sees the result.
function boot() {
  const info = JSON.parse(document.getElementById('model-info').textContent);
  const t0 = performance.now();
  const bytes = base64Bytes(document.getElementById('model-data').textContent);
  const t1 = performance.now();
  /* global createLiveModule */
  const module = createLiveModule();
  if (typeof module._live_open !== 'function')
    throw new Error('the WebAssembly module did not start');
  const t2 = performance.now();
  page.engine = new Engine(module, bytes);
  const t3 = performance.now();
  const d = page.engine.info;
  document.getElementById('model-line').textContent = 'Model ' + info.name + ' ('
    + (bytes.length / 1e6).toFixed(2) + ' MB): ' + d.score + ' attention, vocabularies '
    + d.src_vocab + ' / ' + d.tgt_vocab + ', E = ' + d.E + ', K = ' + d.K + ', D = ' + d.D
    + ', A = ' + d.A + (d.subwords ? ', subwords' : '')
    + (d.int8 ? ', 8-bit weights (int8, from bin/quantize)' : ', float weights') + '.';
  document.getElementById('beam').max = d.max_beam;
  document.getElementById('nbest').max = d.max_beam;
  document.getElementById('ask').addEventListener('submit', (ev) => {
    ev.preventDefault();
    translate();
  });
  document.getElementById('force').addEventListener('submit', (ev) => {
    ev.preventDefault();
    force();
  });
  translate();
  page.timings = { decode: t1 - t0, module: t2 - t1, open: t3 - t2, first: page.firstTranslation };
}

try {
  boot();
} catch (err) {
  pageErrors.push(err.message);
  page.failure = err;
  status('status', 'The page could not start: ' + err.message, 'error');
}
