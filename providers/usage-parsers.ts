import type { UsageParser } from '../core/usage';
import { anthropicUsageParser } from './wire/messages';
import { openaiUsageParser } from './openai/usage';
import { openrouterUsageParser } from './openrouter/usage';
import { perplexityUsageParser } from './perplexity/usage';

/** The built-in usage parsers by name (the names YAML `providers.<slug>.usage` may use). */
export const USAGE_PARSERS: Record<string, UsageParser> = {
  openai: openaiUsageParser,
  anthropic: anthropicUsageParser,
  perplexity: perplexityUsageParser,
  openrouter: openrouterUsageParser,
};
