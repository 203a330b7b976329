import { PassThrough } from 'node:stream';
import type { FileHead } from '../../core/upload';
import type { GatewayContext } from '../../core/context';
import type { EndpointKey } from '../../core/endpoints';
import type { Usage } from '../../core/usage';

/**
 * What an audio or image request says about its own cost, added to what its answer reported
 * (providers/wire/media.ts) once the client is done, off the request path (providers/usage-settle.ts):
 *
 * - speech: the characters of `input` (tts-1 is billed per character; code points, as a person counts them);
 * - images: the `size` and `quality` asked for, unless the answer named them, and the `n` asked for when the
 *   answer did not show how many images it made (its `data` array is the truth);
 * - transcriptions and translations without a duration or tokens in their answer (`response_format` text, srt,
 *   vtt): the duration read from the uploaded file's header (music-metadata), exact when the header gives the
 *   number of samples (WAV, FLAC, MP3 with a Xing or VBRI frame ...), else estimated from its bitrate and size,
 *   and without a readable header estimated from the upload's size at a typical bitrate of its type. An
 *   estimate marks the usage estimated.
 */

/** The audio uploads whose duration may be billed: they keep the head of their file (uploadHeadBytes). */
const AUDIO_UPLOADS: ReadonlySet<EndpointKey> = new Set(['audio.transcriptions', 'audio.translations']);

/** Audio uploads whose duration may be billed keep the head of their file, at most this many bytes. */
const AUDIO_HEAD_BYTES = 64 * 1024;

/** How many bytes of an upload's first file part to keep for this endpoint (0: none): an audio file's header. */
export function uploadHeadBytes(key: EndpointKey): number {
  return AUDIO_UPLOADS.has(key) ? AUDIO_HEAD_BYTES : 0;
}

const IMAGE_ENDPOINTS: ReadonlySet<EndpointKey> = new Set(['images.generations', 'images.edits', 'images.variations']);

/** Whether a usage already carries a unit an audio answer is billed by. */
const hasAudioUnits = (u: Usage | undefined): boolean =>
  u !== undefined &&
  (u.audioSeconds !== undefined ||
    u.inputTokens !== undefined ||
    u.inputAudioTokens !== undefined ||
    u.outputTokens !== undefined);

/**
 * Adds the request's own units to an audio or image request's usage (see above). A promise only for an audio
 * upload whose duration is read from its head; nothing to do (a token-counted request) costs none.
 */
export function settleMediaUsage(gw: GatewayContext): Promise<void> | undefined {
  const key = gw.endpoint?.key;
  if (!key || gw.endpoint?.costCounted || gw.status === undefined || gw.status >= 400) return undefined;
  return mediaUsage(gw, key);
}

async function mediaUsage(gw: GatewayContext, key: EndpointKey): Promise<void> {
  const fields: Record<string, unknown> | undefined = gw.json ?? gw.form;
  const usage: Usage = { ...gw.usage };
  if (key === 'audio.speech') {
    const input = fields?.input;
    if (typeof input === 'string') usage.inputCharacters = countCodePoints(input);
  } else if (IMAGE_ENDPOINTS.has(key)) {
    if (usage.imageSize === undefined && typeof fields?.size === 'string') usage.imageSize = fields.size;
    if (usage.imageQuality === undefined && typeof fields?.quality === 'string') usage.imageQuality = fields.quality;
    if (usage.images === undefined && !gw.stream) usage.images = requestedImages(fields?.n);
  } else if (AUDIO_UPLOADS.has(key) && !hasAudioUnits(gw.usage)) {
    const duration = await uploadDuration(gw.uploadHead?.(), gw.bodySize);
    usage.audioSeconds = duration.seconds;
    if (duration.estimated) gw.usageEstimated = true;
  }
  gw.usage = usage;
}

/** Characters of a text as tts-1 bills them: code points, as a person counts them. */
export function countCodePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** The `n` of a request (a JSON number or a form's text), 1 when absent as the API defaults it. */
export function requestedImages(n: unknown): number | undefined {
  if (n === undefined) return 1;
  const v = typeof n === 'string' ? Number(n) : n;
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : undefined;
}

/** Typical bitrates, bits per second, by the upload's type: used only when its header gives none. */
const TYPICAL_BITRATE: readonly [RegExp, number][] = [
  [/wav|wave/i, 256_000], // 16 kHz 16-bit mono, as speech is usually recorded for transcription
  [/flac/i, 400_000],
  [/ogg|opus|webm/i, 64_000],
  [/./, 128_000], // mp3, m4a and anything else
];

/** Seconds of audio in an upload (whole, rounded up as billed), and whether they are an estimate. */
export async function uploadDuration(
  head: FileHead | undefined,
  uploadBytes: number,
): Promise<{ seconds: number; estimated: boolean }> {
  if (head && head.bytes.length > 0) {
    try {
      const format = await audioFormat(head, uploadBytes);
      if (format.numberOfSamples && format.sampleRate)
        return { seconds: Math.ceil(format.numberOfSamples / format.sampleRate), estimated: false };
      if (format.duration) return { seconds: Math.ceil(format.duration), estimated: true };
      if (format.bitrate) return { seconds: Math.ceil((uploadBytes * 8) / format.bitrate), estimated: true };
    } catch {
      // An unreadable header: estimated below.
    }
  }
  return { seconds: typicalSeconds(head, uploadBytes), estimated: true };
}

/** Seconds of an upload of this size at the typical bitrate of its type (128 kbit/s when its type is unknown). */
export function typicalSeconds(head: Pick<FileHead, 'mimeType' | 'filename'> | undefined, uploadBytes: number): number {
  const kind = `${head?.mimeType ?? ''} ${head?.filename ?? ''}`;
  const bitrate = TYPICAL_BITRATE.find(([re]) => re.test(kind))![1];
  return Math.ceil((uploadBytes * 8) / bitrate);
}

interface AudioFormat {
  numberOfSamples?: number;
  sampleRate?: number;
  duration?: number;
  bitrate?: number;
}

/**
 * The header's format fields. The head is given as a stream whose declared size is the upload's (an upper bound of
 * the file's), so that a parser does not take the end of the head for the end of the file.
 */
async function audioFormat(head: FileHead, uploadBytes: number): Promise<AudioFormat> {
  const { parseStream } = await import('music-metadata');
  const stream = new PassThrough();
  stream.end(head.bytes);
  const meta = await parseStream(
    stream,
    { mimeType: head.mimeType, path: head.filename, size: Math.max(uploadBytes, head.bytes.length) },
    { duration: false, skipCovers: true, skipPostHeaders: true },
  );
  return meta.format;
}
