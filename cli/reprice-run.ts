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

/** The diff's columns, in RepriceDiff.rows() order: the effective cost and the list cost of each side. */
export const REPRICE_DIFF_HEADERS = ['model', 'records', 'changed', 'old cost', 'old list', 'new cost', 'new list'];

/**
 * Old and new cost totals by model, for `usage reprice --dry-run`, each at the effective price and at the list price
 * (before a negotiated discount); unknown costs are counted apart, never as $0.
 */
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
    m.old.add(r);
    m.next.add(next ? { ...r, ...next } : r);
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
      .map(([model, m]) => [model, m.records, m.changed, ...m.old.cells(), ...m.next.cells()]);
  }
}

const unpriced = (n: number): string => (n > 0 ? ` (${n} unpriced)` : '');

/**
 * One side of the diff: the known costs summed, and how many records have none (unpriced); the list costs summed,
 * and how many priced records have none (written before records kept it).
 */
class Side {
  private pico = 0n;
  private listPico = 0n;
  private unknown = 0;
  private unlisted = 0;
  private counted = 0;

  add(r: Pick<UsageRecord, 'costPico' | 'listCostPico' | 'provenance'>): void {
    if (r.provenance === 'not_counted') return;
    this.counted++;
    if (r.costPico === null) this.unknown++;
    else this.pico += r.costPico;
    if (r.costPico !== null && r.listCostPico == null) this.unlisted++;
    else this.listPico += r.listCostPico ?? 0n;
  }

  /** The effective cost's cell, then the list cost's. */
  cells(): [string, string] {
    if (this.counted === 0) return ['not counted', 'not counted'];
    if (this.unknown === this.counted) return ['unknown', 'unknown'];
    const cost = `${this.unknown > 0 ? '>=' : ''}$${formatUsd(this.pico)}`;
    if (this.unlisted === this.counted - this.unknown) return [cost + unpriced(this.unknown), 'unknown'];
    const list = `${this.unknown + this.unlisted > 0 ? '>=' : ''}$${formatUsd(this.listPico)}`;
    return [cost + unpriced(this.unknown), this.unlisted > 0 ? `${list} (${this.unlisted} without)` : list];
  }
}
