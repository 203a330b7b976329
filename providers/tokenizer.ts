// The rank files of js-tiktoken (its ESM type declarations are imported as such; the CommonJS data is
// require()d on first use, which keeps the multi-megabyte tables out of start-up).
import type { TiktokenBPE } from 'js-tiktoken/lite' with { 'resolution-mode': 'import' };
import type { Tokenizer } from '../core/provider-contract';
import type { EndpointKey } from '../core/usage';

type Encoding = 'o200k_base' | 'cl100k_base';

/** Model-name prefixes tokenized with o200k_base; everything else (older OpenAI and non-OpenAI) uses cl100k_base. */
const O200K_PREFIXES = [
  'gpt-4o',
  'gpt-4.1',
  'gpt-4.5',
  'gpt-5',
  'gpt-oss',
  'gpt-realtime',
  'gpt-audio',
  'gpt-image',
  'chatgpt-',
  'o1',
  'o3',
  'o4',
  'codex-',
  'computer-use-',
  'omni-moderation',
];

export function encodingForModel(model: string): Encoding {
  let m = model.toLowerCase();
  if (m.startsWith('openai/')) m = m.slice('openai/'.length); // aggregator ids (OpenRouter)
  if (m.startsWith('ft:')) m = m.slice(3); // fine-tunes: ft:<base>:<org>::<id>
  return O200K_PREFIXES.some((p) => m.startsWith(p)) ? 'o200k_base' : 'cl100k_base';
}

/** A loaded encoding: the pre-tokenizer regex and the merge ranks keyed by the token's bytes as latin1. */
interface Bpe {
  pattern: RegExp;
  ranks: Map<string, number>;
}

const loaded = new Map<Encoding, Bpe>();

/** Parses a rank file once per encoding (a few hundred ms), the same way js-tiktoken's Tiktoken does. */
function bpe(name: Encoding): Bpe {
  let enc = loaded.get(name);
  if (!enc) {
    // Loaded on first use so that the multi-megabyte rank tables stay out of start-up.
    /* eslint-disable @typescript-eslint/no-require-imports */
    const data = (
      name === 'o200k_base' ? require('js-tiktoken/ranks/o200k_base') : require('js-tiktoken/ranks/cl100k_base')
    ) as TiktokenBPE;
    /* eslint-enable @typescript-eslint/no-require-imports */
    const ranks = new Map<string, number>();
    for (const line of data.bpe_ranks.split('\n')) {
      const fields = line.split(' '); // "<tag> <first rank> <base64 token> <base64 token> ..."
      const first = Number.parseInt(fields[1] ?? '', 10);
      for (let i = 2; i < fields.length; i++) {
        ranks.set(Buffer.from(fields[i], 'base64').toString('latin1'), first + i - 2);
      }
    }
    enc = { pattern: new RegExp(data.pat_str, 'gu'), ranks };
    loaded.set(name, enc);
  }
  return enc;
}

/**
 * Tokens of `text` with the model's tokenizer (cl100k_base approximates non-OpenAI models). Special-token
 * strings such as "<|endoftext|>" count as plain text.
 *
 * Why not Tiktoken.encode from js-tiktoken/lite: its merge re-joins every byte pair of a piece on every step,
 * O(n²) string building per piece, so 100 KB of CJK text (pieces are whole clauses) blocks the event loop
 * for seconds. This counts with the same regex, ranks and lowest-rank-first merge, updating only the two
 * neighbours of each merge; the unit tests check it against Tiktoken.encode.
 */
export function countTokens(text: string, model: string): number {
  if (text.length === 0) return 0;
  const { pattern, ranks } = bpe(encodingForModel(model));
  let total = 0;
  for (const match of text.matchAll(pattern)) {
    const bytes = Buffer.from(match[0], 'utf8');
    for (let at = 0; at < bytes.length; at += MAX_PIECE_BYTES) {
      total += pieceTokens(ranks, bytes, at, Math.min(bytes.length, at + MAX_PIECE_BYTES));
    }
  }
  return total;
}

