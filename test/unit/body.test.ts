import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { expect } from 'chai';
import { request } from 'undici';
import { receiveBody } from '../../intake/body';

/**
 * receiveBody hands each chunk of a request to a sink (memory, the upload spool). A sink that throws must fail
 * that request only: the throw happens inside the request's 'data' event, where it would end the process.
 */
describe('receiveBody', () => {
  let server: Server;
  let url: string;
  let outcome: Promise<unknown>;

  before(async () => {
    server = createServer((req, res) => {
      outcome = receiveBody(req, 64 * 1024 * 1024, () => {
        let chunks = 0;
        return {
          write() {
            if (++chunks === 2) throw new Error('sink broke on its second chunk');
            return true;
          },
          end: () => 'ended',
          abort: () => undefined,
        };
      });
      outcome.then(
        () => res.end('ok'),
        (err: Error) => res.writeHead(500).end(err.message),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => new Promise((resolve) => server.close(resolve)));

  it('a sink that throws fails its request with that error; the process and the next request carry on', async () => {
    const body = async function* () {
      for (let i = 0; i < 4; i++) yield Buffer.alloc(64 * 1024, i);
    };
    const res = await request(url, { method: 'POST', body: Readable.from(body()) });
    expect(res.statusCode).to.equal(500);
    expect(await res.body.text()).to.equal('sink broke on its second chunk');
    await outcome.catch(() => undefined);

    const next = await request(url, { method: 'POST', body: 'small' });
    expect(next.statusCode).to.equal(200);
    expect(await next.body.text()).to.equal('ok');
  });
});
