import { createHash } from 'node:crypto';
import {
  type BatchJob,
  type BatchJobsService,
  type BatchResultLine,
  type GatewayContext,
  type Logger,
  type RecordQueue,
  type RequestCostService,
  type UsageRecord,
} from '../../api';
import { assembleRecord } from './record';

/**
 * Batch jobs, counted once. A batch created through the gateway is kept with the creating request's workspace, key
 * and tags; when its results pass through (OpenAI's output file, Anthropic's results), each answered line becomes a
 * record of its own at the provider's batch rates, attributed to that creation. A line's record id derives from
 * the batch id and the line's custom_id, and its time is the batch's creation, so results fetched twice are stored
 * once (the store skips an id it has). Results of a batch the gateway did not see created, or fetched elsewhere,
 * are left to reconciliation.
 */
export class BatchAccounting {
  constructor(
    private readonly jobs: BatchJobsService,
    private readonly cost: RequestCostService,
    private readonly queue: RecordQueue,
    private readonly log: Logger,
  ) {}

  /** After the request: keeps a batch created, notes the output file a retrieval named, records the results seen. */
  async complete(ctx: GatewayContext): Promise<void> {
    const role = ctx.endpoint?.batch;
    const provider = ctx.provider?.slug;
    if (!role || !provider || ctx.error || (ctx.status ?? 500) >= 400) return;
    try {
      const job = ctx.batchJob;
      if (role === 'create' && job) await this.jobs.save(createdJob(ctx, provider, job.id, job.outputFileId));
      else if (role === 'retrieve' && job?.outputFileId)
        await this.jobs.setOutputFile(provider, job.id, job.outputFileId);
      else if (role === 'results' && ctx.batchResults?.length) await this.record(provider, ctx);
    } catch (err) {
      this.log.warn(
        { err, requestId: ctx.requestId },
        'batch accounting failed; its results are left to reconciliation',
      );
    }
  }

  private async record(provider: string, ctx: GatewayContext): Promise<void> {
    // /v1/files/{id}/content and /v1/messages/batches/{id}/results: the id is the segment before the last.
    const segments = ctx.path.split('/');
    const job = await this.jobs.findByResults(provider, segments[segments.length - 2]);
    if (!job) return;
    for (const line of ctx.batchResults!) this.queue.enqueue(this.lineRecord(job, line));
  }

  private lineRecord(job: BatchJob, line: BatchResultLine): UsageRecord {
    // Every line of a batch is billed at the batch rates, whatever tier its answer names.
    const usage = line.usage && { ...line.usage, serviceTier: 'batch' };
    const priced = line.model ? this.cost.priceAnswer(job.provider, line.model, line.endpoint, usage) : undefined;
    const frame = {
      id: batchLineId(job, line.customId),
      ts: job.createdAt,
      workspaceId: job.workspaceId,
      keyId: job.keyId,
      provider: job.provider,
      model: line.model,
      endpoint: line.endpoint,
      status: 200,
      streamed: false,
      latencyMs: 0,
      ttfbMs: null,
      upstreamMs: null,
      tags: job.tags,
      errorCode: null,
      usageSource: usage ? ('provider' as const) : ('none' as const),
    };
    const provenance = !priced || priced.costPico === null ? 'unpriced' : priced.estimated ? 'estimated' : 'measured';
    return assembleRecord(frame, usage, priced, provenance, this.cost.prices.version);
  }
}

function createdJob(ctx: GatewayContext, provider: string, batchId: string, outputFileId?: string): BatchJob {
  return {
    provider,
    batchId,
    workspaceId: ctx.workspace?.id ?? null,
    keyId: ctx.keyId ?? null,
    tags: { ...ctx.tags },
    createdAt: ctx.startedAt,
    outputFileId: outputFileId ?? null,
  };
}

/** The record id of one line of a batch: the same line always gets the same id. */
function batchLineId(job: BatchJob, customId: string): string {
  const digest = createHash('sha256').update(`${job.provider}\0${job.batchId}\0${customId}`).digest('hex');
  return `batch_${digest.slice(0, 32)}`;
}