/**
 * Most characters one estimate counts exactly. The tokenizer costs up to ~5 µs per character on adversarial text
 * (long runs without spaces, CJK), so counting a whole 32 MB body would block the event loop for minutes. Past
 * this budget text is sampled (evenly spaced windows) and the count extrapolated: the result was an estimate
 * anyway, and the work per estimate stays bounded (~0.2 s worst case, a few ms for prose).
 */
export const EXACT_COUNT_BUDGET = 32 * 1024;
const SAMPLE_WINDOWS = 16;

/** A token counter for one estimate: exact within `budget` characters, sampled beyond, then extrapolated. */
export function budgetedCounter(model: string, budget = EXACT_COUNT_BUDGET): (text: string) => number {
  let left = budget;
  let seenChars = 0;
  let seenTokens = 0;
  const counted = (text: string): number => {
    const n = countTokens(text, model);
    left -= text.length;
    seenChars += text.length;
    seenTokens += n;
    return n;
  };
  return (text) => {
    if (text.length === 0) return 0;
    if (text.length <= left) return counted(text);
    if (left >= SAMPLE_WINDOWS * 64) {
      const window = Math.floor(left / SAMPLE_WINDOWS);
      const stride = text.length / SAMPLE_WINDOWS;
      let tokens = 0;
      let chars = 0;
      for (let i = 0; i < SAMPLE_WINDOWS; i++) {
        const piece = text.slice(Math.floor(i * stride), Math.floor(i * stride) + window);
        tokens += counted(piece);
        chars += piece.length;
      }
      return Math.round((tokens * text.length) / chars);
    }
    // Budget spent: the ratio seen so far (1 token per 4 characters when nothing was counted).
    return Math.round(text.length * (seenChars > 0 ? seenTokens / seenChars : 0.25));
  };
}

/** Pieces longer than this (only pathological text: 500+ letters without a space) are counted in windows. */
const MAX_PIECE_BYTES = 512;

/** Byte-pair merge of bytes[from, to): repeatedly merge the adjacent pair with the lowest rank (leftmost on ties). */
function pieceTokens(ranks: Map<string, number>, bytes: Buffer, from: number, to: number): number {
  if (to - from <= 1 || ranks.has(bytes.toString('latin1', from, to))) return 1;
  const rankOf = (a: number, b: number): number => ranks.get(bytes.toString('latin1', a, b)) ?? Infinity;
  const starts: number[] = []; // part k is bytes[starts[k], starts[k + 1])
  for (let i = from; i <= to; i++) starts.push(i);
  const pairs: number[] = []; // pairs[k] = rank of parts k and k + 1 merged
  for (let k = 0; k < starts.length - 2; k++) pairs.push(rankOf(starts[k], starts[k + 2]));
  while (pairs.length > 0) {
    let best = 0;
    for (let k = 1; k < pairs.length; k++) if (pairs[k] < pairs[best]) best = k;
    if (pairs[best] === Infinity) break;
    starts.splice(best + 1, 1);
    pairs.splice(best, 1);
    if (best < pairs.length) pairs[best] = rankOf(starts[best], starts[best + 2]);
    if (best > 0) pairs[best - 1] = rankOf(starts[best - 1], starts[best + 1]);
  }
  return starts.length - 1;
}

/**
 * Estimated input tokens of a request body, for when the provider reported no usage.
 *
 * Method (OpenAI cookbook "How to count tokens with tiktoken", num_tokens_from_messages): every message costs
 * 3 framing tokens plus the tokens of its role, its name (+1) and its text content; the reply is primed with
 * 3 more. Text content is string content, text/thinking parts, tool-call names and arguments, tool results
 * and tool_use inputs (as JSON). Tool definitions are counted as their JSON. Images, audio and files are NOT
 * counted. Anthropic messages (with `system`) and Responses input (with `instructions`) use the same framing
 * as an approximation; Anthropic's tokenizer is not public, so cl100k_base stands in. Embeddings count the
 * input text(s) with no framing (pre-tokenized inputs count their length).
 */
