/** A budget period in UTC: its start and end (epoch ms). */
export interface Period {
  startMs: number;
  endMs: number;
}

export function periodAt(kind: 'day' | 'month', now: number): Period {
  const d = new Date(now);
  if (kind === 'day') {
    const startMs = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    return { startMs, endMs: startMs + 24 * 3600_000 };
  }
  return { startMs: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), endMs: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
}
