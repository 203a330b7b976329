import { expect } from 'chai';
import {
  forwardableRequestHeaders,
  forwardableResponseHeaders,
  headerValue,
  upstreamHeadersOf,
} from '../../core/headers';
import { createPluginHarness, createTestContext } from '../../testing';
import { headerStrip } from '../../plugins/header-strip';

/** What forwardableRequestHeaders copies for the upstream from a request's headers (as Node gives them: lower-case). */
function forwarded(
  headers: Record<string, string | string[] | undefined>,
  exclude: string[] = [],
): Record<string, string | string[]> {
  const into: Record<string, string | string[]> = {};
  forwardableRequestHeaders(headers, into, exclude);
  return into;
}

describe('header handling', () => {
  describe('request headers for the upstream', () => {
    it('leaves out every hop-by-hop header and the ones the HTTP client recomputes, keeping the rest verbatim', () => {
      const hopByHop = {
        connection: 'keep-alive',
        'keep-alive': 'timeout=5',
        'proxy-connection': 'keep-alive',
        'proxy-authenticate': 'Basic',
        'proxy-authorization': 'Basic dXNlcjpwYXNz',
        te: 'trailers',
        trailer: 'x-checksum',
        'transfer-encoding': 'chunked',
        upgrade: 'websocket',
        host: 'gateway.example',
        'content-length': '42',
        expect: '100-continue',
      };
      const kept = {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        'openai-beta': 'assistants=v2',
        'x-trace': 'a b  c',
      };
      expect(forwarded({ ...hopByHop, ...kept })).to.deep.equal(kept);
    });

    it('leaves out the excluded names (the provider key headers and the gateway key)', () => {
      const headers = {
        authorization: 'Bearer sk-1',
        'x-api-key': 'sk-ant-1',
        'x-gateway-key': 'tg_1',
        'anthropic-version': '2023-06-01',
      };
      expect(forwarded(headers, ['authorization', 'x-api-key', 'x-gateway-key'])).to.deep.equal({
        'anthropic-version': '2023-06-01',
      });
      expect(forwarded(headers, ['x-gateway-key'])).to.deep.equal({
        authorization: 'Bearer sk-1',
        'x-api-key': 'sk-ant-1',
        'anthropic-version': '2023-06-01',
      });
    });

    it('leaves out the headers a Connection header names, in any case and spacing, from a string or a list', () => {
      const headers = { 'x-hop': '1', 'x-other-hop': '2', 'x-end-to-end': '3' };
      expect(forwarded({ connection: 'X-Hop , x-OTHER-hop', ...headers })).to.deep.equal({ 'x-end-to-end': '3' });
      expect(forwarded({ connection: ['x-hop', 'x-other-hop'], ...headers })).to.deep.equal({ 'x-end-to-end': '3' });
      expect(forwarded({ connection: 'x-hop,,', ...headers })).to.deep.equal({
        'x-other-hop': '2',
        'x-end-to-end': '3',
      });
      // A Connection value naming nothing leaves everything end-to-end in place.
      expect(forwarded({ connection: ' , ', ...headers })).to.deep.equal(headers);
      expect(forwarded({ connection: 'close', ...headers })).to.deep.equal(headers);
      expect(forwarded({ connection: '', ...headers })).to.deep.equal(headers);
    });

    it('copies a repeated header as the list it came as, and skips an absent value', () => {
      expect(forwarded({ 'x-list': ['a', 'b'], 'x-absent': undefined })).to.deep.equal({ 'x-list': ['a', 'b'] });
    });
  });

  describe('the headers of the upstream call, after the plugins ran', () => {
    it('drops every X-Gateway-* header a plugin set, in any case, and a provider key header a plugin added', () => {
      const edited = {
        'X-Gateway-Key': 'tg_planted',
        'x-gateway-metadata-customer': 'acme',
        'X-GATEWAY-PROVIDER': 'openai',
        Authorization: 'Bearer plugin-set',
        'x-api-key': 'plugin-set',
        'Content-Type': 'application/json',
        'x-gateway': 'not the prefix',
        'x-gatewayed-by': 'not the prefix either',
        'openai-organization': 'org-1',
      };
      expect(upstreamHeadersOf(edited, ['authorization'])).to.deep.equal({
        'x-api-key': 'plugin-set',
        'Content-Type': 'application/json',
        'x-gateway': 'not the prefix',
        'x-gatewayed-by': 'not the prefix either',
        'openai-organization': 'org-1',
      });
      expect(upstreamHeadersOf(edited, ['x-api-key'])).to.deep.equal({
        Authorization: 'Bearer plugin-set',
        'Content-Type': 'application/json',
        'x-gateway': 'not the prefix',
        'x-gatewayed-by': 'not the prefix either',
        'openai-organization': 'org-1',
      });
    });

    it("returns a copy: the plugins' object is left as it was", () => {
      const edited = { 'x-gateway-key': 'tg_1', accept: 'application/json' };
      const headers = upstreamHeadersOf(edited, []);
      headers.extra = 'x';
      expect(edited).to.deep.equal({ 'x-gateway-key': 'tg_1', accept: 'application/json' });
      expect(headers).to.deep.equal({ accept: 'application/json', extra: 'x' });
    });
  });

  describe('response headers for the client', () => {
    it('leaves out the framing headers and the ones Connection names, keeping content-length and the rest', () => {
      const upstream = {
        connection: 'keep-alive, x-upstream-hop',
        'keep-alive': 'timeout=5',
        'proxy-connection': 'keep-alive',
        'transfer-encoding': 'chunked',
        upgrade: 'h2c',
        trailer: 'x-checksum',
        te: 'trailers',
        'x-upstream-hop': '1',
        'content-type': 'application/json',
        'content-length': '17',
        'x-request-id': 'req_1',
        'set-cookie': ['a=1', 'b=2'],
        'x-absent': undefined,
      };
      expect(forwardableResponseHeaders(upstream)).to.deep.equal({
        'content-type': 'application/json',
        'content-length': '17',
        'x-request-id': 'req_1',
        'set-cookie': ['a=1', 'b=2'],
      });
    });

    it('leaves out Keep-Alive and the other framing headers also when Connection does not name them', () => {
      const upstream = {
        'keep-alive': 'timeout=5',
        'transfer-encoding': 'chunked',
        'proxy-connection': 'close',
        upgrade: 'h2c',
        trailer: 'x',
        te: 'trailers',
        'content-type': 'text/event-stream',
      };
      expect(forwardableResponseHeaders(upstream)).to.deep.equal({ 'content-type': 'text/event-stream' });
    });

    it('keeps the headers a request would drop but a response may carry (host, expect, proxy-authenticate)', () => {
      const upstream = {
        host: 'api.example',
        expect: '100-continue',
        'proxy-authenticate': 'Basic',
        connection: 'close',
      };
      expect(forwardableResponseHeaders(upstream)).to.deep.equal({
        host: 'api.example',
        expect: '100-continue',
        'proxy-authenticate': 'Basic',
      });
    });
  });

  it('headerValue reads the first value of a repeated header', () => {
    expect(headerValue({ 'content-type': ['text/event-stream', 'application/json'] }, 'content-type')).to.equal(
      'text/event-stream',
    );
    expect(headerValue({ 'content-type': 'application/json' }, 'content-type')).to.equal('application/json');
    expect(headerValue({}, 'content-type')).to.equal(undefined);
  });

  describe('header-strip plugin', () => {
    it('removes every X-Gateway-* header before the upstream call and keeps the rest', async () => {
      const harness = await createPluginHarness(headerStrip);
      const ctx = createTestContext({
        model: 'gpt-4o-mini',
        headers: {
          'x-gateway-metadata-customer-id': 'acme',
          'x-gateway-provider': 'openai',
          'x-trace': 't-1',
          cookie: 'session=1',
          'content-type': 'application/json',
        },
      });
      await harness.run('beforeUpstream', ctx);
      expect(ctx.upstreamHeaders).to.deep.equal({
        'x-trace': 't-1',
        cookie: 'session=1',
        'content-type': 'application/json',
      });
    });

    it('also removes the headers listed in remove:, named in any case', async () => {
      const harness = await createPluginHarness(headerStrip, { options: { remove: ['Cookie', 'X-Forwarded-For'] } });
      const ctx = createTestContext({
        model: 'gpt-4o-mini',
        headers: {
          cookie: 'session=1',
          'x-forwarded-for': '10.0.0.1',
          'x-gateway-metadata-agent': 'bot',
          'x-forwarded-proto': 'https',
          accept: 'application/json',
        },
      });
      await harness.run('beforeUpstream', ctx);
      expect(ctx.upstreamHeaders).to.deep.equal({ 'x-forwarded-proto': 'https', accept: 'application/json' });
    });

    it('is named header-strip', async () => {
      expect(headerStrip.name).to.equal('header-strip');
      expect((await createPluginHarness(headerStrip)).plugin.name).to.equal('header-strip');
    });

    it('refuses a remove: entry that is empty', async () => {
      let error: Error | undefined;
      await createPluginHarness(headerStrip, { options: { remove: [''] } }).catch((err: Error) => (error = err));
      expect(error?.message).to.match(/remove/);
    });
  });
});
