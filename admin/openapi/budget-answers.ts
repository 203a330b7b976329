/** The runtime budget answers and request of the admin API (POST/PATCH/DELETE /api/budgets), as zod schemas. */
import { z } from 'zod';
import { named, time, usd } from './schema-parts';

const budgetFields = {
  period: z.enum(['day', 'month']),
  usd: usd('The limit for the period in USD, e.g. "25" or "12.5".'),
  tag: z.record(z.string(), z.string()).optional().meta({ description: 'Only requests with these tag values count.' }),
  per_tag: z.string().optional().meta({ description: 'A budget of this size for every value of this tag.' }),
  key: z.string().optional().meta({ description: 'Only requests made with this gateway key (its id) count.' }),
  per_key: z.boolean().optional().meta({ description: 'A budget of this size for every gateway key.' }),
  overrides: z
    .record(z.string(), z.string())
    .optional()
    .meta({ description: 'With per_tag or per_key: other limits (USD) for some tag values or key ids.' }),
  alert_at: z.array(z.number().gt(0).max(1)).meta({ description: 'Alert thresholds, shares of the limit.' }),
  on_exceed: z.enum(['warn', 'block', 'clamp']).meta({
    description:
      'block: a request that does not fit is refused (429 budget_exceeded); warn: never refuses, only alerts; clamp: its output-token limit is lowered to what the budget has left (x-gateway-budget-clamped), when that covers its input and min_output_tokens.',
  }),
  min_output_tokens: z.number().int().positive().optional().meta({
    description: 'With on_exceed clamp: the fewest output tokens a clamped request may be left with (default 256).',
  }),
};

export const RuntimeBudgetJson = named(
  'RuntimeBudget',
  z
    .object({
      id: z
        .string()
        .meta({ description: 'bud_...; budgets from gateway.config.yaml have ids yaml:... and are read-only.' }),
      workspace: z.string(),
      source: z.literal('runtime'),
      ...budgetFields,
      created_at: time('When it was created.'),
      updated_at: time('When it was last changed.'),
    })
    .meta({ description: 'A budget managed through the admin API, applied by every instance sharing the store.' }),
);

export const RuntimeBudgetRequest = named(
  'RuntimeBudgetRequest',
  z
    .object({
      workspace: z
        .string()
        .optional()
        .meta({ description: 'The first workspace when absent; a PATCH cannot change it.' }),
      ...budgetFields,
      period: budgetFields.period.optional(),
      usd: budgetFields.usd.optional(),
      alert_at: budgetFields.alert_at.optional(),
      on_exceed: budgetFields.on_exceed.optional(),
    })
    .meta({
      description:
        'POST: period and usd are required; give at most one of tag, per_tag, key and per_key. PATCH: the fields to change.',
    }),
);

export const DeletedBudgetAnswer = named('DeletedBudget', z.object({ id: z.string(), deleted: z.literal(true) }));

/** How GET /api/budgets names each budget: its id in the admin API and where it comes from. */
export const budgetOrigin = {
  id: z.string().meta({ description: 'yaml:<workspace>:<index> for a budget of the YAML, bud_... for a runtime one.' }),
  source: z.enum(['yaml', 'runtime']).meta({ description: 'yaml budgets are read-only; runtime ones can be changed.' }),
};
