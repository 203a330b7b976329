import { z } from 'zod';
import { fromText } from './from-text';

const tagKey = z.string().regex(/^[a-z0-9_][a-z0-9_.]*$/, 'tag keys are lower-case letters, digits, _ and .');
const usd = z
  .union([z.string(), z.number()])
  .transform((v) => String(v))
  .pipe(z.string().regex(/^\d+(\.\d{1,12})?$/, 'a non-negative USD amount such as "5" or "12.5"'));

/**
 * A spend-anomaly rule (docs/alerts.md#spend-anomalies): the spend of each workspace, gateway key or tag value over
 * the last window_ms, against what the same scope spent per window over its trailing baseline. The defaults are the
 * ones tuned on the demo traffic (the docs say how).
 */
export const anomalyRuleSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]*$/, 'rule names are lower-case letters, digits, _ and -')
      .max(64),
    /** What is watched: each workspace, each gateway key, or each value of `tag`. */
    scope: z.enum(['workspace', 'key', 'tag']),
    /** The tag whose values are watched (scope: tag), e.g. agent or customer_id. */
    tag: tagKey.optional(),
    /** The recent spend: over this trailing window. */
    window_ms: fromText(z.number().int().min(1000)).default(600_000),
    /** The baseline: the scope's average spend per window over about this long before the recent window. */
    baseline_ms: fromText(z.number().int().min(1000)).default(14_400_000),
    /** Fires when the recent spend is at least this many times the baseline's... */
    factor: fromText(z.number().min(1)).default(5),
    /** ...and at least this many dollars, so that tiny scopes never page. */
    min_usd: usd.default('5'),
    /** alert: only an alert; freeze: the alert, and the key or tag value is refused (429 spend_anomaly_frozen). */
    action: z.enum(['alert', 'freeze']).default('alert'),
    /** How long a freeze lasts unless lifted first; 0: until lifted. */
    freeze_ms: fromText(z.number().int().min(0)).default(3_600_000),
  })
  .superRefine((r, ctx) => {
    if (r.scope === 'tag' && r.tag === undefined)
      ctx.addIssue({ code: 'custom', path: ['tag'], message: 'scope: tag needs the tag whose values are watched' });
    if (r.scope !== 'tag' && r.tag !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['tag'],
        message: `tag is only for scope: tag (this rule is scope: ${r.scope})`,
      });
    if (r.baseline_ms < r.window_ms)
      ctx.addIssue({ code: 'custom', path: ['baseline_ms'], message: 'baseline_ms must be at least window_ms' });
  });

export type AnomalyRule = z.output<typeof anomalyRuleSchema>;
