import { definePlugin, fromText, z, type GatewayContext, type GatewayPlugin, type RequestCostService } from 'tollgate';
import { BatchSender } from './batch-sender';
import { summarize, type UsageSummary } from './summary';

const optionsSchema = z.strictObject({
  /** Where the batches are POSTed. */
  url: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }),
  /** Extra request headers, e.g. { authorization: "Bearer ${WEBHOOK_TOKEN}" } for the receiver. */
  headers: z.record(z.string().min(1), z.string()).default({}),
  batch_size: fromText(z.number().int().min(1).max(10_000)).default(100),
  flush_interval_ms: fromText(z.number().int().min(10)).default(1000),
  timeout_ms: fromText(z.number().int().min(100)).default(5000),
  /** Summaries kept while the receiver is down; beyond this the oldest are dropped. */
  max_queue: fromText(z.number().int().min(1)).default(10_000),
});

/**
 * Exports a summary of every completed request (ids, model, tokens, cost, tags; never keys or bodies) to an
 * HTTP endpoint, batched. onComplete runs after the client got its answer and only enqueues, so the export
 * never delays a request; shutdown sends what is still queued.
 */
export class UsageWebhookPlugin implements GatewayPlugin {
  readonly name = 'usage-webhook';

  constructor(
    private readonly sender: BatchSender<UsageSummary>,
    private readonly cost: RequestCostService,
  ) {}

  onComplete(ctx: GatewayContext): void {
    this.sender.enqueue(summarize(ctx, ctx.usage ? this.cost.of(ctx) : undefined));
  }

  close(): Promise<void> {
    return this.sender.close();
  }
}

export default definePlugin({
  name: 'usage-webhook',
  apiVersion: '2',
  inject: { log: 'Logger', cost: 'RequestCost' },
  optionsSchema,
  create(_container, o, { log, cost }) {
    const sender = new BatchSender<UsageSummary>(
      {
        url: o.url,
        headers: o.headers,
        batchSize: o.batch_size,
        flushIntervalMs: o.flush_interval_ms,
        timeoutMs: o.timeout_ms,
        maxQueue: o.max_queue,
      },
      log,
    );
    return new UsageWebhookPlugin(sender, cost);
  },
});
