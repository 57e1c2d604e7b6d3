// app.js: gschedd's status page. Every 2 s it reads /api/v1/nodes and /api/v1/jobs and
// redraws the totals, the GPU heat map (one cell per GPU, coloured by utilisation, idle
// flags in red), the running jobs with their efficiency and training progress, and the
// queue. Clicking a node shows its detail with the last hour of each GPU from
// /api/v1/history/NODE, drawn as small SVG charts. No libraries, nothing from elsewhere.
'use strict';

const REFRESH_MS = 2000;
const state = { node: null, nodes: [], jobs: [] };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'onclick') e.addEventListener('click', v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function fmtDuration(ms) {
  if (ms == null || ms < 0) return '';
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : m > 0 ? `${m}m${String(r).padStart(2, '0')}s` : `${r}s`;
}

function pct(v, digits = 0) {
  return v == null ? '–' : `${Number(v).toFixed(digits)}%`;
}

// Light blue at 0 % to deep green at 100 %.
function utilColour(u) {
  const t = Math.max(0, Math.min(100, u)) / 100;
  return `hsl(${210 - 80 * t}, ${70 - 5 * t}%, ${85 - 45 * t}%)`;
}

function gpuClass(g) {
  if (g.job == null) return g.util_pct == null ? 'gpu free unknown' : 'gpu free';
  if (g.idle) return 'gpu idle';
  return g.util_pct == null ? 'gpu unknown' : 'gpu busy';
}

function gpuTitle(node, g) {
  const parts = [`${node.name} GPU ${g.index}`];
  if (g.model) parts.push(g.model);
  if (g.job != null) parts.push(`job ${g.job} (${g.user})`);
  if (g.util_pct != null) parts.push(`util ${g.util_pct}%`);
  if (g.mem_used_mib != null && g.mem_total_mib != null)
    parts.push(`mem ${(g.mem_used_mib / 1024).toFixed(1)}/${(g.mem_total_mib / 1024).toFixed(1)} GiB`);
  if (g.power_w != null) parts.push(`${g.power_w} W`);
  if (g.temperature_c != null) parts.push(`${g.temperature_c} °C`);
  if (g.idle) parts.push(`IDLE since ${new Date(g.below_threshold_since_ms).toLocaleTimeString()}`);
  return parts.join(' · ');
}

function drawTotals(nodes, jobs) {
  let gpus = 0, alloc = 0, busy = 0, idle = 0, up = 0;
  for (const n of nodes) {
    if (n.state !== 'up') continue;
    up++;
    gpus += n.gpus_total;
    alloc += n.gpus_total - n.gpus_free;
    for (const g of n.gpus) {
      if (g.job == null) continue;
      if (g.idle) idle++;
      else if (g.util_pct != null && g.below_threshold_since_ms == null) busy++;
    }
  }
  const running = jobs.filter((j) => j.state === 'RUNNING').length;
  const pending = jobs.filter((j) => j.state === 'PENDING').length;
  const t = document.getElementById('totals');
  t.replaceChildren(
    el('span', {}, el('b', {}, `${up}/${nodes.length}`), ' nodes up · '),
    el('span', {}, el('b', {}, gpus), ' GPUs · '),
    el('span', {}, 'allocated ', el('b', { id: 'allocated' }, `${alloc} (${pct(gpus ? (100 * alloc) / gpus : 0)})`), ' · '),
    el('span', {}, 'busy ', el('b', { id: 'busy' }, `${busy} of ${alloc}`), ' · '),
    el('span', {}, 'idle-flagged ', el('b', { id: 'idle-count' }, idle), ' · '),
    el('span', {}, el('b', {}, running), ' running, ', el('b', {}, pending), ' pending'),
  );
}

function drawHeatmap(nodes) {
  const map = document.getElementById('heatmap');
  const cells = nodes.map((n) => {
    const gpus = n.gpus.map((g) => {
      const cls = gpuClass(g);
      const cell = el('div', { class: cls, title: gpuTitle(n, g), 'data-gpu': `${n.name}:${g.index}` },
        g.util_pct != null ? g.util_pct : '');
      if (cls === 'gpu busy') cell.style.background = utilColour(g.util_pct);
      return cell;
    });
    const meta = n.cpu_util_pct != null ? `CPU ${n.cpu_util_pct}%` : n.state;
    return el('div', {
      class: `node${n.state !== 'up' ? ' down' : ''}${state.node === n.name ? ' selected' : ''}`,
      'data-node': n.name,
      onclick: () => selectNode(n.name),
    }, el('div', { class: 'name' }, n.name), el('div', { class: 'meta' }, meta),
    el('div', { class: 'gpus' }, ...gpus));
  });
  map.replaceChildren(...cells);
}

function row(cells, cls) {
  return el('tr', cls ? { class: cls } : {}, ...cells.map(([v, num]) => el('td', num ? { class: 'num' } : {}, v)));
}

function fillTable(id, rows, empty, cols) {
  const body = document.querySelector(`#${id} tbody`);
  body.replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', { colspan: cols, class: 'empty' }, empty))]));
}

function drawRunning(jobs) {
  const rows = jobs.filter((j) => j.state === 'RUNNING').map((j) => {
    const u = j.usage || {};
    const p = j.progress;
    const idleShare = u.gpu_alloc_ms > 0 ? (100 * u.gpu_idle_ms) / u.gpu_alloc_ms : null;
    const idleGpus = (u.idle_gpus || []).join(', ');
    return row([
      [j.id, true], [j.name], [j.user], [j.partition || ''], [j.gpus_allocated, true],
      [pct(u.gpu_util_mean_pct, 1), true], [pct(idleShare), true], [idleGpus],
      [p ? `${p.step}/${p.steps || '?'}` : '', true],
      [p && p.tokens_per_s ? Math.round(p.tokens_per_s) : '', true],
      [p && p.mfu ? pct(100 * p.mfu, 1) : '', true],
      [j.suspended ? `${fmtDuration(j.run_ms)}, suspended` : fmtDuration(j.run_ms), true],
    ], idleGpus ? 'idle' : '');
  });
  fillTable('running', rows, 'no job is running', 12);
}

function drawQueue(jobs, now) {
  const rows = jobs.filter((j) => j.state === 'PENDING').map((j) => row([
    [j.id, true], [j.name], [j.user], [j.partition || ''],
    [j.gpus_per_node * j.nodes_requested, true], [j.reason || (j.held ? 'held' : '')],
    [fmtDuration(now - j.submit_ms), true],
    [j.expected_start_ms ? new Date(j.expected_start_ms).toLocaleTimeString() : ''],
  ]));
  fillTable('queue', rows, 'the queue is empty', 8);
}

// A small chart of one GPU's last hour: utilisation (solid) and memory share (dashed).
function chart(gpu, node) {
  const W = 240, H = 70;
  const points = gpu.minutes.length > 1 ? gpu.minutes.map((m) => [m[0], m[1], m[3]])
    : gpu.recent.map((r) => [r[0], r[1], r[3]]);
  const svgNS = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(svgNS, 'svg');
  svg.setAttribute('width', W);
  svg.setAttribute('height', H);
  const axis = document.createElementNS(svgNS, 'line');
  axis.setAttribute('class', 'axis');
  axis.setAttribute('x1', 0); axis.setAttribute('x2', W);
  axis.setAttribute('y1', H - 1); axis.setAttribute('y2', H - 1);
  svg.append(axis);
  const memTotal = (node.gpus.find((g) => g.index === gpu.index) || {}).mem_total_mib;
  if (points.length > 0) {
    const t0 = points[0][0], t1 = Math.max(points[points.length - 1][0], t0 + 1);
    const x = (t) => ((t - t0) / (t1 - t0)) * (W - 2) + 1;
    const y = (v) => H - 2 - (Math.max(0, Math.min(100, v)) / 100) * (H - 4);
    const line = (cls, f) => {
      const pl = document.createElementNS(svgNS, 'polyline');
      pl.setAttribute('class', cls);
      pl.setAttribute('points', points.map((p) => `${x(p[0]).toFixed(1)},${y(f(p)).toFixed(1)}`).join(' '));
      svg.append(pl);
    };
    line('util', (p) => p[1]);
    if (memTotal) line('mem', (p) => (100 * p[2]) / memTotal);
  }
  const span = points.length > 1 ? fmtDuration(points[points.length - 1][0] - points[0][0]) : 'no history yet';
  return el('div', { class: 'chart', 'data-chart': `${node.name}:${gpu.index}` },
    el('div', { class: 'title' }, `GPU ${gpu.index} · util (solid), memory (dashed) · ${span}`), svg);
}

async function drawNode() {
  const section = document.getElementById('node-detail');
  const node = state.nodes.find((n) => n.name === state.node);
  if (!node) { section.hidden = true; return; }
  section.hidden = false;
  document.getElementById('node-title').textContent = `Node ${node.name}`;
  const mem = node.memory_used_mib != null ? `, memory ${(node.memory_used_mib / 1024).toFixed(1)}/${(node.memory_mib / 1024).toFixed(1)} GiB` : '';
  document.getElementById('node-summary').textContent =
    `${node.state}${node.reason ? ` (${node.reason})` : ''}, ${node.gpus_total} GPUs (${node.gpus_free} free), ` +
    `${node.cores_total} cores${node.cpu_util_pct != null ? `, CPU ${node.cpu_util_pct}%` : ''}${mem}, NVML ${node.nvml ? 'yes' : 'no'}`;
  const r = await fetch(`api/v1/history/${encodeURIComponent(node.name)}`);
  if (!r.ok) return;
  const h = await r.json();
  document.getElementById('node-charts').replaceChildren(...h.gpus.map((g) => chart(g, node)));
}

function selectNode(name) {
  state.node = state.node === name ? null : name;
  drawHeatmap(state.nodes);
  drawNode();
}

async function refresh() {
  try {
    const [nr, jr] = await Promise.all([fetch('api/v1/nodes'), fetch('api/v1/jobs')]);
    if (!nr.ok || !jr.ok) throw new Error(`HTTP ${nr.status}/${jr.status}`);
    const nodes = await nr.json(), jobs = await jr.json();
    state.nodes = nodes.nodes;
    state.jobs = jobs.jobs;
    drawTotals(state.nodes, state.jobs);
    drawHeatmap(state.nodes);
    drawRunning(state.jobs);
    drawQueue(state.jobs, jobs.now_ms);
    if (state.node) await drawNode();
    document.getElementById('updated').textContent = `updated ${new Date(nodes.now_ms).toLocaleTimeString()}`;
    document.body.dataset.loaded = 'yes';
  } catch (e) {
    document.getElementById('updated').textContent = `gschedd unreachable: ${e.message}`;
  }
}

const params = new URLSearchParams(location.search);
if (params.get('node')) state.node = params.get('node');
refresh();
setInterval(refresh, REFRESH_MS);
