import { definePlugin, GatewayError, z, type GatewayContext, type GatewayPlugin } from 'tollgate';
import { refusalReason, type ModelRule } from './model-rule';

/** A model pattern: an exact name or a prefix ending in a single trailing "*". */
const pattern = z
  .string()
  .min(1)
  .regex(/^[^*]+\*?$/, 'expected a model name, or a prefix ending in "*" (e.g. "claude-*")');
const rule = z.strictObject({ allow: z.array(pattern).optional(), deny: z.array(pattern).optional() });

const optionsSchema = z.strictObject({
  /** The rule of workspaces not listed under `workspaces` (default: everything allowed). */
  default: rule.default({}),
  /** Rules by workspace id; a workspace's rule replaces the default, it does not add to it. */
  workspaces: z.record(z.string().min(1), rule).default({}),
});

export type ModelPolicyOptions = z.output<typeof optionsSchema>;

/**
 * Allows or denies models per workspace. Runs in beforeUpstream, where the workspace (from auth) and the
 * model (from the body) are both known and nothing has been sent upstream yet; a refusal is a 403
 * policy_denied naming the model and the workspace. Requests without a model (GET /v1/models) pass.
 */
export class ModelPolicyPlugin implements GatewayPlugin {
  readonly name = 'model-policy';

  constructor(private readonly options: ModelPolicyOptions) {}

  beforeUpstream(ctx: GatewayContext): void {
    if (ctx.model === undefined) return;
    const workspace = ctx.workspace?.id ?? '';
    const rule: ModelRule = this.options.workspaces[workspace] ?? this.options.default;
    const reason = refusalReason(rule, ctx.model);
    if (reason) {
      throw new GatewayError(
        'policy_denied',
        `Model "${ctx.model}" is not allowed for workspace "${workspace}": ${reason}.`,
        { param: 'model' },
      );
    }
  }
}

export default definePlugin({
  name: 'model-policy',
  apiVersion: '2',
  // A denied model takes no budget reservation.
  order: { before: ['budget'] },
  optionsSchema,
  create: (_container, options) => new ModelPolicyPlugin(options),
});
