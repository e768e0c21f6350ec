// ember's graph explorer: draws the data ember.viz.explore embedded in this page (see its
// docstring for the fields) and steps through the recorded backward pass. Only what is on
// screen is drawn, so graphs of many thousands of nodes open and pan quickly.
"use strict";
(() => {
  const D = JSON.parse(document.getElementById("data").textContent);
  const N = D.nodes, E = D.edges, G = D.groups, EV = D.events, ST = D.steps;
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"]/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const svg = $("svg"), scene = $("scene"), view = $("view");

  const collapsed = new Set(G.filter((g) => g.collapsed).map((g) => g.id));
  const inputsOf = N.map(() => []);  // edges into each node, by input place
  E.forEach((e, k) => { inputsOf[e.dst][e.input] = k; });
  const nodeEventOfStep = {};  // engine step -> index of its "node" event
  EV.forEach((ev, k) => { if (ev.kind === "node") nodeEventOfStep[ev.step] = k; });
  const flags = new Map();  // node -> anomaly message
  D.anomalies.forEach((a) => { if (!flags.has(a.node)) flags.set(a.node, a.message); });
  let cur = EV.length ? -1 : 0;  // event shown: -1 before backward, EV.length after it
  let selected = null;
  let cam = { s: 1, x: 0, y: 0 };  // screen = layout * s + (x, y)

  // --- what the engine was doing at event `cur` ------------------------------------------
  function setBuffers(map, step) {
    for (const [id, grads] of Object.entries(step.buffers)) map.set(+id, grads);
  }
  let memo = null;
  function state() {
    if (!memo || memo.cur !== cur) memo = { cur, s: computeState() };
    return memo.s;
  }
  function computeState() {
    const s = { run: -1, ready: [], pending: new Map(), sent: null, ev: null, done: new Set() };
    s.readySet = new Set();
    if (!EV.length) return s;
    if (cur >= EV.length) {
      ST.forEach((st) => s.done.add(st.node));
      s.readySet = new Set();
      return s;
    }
    if (cur < 0) {
      setBuffers(s.pending, ST[0]);
      s.ready = ST[0].ready;
      s.readySet = new Set(s.ready);
      return s;
    }
    s.ev = EV[cur];
    const j = s.ev.step;
    setBuffers(s.pending, ST[0]);
    for (let i = 1; i < j; i++) {
      s.pending.delete(ST[i].node);
      setBuffers(s.pending, ST[i]);
      s.done.add(ST[i].node);
    }
    s.run = ST[j].node;
    s.pending.delete(s.run);
    s.ready = ST[j - 1].ready.filter((id) => id !== s.run);
    const k = nodeEventOfStep[j];
    if (k !== undefined && k <= cur) s.sent = ST[j].sent;
    s.readySet = new Set(s.ready);
    return s;
  }

  // --- drawing -----------------------------------------------------------------------------
  function outermostCollapsed() {  // per group: the outermost collapsed group holding it
    const t = new Array(G.length).fill(-1);
    for (const g of G) {  // parents come before their children
      const up = g.parent >= 0 ? t[g.parent] : -1;
      t[g.id] = up >= 0 ? up : (collapsed.has(g.id) ? g.id : -1);
    }
    return t;
  }
  const shownAs = (t, id) => {  // a node's own box, or the collapsed group hiding it
    const g = N[id].group;
    return g >= 0 && t[g] >= 0 ? "g" + t[g] : id;
  };

  function label(x, y, lines) {
    return `<text x="${x}" y="${y}">` + lines.map((l, i) =>
      `<tspan x="${x}" dy="${i ? 14 : 0}">${esc(l)}</tspan>`).join("") + "</text>";
  }

  function render() {
    const t = outermostCollapsed(), st = state();
    const w = svg.clientWidth, h = svg.clientHeight;
    const x0 = -cam.x / cam.s, y0 = -cam.y / cam.s, x1 = x0 + w / cam.s, y1 = y0 + h / cam.s;
    const seen = (b) => b && b[2] >= x0 && b[0] <= x1 && b[3] >= y0 && b[1] <= y1;
    const text = cam.s > 0.4;
    const cls = (id) => (st.run === id ? " running" : "") + (st.readySet.has(id) ? " ready" : "")
      + (st.pending.has(id) ? " pending" : "") + (st.done.has(id) ? " done" : "")
      + (flags.has(id) ? " flagged" : "") + (selected === id ? " selected" : "");
    const gcls = (gid) => {
      const inside = (id) => shownAs(t, id) === "g" + gid;
      return (st.run >= 0 && inside(st.run) ? " running" : "")
        + (st.ready.some(inside) ? " ready" : "")
        + ([...flags.keys()].some(inside) ? " flagged" : "");
    };
    const out = [];
    for (const g of G) {
      if (!g.box || (t[g.id] >= 0 && t[g.id] !== g.id) || !seen(g.box)) continue;
      const [a, b, c, d] = g.box, shut = t[g.id] === g.id;
      out.push(`<g class="${shut ? "cgroup" + gcls(g.id) : "group"}" data-group="${g.id}">`
        + `<rect x="${a}" y="${b}" width="${c - a}" height="${d - b}" rx="4"/>`
        + (text || shut ? label(a + 6, b + 13, [(shut ? "\u25B8 " : "\u25BE ") + g.title
          + (shut ? ` \u00B7 ${countIn(g.id)} nodes` : "")]) : "") + "</g>");
    }
    const sent = new Set();
    if (st.sent) st.sent.forEach((grad, i) => {
      const k = inputsOf[st.run][i];
      if (grad && k !== undefined) sent.add(k);
    });
    E.forEach((e, k) => {
      if (!seen(e.box)) return;
      const a = shownAs(t, e.src), b = shownAs(t, e.dst);
      if (typeof a === "string" && a === b) return;
      out.push(`<path class="edge${sent.has(k) ? " sent" : ""}" d="${e.path}"/>`);
    });
    for (const n of N) {
      if (typeof shownAs(t, n.id) === "string") continue;
      const b = [n.x - n.w / 2, n.y - n.h / 2, n.x + n.w / 2, n.y + n.h / 2];
      if (!seen(b)) continue;
      out.push(`<g class="node kind-${n.kind}${cls(n.id)}" data-id="${n.id}" `
        + `transform="translate(${b[0]},${b[1]})"><rect width="${n.w}" height="${n.h}" rx="3"/>`
        + (text ? label(8, 15, n.label.split("\n")) : "")
        + (flags.has(n.id) ? '<circle class="badge" r="7"/><text class="badge-text" x="-2.5" '
          + 'y="4">!</text>' : "")
        + (n.hooks && n.hooks.length ? `<circle class="hookdot" cx="${n.w}" r="5"><title>`
          + `${n.hooks.length} hook(s)</title></circle>` : "")
        + "</g>");
    }
    scene.setAttribute("transform", `translate(${cam.x},${cam.y}) scale(${cam.s})`);
    scene.innerHTML = out.join("");
  }
  const sizes = new Map();
  function countIn(gid) {  // nodes in a group and its subgroups
    if (!sizes.size) {
      for (const g of G) sizes.set(g.id, g.size);
      for (let i = G.length - 1; i >= 0; i--) {
        if (G[i].parent >= 0) sizes.set(G[i].parent, sizes.get(G[i].parent) + sizes.get(i));
      }
    }
    return sizes.get(gid);
  }
  let queued = false;
  const redraw = () => {
    if (!queued) { queued = true; requestAnimationFrame(() => { queued = false; render(); }); }
  };

  // --- camera ------------------------------------------------------------------------------
  function fit() {
    const w = svg.clientWidth, h = svg.clientHeight, L = D.layout;
    cam.s = Math.min(w / (L.width + 40), h / (L.height + 40), 1.5);
    cam.x = (w - L.width * cam.s) / 2;
    cam.y = (h - L.height * cam.s) / 2;
    redraw();
  }
  function centre(id) {
    const t = outermostCollapsed(), r = shownAs(t, id);
    const n = typeof r === "string" ? G[+r.slice(1)] : null;
    const [x, y] = n ? [(n.box[0] + n.box[2]) / 2, n.box[1] + 20] : [N[id].x, N[id].y];
    const sx = x * cam.s + cam.x, sy = y * cam.s + cam.y;
    const w = svg.clientWidth, h = svg.clientHeight;
    if (sx < 40 || sy < 40 || sx > w - 40 || sy > h - 40) {
      cam.x = w / 2 - x * cam.s;
      cam.y = h / 2 - y * cam.s;
    }
  }
  function zoom(f, px, py) {
    const s = Math.min(4, Math.max(0.02, cam.s * f));
    cam.x = px - (px - cam.x) * (s / cam.s);
    cam.y = py - (py - cam.y) * (s / cam.s);
    cam.s = s;
    redraw();
  }
  let drag = null;
  view.addEventListener("mousedown", (e) => {
    drag = { x: e.clientX, y: e.clientY, cx: cam.x, cy: cam.y, moved: false, down: true };
  });
  window.addEventListener("mousemove", (e) => {
    if (!drag || !drag.down) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) { drag.moved = true; view.classList.add("dragging"); }
    cam.x = drag.cx + dx;
    cam.y = drag.cy + dy;
    redraw();
  });
  window.addEventListener("mouseup", () => {
    if (drag) drag.down = false;
    view.classList.remove("dragging");
  });
  view.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = svg.getBoundingClientRect();
    zoom(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  svg.addEventListener("click", (e) => {
    const moved = drag && drag.moved;
    drag = null;
    if (moved) return;
    const node = e.target.closest("[data-id]"), grp = e.target.closest("[data-group]");
    if (node) select(+node.dataset.id);
    else if (grp && (collapsed.has(+grp.dataset.group) || e.target.tagName !== "rect")) {
      toggle(+grp.dataset.group);
    }
  });
  function toggle(gid) {
    if (collapsed.has(gid)) collapsed.delete(gid); else collapsed.add(gid);
    redraw();
  }

  // --- the side panel ------------------------------------------------------------------------
  const shape = (s) => "(" + s.shape.join(", ") + (s.shape.length === 1 ? ",)" : ")");
  const norm = (s) => (s.norm === null ? "" : s.norm.toPrecision(6));
  function grad(s) {
    if (!s) return '<span class="muted">None</span>';
    return `<span class="mono">${shape(s)} ${esc(s.dtype)}</span> `
      + (s.norm !== null ? `norm <span class="mono norm">${norm(s)}</span> ` : "")
      + (s.bad ? `<span class="bad">\u26A0 ${s.bad}</span> ` : "")
      + `<div class="mono preview">${esc(s.preview)}</div>`;
  }
  const name = (id) => (id < 0 ? "" : N[id].kind === "fn" ? N[id].label.split("\n").join(" ")
    : N[id].kind + " " + N[id].label.split("\n").join(" "));
  const nodeLink = (id) => `<span class="link" data-node="${id}">${esc(name(id))}</span>`;
  function grads(title, list) {
    if (!list || !list.length) return "";
    return `<h3>${title}</h3><table>` + list.map((s, i) =>
      `<tr><td class="mono">[${i}]</td><td>${grad(s)}</td></tr>`).join("") + "</table>";
  }

  function showEvent() {
    const st = state();
    $("counter").textContent = !EV.length ? "" : cur < 0 ? `before backward, 0 / ${EV.length}`
      : cur >= EV.length ? `done, ${EV.length} / ${EV.length}` : `event ${cur + 1} / ${EV.length}`;
    $("counter").dataset.cur = cur;
    let html;
    if (!EV.length) {
      html = '<p class="muted">explore(..., run_backward=False): no backward was run.</p>';
    } else if (cur < 0) {
      html = "<p>Before backward: the roots' gradients wait in their input buffers.</p>";
    } else if (cur >= EV.length) {
      html = "<p>Backward done: every leaf's <code>.grad</code> is below.</p>";
    } else {
      const ev = st.ev;
      html = `<div class="text mono" id="event-text">${esc(ev.text)}</div>`
        + `<p><span class="kind" id="event-kind">${esc(ev.kind)}</span> on `
        + `${nodeLink(ev.node)} <span class="mono muted">${esc(ev.label)}</span>`
        + (ev.hook ? ` hook <span class="mono">${esc(ev.hook)}</span>` : "") + "</p>"
        + grads(ev.kind === "node" ? "gradients in (the input buffer)"
          : ev.kind === "accumulate" ? ".grad now" : "gradients the hook saw", ev.in)
        + (ev.kind === "node" && st.sent ? "" : grads(ev.kind === "node"
          ? "gradients out (the node's backward)" : "what the hook returned", ev.out));
      const rows = (st.sent || []).map((s, i) => {
        const k = inputsOf[st.run][i];
        return s && k !== undefined ? `<tr><td>\u2192 ${nodeLink(E[k].src)}</td>`
          + `<td>${grad(s)}</td></tr>` : "";
      }).join("");
      if (rows) {
        html += `<h3>gradients out, sent along each edge</h3><table id="sent">${rows}</table>`;
      }
    }
    $("event").innerHTML = html;
    const q = [];
    if (EV.length && cur < EV.length) {
      q.push(`<h3>ready queue (runs next first): ${st.ready.length}</h3><ol class="queue">`
        + st.ready.slice(0, 40).map((id) => `<li>${nodeLink(id)}</li>`).join("") + "</ol>");
      const pend = [...st.pending.entries()];
      q.push(`<h3>input buffers waiting: ${pend.length}</h3><table>` + pend.slice(0, 40).map(
        ([id, gs]) => `<tr><td>${nodeLink(id)}</td><td>${gs.map(grad).join("")}</td></tr>`)
        .join("") + "</table>");
    }
    $("queue").innerHTML = q.join("");
    if (st.run >= 0) centre(st.run);
    redraw();
  }
  function go(k) {
    cur = Math.max(-1, Math.min(EV.length, k));
    showEvent();
  }

  function code(title, src) {
    if (!src) return `<h3>${title}</h3><p class="muted">no Python source</p>`;
    return `<h3>${title} <span class="where">${esc(src.file)}:${src.line}</span></h3>`
      + `<pre class="src">${esc(src.code)}</pre>`;
  }
  function select(id) {
    selected = id;
    const n = N[id], parts = [`<h3 class="mono" id="node-name">${esc(n.name || n.kind)}</h3>`];
    if (n.group >= 0) parts.push(`<p class="muted">in module ${esc(groupPath(n.group))}</p>`);
    if (flags.has(id)) parts.push(`<p class="bad">\u26A0 ${esc(flags.get(id))}</p>`);
    if (n.tensor) parts.push(`<h3>tensor</h3>${grad(n.tensor)}`);
    if (n.kind === "leaf") parts.push(`<h3>.grad</h3>${grad(n.grad)}`);
    if (n.kind === "fn") {
      const sv = n.saved;
      parts.push("<h3>saved tensors</h3>" + (sv.state === "freed"
        ? '<p class="muted">freed (backward ran without retain_graph)</p>'
        : !sv.tensors.length ? '<p class="muted">none</p>'
        : '<table id="saved"><tr><th>name</th><th>value</th><th>version</th></tr>'
          + sv.tensors.map((r) => `<tr><td class="mono">${esc(r.name)}</td><td>`
            + (r.value ? grad(r.value) : `<span class="muted">${esc(r.note)}</span>`)
            + `</td><td class="mono">${r.version === null ? "" : r.version
            + (r.now !== r.version ? ` <span class="bad">now ${r.now}</span>` : "")}</td></tr>`)
            .join("") + "</table>"));
      const attrs = Object.entries(n.attrs);
      if (attrs.length) {
        parts.push("<h3>attributes</h3><table>" + attrs.map(([k, v]) =>
          `<tr><td class="mono">${esc(k)}</td><td class="mono">${esc(v)}</td></tr>`).join("")
          + "</table>");
      }
      parts.push("<h3>hooks</h3>" + (n.hooks.length ? n.hooks.map((hk) =>
        `<p><span class="kind">${esc(hk.kind)}</span><span class="mono">${esc(hk.name)}</span>`
        + "</p>" + (hk.src ? code("", hk.src) : "")).join("") : '<p class="muted">none</p>'));
      const src = D.sources[n.src];
      parts.push(code("forward", src.forward), code("backward", src.backward));
    }
    $("node").innerHTML = parts.join("");
    $("node").classList.remove("muted");
    redraw();
  }
  function reveal(id) {  // open the collapsed modules around a node
    for (let g = N[id].group; g >= 0; g = G[g].parent) collapsed.delete(g);
  }
  function groupPath(gid) {
    const names = [];
    for (let g = gid; g >= 0; g = G[g].parent) names.unshift(G[g].title);
    return names.join(" \u203A ");
  }

  function leafTable() {
    const leaves = N.filter((n) => n.kind === "leaf");
    $("grad-table").innerHTML = leaves.length ? '<table id="grad-rows">' + leaves.map((n) =>
      `<tr data-leaf="${n.id}"><td>${nodeLink(n.id)}</td><td>${grad(n.grad)}</td></tr>`)
      .join("") + "</table>" : '<p class="muted">no leaves</p>';
    const L = D.layout;
    $("summary").textContent = `${N.length} nodes, ${E.length} edges, ${G.length} module calls,`
      + ` ${EV.length} backward events (layout: ${L.engine})`;
    $("warn").innerHTML = D.anomalies.map((a, i) =>
      `<a data-anomaly="${i}" title="${esc(a.message)}">\u26A0 ${esc(a.message)}</a>`).join("");
  }

  document.body.addEventListener("click", (e) => {
    const link = e.target.closest("[data-node]"), warn = e.target.closest("[data-anomaly]");
    if (link) { reveal(+link.dataset.node); select(+link.dataset.node); centre(+link.dataset.node); }
    if (warn) {
      const a = D.anomalies[+warn.dataset.anomaly];
      if (a.event !== null) go(a.event);
      select(a.node);
      centre(a.node);
    }
  });
  $("first").onclick = () => go(-1);
  $("prev").onclick = () => go(cur - 1);
  $("next").onclick = () => go(cur + 1);
  $("last").onclick = () => go(EV.length);
  $("fit").onclick = fit;
  $("zoom-in").onclick = () => zoom(1.25, svg.clientWidth / 2, svg.clientHeight / 2);
  $("zoom-out").onclick = () => zoom(0.8, svg.clientWidth / 2, svg.clientHeight / 2);
  $("expand-all").onclick = () => { collapsed.clear(); redraw(); };
  $("collapse-all").onclick = () => { G.forEach((g) => collapsed.add(g.id)); redraw(); };
  window.addEventListener("keydown", (e) => {
    const keys = { ArrowRight: cur + 1, ArrowLeft: cur - 1, Home: -1, End: EV.length };
    if (e.key in keys) { e.preventDefault(); go(keys[e.key]); }
  });
  window.addEventListener("resize", redraw);

  leafTable();
  const L = D.layout;
  if (Math.min(svg.clientWidth / L.width, svg.clientHeight / L.height) >= 0.5) fit();
  else {  // a big graph: full size, at the outputs, where the backward starts
    const outs = N.filter((n) => n.kind === "output");
    cam = { s: 1, x: 0, y: 0 };
    centre(outs.length ? outs[0].id : 0);
  }
  showEvent();
  render();
  document.body.dataset.ready = "1";
})();
