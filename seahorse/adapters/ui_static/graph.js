// Seahorse viewer: the two graphs drawn with cytoscape.js (vendor/cytoscape.min.js).
// Stored text reaches cytoscape only as data (labels drawn on the canvas), never as markup.
"use strict";

const KIND_COLOURS = { passage: "#3b82f6", phrase: "#f59e0b", memory: "#10b981", symbol: "#8b5cf6",
  commit: "#ef4444", doc: "#64748b" };

function kindColour(kind) {
  return KIND_COLOURS[kind] || "#94a3b8";
}

function shortLabel(text, n) {
  const s = String(text || "").replace(/\s+/g, " ").trim();
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

const BASE_STYLE = [
  { selector: "node", style: {
      "background-color": (n) => kindColour(n.data("kind")), "label": "data(short)",
      "font-size": 10, "color": "#1d2430", "text-wrap": "wrap", "text-max-width": 120,
      "text-valign": "bottom", "text-margin-y": 3, "width": 18, "height": 18 } },
  { selector: "node[?seed]", style: { "border-width": 4, "border-color": "#047857" } },
  { selector: "node[?hit]", style: { "width": 30, "height": 30, "border-width": 3, "border-color": "#1f6feb",
      "font-weight": "bold" } },
  { selector: "node[?centre]", style: { "width": 30, "height": 30, "border-width": 3, "border-color": "#1f6feb",
      "font-weight": "bold" } },
  { selector: "node[?hub]", style: { "shape": "diamond", "border-width": 2, "border-color": "#111827",
      "width": 26, "height": 26 } },
  { selector: "edge", style: { "width": "data(width)", "line-color": "#cbd5e1", "curve-style": "bezier",
      "label": "data(label)", "font-size": 9, "color": "#475569", "text-background-color": "#fff",
      "text-background-opacity": 0.8, "text-background-padding": 1 } },
  { selector: "edge[?directed]", style: { "target-arrow-shape": "triangle", "target-arrow-color": "#94a3b8",
      "line-color": "#94a3b8" } },
  { selector: "edge[kind = 'synonym']", style: { "line-style": "dashed", "line-color": "#f59e0b" } },
  { selector: "edge[kind = 'calls'], edge[kind = 'inherits'], edge[kind = 'contains'], edge[kind = 'imports'], edge[kind = 'mentions']",
    style: { "line-color": "#a78bfa" } },
  { selector: "edge[kind = 'touched'], edge[kind = 'parent']", style: { "line-color": "#fca5a5" } },
  { selector: "edge:selected", style: { "label": "data(kind)" } },
  { selector: ":selected", style: { "overlay-opacity": 0.15, "overlay-color": "#1f6feb" } },
];

// cytoscape.js (440 KB) is loaded on the first graph drawn, not with the page.
let loading = null;
function ensureCytoscape() {
  if (typeof cytoscape === "function") return Promise.resolve();
  if (!loading) {
    loading = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = "/static/cytoscape.min.js";
      s.onload = resolve;
      s.onerror = () => { loading = null; reject(new Error("could not load the graph library")); };
      document.head.append(s);
    });
  }
  return loading;
}

function newGraph(container, elements, layout) {
  return cytoscape({ container, elements, style: BASE_STYLE, layout,
    minZoom: 0.2, maxZoom: 1.4 });
}

function pct(x) {
  return Math.round((x || 0) * 100) + "%";
}

// The evidence of one hit: the paths the walk's mass took from the seeds into it, as returned
// by search (evidence.paths: hops of {from: {id, kind, label}, edge, mass}; inflow).
function evidenceElements(hit) {
  const ev = hit.evidence || {};
  const nodes = new Map();
  const edges = new Map();
  const hitId = "n" + hit.id;
  const seedShare = (ev.inflow || {}).seed || 0;
  nodes.set(hitId, { id: hitId, node: hit.id, kind: hit.kind, label: hit.text || hit.source || "",
    short: shortLabel(hit.text || hit.source, 40), hit: true, seed: seedShare > 0, depth: 0 });
  for (const path of ev.paths || []) {
    const hops = path.hops || [];
    hops.forEach((hop, i) => {
      const f = hop.from;
      const id = "n" + f.id;
      if (!nodes.has(id)) {
        nodes.set(id, { id, node: f.id, kind: f.kind, label: f.label, short: shortLabel(f.label, 28),
          seed: false, depth: 0 });
      }
      nodes.get(id).depth = Math.max(nodes.get(id).depth, hops.length - i);
      if (i === 0 && path.from_seed) nodes.get(id).seed = true;
      const to = i + 1 < hops.length ? "n" + hops[i + 1].from.id : hitId;
      const eid = id + "->" + to;
      const last = i + 1 === hops.length;
      const e = edges.get(eid) || { id: eid, source: id, target: to, kind: hop.edge, mass: 0, share: 0,
        directed: true };
      e.mass += hop.mass || 0;
      if (last) e.share += path.share || 0;
      edges.set(eid, e);
    });
  }
  const maxMass = Math.max(1e-12, ...[...edges.values()].map((e) => e.mass));
  for (const e of edges.values()) {
    e.width = 1 + 5 * (e.mass / maxMass);
    e.label = e.kind + (e.share ? " " + pct(e.share) : "");
  }
  return [...nodes.values()].map((data) => ({ data })).concat([...edges.values()].map((data) => ({ data })));
}

