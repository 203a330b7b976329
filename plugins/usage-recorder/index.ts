import { isAbsolute, resolve } from 'node:path';
import {
  definePlugin,
  formatUsd,
  fromText,
  z,
  type GatewayContext,
  type GatewayPlugin,
  type Logger,
  type RecordQueue,
  type RequestCostService,
  type UsageStoreService,
} from '../../api';
import { BatchAccounting } from './batch-results';
import { buildRecord } from './record';

export const COST_HEADER = 'x-gateway-cost';

const optionsSchema = z
  .strictObject({
    /** Records per write; a batch is also written every flush_interval_ms. */
    batch_size: fromText(z.number().int().min(1).max(10_000)).default(500),
    flush_interval_ms: fromText(z.number().int().min(10)).default(1000),
    /** Records kept in memory while the store is slow or down; beyond this they go to the spill file. */
    max_in_memory: fromText(z.number().int().min(1)).default(10_000),
    /** Append-only file that holds records the store could not take yet (relative to the config file). */
    spill_path: z.string().default('./data/usage-spill.jsonl'),
    /** Send the request's cost (USD, or "unknown") in an x-gateway-cost header on non-streamed responses. */
    cost_header: fromText(z.boolean()).default(true),
  })
  .prefault({});

type Options = z.output<typeof optionsSchema>;

/**
 * Prices every request and records it. Writes go through a queue (batched, retried, spilled to disk when the
 * store is down), so a slow store never slows a request; shutdown drains the queue.
 */
export class UsageRecorderPlugin implements GatewayPlugin {
  readonly name = 'usage-recorder';

  constructor(
    private readonly cost: RequestCostService,
    private readonly queue: RecordQueue,
    private readonly options: Options,
    private readonly batches?: BatchAccounting,
  ) {}

  /**
   * A non-streamed answer (its body was read whole: ctx.responseBody) has its cost before the client gets it,
   * so it travels in a header: the exact USD amount, or `unknown` when the model has no price or the answer
   * reported no usage (never a made-up $0). No header on streams (the cost is known after the last byte),
   * on error answers, or on endpoints not counted toward cost (audio, images).
   */
  onResponse(ctx: GatewayContext): void {
    if (!this.options.cost_header || ctx.responseBody === undefined || !ctx.endpoint?.costCounted) return;
    if (ctx.status === undefined || ctx.status >= 400) return;
    const priced = this.cost.of(ctx);
    ctx.responseHeaders[COST_HEADER] = priced.costPico === null ? 'unknown' : formatUsd(priced.costPico);
  }

  onComplete(ctx: GatewayContext): Promise<void> | undefined {
    const priced = ctx.usage ? this.cost.of(ctx) : undefined;
    this.queue.enqueue(buildRecord(ctx, priced, priced?.priceVersion ?? this.cost.prices.version));
    return ctx.endpoint?.batch ? this.batches?.complete(ctx) : undefined;
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

export const usageRecorder = definePlugin({
  name: 'usage-recorder',
  inject: {
    queues: 'RecordQueues',
    cost: 'RequestCost',
    configDir: 'ConfigDir',
    processFilePath: 'ProcessFilePath',
    store: 'UsageStore',
    log: 'Logger',
  },
  optionsSchema,
  create(_container, options, { queues, cost, configDir, processFilePath, store, log }) {
    // Multi-core mode: each worker process has its own spill file.
    const spillPath = processFilePath(
      isAbsolute(options.spill_path) ? options.spill_path : resolve(configDir, options.spill_path),
    );
    const queue = queues.open({
      spillPath,
      batchSize: options.batch_size,
      flushIntervalMs: options.flush_interval_ms,
      maxInMemory: options.max_in_memory,
    });
    const jobs = (store as UsageStoreService | undefined)?.batchJobs?.();
    return new UsageRecorderPlugin(cost, queue, options, jobs && new BatchAccounting(jobs, cost, queue, log as Logger));
  },
});
