'use strict';
// live.js: the script of the live attention page (live/page.html, written by live/make-page.sh
// with `make live`). The model's checkpoint is in the page as base64; the translation library
// runs as WebAssembly (make wasm, live/live.c), so every number shown is the C engine's own:
// the search's weights and probabilities, and for a cell the vectors of that step (the
// --explain trace of bin/align). The page only lays them out and adds them up where the
// notes do (the sum W_q s + W_k h + b, the products of a dot product, the softmax's sum).
//
// Hostile text: the page builds its DOM with textContent only; what the engine returns is
// JSON read with JSON.parse. Opened with #selftest, the page checks itself against what
// bin/align wrote for the same model (the references element) and writes PASS or FAIL into
// #selftest-result (tests/browser/run.sh).

// Errors anywhere on the page are kept for the self-test, which fails on any.
const pageErrors = [];
window.addEventListener('error', (ev) => { pageErrors.push(String(ev.message) + ' (line ' + ev.lineno + ')'); });
window.addEventListener('unhandledrejection', (ev) => { pageErrors.push('unhandled rejection: ' + String(ev.reason)); });

const SHOWN_VALUES = 6; // values of a long vector shown before "show all"
const SHOWN_TERMS = 4; // terms of a long sum written out

// Elements are made with textContent only: data never becomes markup.
function el(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}

// The colour scale of the attention page: white, mid blue at 0.5, dark blue at 1.
const SCALE = [[0, 255, 255, 255], [0.5, 107, 174, 214], [1, 8, 48, 107]];
function colour(w) {
  w = w > 0 ? Math.min(w, 1) : 0;
  const a = SCALE[w <= 0.5 ? 0 : 1], b = SCALE[w <= 0.5 ? 1 : 2], f = (w - a[0]) / (b[0] - a[0]);
  return 'rgb(' + [1, 2, 3].map((j) => Math.round(a[j] + f * (b[j] - a[j]))).join(', ') + ')';
}

function fmt(x) {
  const size = Math.abs(x);
  return size !== 0 && (size < 1e-3 || size >= 1e6) ? x.toExponential(3) : x.toFixed(4);
}
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
    return 'the text holds a lone surrogate (U+' + code + ' at character ' + (lone.index + 1) + '), which is not a character';
  }
  return null;
}

// ---- views: a hypothesis's heatmap and its worked steps ----

// One hypothesis as arrays, with its trace (the forced decoder's vectors of every step).
function unpackHyp(h) {
  const S = h.cols, T = h.rows, peak = new Int32Array(T);
  for (let t = 0; t < T; t++)
    for (let i = 0; i < S; i++) if (h.alpha[t * S + i] > h.alpha[t * S + peak[t]]) peak[t] = i;
  return Object.assign({ S: S, T: T, peak: peak }, h);
}

