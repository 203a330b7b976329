/** One model the gateway can route, as listed by GET /v1/models in catalog mode. */
export interface CatalogModel {
  id: string;
  provider: string;
  /** Unix seconds. */
  created: number;
  displayName?: string;
}

/**
 * The gateway's own model catalog (GET /v1/models without X-Gateway-Provider). Both shapes are serialised
 * once at start-up: the OpenAI list, and the messages-style list chosen by a version or beta header.
 */
export class ModelCatalog {
  readonly openaiShape: Buffer;
  readonly messagesShape: Buffer;

  constructor(models: readonly CatalogModel[]) {
    const sorted = [...models].sort((a, b) => a.provider.localeCompare(b.provider) || a.id.localeCompare(b.id));
    this.openaiShape = Buffer.from(
      JSON.stringify({
        object: 'list',
        data: sorted.map((m) => ({ id: m.id, object: 'model', created: m.created, owned_by: m.provider })),
      }),
    );
    const data = sorted.map((m) => ({
      type: 'model',
      id: m.id,
      display_name: m.displayName ?? m.id,
      created_at: new Date(m.created * 1000).toISOString().replace('.000Z', 'Z'),
    }));
    this.messagesShape = Buffer.from(
      JSON.stringify({ data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null }),
    );
  }

  /**
   * The list in the shape the request asks for (the proxy's modelList): the messages-style shape when it carries a
   * messages-style version or beta header, as Anthropic's SDKs send them.
   */
  answerFor(header: (name: string) => string | undefined): Buffer {
    const messages = ['anthropic-version', 'anthropic-beta', 'alt-version', 'alt-beta'].some(
      (h) => header(h) !== undefined,
    );
    return messages ? this.messagesShape : this.openaiShape;
  }
}
