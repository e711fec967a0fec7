// qgpu.view: the launch viewer (inlined into each page with its data; no network).
// D is view.data.launch_data's dict. Step k is the k-th executed block (0-based); the
// URL hash "#step=K" selects one (1-based in the page, as shown).
"use strict";
const D = JSON.parse(document.getElementById("qgpu-data").textContent);
const S = D.steps;
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") e.textContent = v;
    else if (k === "style") e.setAttribute("style", v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of kids.flat()) if (c !== null && c !== undefined)
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}
const s32 = (v) => (v | 0);
const u32 = (v) => (v >>> 0);
const hex = (v) => "0x" + u32(v).toString(16).padStart(8, "0");
const hue = (b) => (b * 47 + 200) % 360;

// ---- memory: flat words (global, then shared per CTA), replayed from the trace ----
const G = D.memory.global_words, SH = D.memory.shared_words;
const FLAT = G + 4 * SH;
const arrayOf = new Array(FLAT).fill(null);
for (const a of D.arrays) for (let i = 0; i < a.size; i++)
  if (a.base + i < G && arrayOf[a.base + i] === null) arrayOf[a.base + i] = [a, i];
const signedAt = (w) => (arrayOf[w] ? arrayOf[w][0].signed : true);
const fmt = (w, v) => String(signedAt(w) ? s32(v) : u32(v));
const wordName = (w) => {
  if (w >= G) return "shared[" + Math.floor((w - G) / SH) + "][" + ((w - G) % SH) + "]";
  return arrayOf[w] ? arrayOf[w][0].name + "[" + arrayOf[w][1] + "]" : "global[" + w + "]";
};
const initial = D.memory.initial.slice();
while (initial.length < FLAT) initial.push(0);
function memAfter(k) {      // memory after step k (-1: before the first), replayed
  const m = initial.slice();
  for (let j = 0; j <= k && j < S.length; j++) for (const [a, v] of S[j].writes) m[a] = v;
  return m;
}
const touched = new Set();  // every word the launch writes (shown in the picture)
for (const st of S) for (const [a] of st.writes) touched.add(a);
const replayed = memAfter(S.length - 1);

// ---- header and launch summary ----
function header() {
  const h = $("head");
  h.append(el("span", {}, "qgpu launch ", el("b", { text: D.kernel })),
    el("span", { class: "sep", text: "|" }), "grid " + D.grid + " \u00d7 block " + D.block,
    el("span", { class: "sep", text: "|" }), "engine " + (D.engine || "?"),
    el("span", { class: "sep", text: "|" }), D.tokens.length + " trace tokens (prompt " +
    D.prompt_tokens + ")", el("span", { class: "sep", text: "|" }),
    el("span", { id: "nblocks", "data-n": S.length }, S.length + " blocks executed"));
  const L = $("launch");
  L.append(el("h2", { text: "Launch" }));
  const finalMem = D.memory.final || replayed;
  const t = el("table", { id: "args" }, el("tr", {}, el("th", { text: "argument" }),
    el("th", { text: "words" }), el("th", { text: "before" }), el("th", { text: "after" })));
  for (const a of D.arrays) {
    const vals = (m) => Array.from({ length: a.size }, (_, i) => fmt(a.base + i, m[a.base + i]));
    t.append(el("tr", { "data-array": a.name }, el("td", { class: "v", text: a.name }),
      el("td", { class: "v", text: a.base + ".." + (a.base + a.size - 1) }),
      el("td", { class: "v before", text: "[" + vals(initial).join(", ") + "]" }),
      el("td", { class: "v after", text: "[" + vals(finalMem).join(", ") + "]" })));
  }
  for (const [n, v] of Object.entries(D.scalars))
    t.append(el("tr", { "data-scalar": n }, el("td", { class: "v", text: n }),
      el("td", { text: "scalar" }), el("td", { class: "v", text: String(v) }), el("td", {})));
  if (D.arrays.length || Object.keys(D.scalars).length) L.append(t);
  const warps = D.present.length;
  L.append(el("p", {}, warps + " warp" + (warps > 1 ? "s" : "") + " of " + D.lanes +
    " lanes, " + D.program.length + " machine blocks in the program, " + S.length +
    " executed; the trace is checkable token by token against the interpreter."));
  if (D.note) L.append(el("p", { class: "note", text: D.note }));
  if (D.printed) L.append(el("h3", { text: "printf" }),
    el("pre", { id: "printed", class: "printed", text: D.printed }));
}