// A vector: its first values, its length, and a button that shows all of it.
function vector(values, name) {
  const box = el('span', 'vector'), n = values.length;
  const head = el('span', 'values', '[' + values.slice(0, SHOWN_VALUES).map(fmt).join(', ') + (n > SHOWN_VALUES ? ', \u2026]' : ']'));
  box.append(head, el('span', 'len', ' (' + n + ' values)'));
  if (n > SHOWN_VALUES) {
    const button = el('button', 'expand', 'show all');
    button.type = 'button';
    button.setAttribute('aria-expanded', 'false');
    button.setAttribute('aria-label', 'show all ' + n + ' values of ' + name);
    button.addEventListener('click', () => {
      const open = button.getAttribute('aria-expanded') !== 'true';
      head.textContent = '[' + (open ? values : values.slice(0, SHOWN_VALUES)).map(fmt).join(', ') + (open ? ']' : ', \u2026]');
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
  for (let j = 0; j < a.length && j < SHOWN_TERMS; j++) terms.push(factor(a[j]) + '\u00d7' + factor(b[j]));
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

const FORMULAS = {
  additive: (t, i) => 'e_' + t + ',' + i + ' = v\u1d40 tanh(W_q s_' + (t - 1) + ' + W_k h_' + i + ' + b)',
  dot: (t, i) => 'e_' + t + ',' + i + ' = s_' + (t - 1) + ' \u00b7 h_' + i,
  general: (t, i) => 'e_' + t + ',' + i + ' = s_' + (t - 1) + ' \u00b7 (W_a h_' + i + ')',
  scaled_dot: (t, i) => 'e_' + t + ',' + i + ' = (W_q s_' + (t - 1) + ') \u00b7 (W_k h_' + i + ') / \u221aA',
};

// The score e_ti worked out from the trace, for the model's score. Writes into list and
// returns the numbers the page computed itself (for the self-test).
function workScore(list, score, tr, t, i, S) {
  const T1 = t + 1, q = slice(tr.projected, t, tr.F), k = slice(tr.keys, i, tr.F), e = tr.energy[t * S + i];
  const own = {};
  if (score === 'additive') {
    const sum = q.map((x, j) => x + k[j]), hid = slice(tr.hidden, t * S + i, tr.A);
    line(list, 'query', 'W_q s_' + t, vector(q, 'W_q s_' + t));
    line(list, 'key', 'W_k h_' + i + ' + b', vector(k, 'W_k h_' + i + ' + b'));
    line(list, 'sum', 'W_q s_' + t + ' + W_k h_' + i + ' + b', vector(sum, 'the sum'));
    line(list, 'tanh', 'tanh(sum)', vector(hid, 'tanh of the sum'));
    line(list, 'v', 'v', vector(tr.v, 'v'));
    line(list, 'score', 'e_' + T1 + ',' + i + ' = v \u00b7 tanh(sum)', products(tr.v, hid) + ' = ' + fmt(e), 'score');
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
      line(list, 'dot', '(' + qName + ') \u00b7 (' + kName + ')', products(q, k) + ' = ' + fmt(own.dot));
      line(list, 'score', 'e_' + T1 + ',' + i + ' = that / \u221a' + tr.A, fmt(own.dot) + ' / ' + fmt(root) + ' = ' + fmt(e), 'score');
      own.dot /= root;
    } else {
      line(list, 'score', 'e_' + T1 + ',' + i + ' = ' + qName + ' \u00b7 ' + kName, products(q, k) + ' = ' + fmt(e), 'score');
    }
  }
  return own;
}

// The softmax of row t as the notes do it: each e_tj, exp(e_tj), their sum, the weights.
function workSoftmax(panel, tr, h, t, i) {
  const S = h.S, e = slice(tr.energy, t, S), alpha = slice(tr.alpha, t, S);
  const ex = e.map(Math.exp), sum = ex.reduce((a, b) => a + b, 0);
  const table = el('table', 'softmax'), head = el('tr');
  table.append(el('caption', null, 'Softmax over row ' + (t + 1) + ': \u03b1_' + (t + 1) + 'j = exp(e_' + (t + 1) + 'j) / \u03a3_k exp(e_' + (t + 1) + 'k)'));
  [['j', ''], ['source token', 'tok'], ['e', ''], ['exp(e)', ''], ['\u03b1', ''], ['', 'barcell']].forEach((c) => {
    const th = el('th', c[1], c[0]);
    th.scope = 'col';
    head.append(th);
  });
  table.appendChild(el('thead')).append(head);
  const body = el('tbody');
  for (let j = 0; j < S; j++) {
    const tr2 = el('tr', j === i ? 'this' : ''), bar = el('span', 'bar'), barcell = el('td', 'barcell');
    bar.style.width = (alpha[j] * 100).toFixed(2) + '%';
    bar.setAttribute('aria-hidden', 'true');
    barcell.append(bar);
    tr2.append(el('td', 'j', String(j)), el('td', 'tok', h.src[j]), el('td', 'e', fmt(e[j])), el('td', 'exp', fmt(ex[j])), el('td', 'alpha', alpha[j].toFixed(6)), barcell);
    body.append(tr2);
  }
  const foot = el('tr');
  foot.append(el('td', null, ''), el('td', 'tok', 'sum'), el('td', null, ''), el('td', 'sum', fmt(sum)), el('td', null, ''), el('td', null, ''));
  table.append(body);
  table.appendChild(el('tfoot')).append(foot);
  panel.append(table);
  return { ex: ex, sum: sum };
}

// Step t (0-based) for source position i, in panel, from hypothesis h.
function showCell(view, t, i) {
  const h = view.h, tr = h.trace, S = h.S, T1 = t + 1, panel = view.panel, score = view.score;
  panel.replaceChildren();
  panel.append(el('h3', null, 'Step ' + T1 + ', source token ' + i + ': \u201c' + h.src[i] + '\u201d \u2192 \u201c' + h.tgt[t] + '\u201d'));
  panel.append(el('p', 'formula', FORMULAS[score](T1, i) + ' (' + score + ')'));
  const list = el('dl', 'worked');
  line(list, 'state', 'q_' + T1 + ' = s_' + t, vector(slice(tr.query, t, tr.D), 's_' + t));
  const own = workScore(list, score, tr, t, i, S);
  panel.append(list);
  const sm = workSoftmax(panel, tr, h, t, i);
  const context = el('dl', 'worked'), c = slice(tr.context, t, tr.K);
  line(context, 'context', 'c_' + T1 + ' = \u03a3_j \u03b1_' + T1 + 'j h_j', vector(c, 'c_' + T1));
  const first = [];
  for (let j = 0; j < S; j++) first.push(factor(tr.alpha[t * S + j]) + '\u00d7' + factor(tr.enc_h[j * tr.K]));
  line(context, 'its first value', 'c_' + T1 + '[0]', (S > SHOWN_TERMS * 2 ? first.slice(0, SHOWN_TERMS).join(' + ') + ' + \u2026 (' + S + ' terms)' : first.join(' + ')) + ' = ' + fmt(c[0]));
  line(context, 'output', 'p(' + h.tgt[t] + ')', fmt(h.prob[t]), 'chosen');
  panel.append(context);
  // an int8 model: the heatmap and p are the search's (int8 products), the step the forced
  // decoder's, whose decoder runs in float on the weights' values (as bin/align --explain)
  if (view.int8)
    panel.append(el('p', 'note', '8-bit weights: the heatmap and p come from the search, which multiplies with int8 products; this step\u2019s vectors are computed in float from the weights\u2019 values s\u00b7q, so its weights can differ from the heatmap\u2019s in the last digits.'));
  view.worked = { t: t, i: i, own: own, softmax: sm };
}

// The heatmap of hypothesis h in box, its steps in panel; compare (optional) is a hypothesis
// whose most attended source token each row is set against.
function heatmap(box, panel, h, score, compare) {
  const view = { h: h, panel: panel, score: score, int8: page.engine.info.int8 === 1, cells: [], heads: [], focus: null, worked: null };
  box.replaceChildren();
  panel.replaceChildren(el('p', 'hint', 'Point at a cell, or focus it with Tab and move with the arrow keys, to see its step worked out.'));
  const table = el('table', 'heatmap');
  table.append(el('caption', null, 'Attention weights \u03b1: one row per output token, one column per source token (</s> included); each row sums to 1. The outlined cell is each row\u2019s largest weight.'));
  const head = el('tr'), corner = el('th', 'corner');
  corner.scope = 'col';
  head.append(corner);
  h.src.forEach((tok) => {
    const th = el('th', 'src');
    th.scope = 'col';
    th.title = tok;
    th.append(el('span', null, tok));
    head.append(th);
  });
  head.append(el('th', 'p', 'p'));
  if (compare) head.append(el('th', 'compare', 'most attended (translation above)'));
  table.appendChild(el('thead')).append(head);
  const body = el('tbody');
  for (let t = 0; t < h.T; t++) {
    const row = el('tr'), th = el('th', 'tgt', h.tgt[t]), cells = [];
    th.scope = 'row';
    th.title = h.tgt[t];
    row.append(th);
    for (let i = 0; i < h.S; i++) {
      const w = h.alpha[t * h.S + i], td = el('td', 'cell', w.toFixed(2));
      td.style.backgroundColor = colour(w);
      if (w > 0.55) td.classList.add('dark');
      if (w < 0.1) td.classList.add('faint');
      if (i === h.peak[t]) td.classList.add('peak');
      td.tabIndex = t === 0 && i === 0 ? 0 : -1;
      td.title = h.tgt[t] + ' \u2190 ' + h.src[i] + ': ' + w.toFixed(4);
      td.addEventListener('focus', () => select(view, t, i));
      td.addEventListener('mouseenter', () => select(view, t, i));
      td.addEventListener('keydown', (ev) => move(view, t, i, ev));
      cells.push(td);
      row.append(td);
    }
    row.append(el('td', 'p', h.prob[t] < 1e-3 ? h.prob[t].toExponential(1) : h.prob[t].toFixed(3)));
    if (compare) {
      const mine = h.src[h.peak[t]], theirs = t < compare.T ? compare.src[compare.peak[t]] : null;
      row.append(el('td', 'compare', theirs === null ? mine + ' (no such row above)' : mine === theirs ? mine + ' (same)' : mine + ' (above: ' + theirs + ')'));
    }
    view.cells.push(cells);
    view.heads.push(th);
    body.append(row);
  }
  table.append(body);
  box.append(table);
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
  const to = { ArrowUp: [t - 1, i], ArrowDown: [t + 1, i], ArrowLeft: [t, i - 1], ArrowRight: [t, i + 1], Home: [t, 0], End: [t, view.h.S - 1] }[ev.key];
  if (!to || !view.cells[to[0]] || !view.cells[to[0]][to[1]]) return;
  ev.preventDefault();
  view.cells[to[0]][to[1]].focus();
}

// ---- the page ----

const page = { engine: null, result: null, hyps: [], chosen: 0, view: null, forced: null, forceView: null, source: '', firstTranslation: null, timings: {} };

function status(id, text, cls) {
  const p = document.getElementById(id);
  p.className = cls || '';
  p.textContent = text;
}

function searchOptions() {
  const beam = document.querySelector('input[name="search"]:checked').value === 'beam' ? Number(document.getElementById('beam').value) : 1;
  const nbest = Number(document.getElementById('nbest').value);
  const max = page.engine ? page.engine.info.max_beam : 16;
  const b = Number.isInteger(beam) && beam >= 1 ? Math.min(beam, max) : 1;
  return { beam: b, nbest: Number.isInteger(nbest) && nbest >= 1 ? Math.min(nbest, b) : 1 };
}

// Translates the text box's sentence and draws the result (or says why it cannot).
function translate() {
  const text = document.getElementById('source').value, opt = searchOptions();
  const result = document.getElementById('result');
  page.source = text;
  page.result = null;
  page.hyps = [];
  if (!page.engine) return status('status', 'The model is not loaded.', 'error');
  const why = refusal(text);
  if (why) {
    result.hidden = true;
    document.getElementById('whatif').hidden = true;
    return status('status', 'Not translated: ' + why + '.', 'refused');
  }
  const start = performance.now();
  const answer = page.engine.translate(text, opt.beam, opt.nbest);
  const ms = performance.now() - start;
  page.result = answer;
  if (answer.error || answer.refused) {
    result.hidden = true;
    document.getElementById('whatif').hidden = true;
    return status('status', 'Not translated: ' + (answer.error || answer.refused), 'refused');
  }
  page.hyps = answer.hyps.map(unpackHyp);
  if (!page.hyps.length) {
    result.hidden = true;
    return status('status', 'No hypothesis finished within the length limit.', 'refused');
  }
  status('status', (opt.beam > 1 ? 'Beam search of ' + opt.beam : 'Greedy search') + ', ' + page.hyps.length + ' hypothes' + (page.hyps.length > 1 ? 'es' : 'is') + ' in ' + ms.toFixed(0) + ' ms' + (answer.unknown ? '; ' + answer.unknown + ' source token(s) unknown to the model (<unk>)' : '') + '.');
  const list = document.getElementById('nbest-list');
  list.replaceChildren();
  page.hyps.forEach((h, k) => {
    const li = el('li'), button = el('button', 'hyp');
    button.type = 'button';
    button.append(el('span', 'text', h.text), el('span', 'score', ' log p = ' + h.logprob.toFixed(3) + ', score ' + h.score.toFixed(3)));
    button.addEventListener('click', () => choose(k));
    li.append(button);
    list.append(li);
  });
  result.hidden = false;
  document.getElementById('whatif').hidden = false;
  choose(0);
  if (page.firstTranslation === null) page.firstTranslation = performance.now();
}

function choose(k) {
  page.chosen = k;
  document.querySelectorAll('#nbest-list button').forEach((b, j) => b.setAttribute('aria-pressed', String(j === k)));
  page.view = heatmap(document.getElementById('heatmap'), document.getElementById('step'), page.hyps[k], page.engine.info.score, null);
  select(page.view, 0, page.hyps[k].peak[0]);
}

// Force-decodes the prefix box's tokens as the translation of the translated sentence.
function force() {
  const prefix = document.getElementById('prefix').value, box = document.getElementById('force-heatmap');
  const panel = document.getElementById('force-step');
  page.forced = null;
  box.replaceChildren();
  panel.replaceChildren();
  if (!page.engine || !page.hyps.length) return status('force-status', 'Translate a sentence first.', 'refused');
  const why = refusal(prefix);
  if (why) return status('force-status', 'Not force-decoded: ' + why + '.', 'refused');
  const answer = page.engine.force(page.source, prefix);
  if (answer.error || answer.refused) return status('force-status', 'Not force-decoded: ' + (answer.error || answer.refused), 'refused');
  page.forced = unpackHyp(answer.hyps[0]);
  status('force-status', 'Teacher forcing of ' + (page.forced.T - 1) + ' token(s): log p = ' + page.forced.logprob.toFixed(3) + '.');
  page.forceView = heatmap(box, panel, page.forced, page.engine.info.score, page.hyps[page.chosen]);
}

function base64Bytes(text) {
  const binary = atob(text.replace(/\s+/g, ''));
  const out = new Uint8Array(binary.length);
  for (let k = 0; k < binary.length; k++) out[k] = binary.charCodeAt(k);
  return out;
}

// The module is compiled synchronously (make wasm: WASM_ASYNC_COMPILATION=0; it is small),
// so the page is ready, and the self-test done, before the load event: headless Chromium's
// --dump-dom then sees the result.
function boot() {
  const info = JSON.parse(document.getElementById('model-info').textContent);
  const t0 = performance.now();
  const bytes = base64Bytes(document.getElementById('model-data').textContent);
  const t1 = performance.now();
  /* global createLiveModule */
  const module = createLiveModule();
  if (typeof module._live_open !== 'function') throw new Error('the WebAssembly module did not start');
  const t2 = performance.now();
  page.engine = new Engine(module, bytes);
  const t3 = performance.now();
  const d = page.engine.info;
  document.getElementById('model-line').textContent = 'Model ' + info.name + ' (' + (bytes.length / 1e6).toFixed(2) + ' MB): ' + d.score + ' attention, vocabularies ' + d.src_vocab + ' / ' + d.tgt_vocab + ', E = ' + d.E + ', K = ' + d.K + ', D = ' + d.D + ', A = ' + d.A + (d.subwords ? ', subwords' : '') + (d.int8 ? ', 8-bit weights (int8, from bin/quantize)' : ', float weights') + '.';
  document.getElementById('beam').max = d.max_beam;
  document.getElementById('nbest').max = d.max_beam;
  document.getElementById('ask').addEventListener('submit', (ev) => { ev.preventDefault(); translate(); });
  document.getElementById('force').addEventListener('submit', (ev) => { ev.preventDefault(); force(); });
  translate();
  page.timings = { decode: t1 - t0, module: t2 - t1, open: t3 - t2, first: page.firstTranslation };
}

// ---- #selftest: drives the page like a user and checks it against bin/align's numbers ----

const TOLERANCE = 1e-5;
// An int8 model's steps (the forced decoder, float on the weights' values) against its search
// (int8 products): the same computation but for the rounding of each product's input rows.
const INT8_STEP_TOLERANCE = 1e-2;
// the largest difference seen between a step's numbers and the search's (int8 models)
const stepGap = { worst: 0 };

function typeAndTranslate(text, beam, nbest) {
  document.getElementById('source').value = text;
  document.querySelector('input[name="search"][value="' + (beam > 1 ? 'beam' : 'greedy') + '"]').checked = true;
  document.getElementById('beam').value = String(Math.max(beam, 2));
  document.getElementById('nbest').value = String(nbest);
  document.getElementById('translate').click();
}

function selftest() {
  let checks = 0, failed = 0;
  const fails = [], scriptsBefore = document.scripts.length;
  const check = (ok, what) => { checks++; if (!ok && failed++ < 30) fails.push(what); };
  const near = (a, b, tol) => Math.abs(a - b) <= tol;
  const refs = JSON.parse(document.getElementById('references').textContent).runs;
  let sentences = 0;
  check(refs.length > 0, 'the page holds references from bin/align');
  refs.forEach((run) => run.sentences.forEach((ref, k) => {
    const where = 'beam ' + run.beam + ' sentence ' + (k + 1);
    sentences++;
    typeAndTranslate(ref.source, run.beam, Math.min(2, run.beam));
    const h = page.hyps[0];
    check(h !== undefined, where + ': translated (' + document.getElementById('status').textContent + ')');
    if (!h) return;
    check(h.text === ref.translation, where + ': translation "' + h.text + '", bin/align "' + ref.translation + '"');
    check(JSON.stringify(h.src) === JSON.stringify(ref.src_tokens), where + ': source tokens');
    check(JSON.stringify(h.tgt) === JSON.stringify(ref.tgt_tokens), where + ': output tokens');
    check(ref.alpha.length === h.T && ref.prob.length === h.T, where + ': rows');
    for (let t = 0; t < Math.min(h.T, ref.alpha.length); t++) {
      check(near(h.prob[t], ref.prob[t], TOLERANCE), where + ' step ' + (t + 1) + ': p ' + h.prob[t] + ', bin/align ' + ref.prob[t]);
      for (let i = 0; i < h.S; i++)
        check(near(h.alpha[t * h.S + i], ref.alpha[t][i], TOLERANCE), where + ' step ' + (t + 1) + ': alpha_' + i + ' ' + h.alpha[t * h.S + i] + ', bin/align ' + ref.alpha[t][i]);
    }
    checkShown(h, where, check, near);
  }));
  check(sentences > 0, 'at least one reference sentence');
  hostile(check);
  check(document.scripts.length === scriptsBefore, 'no script element added (' + document.scripts.length + ')');
  check(!document.documentElement.hasAttribute('xpwned'), 'no script from the text ran');
  pageErrors.forEach((e) => check(false, 'JavaScript error: ' + e));
  const first = page.timings.first;
  const out = document.getElementById('selftest-result');
  out.hidden = false;
  out.textContent = (fails.length ? 'FAIL ' + failed + ' of ' + checks + ' checks:\n' + fails.join('\n') : 'PASS ' + checks + ' checks, ' + sentences + ' sentences against bin/align to 1e-5') +
    (page.engine.info.int8 ? '\n8-bit weights: the steps\u2019 float decoder within ' + INT8_STEP_TOLERANCE + ' of the search (at most ' + stepGap.worst.toExponential(2) + ')' : '') +
    '\nfirst translation: ' + (first === null ? 'none' : first.toFixed(0) + ' ms after the page started loading') +
    ' (model decoded in ' + page.timings.decode.toFixed(0) + ' ms, module ready in ' + page.timings.module.toFixed(0) + ' ms, model opened in ' + page.timings.open.toFixed(0) + ' ms)';
}

// What the page shows for hypothesis h: the n-best list, the heatmap, and every cell's
// worked step, whose numbers must agree with each other and with the search's.
function checkShown(h, where, check, near) {
  const text = (css) => { const n = document.querySelector(css); return n ? n.textContent : '(missing ' + css + ')'; };
  check(text('#nbest-list .text') === h.text, where + ': n-best list shows the translation');
  const heads = document.querySelectorAll('#heatmap th.src');
  check(heads.length === h.S, where + ': one column per source token');
  heads.forEach((th, i) => check(th.textContent === h.src[i], where + ': source token ' + i + ' verbatim'));
  const view = page.view, tr = h.trace, S = h.S;
  const nearStep = (a, b) => {
    if (!view.int8) return near(a, b, TOLERANCE);
    stepGap.worst = Math.max(stepGap.worst, Math.abs(a - b));
    return near(a, b, INT8_STEP_TOLERANCE);
  };
  for (let t = 0; t < h.T; t++) {
    const at = where + ' step ' + (t + 1);
    check(view.heads[t].textContent === h.tgt[t], at + ': output token verbatim');
    check(nearStep(tr.prob[t], h.prob[t]), at + ': the trace\u2019s p ' + tr.prob[t] + ', the search\u2019s ' + h.prob[t]);
    let sum = 0;
    for (let i = 0; i < S; i++) sum += h.alpha[t * S + i];
    check(near(sum, 1, 1e-5), at + ': weights sum to ' + sum);
    for (let i = 0; i < S; i++) {
      const cell = view.cells[t][i], w = h.alpha[t * S + i];
      check(cell.textContent === w.toFixed(2) && cell.style.backgroundColor === colour(w), at + ': cell ' + i + ' shows its weight');
      check(nearStep(tr.alpha[t * S + i], w), at + ': the trace\u2019s alpha_' + i + ' ' + tr.alpha[t * S + i] + ', the search\u2019s ' + w);
      cell.focus();
      if (!(view.worked && view.worked.t === t && view.worked.i === i)) cell.dispatchEvent(new FocusEvent('focus'));
      const worked = view.worked;
      check(worked && worked.t === t && worked.i === i, at + ': cell ' + i + ' opens its step');
      if (!worked) continue;
      const e = tr.energy[t * S + i], own = worked.own;
      check(near(own.dot, e, 1e-5 * (1 + Math.abs(e))), at + ' cell ' + i + ': the products shown sum to ' + own.dot + ', e = ' + e);
      if (own.hidden)
        own.hidden.forEach((x, j) => check(near(Math.tanh(own.sum[j]), x, 1e-5), at + ' cell ' + i + ': tanh of the sum, value ' + j));
      check(near(Math.exp(e) / worked.softmax.sum, tr.alpha[t * S + i], 1e-5), at + ' cell ' + i + ': exp(e) / sum = alpha');
      const panel = view.panel.textContent;
      check(panel.includes('= ' + fmt(e)), at + ' cell ' + i + ': the step shows e = ' + fmt(e));
      check(panel.includes(fmt(h.prob[t])), at + ' cell ' + i + ': the step shows p = ' + fmt(h.prob[t]));
    }
    let c0 = 0;
    for (let j = 0; j < S; j++) c0 += tr.alpha[t * S + j] * tr.enc_h[j * tr.K];
    check(near(c0, tr.context[t * tr.K], 1e-5 * (1 + Math.abs(c0))), at + ': c[0] = sum alpha h[0]');
  }
  // keyboard: ArrowRight from the first cell focuses the second
  if (S > 1) {
    view.cells[0][0].focus();
    view.cells[0][0].dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true, cancelable: true }));
    check(document.activeElement === view.cells[0][1], where + ': ArrowRight moves to the next cell');
  }
  // the "what if" box: the translation itself, force-decoded, gives the same weights
  const prefix = h.tgt.filter((tok, t) => t < h.T - (h.complete ? 1 : 0)).join(' ');
  if (prefix !== '' && !h.text.includes('<unk>') && !h.tgt.includes('<unk>')) {
    document.getElementById('prefix').value = prefix;
    document.getElementById('force-button').click();
    const f = page.forced;
    check(f !== null, where + ': what-if force-decodes the translation (' + document.getElementById('force-status').textContent + ')');
    // the same tokens (the prefix is tokenized again) give the same weights as the steps
    if (f && h.complete && JSON.stringify(f.tgt) === JSON.stringify(h.tgt))
      for (let k = 0; k < S * h.T; k++) check(near(f.alpha[k], tr.alpha[k], TOLERANCE), where + ': what-if weight ' + k);
  }
}

