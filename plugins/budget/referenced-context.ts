/**
 * Whether a request body brings input the gateway cannot see: context stored at the provider or fetched by it,
 * whose tokens are billed as input although the body holds only a reference. Its size cannot be estimated from
 * the body, so the budget reserves at least budgets.referenced_input_tokens for it.
 *
 * Counted as references: previous_response_id, conversation and a stored prompt (Responses); a file by id or URL
 * (file_id, file_url; Anthropic sources of type file or url); an image by URL rather than inline data (image_url,
 * input_image); and tools that bring retrieved text in (file_search, web search).
 */
export function referencesContext(json: Record<string, unknown>): boolean {
  if (typeof json.previous_response_id === 'string' || json.conversation != null || isObject(json.prompt)) return true;
  if (
    Array.isArray(json.tools) &&
    json.tools.some((t) => isObject(t) && typeof t.type === 'string' && RETRIEVING_TOOLS.test(t.type))
  )
    return true;
  return holdsReference(json.messages, 0) || holdsReference(json.input, 0) || holdsReference(json.system, 0);
}

/** Tool types whose results enter the model's input: file_search, web_search, web_search_preview, web_search_20250305 ... */
const RETRIEVING_TOOLS = /^(file_search|web_search)/;

/** Content nested deeper than this is not content of any real API; hostile bodies nest thousands deep. */
const MAX_DEPTH = 32;

function holdsReference(v: unknown, depth: number): boolean {
  if (depth > MAX_DEPTH) return false;
  if (Array.isArray(v)) return v.some((x) => holdsReference(x, depth + 1));
  if (!isObject(v)) return false;
  if (typeof v.file_id === 'string' || typeof v.file_url === 'string') return true;
  if (remoteUrl(v.image_url) || (isObject(v.image_url) && remoteUrl(v.image_url.url))) return true;
  // Anthropic: { type: 'image' | 'document', source: { type: 'url' | 'file', ... } }
  if (isObject(v.source) && (v.source.type === 'url' || v.source.type === 'file')) return true;
  for (const key of ['content', 'file', 'source', 'output'] as const) {
    if (v[key] !== undefined && typeof v[key] !== 'string' && holdsReference(v[key], depth + 1)) return true;
  }
  return false;
}

/** A URL the provider fetches (inline data: URLs are in the body, counted by its size). */
function remoteUrl(v: unknown): boolean {
  return typeof v === 'string' && !v.startsWith('data:');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
