import type { ProviderModule } from '../core/provider-contract';
import { anthropic } from './anthropic';
import { openai } from './openai';
import { openrouter } from './openrouter';
import { perplexity } from './perplexity';

/** The provider modules that ship with Tollgate, by slug. More come from YAML (openai-compatible) or plugins. */
export const BUILTIN_PROVIDERS: Readonly<Record<string, ProviderModule>> = { openai, anthropic, perplexity, openrouter };
