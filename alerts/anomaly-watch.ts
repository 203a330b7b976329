/**
 * The spend-anomaly rules at work: each completed request's cost is added to the counters of every rule's scope it
 * falls in (alerts/spend-velocity.ts); a timer, off the request path, looks at them and raises one spend.anomaly
 * alert per episode, and for a rule with action: freeze stores a freeze of that scope (services/spend-freezes.ts).
 * The alert and the freeze are named by the rule, the scope and the window the episode began in, so instances that
 * see the same episode raise one alert and store one freeze.
 */
import type { Logger } from 'pino';
import type { AnomalyRule } from '../config/anomalies';
import type { UsageStoreService } from '../contracts/services';
import { UNTAGGED } from '../records/dimensions';
import { formatUsd } from '../pricing/money';
import { floorHour, HOUR_MS } from '../storage/rollup';
import { keyScope, tagScope, WORKSPACE_SCOPE, type SpendFreezes } from '../services/spend-freezes';
import type { SpendFreezeRow } from '../storage/spend-freeze-table';
import { alertIdOf, type AlertInput } from './alert';
import { usdText } from './alert-text';
import { SpendVelocity, type Episode } from './spend-velocity';

/** What a completed request adds: its workspace, key, tags and cost. */
export interface SpendSample {
  workspace: string;
  keyId: string | undefined;
  tags: Readonly<Record<string, string>>;
  usd: number;
}

interface Watched {
  rule: AnomalyRule;
  velocity: SpendVelocity;
}

