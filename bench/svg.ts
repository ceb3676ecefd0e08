// A dependency-free SVG bar chart of the result: for each metric, how many times better
// than the reference our server is, over websocket and through the in-process client
// (log scale, 1× = parity; bars left of the line are slower). Goals are marked with a tick.
import { fmtOutcome, type BenchResult, type MetricResult, type Outcome } from './report';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function speedupOf(m: MetricResult, o: Outcome): number | null {
  const r = m.reference;
  if (o.status !== 'ok' || o.value === null || r.status !== 'ok' || r.value === null || o.value <= 0 || r.value <= 0) return null;
  return m.better === 'lower' ? r.value / o.value : o.value / r.value;
}

export function renderSvg(result: BenchResult): string {
  // Headline metrics only: p99s and the chunk-size diagnostic stay in the table.
  const rows = result.metrics.filter((m) => m.id !== 'rtt_p99' && m.id !== 'spawn_p99' && m.id !== 'stream_chunk');
  const series = [
    { key: 'ours' as const, name: 'ours (websocket)', color: '#2f6fdf' },
    { key: 'inProcess' as const, name: 'ours (in-process client)', color: '#35a06b' },
  ];
  const values = rows.flatMap((m) => series.map((s) => speedupOf(m, m[s.key]))).filter((v): v is number => v !== null);
  const lo = Math.min(0.25, ...values.map((v) => 2 ** Math.floor(Math.log2(v))));
  const hi = Math.max(4, ...values.map((v) => 2 ** Math.ceil(Math.log2(v))));
  const labelW = 190;
  const plotW = 520;
  const rowH = 34;
  const top = 58;
  const width = labelW + plotW + 200;
  const height = top + rows.length * rowH + 40;
  const x = (v: number) => labelW + ((Math.log2(v) - Math.log2(lo)) / (Math.log2(hi) - Math.log2(lo))) * plotW;
  const x1 = x(1);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12">`);
  out.push(`<rect width="100%" height="100%" fill="#ffffff"/>`);
  out.push(`<text x="10" y="20" font-size="15" font-weight="600">exec-server vs reference (codex 0.169.0): times better, log scale</text>`);
  out.push(`<text x="10" y="38" fill="#555">${esc(`${result.date.slice(0, 10)} · ${result.machine.nproc} cores ${result.machine.cpu} · node ${result.machine.node}${result.config.quick ? ' · QUICK run' : ''}`)}</text>`);
  series.forEach((s, i) => {
    const lx = labelW + plotW - 300 + i * 160;
    out.push(`<rect x="${lx}" y="${top - 14}" width="10" height="10" fill="${s.color}"/><text x="${lx + 14}" y="${top - 5}">${esc(s.name)}</text>`);
  });
  // grid
  for (let v = lo; v <= hi + 1e-9; v *= 2) {
    const gx = x(v).toFixed(1);
    out.push(`<line x1="${gx}" y1="${top}" x2="${gx}" y2="${top + rows.length * rowH}" stroke="${v === 1 ? '#333' : '#e3e3e3'}" stroke-width="${v === 1 ? 1.5 : 1}"/>`);
    out.push(`<text x="${gx}" y="${top + rows.length * rowH + 16}" text-anchor="middle" fill="#555">${v >= 1 ? v : `1/${1 / v}`}×</text>`);
  }
  rows.forEach((m, i) => {
    const y0 = top + i * rowH;
    out.push(`<text x="${labelW - 8}" y="${y0 + rowH / 2 + 4}" text-anchor="end">${esc(m.label)}</text>`);
    series.forEach((s, j) => {
      const by = y0 + 5 + j * 12;
      const o = m[s.key];
      const v = speedupOf(m, o);
      if (v !== null) {
        const xv = x(Math.min(hi, Math.max(lo, v)));
        out.push(`<rect x="${Math.min(x1, xv).toFixed(1)}" y="${by}" width="${Math.max(1, Math.abs(xv - x1)).toFixed(1)}" height="10" fill="${s.color}"/>`);
        out.push(`<text x="${(Math.max(x1, xv) + 4).toFixed(1)}" y="${by + 9}" font-size="10" fill="#333">${v.toFixed(2)}×</text>`);
      } else {
        const why = o.status === 'ok' ? (m.reference.status === 'ok' ? '' : `${fmtOutcome(o, m.unit)}; reference ${m.reference.status}`) : o.status === 'n/a' ? '' : `${o.status}${o.detail ? `: ${o.detail.slice(0, 48)}` : ''}`;
        if (why) out.push(`<text x="${x1 + 4}" y="${by + 9}" font-size="10" fill="${o.status === 'ok' ? '#2a7a2a' : '#c0392b'}">${esc(why)}</text>`);
      }
    });
    if (m.minSpeedup !== undefined && m.minSpeedup > 1) {
      const gx = x(m.minSpeedup).toFixed(1);
      out.push(`<line x1="${gx}" y1="${y0 + 2}" x2="${gx}" y2="${y0 + 19}" stroke="#d35400" stroke-width="2"/>`);
    }
    const verdict = m.goal ? (m.goal.met ? 'goal met' : 'goal missed') : '';
    const rx = labelW + plotW + 60;
    if (verdict) out.push(`<text x="${rx}" y="${y0 + 13}" fill="${m.goal!.met ? '#2a7a2a' : '#c0392b'}">${verdict}</text>`);
    out.push(`<text x="${rx}" y="${y0 + 27}" font-size="10" fill="#777">${esc(`reference: ${fmtOutcome(m.reference, m.unit)}`)}</text>`);
  });
  out.push(`<text x="${labelW}" y="${height - 6}" font-size="10" fill="#777">orange tick = goal; bars to the right of 1× are faster than the reference</text>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}