// Columns by hops to the hit: the seeds on the left, the hit on the right.
function evidencePositions(elements) {
  const columns = new Map();
  for (const e of elements) {
    if (e.data.source) continue;
    const d = e.data.depth;
    if (!columns.has(d)) columns.set(d, []);
    columns.get(d).push(e.data.id);
  }
  const deepest = Math.max(...columns.keys());
  const pos = {};
  for (const [d, ids] of columns) {
    ids.forEach((id, i) => { pos[id] = { x: (deepest - d) * 220, y: (i - (ids.length - 1) / 2) * 90 }; });
  }
  return pos;
}

async function drawEvidence(container, hit) {
  await ensureCytoscape();
  const elements = evidenceElements(hit);
  const pos = evidencePositions(elements);
  const cy = newGraph(container, elements, { name: "preset", positions: (n) => pos[n.id()], padding: 40 });
  container.dataset.nodes = String(cy.nodes().length);
  container.dataset.edges = String(cy.edges().length);
  container.dataset.seeds = String(cy.nodes("[?seed]").length);
  return cy;
}

// A neighbourhood from /api/neighbours ({node, neighbours, edges}); ring 0 is the centre.
function ringElements(data, ring, have) {
  const out = [];
  const add = (n, r, extra) => {
    const id = "n" + n.id;
    if (have.has(id)) return;
    have.add(id);
    out.push({ data: { id, node: n.id, kind: n.kind, label: n.label, short: shortLabel(n.label, 28),
      hub: !!n.hub, degree: n.degree, ring: r, ...extra } });
  };
  add(data.node, ring, ring === 0 ? { centre: true } : {});
  for (const n of data.neighbours) add(n, ring + 1, {});
  for (const e of data.edges) {
    const id = "e" + e.src + "-" + e.dst;
    if (have.has(id)) continue;
    have.add(id);
    out.push({ data: { id, source: "n" + e.src, target: "n" + e.dst, kind: e.kind, label: "", width: 1.5 } });
  }
  return out;
}

const RING_LAYOUT = { name: "concentric", concentric: (n) => 10 - (n.data("ring") || 0), levelWidth: () => 1,
  minNodeSpacing: 34, padding: 20, animate: false };

async function drawNeighbourhood(container, data, onTap) {
  await ensureCytoscape();
  const have = new Set();
  const cy = newGraph(container, ringElements(data, 0, have), RING_LAYOUT);
  cy.scratch("have", have);
  cy.on("tap", "node", (evt) => onTap(evt.target.data("node")));
  markCounts(container, cy);
  return cy;
}

// Add the ring around one node already shown (bounded: nothing past maxNodes).
function addRing(cy, container, data, maxNodes) {
  const have = cy.scratch("have");
  const centre = cy.getElementById("n" + data.node.id);
  const ring = centre.nonempty() ? centre.data("ring") || 0 : 0;
  let elements = ringElements(data, ring, have);
  const room = Math.max(0, maxNodes - cy.nodes().length);
  const nodes = elements.filter((e) => !e.data.source).slice(0, room);
  const keep = new Set(nodes.map((e) => e.data.id).concat(cy.nodes().map((n) => n.id())));
  elements = nodes.concat(elements.filter((e) => e.data.source && keep.has(e.data.source) && keep.has(e.data.target)));
  cy.add(elements);
  cy.layout(RING_LAYOUT).run();
  markCounts(container, cy);
  return elements.length;
}

function markCounts(container, cy) {
  container.dataset.nodes = String(cy.nodes().length);
  container.dataset.edges = String(cy.edges().length);
  container.dataset.hubs = String(cy.nodes("[?hub]").length);
}

window.SeahorseGraph = { drawEvidence, drawNeighbourhood, addRing, kindColour, KIND_COLOURS, shortLabel };
