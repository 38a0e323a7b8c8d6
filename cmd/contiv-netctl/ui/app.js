// The web view of contiv-netctl ui: it polls /api/cluster and runs traces through
// /api/trace. Text is set with textContent only (names come from the cluster).
"use strict";

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function row(cells) {
  const tr = el("tr");
  for (const c of cells) tr.appendChild(el("td", "", String(c)));
  return tr;
}

function fill(id, rows) {
  const body = document.querySelector("#" + id + " tbody");
  body.replaceChildren(...rows.map(row));
}

function renderCluster(c) {
  const nodes = document.getElementById("nodes");
  nodes.replaceChildren(...c.nodes.map((n) => {
    const box = el("div", "node");
    box.dataset.node = n.name;
    const h = el("h3", "", n.name + " ");
    h.appendChild(el("span", "state-" + n.state, n.state));
    box.appendChild(h);
    box.appendChild(el("div", "", "IPs: " + (n.ips || []).join(", ")));
    const tunnels = el("div", "tunnels");
    for (const t of n.tunnels) {
      tunnels.appendChild(el("div", "", "VXLAN \u21c4 " + t.remoteNode + ": rx " + t.rxPackets + " / tx " + t.txPackets + " packets"));
    }
    box.appendChild(tunnels);
    if (!n.statsUp) {
      box.appendChild(el("div", "tunnels", "no data-plane counters: the agent cannot read VPP's stats segment"));
    }
    const pods = el("table", "pods");
    pods.appendChild(row(["pod", "IP", "rx", "tx", "drops"]));
    for (const p of c.pods.filter((p) => p.node === n.name)) {
      const c = (v) => (n.statsUp ? v : "-");
      const tr = row([p.namespace + "/" + p.name, p.ip, c(p.rxPackets), c(p.txPackets), c(p.drops)]);
      tr.className = "pod";
      pods.appendChild(tr);
    }
    box.appendChild(pods);
    return box;
  }));
  fill("services", c.services.map((s) => [s.service, s.protocol, s.frontend, s.backends.join(", ")]));
  fill("denies", c.denies.map((d) => [d.node, d.policy, d.acl + " #" + d.rule, d.packets]));
  document.getElementById("errors").textContent = (c.errors || []).join("; ");
  document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
}

async function refresh() {
  try {
    const r = await fetch("api/cluster");
    const c = await r.json();
    if (!r.ok) throw new Error(c.error);
    renderCluster(c);
  } catch (e) {
    document.getElementById("errors").textContent = String(e);
  }
}

function renderTrace(t) {
  const out = document.getElementById("trace-result");
  const verdict = el("div", "verdict verdict-" + t.verdict, t.verdict + ": " + t.reason);
  verdict.id = "trace-verdict";
  const probe = el("div", "", "probe " + t.probeRequest.proto + " " + t.probe.src + " \u2192 " +
    t.probeRequest.dst + (t.probeRequest.port ? ":" + t.probeRequest.port : "") + ": " + t.probe.outcome);
  const path = el("div", "path");
  (t.nodes || []).forEach((n, i) => {
    if (i > 0) path.appendChild(el("span", "arrow", "\u2192"));
    const box = el("div", "hop-node");
    box.appendChild(el("strong", "", "node " + n.node));
    const p = (n.packets || [])[n.packets.length - 1];
    const list = el("ol");
    for (const h of p ? p.hops : []) list.appendChild(el("li", "", h.what));
    box.appendChild(list);
    if (p) box.appendChild(el("em", "", p.verdict));
    path.appendChild(box);
  });
  out.replaceChildren(verdict, probe, path);
}

document.getElementById("trace-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const out = document.getElementById("trace-result");
  out.replaceChildren(el("div", "", "tracing..."));
  try {
    const r = await fetch("api/trace", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ src: document.getElementById("trace-src").value, dst: document.getElementById("trace-dst").value }),
    });
    const t = await r.json();
    if (!r.ok) throw new Error(t.error);
    renderTrace(t);
  } catch (e) {
    const v = el("div", "verdict verdict-UNKNOWN", "error: " + e.message);
    v.id = "trace-verdict";
    out.replaceChildren(v);
  }
});

refresh();
setInterval(refresh, 5000);
