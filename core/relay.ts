import type { ServerResponse } from 'node:http';
import { bodyHeld } from './body-memory';
import type { GatewayContext } from './context';
import { asGatewayError, GatewayError } from './errors';
import { forwardableResponseHeaders, headerValue } from './headers';
import type { InFlight } from './in-flight';
import { LineTap } from './line-tap';
import { withGatewayHeaders } from './own-answers';
import type { PluginPipeline } from './plugin-pipeline';
import { decodeBody } from './response-body';
import { StreamTap } from './stream-tap';
import { upstreamFailure } from './upstream';
import type { UpstreamExchange } from './upstream-exchange';
import type { SseEvent } from './usage';

/** application/json, or a +json type such as application/problem+json. */
function isJsonDocument(contentType: string): boolean {
  return contentType.startsWith('application/json') || contentType.includes('+json');
}

/**
 * Relays the provider's answer to the client, onResponse first: a batch's results and every stream chunk by chunk as
 * they arrive (watched on the side for usage), a JSON document whole. The status, headers and bytes go out untouched.
 */
export async function relayAnswer(flight: InFlight, pipeline: PluginPipeline): Promise<void> {
  const { gw, res, endpoint, upstream } = flight;
  const provider = gw.provider!;
  const contentType = (headerValue(upstream.headers, 'content-type') ?? '').toLowerCase();
  const batches = provider.usage.batches;
  if (endpoint.batch === 'results' && batches && upstream.statusCode < 400) {
    // A batch's results are JSON Lines, whatever their type says: relayed as they come, read line by line.
    const lines = (flight.lines = new LineTap(batches, headerValue(upstream.headers, 'content-encoding')));
    return relayStream(gw, res, upstream, pipeline, (chunk) => lines.push(chunk));
  }
  if (isJsonDocument(contentType)) {
    // A JSON document is relayed whole (its usage read), also when a stream was asked for and the provider
    // answered with one; JSON Lines (application/x-ndjson) and SSE are streams.
    return relayWhole(gw, res, upstream, pipeline);
  }
  if (contentType.startsWith('text/event-stream') && upstream.statusCode < 400) {
    gw.stream = true; // also when asked with another field than `stream` (audio.speech: stream_format "sse")
    const observe = pipeline.observesStreams ? (e: SseEvent) => pipeline.streamEvent(gw, e) : undefined;
    flight.tap = new StreamTap(
      provider.usage.createStreamAccumulator(endpoint.key),
      headerValue(upstream.headers, 'content-encoding'),
      observe,
    );
  }
  const tap = flight.tap;
  return relayStream(gw, res, upstream, pipeline, tap && ((chunk) => tap.push(chunk)));
}

/**
 * A non-streamed JSON answer: read it whole (usage and cost can then go into headers), send it unchanged. While
 * it is held it is reported to the memory policy, as a request body is.
 */
async function relayWhole(
  gw: GatewayContext,
  res: ServerResponse,
  upstream: UpstreamExchange,
  pipeline: PluginPipeline,
): Promise<void> {
  const held = bodyHeld(Number(headerValue(upstream.headers, 'content-length')));
  try {
    let body: Buffer;
    try {
      body = await upstream.readAll();
    } catch (err) {
      throw upstreamFailure(err, gw.provider!.slug);
    } finally {
      gw.upstreamDoneMs = gw.elapsedMs();
    }
    gw.responseBody = body;
    if (upstream.statusCode < 400) {
      let parsed = decodeBody(body, headerValue(upstream.headers, 'content-encoding'));
      if (parsed instanceof Promise) parsed = await parsed;
      if (parsed !== undefined) gw.usage = gw.provider!.usage.fromJson(gw.endpoint!.key, parsed);
      if (parsed !== undefined && gw.endpoint!.batch) gw.batchJob = gw.provider!.usage.batches?.job(parsed);
    }
    const pending = pipeline.run('onResponse', gw);
    if (pending) await pending;
    res.writeHead(upstream.statusCode, withGatewayHeaders(gw, forwardableResponseHeaders(upstream.headers)));
    res.end(body);
  } finally {
    held?.();
  }
}

/** Anything else (SSE, audio bytes, errors with odd types): piped chunk by chunk as it arrives. */
async function relayStream(
  gw: GatewayContext,
  res: ServerResponse,
  upstream: UpstreamExchange,
  pipeline: PluginPipeline,
  watch: ((chunk: Buffer) => void) | undefined,
): Promise<void> {
  try {
    const pending = pipeline.run('onResponse', gw);
    if (pending) await pending;
  } catch (err) {
    upstream.cancel(asGatewayError(err)); // the answer is refused: stop reading it
    throw err;
  }
  res.writeHead(upstream.statusCode, withGatewayHeaders(gw, forwardableResponseHeaders(upstream.headers)));
  try {
    await upstream.relayTo(res, watch);
  } catch (err) {
    gw.streamCut = true;
    // Headers are out: the client sees the stream end early (the socket is cut); the record says why.
    res.destroy();
    gw.error = upstream.cancelled
      ? new GatewayError('request_aborted', 'The client disconnected mid-stream')
      : upstreamFailure(err, gw.provider!.slug);
  } finally {
    gw.upstreamDoneMs = gw.elapsedMs();
  }
}
