/**
 * Model-id rewriting rules used by PriceCatalog.lookup. Each rule is a deterministic rewrite of the id the
 * client sent; there is deliberately no "closest match" (a near miss such as gpt-4o vs gpt-4o-mini would
 * silently pick a wrong price: an unknown id must stay unpriced).
 */

/** Prefixes a client may put in front of a model id for a provider (LiteLLM-style, vendor-style, Gemini native). */
const OWN_PREFIXES: Record<string, readonly string[]> = {
  openai: ['openai/'],
  anthropic: ['anthropic/'],
  perplexity: ['perplexity/'],
  openrouter: ['openrouter/'],
  gemini: ['gemini/', 'google/', 'models/'],
  mistral: ['mistral/', 'mistralai/'],
  deepseek: ['deepseek/'],
  xai: ['xai/', 'x-ai/'],
  groq: ['groq/'],
};

/** The id without the provider's own prefix ("gemini/gemini-2.5-pro" -> "gemini-2.5-pro"), if it had one. */
export function stripOwnPrefix(provider: string, model: string): string | undefined {
  for (const prefix of OWN_PREFIXES[provider] ?? [`${provider}/`]) {
    if (model.startsWith(prefix) && model.length > prefix.length) return model.slice(prefix.length);
  }
  return undefined;
}

/**
 * Date suffixes of dated snapshots, each with the family id left when it is removed:
 *   -YYYY-MM-DD        OpenAI (gpt-4o-2024-08-06)
 *   -YYYYMMDD          Anthropic (claude-3-5-sonnet-20240620)
 *   -MMDD              OpenAI's older snapshots (gpt-4-0613)
 *   -preview-MM-DD     Gemini previews (gemini-2.5-pro-preview-05-06 -> gemini-2.5-pro)
 * The month and day must be real. A four-digit suffix that reads as a year and a month (mistral-medium-2508,
 * pixtral-large-2411) has a "month" above 12, so it is never taken for -MMDD.
 */
const DATED: { re: RegExp; year: boolean }[] = [
  { re: /^(.+)-(20\d\d)-(\d\d)-(\d\d)$/, year: true },
  { re: /^(.+)-(20\d\d)(\d\d)(\d\d)$/, year: true },
  { re: /^(.+)-preview-(\d\d)-(\d\d)$/, year: false },
  { re: /^(.+)-(\d\d)(\d\d)$/, year: false },
];

/**
 * The family id of a dated snapshot ("gpt-4o-2024-08-06" -> "gpt-4o", "gpt-4-0613" -> "gpt-4"), or undefined.
 * One suffix is removed, once: the result is never shortened further, so a snapshot can only reach its own family.
 */
export function undatedId(model: string): string | undefined {
  for (const { re, year } of DATED) {
    const m = re.exec(model);
    if (!m) continue;
    const month = Number(m[year ? 3 : 2]);
    const day = Number(m[year ? 4 : 3]);
    if (month >= 1 && month <= 12 && day >= 1 && day <= 31) return m[1];
  }
  return undefined;
}

/** OpenRouter vendor segment -> the gateway provider that sells the same model directly. */
const OPENROUTER_VENDORS: Record<string, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  google: 'gemini',
  'x-ai': 'xai',
  mistralai: 'mistral',
  deepseek: 'deepseek',
  perplexity: 'perplexity',
};

/**
 * For an OpenRouter slug "vendor/model", the vendor's provider slug and the vendor API ids to try.
 * Undefined for unknown vendors and for variant suffixes (":free", ":online", ":nitro"...), which change
 * the price, so the vendor's list price would be wrong for them.
 */
export function openRouterVendorIds(slug: string): { provider: string; ids: string[] } | undefined {
  const cut = slug.indexOf('/');
  if (cut <= 0 || slug.includes(':')) return undefined;
  const provider = OPENROUTER_VENDORS[slug.slice(0, cut)];
  const id = slug.slice(cut + 1);
  if (!provider || id.length === 0) return undefined;
  // OpenRouter writes Anthropic versions with dots (claude-sonnet-4.5) where Anthropic's API uses dashes.
  const ids = [id];
  if (provider === 'anthropic') {
    const dashed = id.replace(/(\d)\.(\d)/g, '$1-$2');
    if (dashed !== id) ids.push(dashed);
  }
  return { provider, ids };
}
