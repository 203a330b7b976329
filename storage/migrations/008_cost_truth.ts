/**
 * What a record's cost rests on, beside the cost itself:
 *   usage_source        how the token counts were obtained: 'provider' (the response's usage), 'tokenizer'
 *                       (estimated: the stream reported none, or was cut), 'none' (no counts at all). NULL on
 *                       records written before this migration (repricing infers it, pricing/reprice.ts).
 *   provider_cost_pico  the cost the provider itself reported (OpenRouter usage.cost, Perplexity usage.cost), kept
 *                       beside cost_pico whichever of the two the record uses.
 *   cost_disagrees      1 when the provider's figure and the one computed from tokens and prices differ by more
 *                       than 1%, 0 when both are known and agree, NULL when there was nothing to compare.
 *   tool_calls          billable tool and server calls as JSON ({"web_search": 2, "file_search": 1}), NULL if none.
 *   price_id            the catalog entry whose prices were used ("openai/gpt-4o" for gpt-4o-2024-08-06).
 * and, in every rollup table, cost_disagreement_count (records written before this migration were never checked:
 * 0 is their true count).
 */
import type { Migration } from './index';

const ROLLUPS = [
  'usage_rollup_hourly',
  'usage_tag_rollup_hourly',
  'usage_rollup_daily',
  'usage_tag_rollup_daily',
  'usage_tag_set_daily',
];

function ddl(int: string): string {
  return [
    'ALTER TABLE usage_records ADD COLUMN usage_source TEXT;',
    `ALTER TABLE usage_records ADD COLUMN provider_cost_pico ${int};`,
    'ALTER TABLE usage_records ADD COLUMN cost_disagrees INTEGER;',
    'ALTER TABLE usage_records ADD COLUMN tool_calls TEXT;',
    'ALTER TABLE usage_records ADD COLUMN price_id TEXT;',
    ...ROLLUPS.map((t) => `ALTER TABLE ${t} ADD COLUMN cost_disagreement_count ${int} NOT NULL DEFAULT 0;`),
  ].join('\n');
}

export const costTruth: Migration = { version: 8, name: 'cost_truth', postgres: ddl('BIGINT'), sqlite: ddl('INTEGER') };