// ---- code panes ----
function lines(box, text, cls) {
  if (!text) { box.append(el("div", { class: "empty", text: cls })); return []; }
  return text.replace(/\n$/, "").split("\n").map((t, i) =>
    box.appendChild(el("div", { class: "ln", "data-n": i + 1, text: t || " " })));
}
let cudaLines = [], ptxLines = [], mblocks = [];
function code() {
  cudaLines = lines($("cuda"), D.source.text, "No CUDA source (a token stream holds the " +
    "machine program only).");
  if (D.source.name) $("pane-cuda").querySelector("h3").textContent = "CUDA: " + D.source.name;
  ptxLines = lines($("ptx"), D.ptx, "No PTX (a token stream holds the machine program only).");
  const box = $("machine");
  mblocks = D.program.map((b, i) => box.appendChild(el("div",
    { class: "mblock", "data-block": i, onclick: () => firstStepOf(i) },
    el("div", { class: "bh", text: "block " + i + ":" }),
    b.lines.map((t) => el("div", { class: "ml", text: t })))));
}
function scrollPane(box, node) {
  if (node) box.scrollTop = Math.max(0, node.offsetTop - box.clientHeight / 3);
}
function firstStepOf(b) {
  const k = S.findIndex((st) => st.block === b);
  if (k >= 0) select(k);
}

// ---- timeline ----
const W = 25;
let cells = [];
function timeline() {
  const box = $("timeline");
  const rows = D.present.map((lanes, w) => {
    const per = D.present.length / D.grid;
    const row = el("div", { class: "tcells", style: "width:" + (S.length * W + 4) + "px" });
    box.append(el("div", { class: "trow", "data-warp": w },
      el("div", { class: "tlabel", text: "warp " + w + " (CTA " + Math.floor(w / per) + ")" }),
      row));
    return row;
  });
  const lastEpoch = {};
  cells = S.map((st, k) => {
    const per = D.present.length / D.grid, cta = Math.floor(st.warp / per);
    const blk = D.program[st.block];
    const cls = ["cell"];
    if (blk.bar) cls.push("bar");
    if (blk.exit) cls.push("exit");
    if (cta in lastEpoch && lastEpoch[cta] !== st.epoch) cls.push("release");
    lastEpoch[cta] = st.epoch;
    const lanes = D.present[st.warp].map((p, ln) => el("span", {
      class: "lane " + (!p ? "absent" : st.active.includes(ln) ? "on" : "idle") }));
    const c = el("div", {
      class: cls.join(" "), "data-step": k + 1, "data-block": st.block, "data-warp": st.warp,
      "data-mask": st.active.join(""), style: "left:" + (k * W) + "px;--c:hsl(" +
        hue(st.block) + ",62%,48%)",
      title: "step " + (k + 1) + ": warp " + st.warp + " block " + st.block + ", lanes " +
        st.active.join("") + (blk.bar ? ", ends at a barrier" : "") + (blk.exit ? ", exits" : ""),
      onclick: () => select(k) }, el("span", { class: "bn", text: st.block }), lanes);
    rows[st.warp].append(c);
    return c;
  });
  const halt = D.names[D.names.length - 1] === "HALT";
  if (halt) rows[rows.length - 1].parentNode.parentNode.append(el("div", { class: "halt",
    id: "halt", text: "HALT after step " + S.length + " (trace token " +
      (D.tokens.length - 1) + ")" }));
  box.append(el("div", { class: "legend" }, "cell label: machine block;",
    el("i", { style: "background:#222" }), "ends at a barrier",
    el("i", { style: "border-left:2px dotted #c00" }), "first block after a barrier release;",
    " underlined block number: exits"));
}

