import type { PluginDefinition } from '../api';
import { attribution } from './attribution';
import { auth } from './auth';
import { headerStrip } from './header-strip';
import { budget } from './budget';
import { concurrency } from './concurrency';
import { maxTokens } from './max-tokens';
import { rateLimit } from './rate-limit';
import { requiredTags } from './required-tags';
import { usageRecorder } from './usage-recorder';

/** Plugins that ship with Tollgate, by the name used in gateway.config.yaml (`use: <name>`). */
export const BUILTIN_PLUGINS: Readonly<Record<string, PluginDefinition<unknown>>> = {
  auth,
  'header-strip': headerStrip,
  attribution,
  'required-tags': requiredTags,
  'max-tokens': maxTokens,
  'rate-limit': rateLimit,
  concurrency,
  budget,
  'usage-recorder': usageRecorder,
};

/** Always in the pipeline: without them a gateway key could reach a provider. Added first when not listed. */
export const REQUIRED_PLUGINS = ['auth', 'header-strip'] as const;
