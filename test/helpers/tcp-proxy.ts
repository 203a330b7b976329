import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay on loopback in front of a real server (PostgreSQL in the reliability suites), so a test can make
 * that server unreachable, slow or "restarted" without touching the server itself:
 *   cut()      drops every open connection and refuses new ones (accepted, then closed at once)
 *   restore()  relays again
 *   delay(ms)  holds every chunk, both ways, for `ms` before passing it on (order kept)
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly pairs = new Set<[Socket, Socket]>();
  private down = false;
  private delayMs = 0;
  /** Connections accepted while down (each closed at once). */
  refused = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<string> {
    this.server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `127.0.0.1:${this.port}`;
  }

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  /** Open relayed connections. */
  get connections(): number {
    return this.pairs.size;
  }

  cut(): void {
    this.down = true;
    for (const [a, b] of this.pairs) {
      a.destroy();
      b.destroy();
    }
    this.pairs.clear();
  }

  restore(): void {
    this.down = false;
    this.delayMs = 0;
  }

  delay(ms: number): void {
    this.delayMs = ms;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return; // never started
    this.cut();
    await new Promise((resolve) => server.close(resolve));
  }

  private accept(client: Socket): void {
    if (this.down) {
      this.refused++;
      client.destroy();
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
    const pair: [Socket, Socket] = [client, upstream];
    this.pairs.add(pair);
    const close = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      let chain = Promise.resolve();
      let held = 0; // chunks waiting in the chain: later chunks queue behind them, so order is kept
      from.on('data', (chunk: Buffer) => {
        if (this.delayMs === 0 && held === 0) {
          to.write(chunk);
          return;
        }
        const wait = this.delayMs;
        held++;
        chain = chain.then(
          () =>
            new Promise<void>((r) =>
              setTimeout(() => {
                held--;
                if (!to.destroyed) to.write(chunk);
                r();
              }, wait),
            ),
        );
      });
      from.on('error', close);
      from.on('close', close);
    }
  }
}

/**
 * A started relay in front of the PostgreSQL at `pgUrl`, and the `storage:` line that points a test gateway at it,
 * in a schema of its own (named from `schemaPrefix`), so the test can cut the store under a running gateway.
 */
export async function postgresThroughRelay(
  pgUrl: string,
  schemaPrefix: string,
): Promise<{ relay: TcpProxy; schema: string; storageYaml: string }> {
  const target = new URL(pgUrl);
  const relay = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  await relay.start();
  target.host = `127.0.0.1:${relay.port}`;
  const schema = `${schemaPrefix}_${process.pid}_${Date.now().toString(36)}`;
  return { relay, schema, storageYaml: `storage: { url: "${target.toString()}", schema: ${schema} }` };
}
