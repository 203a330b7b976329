import type { Usage } from '../../core/usage';
import { arr, compact, num, obj, reported, str, type JsonObject } from './read';
import { JsonStreamAccumulator, type EndpointUsage } from './sse-usage';

/**
 * What OpenAI's audio and image answers say about their cost (pricing/media-cost.ts prices it):
 *
 * - images: `data` holds one item per image made (the count DALL·E is billed by); gpt-image answers add `usage`:
 *   input_tokens split into input_tokens_details.text_tokens / image_tokens, output_tokens split into
 *   output_tokens_details.text_tokens / image_tokens (without the details, all output is image tokens), and the
 *   `size` and `quality` they were made at. A stream (`stream: true`) reports each image's usage in its
 *   `image_generation.completed` / `image_edit.completed` event.
 * - transcriptions and translations: `usage` of type "tokens" (gpt-4o-transcribe: input_token_details.text_tokens
 *   / audio_tokens, output_tokens) or "duration" (whisper-1: `seconds`, whole seconds rounded up as billed);
 *   else a verbose_json answer's `duration`, rounded up the same way. A stream reports usage in its
 *   `transcript.text.done` event.
 * - speech: raw audio carries nothing; a `stream_format: "sse"` answer (gpt-4o-mini-tts) reports usage in its
 *   `speech.audio.done` event: input_tokens of text, output_tokens of audio.
 */

/** Usage of one gpt-image usage object. */
function imageTokens(u: JsonObject): Usage {
  const inDetails = obj(u, 'input_tokens_details');
  const outDetails = obj(u, 'output_tokens_details') ?? obj(u, 'output_token_details');
  const output = num(u, 'output_tokens');
  return compact({
    inputTokens: inDetails ? num(inDetails, 'text_tokens') : num(u, 'input_tokens'),
    inputImageTokens: num(inDetails, 'image_tokens'),
    outputTokens: num(outDetails, 'text_tokens'),
    outputImageTokens: outDetails ? num(outDetails, 'image_tokens') : output,
  });
}

function imagesFromJson(body: unknown): Usage | undefined {
  const u = obj(body, 'usage');
  const data = arr(body, 'data');
  return reported(
    compact({
      ...(u ? imageTokens(u) : {}),
      images: data?.length,
      imageSize: str(body, 'size'),
      imageQuality: str(body, 'quality'),
    }),
  );
}

/** Whole seconds, rounded up (OpenAI reports 37 for an audio of 36.71 s). */
const wholeSeconds = (s: number | undefined): number | undefined => (s === undefined ? undefined : Math.ceil(s));

function transcriptionUsage(u: JsonObject): Usage {
  if (str(u, 'type') === 'duration' || num(u, 'seconds') !== undefined)
    return compact({ audioSeconds: wholeSeconds(num(u, 'seconds')) });
  const details = obj(u, 'input_token_details') ?? obj(u, 'input_tokens_details');
  return compact({
    inputTokens: num(details, 'text_tokens'),
    inputAudioTokens: details ? num(details, 'audio_tokens') : num(u, 'input_tokens'),
    outputTokens: num(u, 'output_tokens'),
  });
}

function transcriptionFromJson(body: unknown): Usage | undefined {
  const u = obj(body, 'usage');
  const fromUsage = u ? reported(transcriptionUsage(u)) : undefined;
  return fromUsage ?? reported(compact({ audioSeconds: wholeSeconds(num(body, 'duration')) }));
}

/** Sums the usage of the events that report one (an image stream reports each image's usage). */
class MediaEventStream extends JsonStreamAccumulator {
  constructor(private readonly read: (usage: JsonObject, event: JsonObject) => Usage) {
    super();
  }

  protected readUsage(json: JsonObject): void {
    const u = obj(json, 'usage');
    if (!u) return;
    const next = this.read(u, json);
    const sum: Record<string, unknown> = { ...this.usage };
    for (const [k, v] of Object.entries(next)) {
      sum[k] = typeof v === 'number' && typeof sum[k] === 'number' ? (sum[k] as number) + v : v;
    }
    this.usage = sum as Usage;
  }

  protected textOf(): string | undefined {
    return undefined;
  }
}

export const imagesEndpoint: EndpointUsage = {
  fromJson: imagesFromJson,
  stream: () =>
    new MediaEventStream((u, event) =>
      compact({ ...imageTokens(u), images: 1, imageSize: str(event, 'size'), imageQuality: str(event, 'quality') }),
    ),
};

export const transcriptionEndpoint: EndpointUsage = {
  fromJson: transcriptionFromJson,
  stream: () => new MediaEventStream(transcriptionUsage),
};

export const speechEndpoint: EndpointUsage = {
  fromJson: () => undefined, // speech answers are audio, never a JSON document
  stream: () =>
    new MediaEventStream((u) =>
      compact({ inputTokens: num(u, 'input_tokens'), outputAudioTokens: num(u, 'output_tokens') }),
    ),
};
