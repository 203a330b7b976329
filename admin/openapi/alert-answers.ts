/** The alert answers of the admin API (GET /api/alerts, POST /api/alerts/test, forecasts), as zod schemas. */
import { z } from 'zod';
import type { Alert } from '../../alerts/alert';
import { named, nextCursor, time, usd } from './schema-parts';

export const ForecastJson = named(
  'BudgetForecast',
  z
    .object({
      projected_usd: usd('Spend projected at the end of the period, at the burn rate of the trailing window.'),
      limit_reached_at: time('When spend reaches the limit at that rate; null when not within the period.').nullable(),
      window_ms: z.number().int().nonnegative().meta({ description: 'The span the burn rate was measured over.' }),
    })
    .meta({ description: 'End-of-period forecast (alerts.forecast); null until the budget was watched long enough.' }),
);

export const AlertJson = named(
  'Alert',
  z
    .object({
      alert_id: z.string().meta({ description: 'Stable: the same condition in the same period has the same id.' }),
      kind: z.string().meta({ description: "budget.threshold, budget.forecast, test, or another detector's kind." }),
      created_at: time('When it was raised.'),
      workspace: z.string().nullable(),
      scope: z.string(),
      title: z.string(),
      summary: z.string(),
      budget: z
        .object({
          scope: z.string(),
          period: z.enum(['day', 'month']),
          period_start: time('Start of the period.'),
          period_end: time('End of the period.'),
          limit_usd: usd('The limit.'),
          action: z.enum(['block', 'alert', 'clamp']),
        })
        .nullable(),
      spend_usd: usd('Spent in the period when raised.').nullable(),
      threshold: z.number().nullable().meta({ description: 'The alert_at share that fired.' }),
      rule: z.string().nullable(),
      forecast: ForecastJson.nullable(),
      dashboard_url: z.string().nullable(),
      fields: z.record(z.string(), z.string()),
    })
    .meta({ description: 'An alert as its channels receive it (a webhook gets exactly this JSON).' }),
);

export const AlertsAnswer = named(
  'AlertsAnswer',
  z.object({
    data: z.array(
      z.object({
        alert_id: z.string(),
        channel: z.string(),
        kind: z.string(),
        workspace: z.string().nullable(),
        created_at: time('When it was raised.'),
        state: z.enum(['pending', 'sent']),
        attempts: z.number().int().nonnegative(),
        sent_at: time('When its channel took it.').nullable(),
        next_attempt_at: time('When it is tried again; null once sent.').nullable(),
        last_error: z
          .string()
          .nullable()
          .meta({ description: 'The last failed attempt: an HTTP status or error code.' }),
        alert: AlertJson,
      }),
    ),
    next_cursor: nextCursor,
  }),
);

export const AlertTestRequest = named(
  'AlertTestRequest',
  z.object({ channel: z.string().meta({ description: 'The name of a channel in alerts.channels.' }) }),
);

export const AlertTestAnswer = named(
  'AlertTestAnswer',
  z.object({
    channel: z.string(),
    delivered: z.boolean().meta({ description: 'Whether the channel answered 2xx.' }),
    status: z.number().int().nullable().meta({ description: 'The HTTP status it answered; null when none came.' }),
    error: z.string().nullable(),
    alert: AlertJson,
  }),
);

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShape: Same<z.output<typeof AlertJson>, Alert> = true;
void sameShape;
