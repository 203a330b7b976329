import {
  definePlugin,
  GatewayError,
  type GatewayContext,
  type GatewayPlugin,
  type WorkspaceLimitsService,
  UNTAGGED,
} from '../../api';

/**
 * A workspace may require tag keys (e.g. agent and feature). A request missing one is refused with a 400,
 * or, with missing_tags: record_untagged, recorded under an explicit "(untagged)" value.
 * Runs in beforeUpstream so that every onRequest tagger (attribution, other plugins) has run first.
 */
export class RequiredTagsPlugin implements GatewayPlugin {
  readonly name = 'required-tags';

  constructor(private readonly limits: WorkspaceLimitsService) {}

  beforeUpstream(ctx: GatewayContext): void {
    const l = this.limits.limitsOf(ctx);
    if (!l || l.required_tags.length === 0) return;
    const missing = l.required_tags.filter((k) => ctx.tags[k] === undefined);
    if (missing.length === 0) return;
    if (l.missing_tags === 'record_untagged') {
      for (const k of missing) ctx.tags[k] = UNTAGGED;
      return;
    }
    throw new GatewayError(
      'required_tag_missing',
      `Workspace "${ctx.workspace!.id}" requires the tag${missing.length > 1 ? 's' : ''} ${missing.join(', ')}: send X-Gateway-Metadata-${missing.map(headerName).join(' / X-Gateway-Metadata-')} or put ${missing.length > 1 ? 'them' : 'it'} in X-Gateway-Metadata.`,
      { param: 'X-Gateway-Metadata' },
    );
  }
}

const headerName = (key: string) =>
  key
    .split('_')
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join('-');

export const requiredTags = definePlugin({
  name: 'required-tags',
  requires: { plugins: ['auth'] },
  inject: { limits: 'WorkspaceLimits' },
  enforces: ['required_tags'],
  // Tags exist only once attribution's onRequest has run.
  order: { after: ['attribution'] },
  create: (_container, _options, { limits }) => new RequiredTagsPlugin(limits),
});
