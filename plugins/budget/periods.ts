/** A budget period in UTC: its start and end (epoch ms). */
export interface Period {
  startMs: number;
  endMs: number;
}

/** The period of each kind last asked for: most calls fall in the same one. */
const current: Partial<Record<'day' | 'month', Period>> = {};

export function periodAt(kind: 'day' | 'month', now: number): Period {
  const last = current[kind];
  if (last && now >= last.startMs && now < last.endMs) return last;
  return (current[kind] = Object.freeze(computePeriod(kind, now)));
}

function computePeriod(kind: 'day' | 'month', now: number): Period {
  const d = new Date(now);
  if (kind === 'day') {
    const startMs = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    return { startMs, endMs: startMs + 24 * 3600_000 };
  }
  return {
    startMs: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1),
    endMs: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1),
  };
}
