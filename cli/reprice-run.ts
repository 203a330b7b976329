/**
 * One repricing of a range of stored records with a catalog (`usage reprice`, `reconcile fix`): each record priced
 * with the price in force at its time, a diff by model kept, and, when applied, an entry in the repricing audit
 * (storage/reprice-log.ts) saying what changed and why.
 */
import { repriceRecord } from '../pricing/reprice';
import type { PriceCatalog } from '../pricing/catalog';
import { formatUsd } from '../pricing/money';
import type { UsageRecord } from '../records/usage-record';
import { repricingChanges } from '../storage/reprice';
import type { RepriceResult, Repricing, UsageStore } from '../storage/store';
import { startProgress } from './progress';

export interface RepriceRun {
  result: RepriceResult;
  diff: RepriceDiff;
  /** The audit entry's id; null on a dry run. */
  logId: number | null;
}

export async function repriceRange(
  store: UsageStore,
  catalog: PriceCatalog,
  range: { from: number; to: number },
  opts: { dryRun?: boolean; reason: string },
): Promise<RepriceRun> {
  const diff = new RepriceDiff();
  // The rollups count the records of the range cheaply: the total of the progress.
  const [all] = await store.queryUsage({ ...range, groupBy: [] });
  const progress = startProgress(
    opts.dryRun ? 'usage reprice --dry-run' : 'usage reprice',
    all?.requests ?? 0,
    'records',
  );
  let scanned = 0;
  let result: RepriceResult;
  try {
    result = await store.repriceAll((r) => {
      if (++scanned % 1000 === 0) progress.update(scanned);
      const next = repriceRecord(catalog, r);
      diff.add(r, next);
      return opts.dryRun ? undefined : next;
    }, range);
  } finally {
    progress.update(scanned);
    progress.stop();
  }
  if (opts.dryRun || !store.repriceLog || result.updated === 0) return { result, diff, logId: null };
  const logId = await store.repriceLog().insert({
    at: Date.now(),
    reason: opts.reason,
    rangeFrom: range.from,
    rangeTo: range.to,
    scanned: result.scanned,
    changed: result.updated,
    costBefore: formatUsd(diff.changedBefore),
    costAfter: formatUsd(diff.changedAfter),
    versions: Object.fromEntries(diff.versions),
  });
  return { result, diff, logId };
}

/** Old and new cost totals by model, for `usage reprice --dry-run`; unknown costs are counted apart, never as $0. */
export class RepriceDiff {
  private readonly byModel = new Map<string, { records: number; changed: number; old: Side; next: Side }>();
  changed = 0;
  /** The known cost of the changed records, before and after. */
  changedBefore = 0n;
  changedAfter = 0n;
  /** "old -> new" price versions of the changed records, counted. */
  readonly versions = new Map<string, number>();

  add(r: UsageRecord, next: Repricing | undefined): void {
    const model = r.servedModel ?? r.model ?? '(none)';
    let m = this.byModel.get(model);
    if (!m) this.byModel.set(model, (m = { records: 0, changed: 0, old: new Side(), next: new Side() }));
    m.records++;
    m.old.add(r.costPico, r.provenance);
    const after = next ?? r;
    m.next.add(after.costPico, after.provenance);
    if (next && repricingChanges(r, next)) {
      m.changed++;
      this.changed++;
      this.changedBefore += r.costPico ?? 0n;
      this.changedAfter += next.costPico ?? 0n;
      const move = `${r.priceVersion ?? 'none'} -> ${next.priceVersion ?? 'none'}`;
      this.versions.set(move, (this.versions.get(move) ?? 0) + 1);
    }
  }

  rows(): (string | number)[][] {
    return [...this.byModel]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([model, m]) => [model, m.records, m.changed, m.old.cell(), m.next.cell()]);
  }
}

/** One side of the diff: the known costs summed, and how many records have none (unpriced). */
class Side {
  private pico = 0n;
  private unknown = 0;
  private counted = 0;

  add(cost: bigint | null, provenance: string): void {
    if (provenance === 'not_counted') return;
    this.counted++;
    if (cost === null) this.unknown++;
    else this.pico += cost;
  }

  cell(): string {
    if (this.counted === 0) return 'not counted';
    if (this.unknown === this.counted) return 'unknown';
    return `${this.unknown > 0 ? '>=' : ''}$${formatUsd(this.pico)}${this.unknown > 0 ? ` (${this.unknown} unpriced)` : ''}`;
  }
}