// ---- margins strip ----
let strip = [];
function marginsStrip() {
  const M = D.margins, E = D.expected;
  if (!M && !E) {
    $("strip").style.display = "none";
    $("strip-hint").textContent = "the interpreter computed this launch: no logits " +
      "(run it on the model, --engine model, to see them)";
    return;
  }
  const ms = M ? M.filter((x) => x !== null) : [];
  const mx = ms.reduce((a, b) => Math.max(a, b), ms.length ? -Infinity : 1);
  $("strip-hint").textContent = M ? "top-1 minus top-2 logit of every written token " +
    "(bar height, log scale)" : "every written token against the interpreter's";
  const box = $("strip");
  strip = D.tokens.map((t, i) => {
    const m = M ? M[i] : null;
    const bad = E && E[i] !== t;
    const h = m === null ? 20 : 4 + 44 * Math.log1p(Math.max(m, 0)) / Math.log1p(mx);
    return box.appendChild(el("span", {
      class: "mt" + (bad ? " bad" : E ? " ok" : " nocheck"), "data-i": i,
      style: "height:" + h.toFixed(1) + "px",
      title: "token " + i + ": " + D.names[i] + " (id " + t + ")" +
        (m === null ? "" : ", margin " + m.toFixed(4)) + (bad ? ", interpreter: " +
        (E[i] === undefined ? "end" : E[i]) : ""),
      onclick: () => { const k = stepOfToken(i); if (k >= 0) select(k); } }));
  });
  const sum = $("strip-summary");
  if (ms.length) {
    const lo = ms.reduce((a, b) => Math.min(a, b), Infinity);
    const at = M.indexOf(lo);
    sum.append(el("span", { id: "margin-min", "data-min": lo },
      "smallest margin " + lo.toFixed(4) + " at token " + at + " (" + D.names[at] + "); " +
      "largest " + mx.toFixed(2) + ". "));
  }
  if (E) {
    if (D.mismatch) {
      const x = D.mismatch;
      sum.append(el("span", { class: "mismatch", id: "check", "data-ok": "false" },
        "--check: token " + x.pos + " differs: interpreter " + x.expected_name +
        (x.expected === null ? "" : " (id " + x.expected + ")") + ", model " +
        x.written_name + (x.written === null ? "" : " (id " + x.written + ")")));
    } else {
      sum.append(el("span", { class: "ok", id: "check", "data-ok": "true" },
        "--check: all " + D.tokens.length + " tokens equal the interpreter's"));
    }
  }
}
function stepOfToken(i) {
  for (let k = 0; k < S.length; k++) if (i >= S[k].pos && i < S[k].end) return k;
  return S.length - 1;
}

// ---- inspector ----
function memPicture(k, changed) {
  const m = memAfter(k);
  const out = [];
  const show = new Set(touched);
  for (const a of D.arrays) for (let i = 0; i < a.size; i++) show.add(a.base + i);
  const groups = [["global memory", [...show].filter((w) => w < G).sort((a, b) => a - b)]];
  for (let c = 0; c < 4; c++) {
    const ws = [...show].filter((w) => w >= G + c * SH && w < G + (c + 1) * SH);
    if (ws.length) groups.push(["shared memory of CTA " + c, ws.sort((a, b) => a - b)]);
  }
  for (const [title, ws] of groups) {
    if (!ws.length) continue;
    out.push(el("div", { class: "memhead", text: title }));
    out.push(el("div", { class: "memgrid" }, ws.map((w) => el("div", {
      class: "word" + (changed.has(w) ? " changed" : ""), "data-word": w,
      "data-value": fmt(w, m[w]), title: wordName(w) + " = " + fmt(w, m[w]) + " (" +
        hex(m[w]) + "), word " + w }, el("small", { text: wordName(w) }), fmt(w, m[w])))));
  }
  return out;
}
function inspector(k) {
  const box = $("inspector");
  box.replaceChildren();
  const st = S[k];
  if (!st) { box.append(el("h2", { text: "No block executed" })); return; }
  const blk = D.program[st.block];
  box.setAttribute("data-step", k + 1);
  box.append(el("h2", {}, "Step " + (k + 1) + " of " + S.length + ": warp " + st.warp +
    " runs block " + st.block, el("span", { class: "hint nav" },
    el("button", { onclick: () => select(k - 1), text: "\u2190" }),
    el("button", { onclick: () => select(k + 1), text: "\u2192" }))));
  box.append(el("p", {}, "active lanes " + st.active.join(" ") + " (mask " +
    st.active.reduce((s, l) => s | (1 << l), 0).toString(2).padStart(D.lanes, "0") +
    "), barrier epoch " + st.epoch + (st.taken.length ? ", branch taken by lanes " +
    st.taken.join(" ") : "") + ", terminator: " + blk.lines[blk.lines.length - 1] +
    "; trace tokens " + st.pos + ".." + (st.end - 1)));
  box.append(el("h3", { text: "Tokens (name, id" + (D.margins ? ", margin" : "") + ")" }));
  const toks = el("div", { class: "toks", id: "step-tokens" });
  for (let i = st.pos; i < st.end; i++) {
    const m = D.margins ? D.margins[i] : null;
    const bad = D.expected && D.expected[i] !== D.tokens[i];
    toks.append(el("span", { class: "tok" + (bad ? " bad" : ""), "data-i": i,
      "data-id": D.tokens[i] }, D.names[i], el("small", { text: D.tokens[i] +
        (m === null ? "" : " \u00b7 " + m.toFixed(3)) })));
  }
  box.append(toks);
  box.append(el("h3", { text: "Registers written (per lane)" }));
  if (st.regs.length) {
    const t = el("table", { class: "regs", id: "step-regs" }, el("tr", {},
      el("th", { text: "reg" }), Array.from({ length: D.lanes }, (_, l) =>
        el("th", { text: "lane " + l }))));
    for (const [r, vals] of st.regs)
      t.append(el("tr", { "data-reg": r }, el("td", { class: "v", text: "r" + r }),
        Array.from({ length: D.lanes }, (_, l) => {
          const j = st.active.indexOf(l);
          return j < 0 ? el("td", { class: "v idle", text: "\u00b7" }) : el("td",
            { class: "v", "data-lane": l, title: hex(vals[j]), text: String(s32(vals[j])) });
        })));
    box.append(t);
  } else box.append(el("p", { class: "hint", text: "none (no register is live after it)" }));
  box.append(el("h3", { text: "Memory words written" }));
  const changed = new Set(st.writes.map(([a]) => a));
  if (st.writes.length) {
    const before = memAfter(k - 1);
    box.append(el("table", { id: "step-writes" }, st.writes.map(([a, v]) => el("tr",
      { "data-word": a }, el("td", { class: "v", text: wordName(a) }),
      el("td", { class: "v", text: fmt(a, v) }),
      el("td", { class: "hint", text: "was " + fmt(a, before[a]) })))));
  } else box.append(el("p", { class: "hint", text: "none" }));
  box.append(el("h3", { text: "Memory after this block (changed words marked)" }));
  box.append(el("div", { id: "step-memory" }, memPicture(k, changed)));
}

