/** Stable names of the gateway's endpoints; ENDPOINTS below gives each its path. */
export const ENDPOINT_KEYS = [
  'chat.completions',
  'messages',
  'responses',
  'embeddings',
  'audio.speech',
  'audio.transcriptions',
  'audio.translations',
  'images.generations',
  'images.edits',
  'images.variations',
  'models',
  'files',
  'batches',
  'messages.batches',
] as const;

export type EndpointKey = (typeof ENDPOINT_KEYS)[number];

/** How the gateway reads a request body: only what routing and limits need, the bytes are forwarded as received. */
export type BodyKind = 'json' | 'multipart' | 'none';

/**
 * What a request of a batch endpoint is to the gateway's accounting: the creation of a batch (its tags are kept),
 * a look at one (OpenAI names the output file there), the results whose lines are priced as they pass, or
 * anything else (lists, uploads, cancels, deletes), forwarded and nothing more.
 */
export type BatchRole = 'create' | 'retrieve' | 'results' | 'other';

export interface EndpointSpec {
  key: EndpointKey;
  method: 'GET' | 'POST' | 'DELETE';
  /** Gateway path (what clients call). */
  path: string;
  /** Path relative to a provider's base URL (base URLs end in the version segment, e.g. https://api.openai.com/v1). */
  upstreamPath: string;
  body: BodyKind;
  /**
   * Whether every answer is priced from its token usage. False for audio and images: they are priced by the unit
   * their model is billed by (tokens, seconds, characters, images; pricing/media-cost.ts) where the answer or the
   * request measures it, and are not counted otherwise.
   */
  costCounted: boolean;
  /** The body field naming the model, for routing. */
  modelField?: string;
  /** Set on the batch endpoints' routes (files, batches, message batches): see BatchRole. */
  batch?: BatchRole;
}

const post = (key: EndpointKey, path: string, body: BodyKind, costCounted: boolean): EndpointSpec => ({
  key,
  method: 'POST',
  path,
  upstreamPath: path.slice('/v1'.length),
  body,
  costCounted,
  modelField: 'model',
});

/** Every endpoint the gateway proxies. Nothing else is ever proxied: any other path is answered by the gateway. */
export const ENDPOINTS: readonly EndpointSpec[] = [
  post('chat.completions', '/v1/chat/completions', 'json', true),
  post('messages', '/v1/messages', 'json', true),
  post('responses', '/v1/responses', 'json', true),
  post('embeddings', '/v1/embeddings', 'json', true),
  post('audio.speech', '/v1/audio/speech', 'json', false),
  post('audio.transcriptions', '/v1/audio/transcriptions', 'multipart', false),
  post('audio.translations', '/v1/audio/translations', 'multipart', false),
  post('images.generations', '/v1/images/generations', 'json', false),
  post('images.edits', '/v1/images/edits', 'multipart', false),
  post('images.variations', '/v1/images/variations', 'multipart', false),
  { key: 'models', method: 'GET', path: '/v1/models', upstreamPath: '/models', body: 'none', costCounted: false },
];

/** A route of the batch endpoints: a path of fixed segments and ids ({id}: letters, digits, '_' and '-' only). */
interface BatchRoute {
  key: EndpointKey;
  method: EndpointSpec['method'];
  template: string;
  pattern: RegExp;
  body: BodyKind;
  batch: BatchRole;
}

const ID = '[A-Za-z0-9_-]+';
const route = (
  key: EndpointKey,
  method: EndpointSpec['method'],
  path: string,
  batch: BatchRole = 'other',
  body: BodyKind = 'none',
): BatchRoute => ({
  key,
  method,
  template: path,
  pattern: new RegExp(`^${path.replaceAll('{id}', ID)}$`),
  body,
  batch,
});

/**
 * The files and batch endpoints, forwarded as they are: an upload is a multipart body, a creation a JSON body,
 * everything else has none. None of them names a model: each is owned by one provider (core/provider-routing.ts).
 */
const BATCH_ROUTES: readonly BatchRoute[] = [
  route('files', 'POST', '/v1/files', 'other', 'multipart'),
  route('files', 'GET', '/v1/files'),
  route('files', 'GET', '/v1/files/{id}'),
  route('files', 'DELETE', '/v1/files/{id}'),
  route('files', 'GET', '/v1/files/{id}/content', 'results'),
  route('batches', 'POST', '/v1/batches', 'create', 'json'),
  route('batches', 'GET', '/v1/batches'),
  route('batches', 'GET', '/v1/batches/{id}', 'retrieve'),
  route('batches', 'POST', '/v1/batches/{id}/cancel'),
  route('messages.batches', 'POST', '/v1/messages/batches', 'create', 'json'),
  route('messages.batches', 'GET', '/v1/messages/batches'),
  route('messages.batches', 'GET', '/v1/messages/batches/{id}', 'retrieve'),
  route('messages.batches', 'DELETE', '/v1/messages/batches/{id}'),
  route('messages.batches', 'GET', '/v1/messages/batches/{id}/results', 'results'),
  route('messages.batches', 'POST', '/v1/messages/batches/{id}/cancel'),
];

const byPath = new Map(ENDPOINTS.map((e) => [e.path, e]));

/** The endpoint at exactly this path (no normalisation: an odd spelling of a path is not an alias). */
function endpointAt(path: string): EndpointSpec | undefined {
  return byPath.get(path);
}

/** The endpoint serving this method on this path, or undefined (an unknown path, or a method it does not take). */
export function endpointFor(method: string, path: string): EndpointSpec | undefined {
  const fixed = endpointAt(path);
  if (fixed) return fixed.method === method ? fixed : undefined;
  if (!path.startsWith('/v1/files') && !path.startsWith('/v1/batches') && !path.startsWith('/v1/messages/batches'))
    return undefined;
  const r = BATCH_ROUTES.find((x) => x.method === method && x.pattern.test(path));
  if (!r) return undefined;
  return {
    key: r.key,
    method: r.method,
    path,
    upstreamPath: path.slice('/v1'.length),
    body: r.body,
    costCounted: false,
    batch: r.batch,
  };
}

/** The methods served on this path (empty for a path the gateway does not proxy), for a 405's Allow header. */
export function methodsAt(path: string): string[] {
  const fixed = endpointAt(path);
  if (fixed) return [fixed.method];
  return BATCH_ROUTES.filter((r) => r.pattern.test(path)).map((r) => r.method);
}

/** The endpoint of this key; for a batch endpoint, the route that creates (files: the upload). */
export function endpointByKey(key: EndpointKey): EndpointSpec {
  const r = BATCH_ROUTES.find((x) => x.key === key && x.method === 'POST');
  const e = r ? endpointFor('POST', r.template) : ENDPOINTS.find((x) => x.key === key);
  if (!e) throw new Error(`unknown endpoint ${key}`);
  return e;
}
