import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import Redis from 'ioredis';
import { waitFor } from './wait';

/** True when a redis-server binary is installed (tests that stop or kill a private server need one). */
export const HAS_REDIS_SERVER = !spawnSync('redis-server', ['--version']).error;

/** A loopback port nothing listens on (free for a server the test starts next). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A throwaway redis-server on a loopback port, without persistence; the caller kills it by its handle. */
export async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined); // refused until the server listens
  try {
    await waitFor(async () => {
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG';
      } catch {
        probe.disconnect();
        return false;
      }
    }, 5_000);
  } finally {
    probe.disconnect();
  }
  return child;
}