const SEP = '\u0000';
const minutes = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`);

export class AnomalyWatch {
  private readonly watched: Watched[];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private lastWarning = 0;
  private stopped = false;
  /** Episodes started per rule since start (for Prometheus). */
  readonly fired = new Map<string, number>();

  constructor(
    rules: readonly AnomalyRule[],
    private readonly raise: (alerts: readonly AlertInput[]) => Promise<void>,
    private readonly freezes: SpendFreezes | undefined,
    private readonly everyMs: number,
    private readonly log: Logger,
  ) {
    this.watched = rules.map((rule) => ({
      rule,
      velocity: new SpendVelocity({
        windowMs: rule.window_ms,
        baselineMs: rule.baseline_ms,
        factor: rule.factor,
        minUsd: Number(rule.min_usd),
      }),
    }));
    for (const { rule } of this.watched) this.fired.set(rule.name, 0);
  }

  get active(): boolean {
    return this.watched.length > 0;
  }

  /** On the request path, after the answer: map updates only. */
  observe(s: SpendSample): void {
    if (!(s.usd > 0)) return;
    for (const { rule, velocity } of this.watched) {
      const scope = scopeOf(rule, s);
      if (scope !== undefined) velocity.add(`${s.workspace}${SEP}${scope}`, s.usd);
    }
  }

  /**
   * Seeds the baselines from the hourly rollups (whole hours only: never the raw records), then looks at the
   * counters on a timer. Without history (a read that fails) each rule waits one window before it may fire.
   */
  start(history?: Pick<UsageStoreService, 'queryUsage'>): void {
    if (!this.active) return;
    const seeded = history ? this.seed(history, Date.now()).catch((err) => this.warn(err)) : Promise.resolve();
    void seeded.then(() => {
      if (!this.stopped) this.tickEvery();
    });
  }

  async seed(history: Pick<UsageStoreService, 'queryUsage'>, now: number): Promise<void> {
    for (const { rule, velocity } of this.watched) {
      const to = floorHour(now);
      const from = to - Math.ceil(rule.baseline_ms / HOUR_MS) * HOUR_MS;
      const dim = rule.scope === 'workspace' ? [] : [rule.scope === 'key' ? 'key_id' : `tag:${rule.tag}`];
      const rows = await history.queryUsage({ from, to, groupBy: ['workspace', ...dim] });
      const perWindow = new Map<string, number>();
      for (const row of rows) {
        const workspace = row.group.workspace;
        const value = dim.length === 0 ? WORKSPACE_SCOPE : row.group[dim[0]];
        if (workspace === null || value === null || value === UNTAGGED) continue;
        const scope =
          rule.scope === 'workspace' ? value : rule.scope === 'key' ? keyScope(value) : tagScope(rule.tag!, value);
        perWindow.set(`${workspace}${SEP}${scope}`, ((Number(row.costPico) / 1e12) * rule.window_ms) / (to - from));
      }
      velocity.seed(perWindow);
    }
  }

  private tickEvery(): void {
    const every = Math.min(this.everyMs, ...this.watched.map((w) => w.velocity.bucketMs));
    this.timer = setInterval(() => {
      this.running ??= this.tick(Date.now())
        .catch((err) => this.warn(err))
        .finally(() => (this.running = undefined));
    }, every);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  /** One look at every rule's counters. */
  async tick(now: number): Promise<void> {
    const alerts: AlertInput[] = [];
    for (const { rule, velocity } of this.watched) {
      for (const episode of velocity.tick(now).started) {
        this.fired.set(rule.name, (this.fired.get(rule.name) ?? 0) + 1);
        const [workspace, scope] = episode.scope.split(SEP);
        const key = `${rule.name}:${episode.scope}:${Math.floor(episode.startedAt / rule.window_ms)}`;
        let freeze: SpendFreezeRow | undefined;
        if (rule.action === 'freeze' && this.freezes) {
          freeze = freezeOf(rule, workspace, scope, episode, key);
          await this.freezes.freeze(freeze);
        }
        alerts.push(anomalyAlert(rule, workspace, scope, episode, key, freeze));
      }
    }
    if (alerts.length > 0) await this.raise(alerts);
  }

  private warn(err: unknown): void {
    if (Date.now() - this.lastWarning < 60_000) return;
    this.lastWarning = Date.now();
    this.log.warn({ err }, 'spend anomalies: a look at the counters failed, trying again at the next one');
  }
}

function scopeOf(rule: AnomalyRule, s: SpendSample): string | undefined {
  if (rule.scope === 'workspace') return WORKSPACE_SCOPE;
  if (rule.scope === 'key') return s.keyId === undefined ? undefined : keyScope(s.keyId);
  const value = s.tags[rule.tag!];
  return value === undefined ? undefined : tagScope(rule.tag!, value);
}

const picoOf = (usd: number) => BigInt(Math.round(usd * 1e6)) * 1_000_000n;

function freezeOf(rule: AnomalyRule, workspace: string, scope: string, e: Episode, key: string): SpendFreezeRow {
  return {
    id: `frz_${alertIdOf('spend.freeze', key).slice(0, 16)}`,
    workspace,
    scope,
    reason: `rule ${rule.name}: ${usdText(picoOf(e.recentUsd))} in ${minutes(rule.window_ms)}, ${usdText(picoOf(e.expectedUsd))} expected`,
    createdAt: e.startedAt,
    expiresAt: rule.freeze_ms === 0 ? null : e.startedAt + rule.freeze_ms,
    liftedAt: null,
  };
}

function anomalyAlert(
  rule: AnomalyRule,
  workspace: string,
  scope: string,
  e: Episode,
  key: string,
  freeze: SpendFreezeRow | undefined,
): AlertInput {
  const spent = usdText(picoOf(e.recentUsd));
  const expected = usdText(picoOf(e.expectedUsd));
  const until =
    freeze === undefined
      ? ''
      : ` Its requests are refused with 429 spend_anomaly_frozen ${freeze.expiresAt === null ? 'until lifted' : `until ${new Date(freeze.expiresAt).toISOString()} unless lifted first`}: tollgate freezes lift ${freeze.id}.`;
  return {
    kind: 'spend.anomaly',
    key,
    workspace,
    scope,
    title: `Spend anomaly: ${scope === WORKSPACE_SCOPE ? `workspace ${workspace}` : scope} spent ${spent} in ${minutes(rule.window_ms)}`,
    summary: `${scope === WORKSPACE_SCOPE ? 'The workspace' : `${scope} in workspace ${workspace}`} spent ${spent} in the last ${minutes(rule.window_ms)}, where its baseline expects ${expected} (rule ${rule.name}: at least ${rule.factor}x and $${rule.min_usd}).${until}`,
    spend_usd: formatUsd(picoOf(e.recentUsd)),
    rule: rule.name,
    fields: {
      window: minutes(rule.window_ms),
      expected_usd: formatUsd(picoOf(e.expectedUsd)),
      action: rule.action,
      ...(freeze && { freeze_id: freeze.id }),
    },
    view: '#/usage',
  };
}
