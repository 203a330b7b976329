/** The answer of GET /api/reconciliation (admin/reads/reconciliation-page.ts), as zod schemas. */
import { z } from 'zod';
import type { ReconciliationLine, ReconciliationReport } from '../../reconcile/report';
import type { runJson } from '../reads/reconciliation-page';
import { count, named, nextCursor, time, usd } from './schema-parts';

const STATUSES = [
  'match',
  'within_tolerance',
  'discounted',
  'priced_differently',
  'not_seen_by_gateway',
  'unpriced',
  'drift',
  'provider_only',
  'gateway_only',
  'not_final',
] as const;

const signedUsd = (description: string) =>
  z
    .string()
    .regex(/^-?[0-9]+(\.[0-9]+)?$/)
    .meta({ description });
const share = (description: string) =>
  z
    .string()
    .regex(/^[0-9]+\.[0-9]+$/)
    .meta({ description });
const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);
const billTokens = z.object({
  input: count('Input tokens, uncached.'),
  cacheRead: count('Cache reads.'),
  cacheWrite: count('Cache writes.'),
  output: count('Output tokens.'),
});

const GenerationTokensJson = z.object({
  prompt: count('Prompt tokens, cached reads and cache writes included.'),
  completion: count('Completion tokens, reasoning included.'),
  cached: z.number().int().nonnegative().nullable().meta({ description: 'Cached reads; null when not given.' }),
});

export const ReconciliationRunJson = named(
  'ReconciliationRun',
  z.object({
    id: z.number().int().positive(),
    provider: z.string(),
    from: time('First day of the range (UTC midnight).'),
    to: time('End of the range, excluded.'),
    started_at: time('When the run started.'),
    finished_at: time('When it finished.'),
    source: z.string().meta({ description: 'api, or csv:<file name> for a console export.' }),
    status: z.enum(['ok', 'failed']),
    error: z.string().nullable().meta({ description: 'Why a failed run failed (endpoint and status); null when ok.' }),
    drift: share('|provider - gateway| / provider over the final days; null when failed or none was final.').nullable(),
    pages: z.record(z.string(), z.number().int().nonnegative()).meta({ description: 'Pages read per endpoint.' }),
  }),
);

const ReconciliationLineJson = named(
  'ReconciliationLine',
  z.object({
    day,
    model: z.string().nullable(),
    scope: z
      .string()
      .nullable()
      .meta({ description: 'The gateway workspace the provider scope maps to; null unmapped.' }),
    status: z.enum(STATUSES).meta({ description: 'Where a difference comes from (docs/reconciliation.md).' }),
    gateway: z
      .object({
        requests: count('Records.'),
        tokens: billTokens,
        cost_usd: usd('Recorded cost of the priced records (list price, or the pricing.discounts price where set).'),
        list_cost_usd: usd(
          'The same records at the list price, before pricing.discounts; cost_usd where none is set. Absent from older reports.',
        ).optional(),
        unpriced: count('Records with no price.'),
        estimated: count('Records with an estimated cost.'),
      })
      .nullable(),
    provider: z
      .object({
        requests: z.number().int().nonnegative().nullable(),
        tokens: billTokens.nullable(),
        cost_usd: usd('What the provider charged.').nullable(),
      })
      .nullable(),
    expected_usd: usd('The gateway cost times the inferred discount, when there is one.').nullable(),
    difference_usd: signedUsd('Provider minus gateway (expected when discounted).').nullable(),
    ratio: share('Provider cost / gateway cost.').nullable(),
    note: z.string().meta({ description: 'What the status means for this line.' }),
  }),
);

const GenerationCheckJson = named(
  'GenerationCheck',
  z.object({
    checked: count('Records with a generation id, each looked up.'),
    matched: count(
      'Those whose cost equals the provider’s to the pico-dollar and whose tokens equal its native counts.',
    ),
    differing: count('Those the provider charged differently.'),
    tokens_differing: count('Those whose tokens differ from the generation’s native counts.'),
    missing: count('Those the provider does not know (404).'),
    without_id: count('Records of the range without a generation id.'),
    lines: z
      .array(
        z.object({
          record_id: z.string(),
          generation_id: z.string(),
          day,
          model: z.string().nullable(),
          gateway_usd: usd('The record’s cost; null when unpriced.').nullable(),
          provider_usd: usd('The generation’s total_cost; null when the provider does not know it.').nullable(),
          status: z.enum(['cost_differs', 'tokens_differ', 'cost_and_tokens_differ', 'missing']),
          gateway_tokens: GenerationTokensJson.meta({
            description: 'The record’s tokens as the provider counts them.',
          }),
          provider_tokens: GenerationTokensJson.nullable().meta({
            description: 'The generation’s native_tokens_prompt, native_tokens_completion and native_tokens_cached.',
          }),
        }),
      )
      .meta({ description: 'The records not matched, at most 100.' }),
  }),
);

export const ReconciliationAnswer = named(
  'ReconciliationAnswer',
  z.object({
    runs: z.array(ReconciliationRunJson).meta({ description: 'A page of the stored runs, newest first.' }),
    next_cursor: nextCursor,
    report: z
      .object({
        run_id: z.number().int().positive(),
        provider: z.string(),
        from: day,
        to: day,
        tolerance: share('Share within which costs count as agreeing.'),
        discount: z
          .object({
            multiplier: share('The steady fraction of list price the provider charges.'),
            models: z.array(z.string()),
            override: z.string().meta({ description: 'The pricing.discounts setting that prices at it (YAML).' }),
          })
          .nullable(),
        totals: z.object({
          gateway_usd: usd('Recorded cost (list price, or the pricing.discounts price where set).'),
          gateway_list_usd: usd(
            'The same records at the list price, before pricing.discounts; gateway_usd where none is set. Absent from older reports.',
          ).optional(),
          provider_usd: usd('What the provider billed.'),
          difference_usd: signedUsd('Provider minus gateway.'),
          drift: share('Drift over the final days.').nullable(),
        }),
        worst_day: z.object({ day, drift: share('That day’s drift.') }).nullable(),
        counts: z.partialRecord(z.enum(STATUSES), z.number().int().nonnegative()),
        lines: z.array(ReconciliationLineJson).meta({ description: 'A page of the report’s lines.' }),
        generations: GenerationCheckJson.optional().meta({
          description:
            'OpenRouter: each record set beside its generation’s cost (GET /api/v1/generation); absent otherwise.',
        }),
        lines_total: count('Lines in the whole report.'),
        next_lines_offset: z
          .number()
          .int()
          .nonnegative()
          .nullable()
          .meta({ description: 'Pass as lines_offset for the next page of lines; null on the last.' }),
      })
      .nullable()
      .meta({
        description:
          'The newest successful run’s report (or the run asked for); null when none succeeded yet, or the run asked for failed or is unknown.',
      }),
  }),
);

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShapes: [
  Same<z.output<typeof ReconciliationLineJson>, ReconciliationLine>,
  Same<z.output<typeof ReconciliationRunJson>, ReturnType<typeof runJson>>,
  Same<z.output<typeof ReconciliationLineJson>['status'], ReconciliationReport['lines'][number]['status']>,
  Same<z.output<typeof GenerationCheckJson>, NonNullable<ReconciliationReport['generations']>>,
] = [true, true, true, true];
void sameShapes;
