import type { UsageParser } from '../../core/usage';
import { anthropicUsageParser } from './anthropic-messages';
import { openaiUsageParser } from './openai';
import { openrouterUsageParser } from './openrouter';
import { perplexityUsageParser } from './perplexity';

/** The built-in usage parsers by name (the names YAML `providers.<slug>.usage` may use). */
export const USAGE_PARSERS: Record<string, UsageParser> = {
  openai: openaiUsageParser,
  anthropic: anthropicUsageParser,
  perplexity: perplexityUsageParser,
  openrouter: openrouterUsageParser,
};