// ---- final memory ----
function finalMemory() {
  const box = $("final");
  box.append(el("h2", { text: "Final memory" }));
  const F = D.memory.final;
  if (F) {
    let same = true;
    for (let w = 0; w < G; w++) if (u32(F[w] || 0) !== u32(replayed[w])) same = false;
    box.append(el("p", { class: same ? "ok" : "bad", id: "replay-check",
      "data-same": String(same) }, same ? "the trace's memory records, replayed over the initial " +
      "memory, give the launch's result" : "the launch's result differs from the trace's " +
      "memory records replayed"));
  }
  const m = F || replayed;
  const t = el("table", { id: "final-arrays" });
  for (const a of D.arrays)
    t.append(el("tr", { "data-array": a.name }, el("td", { class: "v", text: a.name }),
      el("td", { class: "v values", text: Array.from({ length: a.size },
        (_, i) => fmt(a.base + i, m[a.base + i])).join(" ") })));
  box.append(t);
  box.append(el("div", { id: "final-memory" }, memPicture(S.length - 1, new Set())));
}

// ---- selection ----
let cur = -1;
function select(k) {
  if (!S.length) return;
  k = Math.max(0, Math.min(S.length - 1, k));
  if (cells[cur]) cells[cur].classList.remove("cur");
  for (const n of document.querySelectorAll(".hl, .mblock.cur, .mt.sel"))
    n.classList.remove("hl", "cur", "sel");
  cur = k;
  const st = S[k];
  cells[k].classList.add("cur");
  const tl = $("timeline");
  const x = k * W;
  if (x < tl.scrollLeft || x > tl.scrollLeft + tl.clientWidth - 140)
    tl.scrollLeft = Math.max(0, x - tl.clientWidth / 2);
  mblocks[st.block].classList.add("cur");
  scrollPane($("machine"), mblocks[st.block]);
  const o = D.origins[st.block] || { ptx: [], source: [] };
  for (const n of o.ptx) if (ptxLines[n - 1]) ptxLines[n - 1].classList.add("hl");
  for (const n of o.source) if (cudaLines[n - 1]) cudaLines[n - 1].classList.add("hl");
  scrollPane($("ptx"), ptxLines[o.ptx[0] - 1]);
  scrollPane($("cuda"), cudaLines[o.source[0] - 1]);
  for (let i = st.pos; i < st.end; i++) if (strip[i]) strip[i].classList.add("sel");
  inspector(k);
  try { history.replaceState(null, "", "#step=" + (k + 1)); } catch (err) { /* srcdoc */ }
}
document.addEventListener("keydown", (e) => {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  const keys = { ArrowRight: cur + 1, ArrowLeft: cur - 1, Home: 0, End: S.length - 1,
                 j: cur + 1, k: cur - 1 };
  if (e.key in keys) { e.preventDefault(); select(keys[e.key]); }
});

header(); code(); timeline(); marginsStrip(); finalMemory();
const want = /step=(\d+)/.exec(location.hash);
select(want ? parseInt(want[1], 10) - 1 : 0);
