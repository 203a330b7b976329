/**
 * Spend velocity per scope, for one anomaly rule: counters only, never records. The request path adds a request's
 * cost to a pending sum per scope (one map update); `tick`, on a timer off the request path, moves the pending sums
 * into time buckets and compares each scope's recent window with its baseline.
 *
 * Each scope keeps BUCKETS buckets covering the recent window and one number for the baseline: a bucket leaving the
 * window is folded into an exponentially weighted average of the spend per bucket (time constant baseline_ms), so
 * memory per scope is fixed whatever the baseline's length. The average is corrected for its start (it counts only
 * the buckets watched since start). At start the baselines are seeded from the hourly rollups (`seed`); when they
 * could not be read, no scope fires before one whole window was folded into the baselines.
 */

/** Buckets per window: the recent spend is the last BUCKETS - 1 whole buckets plus the current one. */
const BUCKETS = 5;
/** Scopes watched per rule at once; past it new scopes wait until idle ones are dropped. */
export const MAX_SCOPES = 10_000;

export interface VelocityRule {
  windowMs: number;
  baselineMs: number;
  factor: number;
  minUsd: number;
}

/** A scope whose recent spend crossed the rule: an episode, from its start until the spend is back for a window. */
export interface Episode {
  scope: string;
  startedAt: number;
  /** Spent over the recent window when it started, USD. */
  recentUsd: number;
  /** What the baseline expects over a window, USD. */
  expectedUsd: number;
}

interface ScopeState {
  buckets: Float64Array;
  /** EWMA of the spend per bucket of the buckets folded so far (not yet corrected for the start). */
  baseline: number;
}

export class SpendVelocity {
  readonly bucketMs: number;
  private readonly alpha: number;
  private readonly scopes = new Map<string, ScopeState>();
  private readonly pending = new Map<string, number>();
  /** Open episodes by scope, with the last time the rule held. */
  private readonly open = new Map<string, { episode: Episode; lastHeld: number }>();
  private current: number | undefined;
  private first: number | undefined;
  private folded = 0;
  /** Spend left out because MAX_SCOPES were watched (for the log). */
  dropped = 0;

  constructor(readonly rule: VelocityRule) {
    this.bucketMs = Math.max(1, Math.floor(rule.windowMs / BUCKETS));
    this.alpha = Math.min(1, this.bucketMs / rule.baselineMs);
  }

  /** On the request path: one map update. */
  add(scope: string, usd: number): void {
    if (!(usd > 0)) return;
    const sum = this.pending.get(scope);
    if (sum !== undefined) this.pending.set(scope, sum + usd);
    else if (this.pending.size < MAX_SCOPES) this.pending.set(scope, usd);
    else this.dropped++;
  }

  /**
   * Baselines from history: each scope's average spend per window over the span read (scopes absent spent nothing),
   * as if watched for three baseline time constants.
   */
  seed(perWindowUsd: ReadonlyMap<string, number>): void {
    this.folded = Math.max(this.folded, Math.ceil(3 / this.alpha));
    const weight = 1 - (1 - this.alpha) ** this.folded;
    for (const [scope, usd] of perWindowUsd) {
      if (!this.scopes.has(scope) && this.scopes.size >= MAX_SCOPES) break;
      const state = this.scopes.get(scope) ?? { buckets: new Float64Array(BUCKETS), baseline: 0 };
      state.baseline = (usd / BUCKETS) * weight;
      this.scopes.set(scope, state);
    }
  }

  /** Advances to `now` and returns the episodes that started, and the scopes whose episode ended. */
  tick(now: number): { started: Episode[]; ended: string[] } {
    this.advance(Math.floor(now / this.bucketMs));
    this.drain();
    const started: Episode[] = [];
    const ended: string[] = [];
    const weight = 1 - (1 - this.alpha) ** this.folded;
    const warm = this.folded >= BUCKETS;
    for (const [scope, state] of this.scopes) {
      let recent = 0;
      for (const b of state.buckets) recent += b;
      const expected = weight > 0 ? (state.baseline / weight) * BUCKETS : 0;
      const holds = warm && recent >= this.rule.minUsd && recent >= this.rule.factor * expected;
      const open = this.open.get(scope);
      if (holds && open) open.lastHeld = now;
      else if (holds) {
        const episode = { scope, startedAt: now, recentUsd: recent, expectedUsd: expected };
        this.open.set(scope, { episode, lastHeld: now });
        started.push(episode);
      } else if (open && now - open.lastHeld >= this.rule.windowMs) {
        this.open.delete(scope);
        ended.push(scope);
      }
      if (recent === 0 && !open && expected < this.rule.minUsd / 1000) this.scopes.delete(scope);
    }
    return { started, ended };
  }

  /** Each bucket leaving the window is folded into its scope's baseline. */
  private advance(index: number): void {
    const from = this.current ?? index;
    this.first ??= index;
    this.current = index;
    const steps = index - from;
    if (steps <= 0) return;
    // The buckets before the first look were never watched: folding them counts for nothing.
    this.folded += Math.min(steps, Math.max(0, index - BUCKETS + 1 - this.first));
    const emptySteps = Math.max(0, steps - BUCKETS);
    for (const state of this.scopes.values()) {
      for (let s = 1; s <= Math.min(steps, BUCKETS); s++) {
        const at = (from + s) % BUCKETS;
        state.baseline += this.alpha * (state.buckets[at] - state.baseline);
        state.buckets[at] = 0;
      }
      if (emptySteps > 0) state.baseline *= (1 - this.alpha) ** emptySteps;
    }
  }

  private drain(): void {
    const at = this.current! % BUCKETS;
    for (const [scope, usd] of this.pending) {
      let state = this.scopes.get(scope);
      if (!state) {
        if (this.scopes.size >= MAX_SCOPES) {
          this.dropped++;
          continue;
        }
        state = { buckets: new Float64Array(BUCKETS), baseline: 0 };
        this.scopes.set(scope, state);
      }
      state.buckets[at] += usd;
    }
    this.pending.clear();
  }
}
