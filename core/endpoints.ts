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
] as const;

export type EndpointKey = (typeof ENDPOINT_KEYS)[number];

/** How the gateway reads a request body: only what routing and limits need, the bytes are forwarded as received. */
export type BodyKind = 'json' | 'multipart' | 'none';

export interface EndpointSpec {
  key: EndpointKey;
  method: 'GET' | 'POST';
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

const byPath = new Map(ENDPOINTS.map((e) => [e.path, e]));

/** The endpoint at exactly this path (no normalisation: an odd spelling of a path is not an alias). */
export function endpointAt(path: string): EndpointSpec | undefined {
  return byPath.get(path);
}

export function endpointByKey(key: EndpointKey): EndpointSpec {
  const e = ENDPOINTS.find((x) => x.key === key);
  if (!e) throw new Error(`unknown endpoint ${key}`);
  return e;
}

/** Audio uploads whose duration may be billed keep the head of their file, at most this many bytes. */
const AUDIO_HEAD_BYTES = 64 * 1024;

/** How many bytes of an upload's first file part to keep for this endpoint (0: none): an audio file's header. */
export function uploadHeadBytes(key: EndpointKey): number {
  return key === 'audio.transcriptions' || key === 'audio.translations' ? AUDIO_HEAD_BYTES : 0;
}
