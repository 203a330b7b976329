/**
 * A gateway record as the OpenRouter reconciliation reads it: what it sets beside the generation's bill, and no
 * more, so that a page of 1000 records read on the admin reader thread crosses to the scheduler small.
 */
import type { UsageRecord } from '../records/usage-record';
import type { RecordedTokens } from './generation-tokens';

export type RecordedGeneration = Pick<
  UsageRecord,
  'id' | 'ts' | 'model' | 'servedModel' | 'costPico' | 'generationId'
> &
  RecordedTokens;

/** A page of them, newest first, as UsageStore.listRequests pages records. */
export interface GenerationPage {
  records: RecordedGeneration[];
  nextCursor: string | null;
}

export function recordedGeneration(r: UsageRecord): RecordedGeneration {
  return {
    id: r.id,
    ts: r.ts,
    model: r.model,
    servedModel: r.servedModel,
    costPico: r.costPico,
    generationId: r.generationId,
    inputTokens: r.inputTokens,
    outputTokens: r.outputTokens,
    cacheReadTokens: r.cacheReadTokens,
    cacheWriteTokens: r.cacheWriteTokens,
    cacheWrite1hTokens: r.cacheWrite1hTokens,
    inputAudioTokens: r.inputAudioTokens,
    outputAudioTokens: r.outputAudioTokens,
  };
}