export function estimateRequestInputTokens(endpoint: EndpointKey, body: unknown, model: string): number {
  if (!isObject(body)) return 0;
  const count = budgetedCounter(model);
  switch (endpoint) {
    case 'chat.completions':
      return messagesTokens(body['messages'], count) + toolsTokens(body, count);
    case 'messages':
      return systemTokens(body['system'], count) + messagesTokens(body['messages'], count) + toolsTokens(body, count);
    case 'responses': {
      const input = body['input'];
      const messages = typeof input === 'string' ? [{ role: 'user', content: input }] : input;
      return systemTokens(body['instructions'], count) + messagesTokens(messages, count) + toolsTokens(body, count);
    }
    case 'embeddings':
      return embeddingsTokens(body['input'], count);
    default:
      return 0;
  }
}

type Counter = (text: string) => number;
type JsonObject = Record<string, unknown>;

const PER_MESSAGE = 3;
const PER_NAME = 1;
const REPLY_PRIMING = 3;

function messagesTokens(messages: unknown, count: Counter): number {
  if (!Array.isArray(messages) || messages.length === 0) return 0;
  let total = REPLY_PRIMING;
  for (const message of messages) {
    total += PER_MESSAGE;
    if (!isObject(message)) continue;
    if (typeof message['role'] === 'string') total += count(message['role']);
    if (typeof message['name'] === 'string') total += count(message['name']) + PER_NAME;
    const texts: string[] = [];
    collectText(message['content'], texts);
    collectText(message['tool_calls'], texts);
    if (message['role'] === undefined) collectText(message, texts); // Responses items: function_call, ...
    for (const t of texts) total += count(t);
  }
  return total;
}

/** Anthropic `system` (string or text blocks) and Responses `instructions`, framed as one message. */
function systemTokens(system: unknown, count: Counter): number {
  const texts: string[] = [];
  collectText(system, texts);
  if (texts.length === 0) return 0;
  return texts.reduce((n, t) => n + count(t), PER_MESSAGE + count('system'));
}

function toolsTokens(body: JsonObject, count: Counter): number {
  const tools = body['tools'] ?? body['functions'];
  return Array.isArray(tools) && tools.length > 0 ? count(jsonText(tools)) : 0;
}

function embeddingsTokens(input: unknown, count: Counter, depth = 0): number {
  if (typeof input === 'string') return count(input);
  if (!Array.isArray(input) || depth > 2) return 0;
  if (input.every((x) => typeof x === 'number')) return input.length; // one pre-tokenized input
  return input.reduce<number>((n, x) => n + embeddingsTokens(x, count, depth + 1), 0);
}

const TEXT_KEYS = ['text', 'thinking', 'refusal', 'name', 'arguments'] as const;

/** Content nested deeper than this is not text of any real API; hostile bodies nest thousands deep. */
const MAX_CONTENT_DEPTH = 32;

/** Pushes the text a content value carries; never descends into image/audio/file payloads. */
function collectText(v: unknown, out: string[], depth = 0): void {
  if (depth > MAX_CONTENT_DEPTH) return;
  if (typeof v === 'string') {
    if (v.length > 0) out.push(v);
  } else if (Array.isArray(v)) {
    for (const x of v) collectText(x, out, depth + 1);
  } else if (isObject(v)) {
    for (const key of TEXT_KEYS) {
      const s = v[key];
      if (typeof s === 'string' && s.length > 0) out.push(s);
    }
    if (isObject(v['function'])) collectText(v['function'], out, depth + 1); // chat tool_calls[].function
    if (v['content'] !== undefined) collectText(v['content'], out, depth + 1); // tool_result blocks, Responses messages
    if (v['output'] !== undefined) collectText(v['output'], out, depth + 1); // Responses function_call_output
    if (v['type'] === 'tool_use' && v['input'] !== undefined) out.push(jsonText(v['input']));
  }
}

/** JSON text of a value, or '' when it cannot be serialised (nested too deep for the stack). */
function jsonText(v: unknown): string {
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return '';
  }
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The tokenizer every provider uses unless its module declares its own: tiktoken's o200k_base or cl100k_base by
 * model name (an approximation for non-OpenAI models, whose usage is estimated only when they report none).
 */
export const tiktokenTokenizer: Tokenizer = {
  requestInputTokens: estimateRequestInputTokens,
  textCounter: (model) => budgetedCounter(model),
};
