// Seahorse viewer: plain JavaScript, no build step. Every page reads the same Engine methods
// as the CLI through /api/*. Stored text is untrusted: it is only ever put in the page with
// text nodes (h() below), never as markup.
"use strict";

// The token comes in the page only when it is opened with ?token= (the URL `seahorse ui` prints);
// it is kept in this origin's storage (the port is part of the origin, unlike for cookies) and
// sent with every API call; the address bar drops it.
const TOKEN = (() => {
  const given = document.querySelector('meta[name="seahorse-token"]').content;
  try {
    if (given) localStorage.setItem("seahorse-token", given);
    return given || localStorage.getItem("seahorse-token") || "";
  } catch (e) {
    return given;
  }
})();
if (location.search) history.replaceState(null, "", "/" + location.hash);
const WRITE = document.querySelector('meta[name="seahorse-write"]').content === "1";
const MAX_EXPLORE_NODES = 300;
window.seahorse = { graphs: {}, lastSearchMs: null, searches: 0 };

// ----- DOM helpers: text only --------------------------------------------------------------
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "data") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// A link inside the viewer: the route is built here from encoded parts, never taken from data.
function route(page, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== null && v !== undefined && v !== "") q.set(k, v);
  const s = q.toString();
  return "#/" + page + (s ? "?" + s : "");
}
function link(page, params, ...text) {
  return h("a", { href: route(page, params) }, ...text);
}
function badge(kind, text) {
  return h("span", { class: "badge k-" + kind }, text || kind);
}
function fmtTime(t) {
  if (t === null || t === undefined || t === "") return "";
  if (typeof t === "number") return new Date(t * 1000).toISOString().replace(".000Z", "Z");
  return String(t);
}
function epoch(t) {
  if (t === null || t === undefined || t === "") return null;
  return typeof t === "number" ? t : Date.parse(t) / 1000;
}
function fields(pairs) {
  return h("dl", { class: "fields" }, pairs.filter((p) => p[1] !== null && p[1] !== undefined && p[1] !== "")
    .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}
function errorBox(err) {
  return h("div", { class: "error", role: "alert" }, String(err && err.message ? err.message : err));
}
function setMain(...children) {
  const main = document.getElementById("main");
  main.replaceChildren(...children);
  return main;
}

// ----- the API -------------------------------------------------------------------------------
async function api(path, params) {
  const url = new URL("/api/" + path, location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    if (Array.isArray(v)) v.forEach((x) => url.searchParams.append(k, x));
    else if (v !== null && v !== undefined && v !== "") url.searchParams.set(k, v);
  }
  return reply(await fetch(url, { credentials: "same-origin", headers: { "X-Seahorse-Token": TOKEN } }));
}
async function change(path, body) {
  return reply(await fetch("/api/" + path, { method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-Seahorse-Token": TOKEN }, body: JSON.stringify(body) }));
}
async function reply(r) {
  const text = await r.text();
  let data;
  try { data = JSON.parse(text); } catch (e) { data = { error: text.trim() || r.statusText }; }
  if (!r.ok) {
    const err = new Error(data.error || r.statusText);
    err.status = r.status;
    throw err;
  }
  return data;
}

// ----- routing -------------------------------------------------------------------------------
const PAGES = {};
function current() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [page, query] = raw.split("?");
  return { page: page || "search", params: new URLSearchParams(query || "") };
}
async function render() {
  const { page, params } = current();
  const [name, ...rest] = page.split("/");
  const fn = PAGES[name] || PAGES.search;
  for (const a of document.querySelectorAll("#nav a")) {
    const active = a.dataset.page === name || (name === "memory" && a.dataset.page === "memories") ||
      (name === "document" && a.dataset.page === "documents") || (name === "node" && a.dataset.page === "explore");
    a.classList.toggle("active", active);
  }
  try {
    await fn(params, rest.join("/"));
  } catch (err) {
    setMain(errorBox(err));
  }
}
window.addEventListener("hashchange", render);
window.addEventListener("DOMContentLoaded", () => {
  const mode = document.getElementById("mode");
  mode.textContent = WRITE ? "write enabled" : "read-only";
  mode.classList.toggle("write", WRITE);
  render();
});

// ----- Search --------------------------------------------------------------------------------
PAGES.search = async (params) => {
  const q = params.get("q") || "";
  const form = h("form", { class: "bar", id: "search-form" },
    h("label", {}, "Question", h("input", { id: "q", name: "q", type: "search", class: "wide", value: q,
      placeholder: "Ask the memory a question", autofocus: true })),
    h("button", { class: "primary", type: "submit", id: "search-go" }, "Search"),
    h("label", {}, "In", repoSelect(params.get("repo"))),
    h("label", {}, "Kind", kindSelect(params.get("kind"))),
    h("label", {}, "As of (ISO date)", h("input", { id: "as_of", name: "as_of", value: params.get("as_of") || "",
      placeholder: "2026-01-31", size: 12 })),
    h("label", {}, "Since", h("input", { id: "since", name: "since", value: params.get("since") || "", size: 10 })),
    h("label", {}, "Until", h("input", { id: "until", name: "until", value: params.get("until") || "", size: 10 })),
    h("label", {}, "Answer anyway", h("input", { id: "norefuse", name: "refuse", type: "checkbox",
      checked: params.get("refuse") === "0" })));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const f = new FormData(form);
    const target = route("search", { q: f.get("q"), repo: f.get("repo"), kind: f.get("kind"), as_of: f.get("as_of"),
      since: f.get("since"), until: f.get("until"), refuse: f.get("refuse") ? "0" : "",
      n: String(++window.seahorse.searches) });
    window.seahorse.searchStarted = performance.now();
    if (location.hash === target) render(); else location.hash = target;
  });
  const results = h("div", { id: "results" });
  const detail = h("div", { id: "detail" });
  setMain(form, h("div", { class: "timing", id: "search-timing" }), h("div", { class: "split" }, results, detail));
  if (!q.trim()) {
    results.append(h("p", { class: "muted" }, "Ask a question to see the hits and why each came back."));
    return;
  }
  const started = window.seahorse.searchStarted || performance.now();
  results.append(h("p", { class: "muted" }, "Searching…"));
  const kind = params.get("kind");
  const out = await api("search", { q, repo: params.get("repo"), kind: kind ? [kind] : null, as_of: params.get("as_of"),
    since: params.get("since"), until: params.get("until"), refuse: params.get("refuse") });
  results.replaceChildren(...searchResults(out, detail, params));
  const ms = performance.now() - started;
  window.seahorse.searchStarted = null;
  window.seahorse.lastSearchMs = ms;
  const timing = document.getElementById("search-timing");
  timing.textContent = `${out.hits.length} hit(s) in ${ms.toFixed(0)} ms (the Engine: ${out.ms} ms)`;
  timing.dataset.ms = ms.toFixed(1);
  timing.dataset.done = String(window.seahorse.searches);
};

// Where to search: the whole store, or one indexed repository (the Engine's code search, as
// `seahorse search --repo`: its declarations, docs and, with the commit kind, its history).
async function repoList() {
  if (!window.seahorse.repos) window.seahorse.repos = api("info").then((i) => i.repos || [], () => []);
  return window.seahorse.repos;
}
function repoSelect(value) {
  // Drawn at once (a page awaiting here could overwrite the next one); the repositories
  // join when the list arrives.
  const sel = h("select", { id: "repo", name: "repo" }, h("option", { value: "" }, "the whole store"));
  if (value) sel.append(h("option", { value }, "repository " + value));
  sel.value = value || "";
  repoList().then((repos) => {
    for (const r of repos) {
      if (r.root === value) sel.lastChild.textContent = "repository " + r.name;
      else sel.append(h("option", { value: r.root, title: r.root }, "repository " + r.name));
    }
  });
  return sel;
}

function kindSelect(value) {
  const sel = h("select", { id: "kind", name: "kind" }, h("option", { value: "" }, "passages, memories, symbols"));
  for (const k of ["passage", "memory", "symbol", "commit"]) sel.append(h("option", { value: k }, k));
  sel.value = value || "";
  return sel;
}

function searchResults(out, detail, params) {
  const items = [];
  if (!out.hits.length) {
    const ref = out.refusal;
    if (ref) {
      const ev = ref.evidence || ref;
      const words = ev.words_judged === false ? "too few passages to judge by words"
        : `distinctive words missing: ${(ev.missing || []).join(", ") || "none"}; found: ${(ev.found || []).join(", ") || "none"}`;
      const again = new URLSearchParams(params);
      again.set("refuse", "0");
      items.push(h("div", { class: "notice", id: "refusal" }, h("strong", {}, "No answer: " + ref.reason),
        h("div", {}, words + (ev.top_dense !== undefined && ev.top_dense !== null ? `; best similarity ${ev.top_dense}` : "")),
        h("a", { href: "#/search?" + again.toString() }, "Answer anyway")));
    } else {
      items.push(h("p", { class: "muted" }, "No hits."));
    }
  }
  const cards = out.hits.map((hit, i) => hitCard(hit, i + 1, detail));
  items.push(h("div", { id: "hits" }, cards));
  const want = Number(params.get("hit"));
  const pick = cards.find((c) => Number(c.dataset.id) === want);
  if (pick) setTimeout(() => pick.click(), 0);
  return items;
}

function hitCard(hit, rank, detail) {
  const ev = hit.evidence || {};
  const card = h("div", { class: "card hit", data: { id: String(hit.id), kind: hit.kind }, tabindex: "0" },
    h("div", { class: "top" }, h("strong", {}, rank + "."), badge(hit.kind),
      h("span", { class: "conf", title: "confidence" }, hit.confidence !== undefined && hit.confidence !== null
        ? "confidence " + hit.confidence : "score " + Number(hit.score).toFixed(4)),
      h("span", { class: "muted source" }, hit.path ? `${hit.path}:${hit.start_line || ""}` : hit.source || ""),
      h("span", { class: "muted" }, fmtTime(ev.time || hit.date))),
    h("div", { class: "text" }, String(hit.text || hit.signature || hit.subject || "").slice(0, 400)),
    h("div", { class: "why" }, "why: " + why(ev)));
  const open = () => {
    for (const c of document.querySelectorAll(".hit.selected")) c.classList.remove("selected");
    card.classList.add("selected");
    showHit(hit, detail);
    const { params } = current();
    params.set("hit", hit.id);
    history.replaceState(null, "", "#/search?" + params.toString());
  };
  card.addEventListener("click", open);
  card.addEventListener("keydown", (e) => { if (e.key === "Enter") open(); });
  return card;
}

// evidence.paths[].origin in words, as the CLI's "why" says it (adapters/cli_help.py ORIGIN_WORDS)
const ORIGIN_WORDS = { question: "a word of the question", fact: "reached through a matching sentence",
  context: "from the session's earlier turns", match: "close to the question" };

function why(ev) {
  if (ev.exact && ev.exact.length) return "holds " + ev.exact.map((t) => `'${t}'`).join(", ");
  const seed = (ev.inflow || {}).seed || 0;
  const paths = ev.paths || [];
  if (!paths.length || seed >= paths[0].share) return `a seed itself (${Math.round(seed * 100)}% of its walk mass)`;
  const best = paths[0];
  const words = best.hops.map((hop, i) => `${hop.from.kind === "phrase" ? "'" + hop.from.label + "'" : hop.from.kind}` +
    `${i === 0 && best.from_seed ? " (" + (ORIGIN_WORDS[best.origin] || "seed") + ")" : ""} —${hop.edge}→`);
  return words.join(" ") + ` this hit (${Math.round(best.share * 100)}%)`;
}

function showHit(hit, detail) {
  const ev = hit.evidence || {};
  const graph = h("div", { class: "graph", id: "evidence-graph" });
  const paths = h("ul", { class: "plain", id: "evidence-paths" }, (ev.paths || []).map((p) =>
    h("li", {}, p.hops.map((hop, i) => [
      i === 0 && p.from_seed ? badge("memory", "seed") : null, " ", badge(hop.from.kind), " ",
      link("explore", { id: hop.from.id }, shortLabel(hop.from.label, 50)), ` —${hop.edge}→ `]),
    "hit ", h("strong", {}, Math.round(p.share * 100) + "%"))));
  const inflow = ev.inflow || {};
  detail.replaceChildren(h("div", { class: "card" },
    h("h3", {}, `${hit.kind} ${hit.id}: why it came`),
    h("p", {}, link("node", { id: hit.id }, "Open"), " · ", link("explore", { id: hit.id }, "Explore its neighbours"),
      hit.doc_id !== undefined && hit.doc_id !== null ? [" · ", link("document", { id: hit.doc_id }, "Its document")] : null),
    legend(true), graph, paths,
    h("h3", {}, "The hit"),
    fields([["source", hit.source || hit.path], ["score", Number(hit.score).toFixed(4)], ["confidence", hit.confidence],
      ["dense", ev.dense], ["bm25", ev.bm25], ["time", fmtTime(ev.time)], ["walk mass", inflow.seed !== undefined
        ? `${Math.round(inflow.seed * 100)}% as a seed, ${Math.round((inflow.edges || 0) * 100)}% along edges` : null]])));
  if (window.seahorse.graphs.evidence) window.seahorse.graphs.evidence.destroy();
  window.seahorse.graphs.evidence = null;
  SeahorseGraph.drawEvidence(graph, hit).then((cy) => {
    if (graph.isConnected) window.seahorse.graphs.evidence = cy; else cy.destroy();
  }, (err) => graph.replaceChildren(errorBox(err)));
}

function legend(evidence) {
  const kinds = Object.entries(SeahorseGraph.KIND_COLOURS).filter(([k]) => k !== "doc");
  return h("div", { class: "legend" }, kinds.map(([k, c]) => h("span", {}, h("i", { style: "background:" + c }), k)),
    evidence ? h("span", {}, "green ring: seed · blue: the hit · arrows: where the mass went") :
      h("span", {}, "◆ hub · blue: centre · click: re-centre"));
}

// ----- a node ---------------------------------------------------------------------------------
PAGES.node = async (params) => {
  const id = params.get("id");
  const out = await api("node", { id });
  const mem = out.memory;
  const head = h("div", { class: "card" }, h("h2", {}, badge(out.kind), ` ${out.kind} ${out.id}`),
    fields([["source", out.source], ["title", out.title],
      ["document", out.doc_id !== undefined && out.doc_id !== null ? link("document", { id: out.doc_id }, String(out.doc_id)) : null],
      ["memory", mem ? link("memory", { scope: mem.scope, key: mem.key }, `${mem.scope}/${mem.key}`, " (timeline)") : null],
      ["valid", mem && mem.valid_to ? `${fmtTime(mem.valid_from)} → ${fmtTime(mem.valid_to)} (replaced)` : null],
      ["code", out.path ? link("code", { name: `${out.path}:${out.symbol || ""}` }, `${out.path}:${out.start_line || ""} ${out.symbol || ""}`) : null],
      ["commit", out.commit ? `${out.commit} ${out.date || ""} ${out.author || ""}` : null]]),
    h("p", {}, link("explore", { id: out.id }, "Explore its neighbours")));
  const parts = [head, h("h3", {}, out.document_text ? "Its whole document" : out.body ? "Its lines" : "Text"),
    h("pre", { id: "node-text" }, out.body || out.document_text || out.text)];
  if (out.conversation) parts.push(turnsView(out.conversation));
  setMain(...parts);
};

function turnsView(conv) {
  return h("div", {}, h("h3", {}, `Conversation ${conv.conversation}: the turns around it`),
    (conv.turns || []).map((t) => h("div", { class: "card turn" + (t.this ? " this" : "") },
      h("div", { class: "muted" }, `#${t.seq} ${t.speaker || ""} ${fmtTime(t.time)} `,
        link("document", { id: t.doc_id }, "open")), h("div", {}, t.text))));
}

// ----- Explore --------------------------------------------------------------------------------
PAGES.explore = async (params) => {
  const id = params.get("id");
  const form = h("form", { class: "bar" }, h("label", {}, "Node id", h("input", { id: "explore-id", name: "id", value: id || "", size: 10 })),
    h("button", { class: "primary", type: "submit" }, "Explore"));
  form.addEventListener("submit", (e) => { e.preventDefault(); location.hash = route("explore", { id: new FormData(form).get("id") }); });
  if (!id) {
    setMain(h("h2", {}, "Explore"), form, h("p", { class: "muted" },
      "Pick a node: a search hit's “Explore its neighbours”, a document's passages, or an id."));
    return;
  }
  const data = await api("neighbours", { id, limit: 40 });
  const graph = h("div", { class: "graph", id: "explore-graph" });
  const list = h("ul", { class: "plain", id: "neighbours" });
  const status = h("p", { class: "muted", id: "explore-status" });
  const n = data.node;
  setMain(h("h2", {}, "Explore: ", badge(n.kind), " ", shortLabel(n.label, 80)), form,
    h("p", {}, link("node", { id: n.id }, "Open this node"), ` · degree ${n.degree}`, n.hub ? [" · ", badge("hub", "hub")] : null),
    h("div", { class: "split" }, h("div", {}, legend(false), graph, status), h("div", {}, h("h3", {}, "Neighbours"), list)));
  if (window.seahorse.graphs.explore) window.seahorse.graphs.explore.destroy();
  const cy = await SeahorseGraph.drawNeighbourhood(graph, data, (node) => { location.hash = route("explore", { id: node }); });
  window.seahorse.graphs.explore = cy;
  const say = (d) => {
    status.textContent = `${cy.nodes().length} nodes shown (at most ${MAX_EXPLORE_NODES})` +
      (d.truncated ? `; ${d.node.label ? "'" + shortLabel(d.node.label, 30) + "'" : "it"} has ${d.total} neighbours, the ${d.neighbours.length} heaviest shown` : "");
  };
  say(data);
  list.append(...data.neighbours.map((x) => {
    const expand = h("button", { type: "button", class: "expand", title: "add its ring to the graph" }, "+ ring");
    expand.addEventListener("click", async () => {
      expand.disabled = true;
      try {
        const more = await api("neighbours", { id: x.id, limit: 20 });
        SeahorseGraph.addRing(cy, graph, more, MAX_EXPLORE_NODES);
        say(more);
      } catch (err) { status.replaceChildren(errorBox(err)); }
    });
    return h("li", { data: { id: String(x.id) } }, badge(x.kind), x.hub ? [" ", badge("hub", "hub")] : null, " ",
      h("a", { href: route("explore", { id: x.id }), class: "follow" }, shortLabel(x.label, 70)),
      h("span", { class: "muted" }, ` ${x.edge} ${x.weight} · degree ${x.degree} `), expand);
  }));
};

// ----- Memories -------------------------------------------------------------------------------
PAGES.memories = async (params) => {
  const form = h("form", { class: "bar", id: "memory-filter" },
    ["scope", "kind", "tag", "since", "until"].map((k) => h("label", {}, k,
      h("input", { name: k, value: params.get(k) || "", size: 12 }))),
    h("label", {}, "with superseded", h("input", { type: "checkbox", name: "all", checked: params.get("all") === "1" })),
    h("button", { class: "primary", type: "submit" }, "Filter"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const f = new FormData(form);
    location.hash = route("memories", { scope: f.get("scope"), kind: f.get("kind"), tag: f.get("tag"),
      since: f.get("since"), until: f.get("until"), all: f.get("all") ? "1" : "" });
  });
  const body = h("tbody", {});
  const more = h("button", { type: "button", id: "more" }, "More");
  setMain(h("h2", {}, "Memories"), form, h("table", { id: "memories" }, h("thead", {}, h("tr", {},
    ["key", "value", "kind", "tags", "time", "valid until"].map((c) => h("th", {}, c)))), body), more);
  const load = async (cursor) => {
    const out = await api("memories", { scope: params.get("scope"), kind: params.get("kind"), tag: params.get("tag"),
      since: params.get("since"), until: params.get("until"), all: params.get("all"), cursor });
    body.append(...out.items.map((m) => h("tr", {},
      h("td", {}, link("memory", { scope: m.scope, key: m.key }, `${m.scope}/${m.key}`)),
      h("td", { class: "value" }, m.value), h("td", {}, m.kind), h("td", {}, (m.tags || []).join(", ")),
      h("td", {}, fmtTime(m.time)), h("td", {}, m.valid_to ? fmtTime(m.valid_to) : "—"))));
    if (!out.items.length && !cursor) body.append(h("tr", {}, h("td", { colspan: "6", class: "muted" }, "No memories match.")));
    more.hidden = !out.next_cursor;
    more.onclick = () => load(out.next_cursor);
  };
  await load(null);
};

// One memory: its versions on a timeline, and what was true at an "as of" date.
PAGES.memory = async (params) => {
  const scope = params.get("scope") || "global";
  const key = params.get("key") || "";
  const m = await api("memory", { scope, key });
  // Retired by another key (--supersedes): the document that took its place.
  const by = m.valid_to ? (await api("document", { id: m.doc_id })).superseded_by : null;
  const versions = [{ value: m.value, from: m.history.length ? m.history[0].replaced_at : m.created_at,
    to: epoch(m.valid_to), current: true, doc_id: m.doc_id, id: m.id, kind: m.kind }];
  for (const v of m.history) versions.push({ value: v.value, from: v.valid_from, to: v.replaced_at, doc_id: v.doc_id, kind: v.kind });
  const cards = versions.map((v) => h("div", { class: "card version" + (v.current ? " current" : ""),
    data: { from: String(v.from || ""), to: String(v.to || "") } },
    h("div", { class: "muted" }, `${fmtTime(v.from)} → ${v.to ? fmtTime(v.to) : "now"}`,
      v.current ? [" ", badge("memory", m.valid_to ? "superseded" : "current")] : [" ", badge("doc", "replaced")]),
    h("div", { class: "value" }, v.value)));
  const asOf = h("input", { id: "asof", type: "datetime-local", step: "1", value: params.get("as_of") || "" });
  const answer = h("div", { class: "asof-answer", id: "asof-answer" });
  const apply = () => {
    for (const c of cards) c.classList.remove("asof");
    if (!asOf.value) { answer.textContent = "Pick a date to see which value was true then."; return; }
    const t = Date.parse(asOf.value + "Z") / 1000;
    const i = versions.findIndex((v) => v.from !== null && v.from !== undefined && v.from <= t && (v.to === null || t < v.to));
    if (i >= 0) {
      cards[i].classList.add("asof");
      answer.replaceChildren(h("strong", {}, `As of ${asOf.value}Z: `), versions[i].value);
    } else {
      const first = Math.min(...versions.map((v) => v.from).filter((x) => x !== null && x !== undefined));
      answer.textContent = `As of ${asOf.value}Z: ` + (t < first ? "nothing was stored under this key yet" : "no value was in force");
    }
  };
  asOf.addEventListener("input", apply);
  asOf.addEventListener("change", apply);
  const parts = [h("h2", {}, `Memory ${m.scope}/${m.key}`),
    fields([["kind", m.kind], ["trust", m.trust], ["strength", m.strength], ["provenance", m.provenance],
      ["tags", (m.tags || []).join(", ")], ["time", fmtTime(m.time)], ["created", fmtTime(m.created_at)],
      ["valid until", m.valid_to ? fmtTime(m.valid_to) : null],
      ["superseded by", by ? link("document", { id: by }, "document " + by) : null],
      ["node", link("node", { id: m.id }, String(m.id))], ["graph", link("explore", { id: m.id }, "its neighbours")]]),
    h("h3", {}, "As of"), h("label", {}, "What was true at (UTC) ", asOf), answer,
    h("h3", {}, `Timeline: ${versions.length} version(s), newest first`), h("div", { class: "timeline", id: "timeline" }, cards)];
  if (WRITE) parts.push(memoryActions(m));
  setMain(...parts);
  apply();
};

function memoryActions(m) {
  const value = h("textarea", { id: "new-value", rows: "3", cols: "60" });
  value.value = m.value;
  const status = h("div", { id: "write-status" });
  const save = h("button", { class: "primary", type: "button", id: "save-value" }, "Save as a new version");
  save.addEventListener("click", async () => {
    try {
      await change("upsert_memory", { key: m.key, scope: m.scope, value: value.value });
      render();
    } catch (err) { status.replaceChildren(errorBox(err)); }
  });
  const forget = twoStep("Forget this memory (every version)", "forget", async () => {
    await change("forget", { key: m.key, scope: m.scope });
    location.hash = route("memories", {});
  }, status);
  return h("div", { class: "card" }, h("h3", {}, "Change (write mode)"), value, h("div", {}, save, " ", forget), status);
}

// A destructive button asks once more on the page itself (no browser dialog).
function twoStep(label, id, action, status) {
  const b = h("button", { type: "button", class: "danger", id }, label);
  let armed = false;
  b.addEventListener("click", async () => {
    if (!armed) { armed = true; b.textContent = "Click again to confirm"; return; }
    b.disabled = true;
    try { await action(); } catch (err) { status.replaceChildren(errorBox(err)); b.disabled = false; }
  });
  return b;
}

// ----- Documents and conversations ---------------------------------------------------------------
PAGES.documents = async (params) => {
  const form = h("form", { class: "bar" },
    h("label", {}, "source starts with", h("input", { name: "prefix", value: params.get("prefix") || "", size: 24 })),
    ["tag", "since", "until"].map((k) => h("label", {}, k, h("input", { name: k, value: params.get(k) || "", size: 12 }))),
    h("button", { class: "primary", type: "submit" }, "Filter"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const f = new FormData(form);
    location.hash = route("documents", { prefix: f.get("prefix"), tag: f.get("tag"), since: f.get("since"), until: f.get("until") });
  });
  const body = h("tbody", {});
  const more = h("button", { type: "button", id: "more" }, "More");
  setMain(h("h2", {}, "Documents and conversations"), form, h("table", { id: "documents" }, h("thead", {}, h("tr", {},
    ["id", "source", "title", "passages", "time", "tags"].map((c) => h("th", {}, c)))), body), more);
  const load = async (cursor) => {
    const out = await api("documents", { prefix: params.get("prefix"), tag: params.get("tag"),
      since: params.get("since"), until: params.get("until"), cursor });
    body.append(...out.items.map((d) => h("tr", {}, h("td", {}, String(d.id)),
      h("td", {}, link("document", { id: d.id }, d.source)), h("td", {}, d.title || ""), h("td", {}, String(d.passages)),
      h("td", {}, fmtTime(d.time)), h("td", {}, (d.tags || []).join(", ")))));
    if (!out.items.length && !cursor) body.append(h("tr", {}, h("td", { colspan: "6", class: "muted" }, "No documents match.")));
    more.hidden = !out.next_cursor;
    more.onclick = () => load(out.next_cursor);
  };
  await load(null);
};

PAGES.document = async (params) => {
  const d = await api("document", { id: params.get("id") });
  const status = h("div", { id: "write-status" });
  const parts = [h("h2", {}, `Document ${d.id}`),
    fields([["source", d.source], ["title", d.title], ["time", fmtTime(d.time)],
      ["valid until", d.valid_to ? fmtTime(d.valid_to) : null], ["superseded by", d.superseded_by],
      ["tags", (d.tags || []).join(", ")], ["conversation", d.conversation],
      ["metadata", d.metadata ? JSON.stringify(d.metadata) : null],
      ["passages", h("span", {}, d.nodes.slice(0, 50).map((n, i) => [i ? " " : "", link("explore", { id: n }, String(n))]),
        d.nodes.length > 50 ? ` … ${d.nodes.length} in all` : "")]]),
    h("h3", {}, "Text"), h("pre", { id: "document-text" }, d.text)];
  if (d.turns) parts.push(turnsView(d.turns));
  if (WRITE) {
    parts.push(h("div", { class: "card" }, h("h3", {}, "Change (write mode)"), twoStep("Delete this document", "delete-document", async () => {
      await change("delete_document", { id: d.id });
      location.hash = route("documents", {});
    }, status), status));
  }
  setMain(...parts);
};

// ----- Code -----------------------------------------------------------------------------------------
PAGES.code = async (params) => {
  const name = params.get("name") || "";
  const repo = params.get("repo") || "";
  const form = h("form", { class: "bar" },
    h("label", {}, "Symbol (qualified or bare; PATH:NAME picks a file's)", h("input", { name: "name", value: name, class: "wide", id: "symbol-name" })),
    h("label", {}, "Repository", h("input", { name: "repo", value: repo, size: 20 })),
    h("button", { class: "primary", type: "submit" }, "Look up"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const f = new FormData(form);
    location.hash = route("code", { name: f.get("name"), repo: f.get("repo") });
  });
  if (!name) {
    setMain(h("h2", {}, "Code"), form, h("p", { class: "muted" }, "Look up a symbol of an indexed repository: its callers, callees, bases, members and history."));
    return;
  }
  const found = await api("symbols", { name, repo });
  if (!found.matches.length) {
    setMain(h("h2", {}, "Code"), form, h("p", {}, "No symbol by that name."));
    return;
  }
  const matches = found.matches;
  const exact = matches.length === 1 || name.includes(":");
  if (!exact) {
    setMain(h("h2", {}, "Code"), form, h("h3", {}, `${matches.length} declarations named so`),
      h("ul", { class: "plain", id: "symbol-matches" }, matches.map((s) => h("li", {},
        link("code", { name: `${s.path}:${s.symbol}`, repo }, `${s.path}:${s.start_line} ${s.symbol}`), " ",
        h("span", { class: "muted" }, s.signature || "")))));
    return;
  }
  const s = await api("symbol", { name: matches.length === 1 ? `${matches[0].path}:${matches[0].symbol}` : name, repo });
  const rel = (key) => h("div", {}, h("h3", {}, `${key} (${s[key].length})`), h("ul", { class: "plain", id: "sym-" + key },
    s[key].slice(0, 100).map((x) => h("li", {}, link("code", { name: `${x.path}:${x.symbol}`, repo }, x.symbol), " ",
      h("span", { class: "muted" }, `${x.path}:${x.start_line || ""}`)))));
  const hist = s.history || { commits: [] };
  setMain(h("h2", {}, "Code: ", s.symbol), form,
    fields([["kind", s.symbol_kind], ["language", s.language], ["where", `${s.path}:${s.start_line}-${s.end_line}`],
      ["signature", s.signature], ["doc", s.doc], ["graph", link("explore", { id: s.id }, "its neighbours")]]),
    h("div", { class: "stats" }, ["callers", "callees", "bases", "subclasses", "members"].map(rel)),
    h("h3", {}, "History"), hist.commits.length ? h("ul", { class: "plain", id: "sym-history" }, hist.commits.map((c) =>
      h("li", {}, h("code", {}, String(c.commit).slice(0, 10)), ` ${String(c.date || "").slice(0, 10)} ${c.author || ""}: ${c.subject || ""} `,
        h("span", { class: "muted" }, c.change || "")))) : h("p", { class: "muted" }, (hist.no_commits || {}).message || "no indexed commit touched it"),
    h("h3", {}, "Body"), h("pre", {}, s.body || ""));
};

// ----- Store ----------------------------------------------------------------------------------------
PAGES.store = async (params) => {
  const s = await api("stats", { graph: params.get("graph") });
  const b = s.budget || {};
  const r = b.reading || {};
  const mb = (x) => (x / 1048576).toFixed(1) + " MB";
  const counts = (o) => Object.entries(o || {}).sort().map(([k, v]) => `${k} ${v}`).join(", ") || "0";
  const cards = [
    h("div", { class: "card" }, h("h3", {}, "Store"), fields([["file", s.db], ["size", mb(s.db_bytes)],
      ["schema", s.schema_version], ["written by", s.writer_version], ["read-only file", String(s.read_only)]])),
    h("div", { class: "card", id: "counts" }, h("h3", {}, "Counts"), fields([["documents", s.documents],
      ["nodes", counts(s.nodes)], ["edges", counts(s.edges)], ["facts", s.facts]])),
    h("div", { class: "card" }, h("h3", {}, "Models"), fields([["embedder", `${s.embedder} (${s.dim}-d)`],
      ["phrases", s.phrase_embedder], ["extractor", s.extractor], ["documents by extractor", counts(s.documents_by_extractor)]])),
    h("div", { class: "card" }, h("h3", {}, "Budget and profile"), fields([["profile", `${b.profile} (requested ${b.requested})`],
      ["node budget", b.node_budget], ["RAM", r.total ? `${mb(r.available)} free of ${mb(r.total)}` : null],
      ["zram", r.zram_total ? `${mb(r.zram_used)} used of ${mb(r.zram_total)}` : "none"],
      ["synonym threshold", (s.synonym_threshold || {}).setting]])),
  ];
  if (s.repos && s.repos.length) {
    cards.push(h("div", { class: "card" }, h("h3", {}, "Repositories"), h("ul", { class: "plain" },
      s.repos.map((x) => h("li", {}, `${x.root}: ${x.files} files, ${x.symbols} symbols, ${x.commits} commits`)))));
  }
  const parts = [h("h2", {}, "Store"), h("div", { class: "stats" }, cards)];
  if (s.graph) {
    const g = s.graph;
    parts.push(h("div", { class: "card", id: "graph-analyses" }, h("h3", {}, "Graph"), fields([
      ["components", `${g.components.count} (largest ${g.components.largest}, ${g.components.isolated} isolated)`],
      ["communities", `${g.communities.count} (modularity ${g.communities.modularity === null ? "—" : g.communities.modularity.toFixed(3)})`],
      ["hubs", `${g.hubs.count} (degree ≥ ${g.hubs.threshold === null ? "—" : g.hubs.threshold.toFixed(1)})`],
      ["top hubs", h("span", {}, g.hubs.top.map((x, i) => [i ? ", " : "", link("explore", { id: x.node_id }, String(x.node_id)), ` (${x.degree})`]))]])));
  } else {
    parts.push(h("p", {}, link("store", { graph: "1" }, "Add the graph analyses"), h("span", { class: "muted" }, " (components, hubs, communities: a pass over the graph)")));
  }
  setMain(...parts);
};
