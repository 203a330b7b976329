import { ENDPOINT_KEYS } from '../core/endpoints';
import { PROVIDER_FAMILIES, type ProviderModule } from '../core/provider-contract';
import type { UsageParser } from '../core/usage';
import { anthropic } from './anthropic';
import { openai } from './openai';
import { openrouter } from './openrouter';
import { perplexity } from './perplexity';

/**
 * The one list of what ships with Tollgate, from which the config schema takes its choices. A provider with a
 * new wire format is a folder (providers/<slug>/: its declaration and usage parser, built from providers/wire/)
 * plus one line here; an OpenAI-compatible provider needs no code at all (YAML `type: openai-compatible`).
 */
export const BUILTIN_PROVIDERS = { openai, anthropic, perplexity, openrouter } as const satisfies Record<
  string,
  ProviderModule
>;

/** The usage parser names YAML `providers.<slug>.usage` may use: each built-in provider's own parser. */
export type UsageParserName = keyof typeof BUILTIN_PROVIDERS;
export const USAGE_PARSER_NAMES = Object.keys(BUILTIN_PROVIDERS) as [UsageParserName, ...UsageParserName[]];
export const USAGE_PARSERS = Object.fromEntries(
  USAGE_PARSER_NAMES.map((name) => [name, BUILTIN_PROVIDERS[name].usage]),
) as Readonly<Record<string, UsageParser>>;

/** The endpoint keys and provider families, declared with the contracts they belong to (core/). */
export { ENDPOINT_KEYS, PROVIDER_FAMILIES };
