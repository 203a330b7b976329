/**
 * What a span reports of the answer itself: the model it names, its id and its finish reasons. Read by text
 * patterns, never by parsing the answer: from the head (and tail) of a JSON answer, and from each stream event that
 * mentions them. Escaped quotes inside strings never match, so text a model wrote cannot pass for a member.
 */
export interface AnswerFacts {
  model?: string;
  id?: string;
  /** In the order met, each once: finish_reason (OpenAI and compatible), stop_reason (Anthropic). */
  finishReasons: string[];
}

/** The first "model" member in a piece of JSON text. */
const MODEL_MEMBER = /"model"\s*:\s*"([^"\\]{1,256})"/;
const ID_MEMBER = /"id"\s*:\s*"([^"\\]{1,256})"/;
/** A finish reason that is a string (a stream's events carry null until the last one). */
const FINISH_MEMBERS = /"(?:finish_reason|stop_reason)"\s*:\s*"([^"\\]{1,64})"/g;
/** Finish reasons are looked for in JSON answers up to this size: past the content, however long it is. */
const FINISH_SCAN_BYTES = 4 * 1024 * 1024;

export function modelNamedIn(json: string): string | undefined {
  return MODEL_MEMBER.exec(json)?.[1];
}

/** Adds what a piece of an answer (a stream event) tells: the first model and id met, every finish reason. */
export function noteAnswerPart(text: string, facts: AnswerFacts): void {
  if (facts.model === undefined && text.includes('"model"')) facts.model = modelNamedIn(text);
  if (facts.id === undefined && text.includes('"id"')) facts.id = ID_MEMBER.exec(text)?.[1];
  if (text.includes('_reason"')) noteFinishReasons(text, facts);
}

/**
 * A non-streamed JSON answer (nothing is found in a compressed one): model and id from its first 4 KiB (answers
 * name the model near the top, embeddings near the end, after the vectors: its last 1 KiB then), finish reasons
 * from the whole of it.
 */
export function answerFacts(body: Buffer): AnswerFacts {
  const head = body.subarray(0, 4096).toString('utf8');
  const facts: AnswerFacts = { model: modelNamedIn(head), id: ID_MEMBER.exec(head)?.[1], finishReasons: [] };
  if (facts.model === undefined && body.length > 4096)
    facts.model = modelNamedIn(body.subarray(Math.max(4096, body.length - 1024)).toString('utf8'));
  if (body.length <= FINISH_SCAN_BYTES) noteFinishReasons(body.toString('utf8'), facts);
  return facts;
}

function noteFinishReasons(text: string, facts: AnswerFacts): void {
  for (const m of text.matchAll(FINISH_MEMBERS))
    if (!facts.finishReasons.includes(m[1])) facts.finishReasons.push(m[1]);
}
