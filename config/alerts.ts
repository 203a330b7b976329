import { z } from 'zod';
import { anomalyRuleSchema } from './anomalies';
import { fromText } from './from-text';

const ms = (min: number) => fromText(z.number().int().min(min));
const httpUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });
const channelName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]*$/, 'channel names are lower-case letters, digits, _ and -')
  .max(64);

/** A generic webhook: the alert as JSON, signed with HMAC-SHA256 over the body (docs/alerts.md#webhook). */
const webhookChannel = z.strictObject({
  name: channelName,
  type: z.literal('webhook'),
  url: httpUrl,
  /** The HMAC key the receiver shares; at least 16 characters. */
  secret: z
    .string({ error: 'a webhook needs a secret: the HMAC-SHA256 key the receiver checks, at least 16 characters' })
    .min(16, 'a webhook secret of at least 16 characters (the HMAC-SHA256 key the receiver checks)'),
});

/** A Slack incoming webhook (https://hooks.slack.com/services/...): a text plus blocks message. */
const slackChannel = z.strictObject({
  name: channelName,
  type: z.literal('slack'),
  url: httpUrl,
});

const channel = z.discriminatedUnion('type', [webhookChannel, slackChannel], {
  error: (issue) =>
    issue.code === 'invalid_union'
      ? 'a channel needs type: webhook (with url and secret) or type: slack (with url)'
      : undefined,
});

export const alertsSchema = z
  .strictObject({
    /** Where alerts go; every alert goes to every channel. None: alerts are kept in the store and listed, not sent. */
    channels: z.array(channel).default([]),
    /** The dashboard's address as people reach it (e.g. https://tollgate.example.com:8081/); alerts link to it. */
    dashboard_url: httpUrl.optional(),
    /** How often budgets are looked at for thresholds and forecasts (off the request path). */
    evaluate_every_ms: ms(100).default(15_000),
    /** Forecasts: end-of-period spend projected from the burn rate over this trailing window. */
    forecast: z
      .strictObject({
        window_ms: ms(1000).default(3_600_000),
        /** No forecast until the period has run this long: a burn measured over a few seconds says little. */
        min_elapsed_ms: ms(0).default(600_000),
      })
      .prefault({}),
    /** Spend-anomaly rules (docs/alerts.md#spend-anomalies): each fires once per episode, and may freeze the scope. */
    anomalies: z.array(anomalyRuleSchema).default([]),
    delivery: z
      .strictObject({
        /** One attempt's time limit. */
        timeout_ms: ms(100).default(10_000),
        /** The first retry's delay; it doubles on every failure up to max_backoff_ms (Retry-After wins when longer). */
        backoff_ms: ms(10).default(1000),
        max_backoff_ms: ms(10).default(300_000),
        /** How often each channel's queue is looked at when nothing is due. */
        poll_ms: ms(10).default(1000),
      })
      .prefault({}),
  })
  .superRefine((a, ctx) => {
    const seen = new Set<string>();
    a.channels.forEach((c, i) => {
      if (seen.has(c.name))
        ctx.addIssue({
          code: 'custom',
          path: ['channels', i, 'name'],
          message: `channel name ${c.name} is used twice`,
        });
      seen.add(c.name);
    });
    const rules = new Set<string>();
    a.anomalies.forEach((r, i) => {
      if (rules.has(r.name))
        ctx.addIssue({ code: 'custom', path: ['anomalies', i, 'name'], message: `rule name ${r.name} is used twice` });
      rules.add(r.name);
    });
  });

export type AlertsConfig = z.output<typeof alertsSchema>;
export type AlertChannelConfig = AlertsConfig['channels'][number];
