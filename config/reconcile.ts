/**
 * `reconcile`: checking the recorded spend against the providers' bills (docs/reconciliation.md). The admin keys
 * are given as ${ENV} references and used only for the providers' usage and cost reports.
 */
import { z } from 'zod';
import { fromText } from './from-text';

const share = z
  .string()
  .regex(/^(0(\.\d{1,6})?|1(\.0{1,6})?)$/, 'a share between 0 and 1 as a decimal string with at most 6 decimals');

const reconcileProvider = z.strictObject({
  /** The organization admin key (OpenAI sk-admin-..., Anthropic sk-ant-admin...), as ${ENV}. */
  admin_key: z.string().optional(),
  /** The admin API's base URL (default: the provider's own). */
  base_url: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }).optional(),
  /** Provider project, workspace or API key id -> gateway workspace, to match per workspace. */
  scopes: z.record(z.string(), z.string()).default({}),
});

const schedule = z
  .strictObject({
    /** Reconcile each provider of `providers` with an admin key once a day, in the running gateway. */
    enabled: z.boolean().default(true),
    /** The UTC time of day from which the day's run is due (HH:MM). */
    at: z
      .string()
      .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'a UTC time of day, HH:MM')
      .default('02:00'),
    /** Days before today each run reads again (providers restate recent days). */
    window_days: fromText(z.number().int().min(1).max(90)).default(7),
    /** How often an instance checks whether a run is due, and waits before trying a failed run again. */
    check_ms: fromText(z.number().int().min(1000)).default(300_000),
    retry_ms: fromText(z.number().int().min(1000)).default(3_600_000),
  })
  .prefault({});

export const reconcileSchema = z
  .strictObject({
    /** Share of the provider's cost two figures may differ by and still agree. */
    tolerance: share.default('0.005'),
    /** Days back from today the provider may still restate: their differences are "not_final". */
    restate_days: fromText(z.number().int().min(0).max(90)).default(7),
    /** A day whose drift passes this share raises a reconciliation.drift alert (and shows in the gauge). */
    drift_alert: share.default('0.05'),
    /** Per gateway provider slug: openai and anthropic read their admin APIs; others reconcile from a CSV export. */
    providers: z.record(z.string(), reconcileProvider).default({}),
    /** The daily run in the gateway (reconcile/schedule.ts). */
    schedule,
  })
  .prefault({});

export type ReconcileConfig = z.infer<typeof reconcileSchema>;
