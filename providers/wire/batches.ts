/**
 * The batch APIs' answers, as far as cost goes: the id a creation answers with (and the output file OpenAI names
 * once a batch is done), and each line of the results with the usage its answer carries. A line that was not
 * answered (an error, a cancelled or expired request) is not billed and yields nothing.
 */
import type { BatchResultLine, BatchWire, EndpointKey, UsageParser } from '../../core/usage';
import { num, obj, str } from './read';

/** OpenAI: the endpoint a line's answer came from, by the object it is (the batch may mix none of them). */
const OPENAI_OBJECTS: Readonly<Record<string, EndpointKey>> = {
  'chat.completion': 'chat.completions',
  response: 'responses',
  list: 'embeddings',
};

/** OpenAI's batch object ({ id, output_file_id }) and output file lines ({ custom_id, response: { status_code, body } }). */
export function openaiBatches(usage: UsageParser): BatchWire {
  return {
    job: (body) => {
      const id = str(body, 'id');
      if (!id || str(body, 'object') !== 'batch') return undefined;
      return { id, outputFileId: str(body, 'output_file_id') };
    },
    result: (line): BatchResultLine | undefined => {
      const customId = str(line, 'custom_id');
      const status = num(line, 'response', 'status_code');
      const body = obj(line, 'response', 'body');
      const endpoint = OPENAI_OBJECTS[str(body, 'object') ?? ''];
      if (customId === undefined || status === undefined || status >= 400 || !body || !endpoint) return undefined;
      return { customId, endpoint, model: str(body, 'model'), usage: usage.fromJson(endpoint, body) };
    },
  };
}

/** Anthropic's message batch ({ id, type: "message_batch" }) and results lines ({ custom_id, result: { type, message } }). */
export function anthropicBatches(usage: UsageParser): BatchWire {
  return {
    job: (body) => {
      const id = str(body, 'id');
      return id && str(body, 'type') === 'message_batch' ? { id } : undefined;
    },
    result: (line): BatchResultLine | undefined => {
      const customId = str(line, 'custom_id');
      const message = obj(line, 'result', 'message');
      if (customId === undefined || str(line, 'result', 'type') !== 'succeeded' || !message) return undefined;
      return {
        customId,
        endpoint: 'messages',
        model: str(message, 'model'),
        usage: usage.fromJson('messages', message),
      };
    },
  };
}
