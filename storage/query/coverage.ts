/**
 * What a usage query cannot count once retention deleted the records before a cut-off (storage/retention.ts).
 *
 * Before the cut-off only the rollups remain, and they answer every query the planner sends to them (storage/query/
 * plan.ts): whole hours on the rollup and tag-rollup paths, whole days on the daily and tag-set paths, exactly as
 * before. What the planner reads from records there finds none (or only records written late):
 *   - the partial hours at the edges of a range that does not start or end on a whole hour (partial days for the
 *     tag-set path);
 *   - the whole range of a raw plan (two or more tag keys with a built-in grouping or filter, or with an hourly
 *     interval): no rollup holds such combinations.
 * Those parts of the range are returned here so that an answer can say which part of its range it leaves out.
 */
import type { UsageQuery } from '../store';
import { planUsageQuery } from './plan';

export interface TimeRange {
  from: number;
  to: number;
}

/** The parts of the queries' ranges read from records before `keptFrom`, merged and in time order. */
export function uncountedRanges(queries: readonly UsageQuery[], keptFrom: number | null): TimeRange[] {
  if (keptFrom === null) return [];
  const parts: TimeRange[] = [];
  for (const q of queries) {
    for (const s of planUsageQuery(q).segments) {
      if (s.path === 'raw' && s.from < keptFrom) parts.push({ from: s.from, to: Math.min(s.to, keptFrom) });
    }
  }
  parts.sort((a, b) => a.from - b.from);
  const merged: TimeRange[] = [];
  for (const p of parts) {
    const last = merged[merged.length - 1];
    if (last && p.from <= last.to) last.to = Math.max(last.to, p.to);
    else merged.push({ ...p });
  }
  return merged;
}
