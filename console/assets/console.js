// Parsec console: polls the server's JSON API every 2 s and draws the
// server page (#/) or a collection's page (#/c/<db>/<collection>).
"use strict";
(function () {
  const REFRESH_MS = 2000;
  const page = document.getElementById("page");
  const status = document.getElementById("status");
  const crumbs = document.getElementById("crumbs");
  let timer = null;
  let charts = {};
  let ruChartKey = "";
  let generation = 0;

  // ---------- formatting ----------
  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  }
  function num(v) { return typeof v === "object" && v !== null ? Number(v.$numberLong || v.$numberInt || v.$numberDouble || 0) : Number(v || 0); }
  function bytes(n) {
    n = num(n);
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n.toFixed(0) : n.toFixed(1)) + " " + units[i];
  }
  function ru(v) { v = num(v); return v < 10 ? v.toFixed(2) : Math.round(v).toLocaleString("en"); }
  function count(v) { return Math.round(num(v)).toLocaleString("en"); }
  function pct(v) { return num(v).toFixed(0) + "%"; }
  // share writes a fraction as a percentage with two significant digits.
  function share(f) { return f <= 0 ? "0%" : f < 0.0001 ? "<0.01%" : f >= 0.1 ? (f * 100).toFixed(0) + "%" : Number((f * 100).toPrecision(2)) + "%"; }
  function duration(s) {
    s = Math.floor(s);
    const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    if (d) return d + "d " + h + "h";
    if (h) return h + "h " + m + "m";
    return m + "m " + (s % 60) + "s";
  }
  function keyString(v) {
    if (v === undefined) return "(unsharded)";
    if (typeof v === "string") return JSON.stringify(v);
    return typeof v === "object" ? JSON.stringify(v) : String(v);
  }
  function time(t) { return new Date(t).toLocaleTimeString("en-GB"); }
  function card(label, value, id) {
    return `<div class="card"${id ? ` id="${id}"` : ""}><div class="label">${esc(label)}</div><div class="value">${esc(value)}</div></div>`;
  }

  async function getJSON(url) {
    const r = await fetch(url, { cache: "no-store" });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error || r.status + " " + r.statusText);
    return body;
  }

  function setStatus(err) {
    if (err) {
      status.textContent = "error: " + err.message;
      status.className = "status error";
    } else {
      status.textContent = "updated " + new Date().toLocaleTimeString("en-GB");
      status.className = "status";
    }
  }

  // ---------- routing ----------
  function route() {
    generation++;
    if (timer) clearTimeout(timer);
    for (const k in charts) charts[k].destroy();
    charts = {};
    ruChartKey = "";
    page.innerHTML = "";
    const m = location.hash.match(/^#\/c\/([^/]+)\/(.+)$/);
    if (m) {
      const db = decodeURIComponent(m[1]), coll = decodeURIComponent(m[2]);
      crumbs.innerHTML = `<a href="#/">server</a> / <span>${esc(db)}</span> / <span>${esc(coll)}</span>`;
      page.innerHTML = collectionSkeleton(db, coll);
      wireAdvisor(db, coll);
      poll((g) => refreshCollection(db, coll, g));
    } else {
      crumbs.innerHTML = `<span>server</span>`;
      page.innerHTML = serverSkeleton();
      poll(refreshServer);
    }
  }
  function poll(fn) {
    const g = generation;
    const tick = async () => {
      try {
        await fn(g);
        if (g === generation) setStatus(null);
      } catch (e) {
        if (g === generation) setStatus(e);
      }
      if (g === generation) timer = setTimeout(tick, REFRESH_MS);
    };
    tick();
  }

  // ---------- server page ----------
  function serverSkeleton() {
    return `<h1>Server</h1>
      <div class="cards" id="server-cards"></div>
      <div class="panel"><h2>Databases and collections</h2><div id="collections"></div></div>
      <div class="grid2">
        <div class="panel"><h2>Recent splits</h2><div id="recent-splits"></div></div>
        <div class="panel"><h2>Commands</h2><div id="commands"></div></div>
      </div>`;
  }
  async function refreshServer(g) {
    const s = await getJSON("/api/server");
    if (g !== generation) return; // the page changed meanwhile
    const over = s.rateLimiting ? s.throttledRequests : s.wouldHaveBeenThrottledRequests;
    document.getElementById("server-cards").innerHTML =
      card("Version", s.version + " (MongoDB " + s.mongoVersion + ")") +
      card("Uptime", duration(s.uptimeSeconds)) +
      card("RU/s now", ru(s.ruLastSecond), "ru-now") +
      card("RU/s, last minute", ru(s.ruPerSecond)) +
      card(s.rateLimiting ? "Throttled requests" : "Would-be throttles (rate limiting off)", count(over), "throttles") +
      card("Physical partitions", count(s.physicalPartitions), "partition-count") +
      card("Connections", count(s.connections)) +
      card("Memory (Go runtime)", bytes(s.memoryBytes)) +
      card("Disk (LSM + value log)", s.persistent ? bytes(s.lsmBytes + s.vlogBytes) : "in memory") +
      card("Node", s.host);
    let rows = "";
    for (const d of s.databases) {
      for (const c of d.collections) {
        rows += `<tr class="collection" data-ns="${esc(d.name + "." + c.name)}">
          <td><a href="#/c/${encodeURIComponent(d.name)}/${encodeURIComponent(c.name)}">${esc(d.name)}.${esc(c.name)}</a></td>
          <td>${c.shardKey ? "<code>" + esc(c.shardKey) + "</code>" : '<span class="muted">unsharded</span>'}</td>
          <td>${esc(c.throughput)}</td><td class="num">${count(c.partitions)}</td><td class="num">${count(c.documents)}</td>
          <td class="num">${bytes(c.storageBytes)}</td><td class="num">${ru(c.ruPerSecond)}</td>
          <td class="num">${pct(c.normalizedRUConsumption)}</td><td class="num">${count(c.throttled)}</td></tr>`;
      }
    }
    document.getElementById("collections").innerHTML = rows
      ? `<table><thead><tr><th>collection</th><th>shard key</th><th>throughput</th><th class="num">partitions</th><th class="num">documents</th>
         <th class="num">storage</th><th class="num">RU/s (1 min)</th><th class="num">normalized RU</th><th class="num">throttles</th></tr></thead><tbody>${rows}</tbody></table>`
      : '<p class="empty-note">No collections yet.</p>';
    document.getElementById("recent-splits").innerHTML = s.recentSplits.length
      ? "<table><tbody>" + s.recentSplits.slice().reverse().map((e) => `<tr class="split"><td>${time(e.time)}</td>
          <td>${esc(e.database)}.${esc(e.collection)}</td><td>${esc(e.parent)} → ${e.children.map(esc).join(", ")}</td>
          <td>${esc(e.reason)}</td></tr>`).join("") + "</tbody></table>"
      : '<p class="empty-note">No split in the last hour.</p>';
    document.getElementById("commands").innerHTML = s.commands.length
      ? "<table><thead><tr><th>command</th><th class=num>count</th><th class=num>mean</th></tr></thead><tbody>" +
        s.commands.slice(0, 10).map((c) => `<tr><td>${esc(c.name)}</td><td class="num">${count(c.count)}</td>
          <td class="num">${(c.meanSeconds * 1000).toFixed(2)} ms</td></tr>`).join("") + "</tbody></table>"
      : '<p class="empty-note">No command yet.</p>';
  }

  // ---------- collection page ----------
  function collectionSkeleton(db, coll) {
    return `<h1>${esc(db)}.${esc(coll)}</h1>
      <div class="cards" id="coll-cards"></div>
      <ul class="warnings" id="warnings"></ul>
      <div class="grid2">
        <div class="panel"><h2>Storage per physical partition (data + index)</h2><div id="partitions"></div></div>
        <div class="panel"><h2>RU/s per physical partition (last minute) against its share</h2><div id="ru-bars"></div></div>
      </div>
      <div class="panel"><h2>Normalized RU consumption by partition key range</h2><div id="heatmap" class="heatmap"></div>
        <div class="legend">0%<span class="swatch"></span>100%</div></div>
      <div class="panel"><h2>RU/s per partition and throttles over time</h2><div id="ru-chart" class="chart"></div></div>
      <div class="grid2">
        <div class="panel"><h2>Top logical partitions by storage</h2><div id="top-storage"></div></div>
        <div class="panel"><h2>Top logical partitions by RU</h2><div id="top-ru"></div></div>
      </div>
      <div class="panel"><h2>Splits</h2><div id="splits"></div></div>
      <div class="panel" id="advisor"><h2>Choosing a partition key: what if</h2>
        <form id="advise-form" class="advise-form">
          <label class="keys">Candidate keys, one per line: a path (hashed, as Cosmos DB's partition key) or a key pattern such as <code>{"ts": 1}</code>
            <textarea id="advise-keys" rows="3" spellcheck="false"></textarea></label>
          <label>Throughput
            <select id="advise-mode"><option value="">the collection's own</option><option value="throughput">manual, RU/s</option><option value="autoscaleMax">autoscale max, RU/s</option></select>
            <input id="advise-rus" type="number" min="0" step="100" placeholder="RU/s"></label>
          <button type="submit" id="advise-run">Analyze</button>
        </form>
        <div id="advice"><p class="empty-note">Compare candidate keys: how this collection would spread over Cosmos DB's physical partitions, from a sample of its documents and the queries configureQueryAnalyzer recorded.</p></div>
      </div>`;
  }

  // ---------- partition-key what-if (AnalyzePartitionKey) ----------
  function wireAdvisor(db, coll) {
    const form = document.getElementById("advise-form");
    const out = document.getElementById("advice");
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const g = generation;
      const keys = document.getElementById("advise-keys").value.split("\n").map((k) => k.trim()).filter((k) => k);
      const q = new URLSearchParams({ db, collection: coll });
      for (const k of keys) q.append("key", k);
      const mode = document.getElementById("advise-mode").value, rus = document.getElementById("advise-rus").value.trim();
      if (mode && rus) q.set(mode, rus);
      const button = document.getElementById("advise-run");
      button.disabled = true;
      out.innerHTML = '<p class="empty-note">Sampling the collection…</p>';
      try {
        const r = await getJSON("/api/advise?" + q);
        if (g === generation) out.innerHTML = adviceTable(r);
      } catch (e) {
        if (g === generation) out.innerHTML = `<p class="advise-error">${esc(e.message)}</p>`;
      } finally {
        button.disabled = false;
      }
    });
  }

  // adviceTable puts the candidates side by side, then each one's
  // partitions: storage and RU/s against the per-partition budget.
  function adviceTable(r) {
    const cands = r.candidates || [];
    const row = (label, cls, cell) => `<tr class="${cls}"><th>${esc(label)}</th>` + cands.map((c) => `<td class="num">${cell(c)}</td>`).join("") + "</tr>";
    const maxOf = (c, f) => Math.max(0, ...(c.partitions || []).map((p) => num(p[f])));
    const largest = (c) => {
      const l = (c.largestLogicalPartitions || [])[0];
      if (!l) return "—";
      return esc(keyString(l.shardKey)) + " · " + bytes(l.dataBytes) + (l.limitShare !== undefined ? " (" + num(l.limitShare).toFixed(1) + "% of the limit)" : "");
    };
    let html = `<table class="advice"><thead><tr><th></th>${cands.map((c) => `<th class="num candidate"><code>${esc(c.key)}</code></th>`).join("")}</tr></thead><tbody>` +
      row("verdict", "verdict", (c) => `<span class="verdict ${esc(c.verdict)}">${esc(c.verdict)}</span>`) +
      row("physical partitions", "partitions", (c) => count(c.physicalPartitions)) +
      row("RU/s budget per partition", "budget", (c) => ru(c.partitionBudgetRUs)) +
      row("distinct values (sampled)", "distinct", (c) => count(c.numDistinctValues)) +
      row("documents missing the key", "missing", (c) => count(c.numDocsMissingShardKey)) +
      row("largest partition's storage", "storage-share", (c) => num(maxOf(c, "dataShare")).toFixed(1) + "%") +
      row("busiest partition's budget", "budget-share", (c) => num(c.maxBudgetShare).toFixed(1) + "%") +
      row("largest logical partition", "largest", largest) +
      row("queries fanning out", "fanout", (c) => num(c.workload && c.workload.fanOutPercent).toFixed(1) + "%") +
      row("predicted 16500 (throttled)", "throttled", (c) => num(c.predictedThrottledPercent).toFixed(2) + "%") +
      "</tbody></table>";
    for (const c of cands) {
      const parts = c.partitions || [];
      const maxBytes = Math.max(1, ...parts.map((p) => num(p.dataBytes)));
      html += `<div class="candidate-detail" data-key="${esc(c.key)}"><h3><code>${esc(c.key)}</code>: <span class="verdict ${esc(c.verdict)}">${esc(c.verdict)}</span></h3>
        <p class="advice-text">${esc(c.advice)}</p>
        <p class="legend">per partition: storage (green), RU/s against its budget of ${ru(c.partitionBudgetRUs)} RU/s (blue)</p>` +
        parts.map((p) => `<div class="partition what-if" data-id="${esc(p.partitionKeyRangeId)}" data-bytes="${num(p.dataBytes)}" data-budget-share="${num(p.budgetShare)}">
          <span class="pid">${esc(p.partitionKeyRangeId)}</span>
          <div class="bars"><div class="bar"><div class="fill data" style="width:${(num(p.dataBytes) / maxBytes) * 100}%"></div></div>
            <div class="bar thin"><div class="fill ru${num(p.budgetShare) > 100 ? " over" : ""}" style="width:${Math.min(100, num(p.budgetShare))}%"></div></div></div>
          <span class="figures">${count(p.documentCount)} docs · ${bytes(p.dataBytes)} · ${ru(p.ruPerSecond)} / ${ru(p.budgetRUs)} RU/s</span>
        </div>`).join("") + "</div>";
    }
    return html;
  }

  async function refreshCollection(db, coll, g) {
    const q = "db=" + encodeURIComponent(db) + "&collection=" + encodeURIComponent(coll);
    const [c, h] = await Promise.all([getJSON("/api/collection?" + q), getJSON("/api/heatmap?" + q)]);
    if (g !== generation) return; // the page changed meanwhile
    const st = c.stats;
    const parts = st.partitions || [];
    const tp = st.sharedThroughput ? "shared with the database"
      : st.autoScaleSettings ? "autoscale max " + count(st.autoScaleSettings.maxThroughput) + " RU/s"
      : count(st.provisionedThroughput) + " RU/s";
    const over = st.rateLimiting ? num(st.throttledRequests) : num(st.wouldHaveBeenThrottledRequests);
    document.getElementById("coll-cards").innerHTML =
      card("Shard key", c.shardKey || "unsharded", "shard-key") +
      card("Throughput", tp) +
      card("Physical partitions", count(parts.length), "coll-partition-count") +
      card("Documents", count(st.documentCount)) +
      card("Data + index", bytes(num(st.dataBytes) + num(st.indexBytes))) +
      card("Logical partitions", count(st.logicalPartitionCount)) +
      card("RU/s now", ru(st.ruLastSecond)) +
      card("Normalized RU (max)", pct(st.normalizedRUConsumption)) +
      card(st.rateLimiting ? "Throttled" : "Would-be throttles", count(over));
    document.getElementById("warnings").innerHTML = c.warnings
      .map((w) => `<li class="${w.startsWith("Hot") ? "hot" : ""}">${esc(w)}</li>`).join("");

    // storage bars: one per physical partition, scaled to the largest
    const maxStore = Math.max(1, ...parts.map((p) => num(p.storageBytes)));
    document.getElementById("partitions").innerHTML = parts.map((p) => {
      const data = num(p.dataBytes), index = num(p.storageBytes) - data;
      return `<div class="partition" data-id="${esc(p.partitionKeyRangeId)}" data-docs="${num(p.documentCount)}"
          data-storage="${num(p.storageBytes)}" title="range ${esc(p.minInclusive || "start")}..${esc(p.maxExclusive === "FF" ? "end" : p.maxExclusive)}">
        <span class="pid">${esc(p.partitionKeyRangeId)}</span>
        <div class="bar"><div class="fill data" style="width:${(data / maxStore) * 100}%"></div>
          <div class="fill index" style="left:${(data / maxStore) * 100}%;width:${(Math.max(index, 0) / maxStore) * 100}%"></div></div>
        <span class="figures"><span class="docs">${count(p.documentCount)}</span> docs · <span class="storage">${bytes(p.storageBytes)}</span></span>
      </div>`;
    }).join("");

    // RU bars: last minute's RU/s against the partition's share
    const rates = parts.map((p) => num(p.ruLastMinute) / 60);
    const maxRate = Math.max(1, ...rates, ...parts.map((p) => num(p.throughputShare)));
    document.getElementById("ru-bars").innerHTML = parts.map((p, i) => {
      const share = num(p.throughputShare);
      return `<div class="partition ru" data-id="${esc(p.partitionKeyRangeId)}" data-share="${share}" data-normalized="${num(p.normalizedRUConsumption)}">
        <span class="pid">${esc(p.partitionKeyRangeId)}</span>
        <div class="bar"><div class="fill ru${rates[i] > share ? " over" : ""}" style="width:${Math.min(100, (rates[i] / maxRate) * 100)}%"></div>
          <div class="share" style="left:${(share / maxRate) * 100}%"></div></div>
        <span class="figures">${ru(rates[i])} / ${ru(share)} RU/s · ${pct(p.normalizedRUConsumption)}</span>
      </div>`;
    }).join("");

    drawHeatmap(h);
    drawRUChart(h);
    drawTop(st, parts);
    drawSplits(c.splits, c.windowSeconds);
  }

  function heatColor(v) {
    // 0% pale blue, 50% amber, 100% red
    const t = Math.max(0, Math.min(1, v / 100));
    if (t < 0.5) {
      const k = t / 0.5;
      return `hsl(${210 - 165 * k},${40 + 55 * k}%,${95 - 35 * k}%)`;
    }
    const k = (t - 0.5) / 0.5;
    return `hsl(${45 - 37 * k},${95 - 10 * k}%,${60 - 15 * k}%)`;
  }

  function drawHeatmap(h) {
    const el = document.getElementById("heatmap");
    if (!h.times.length) {
      el.style.gridTemplateColumns = "1fr";
      el.innerHTML = '<p class="empty-note">No sample yet.</p>';
      return;
    }
    el.style.gridTemplateColumns = `48px repeat(${h.times.length}, minmax(2px, 1fr))`;
    let html = "";
    h.partitions.forEach((id, r) => {
      html += `<div class="rowlabel">${esc(id)}</div>`;
      h.normalized[r].forEach((v, j) => {
        html += v === null
          ? '<div class="cell empty"></div>'
          : `<div class="cell" data-partition="${esc(id)}" style="background:${heatColor(v)}" title="partition ${esc(id)} at ${time(h.times[j] * 1000)}: ${v.toFixed(1)}%"></div>`;
      });
    });
    if (h.hiddenPartitions) html += `<div class="rowlabel"></div><div class="muted" style="grid-column: 2 / -1">${h.hiddenPartitions} cooler partitions not shown</div>`;
    el.innerHTML = html;
  }

  function drawRUChart(h) {
    const el = document.getElementById("ru-chart");
    if (typeof uPlot === "undefined") return;
    if (!h.times.length || h.times[h.times.length - 1] === h.times[0]) {
      // One second of samples: uPlot would stretch the time axis over
      // a thousand days.
      if (charts.ru) charts.ru.destroy();
      delete charts.ru;
      ruChartKey = "";
      el.innerHTML = '<p class="empty-note">The chart starts once samples span a second.</p>';
      return;
    }
    const data = [h.times, ...h.ruPerSecond, h.throttled.map((v, i) => (i ? Math.max(0, v - h.throttled[i - 1]) : 0))];
    const key = h.partitions.join(",");
    if (charts.ru && ruChartKey === key) {
      charts.ru.setData(data);
      return;
    }
    if (charts.ru) charts.ru.destroy();
    el.innerHTML = "";
    const palette = ["#2f6fde", "#3f8f6b", "#c4320a", "#7a4cc2", "#b08900", "#1a9bb0", "#d6457a", "#5c6b7a"];
    const series = [{}];
    h.partitions.forEach((id, i) => series.push({ label: "partition " + id, stroke: palette[i % palette.length], width: 1.5, spanGaps: false }));
    series.push({ label: "throttles", stroke: "#c4320a", dash: [4, 4], scale: "n", width: 1 });
    charts.ru = new uPlot({
      width: Math.max(320, el.clientWidth - 4), height: 220, series,
      scales: { x: { time: true } },
      axes: [{}, { label: "RU/s" }, { side: 1, scale: "n", label: "throttles" }],
      // The time axis drawn, in seconds, for a look from outside (the
      // browser test).
      hooks: { setScale: [(u, k) => { if (k === "x") el.dataset.span = u.scales.x.max - u.scales.x.min; }] },
    }, data, el);
    ruChartKey = key;
  }

  function drawTop(st, parts) {
    const limit = num(st.limits && st.limits.logicalPartitionMaxBytes);
    const largest = [];
    const hot = [];
    for (const p of parts) {
      for (const l of p.largestLogicalPartitions || []) largest.push({ p: p.partitionKeyRangeId, ...l });
      for (const x of p.hotLogicalPartitions || []) hot.push({ p: p.partitionKeyRangeId, ...x });
    }
    largest.sort((a, b) => num(b.dataBytes) + num(b.indexBytes) - num(a.dataBytes) - num(a.indexBytes));
    hot.sort((a, b) => num(b.ru) - num(a.ru));
    document.getElementById("top-storage").innerHTML = largest.length
      ? "<table><thead><tr><th>shard key</th><th>partition</th><th class=num>documents</th><th class=num>storage</th><th class=num>of limit</th></tr></thead><tbody>" +
        largest.slice(0, 10).map((l) => {
          const size = num(l.dataBytes) + num(l.indexBytes);
          return `<tr class="top-storage"><td>${esc(keyString(l.shardKey))}</td><td>${esc(l.p)}</td><td class="num">${count(l.documentCount)}</td>
            <td class="num">${bytes(size)}</td><td class="num">${limit ? share(size / limit) + " of " + bytes(limit) : ""}</td></tr>`;
        }).join("") + "</tbody></table>"
      : '<p class="empty-note">No documents.</p>';
    const totalRU = Math.max(1e-9, num(st.ruTotal));
    document.getElementById("top-ru").innerHTML = hot.length
      ? "<table><thead><tr><th>shard key</th><th>partition</th><th class=num>RU</th><th class=num>share</th></tr></thead><tbody>" +
        hot.slice(0, 10).map((x) => `<tr class="top-ru"><td>${esc(keyString(x.shardKey))}</td><td>${esc(x.p)}</td>
          <td class="num">${ru(x.ru)}${num(x.maxError) > 0 ? " (±" + ru(x.maxError) + ")" : ""}</td>
          <td class="num">${((num(x.ru) / totalRU) * 100).toFixed(1)}%</td></tr>`).join("") + "</tbody></table>"
      : '<p class="empty-note">No request units charged yet.</p>';
  }

  function drawSplits(splits, windowSeconds) {
    const el = document.getElementById("splits");
    const now = Date.now(), from = now - windowSeconds * 1000;
    let marks = "";
    for (const s of splits) {
      const x = ((new Date(s.time).getTime() - from) / (now - from)) * 100;
      marks += `<div class="mark ${esc(s.reason)}" style="left:${Math.max(0, Math.min(100, x))}%" title="${time(s.time)}: ${esc(s.parent)} → ${s.children.map(esc).join(", ")} (${esc(s.reason)})"></div>`;
    }
    el.innerHTML = `<div class="timeline"><span class="start">−${Math.round(windowSeconds / 60)} min</span>${marks}<span class="now">now</span></div>` +
      (splits.length
        ? "<table><thead><tr><th>time</th><th>parent</th><th>children</th><th>reason</th><th class=num>bytes</th><th class=num>took</th></tr></thead><tbody>" +
          splits.slice().reverse().map((s) => `<tr class="split" data-parent="${esc(s.parent)}"><td>${time(s.time)}</td><td>${esc(s.parent)}</td>
            <td>${s.children.map(esc).join(", ")}</td><td>${esc(s.reason)}</td><td class="num">${s.bytes >= 0 ? bytes(s.bytes) : "—"}</td>
            <td class="num">${s.durationMs.toFixed(1)} ms</td></tr>`).join("") + "</tbody></table>"
        : '<p class="empty-note">No split in the window.</p>');
  }

  window.addEventListener("hashchange", route);
  route();
})();