// Hostile text typed into the box: shown as text, refused or translated, the page unbroken.
function hostile(check) {
  // '<' is written \x3c: this script sits inside the page's script element
  const inputs = [
    '\x3cimg src=x onerror="document.documentElement.setAttribute(\'xpwned\',\'img\')"> \x3cb>cat\x3c/b> & "dog"',
    '\x3c/script>\x3cscript>document.documentElement.setAttribute("xpwned","script")\x3c/script>',
    '\x3c!-- --> \u2028 javascript:alert(1) \'q\'',
    'the cat '.repeat(1250), // 10,000 characters, 2,500 tokens: refused
    'a'.repeat(10000), // 10,000 characters, one token
    'cat \uD800 dog', '\uDC00', 'the dog \uDBFF', '', '   ',
  ];
  inputs.forEach((text, k) => {
    const where = 'hostile input ' + (k + 1);
    typeAndTranslate(text, 1, 1);
    check(document.getElementById('source').value === text, where + ': the box holds the text as typed');
    const said = document.getElementById('status').textContent, shown = !document.getElementById('result').hidden;
    check(shown !== said.startsWith('Not translated'), where + ': translated or refused, not both: ' + said.slice(0, 200));
    if (LONE_SURROGATE.test(text)) check(said.includes('lone surrogate'), where + ': refused for its lone surrogate');
    if (shown) {
      const heads = Array.from(document.querySelectorAll('#heatmap th.src')).map((th) => th.textContent);
      check(JSON.stringify(heads) === JSON.stringify(page.hyps[0].src), where + ': source tokens verbatim');
      document.getElementById('prefix').value = text;
      document.getElementById('force-button').click();
      const f = page.forced;
      if (f) check(Array.from(document.querySelectorAll('#force-heatmap th.tgt')).map((th) => th.textContent).join(' ') === f.tgt.join(' '), where + ': forced tokens verbatim');
    }
    check(!document.documentElement.hasAttribute('xpwned'), where + ': no script from the text ran');
  });
  typeAndTranslate('I love machine learning', 1, 1);
  check(page.hyps.length === 1 && !document.getElementById('result').hidden, 'the page translates again after the hostile inputs');
}

try {
  boot();
  if (location.hash === '#selftest') selftest();
} catch (err) {
  pageErrors.push(err.message);
  status('status', 'The page could not start: ' + err.message, 'error');
  if (location.hash === '#selftest') {
    const out = document.getElementById('selftest-result');
    out.hidden = false;
    out.textContent = 'FAIL the page stopped: ' + err.message + '\n' + (err.stack || '');
  }
}
