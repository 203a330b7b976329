import { DecoratorHandler, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';

/**
 * Watches answers read through undici's global dispatcher (undici's request() and the tests' clients): the root
 * hooks use it to collect the gateway keys that POST /api/keys hands out and to check every admin answer against
 * the OpenAPI document. An answer passes unchanged, unless the observer returns an error for it: then reading its
 * body fails with that error, in the test that reads it.
 */
export interface ObservedAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** undici's DecoratorHandler (what its own interceptors extend): its typings only list the older handler methods. */
interface ResponseHandler {
  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: any,
    statusMessage?: string,
  ): void;
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void;
  onResponseEnd(controller: Dispatcher.DispatchController, trailers: any): void;
  onResponseError(controller: Dispatcher.DispatchController, error: Error): void;
}
const Decorator = DecoratorHandler as unknown as new (
  handler: Dispatcher.DispatchHandler,
) => ResponseHandler & Dispatcher.DispatchHandler;

/** Keeps the answer as it passes, unchanged, and hands it over once complete. */
class Observer extends Decorator {
  private status = 0;
  private headers: ObservedAnswer['headers'] = {};
  private readonly chunks: Buffer[] = [];

  constructor(
    handler: Dispatcher.DispatchHandler,
    private readonly done: (answer: ObservedAnswer) => Error | void,
  ) {
    super(handler);
  }

  override onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: any,
    statusMessage?: string,
  ): void {
    this.status = statusCode;
    this.headers = headers ?? {};
    return super.onResponseStart(controller, statusCode, headers, statusMessage);
  }

  override onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(Buffer.from(chunk));
    return super.onResponseData(controller, chunk);
  }

  override onResponseEnd(controller: Dispatcher.DispatchController, trailers: any): void {
    const refused = this.done({
      status: this.status,
      headers: this.headers,
      body: Buffer.concat(this.chunks).toString('utf8'),
    });
    if (refused) return super.onResponseError(controller, refused);
    return super.onResponseEnd(controller, trailers);
  }
}

/** From now on, every complete answer to a request that `wanted` picks is passed to `onAnswer`; an error it returns fails the answer's body. */
export function observeAnswers(
  wanted: (opts: Dispatcher.DispatchOptions) => boolean,
  onAnswer: (opts: Dispatcher.DispatchOptions, answer: ObservedAnswer) => Error | void,
): void {
  setGlobalDispatcher(
    getGlobalDispatcher().compose(
      (dispatch) => (opts, handler) =>
        dispatch(opts, wanted(opts) ? new Observer(handler, (answer) => onAnswer(opts, answer)) : handler),
    ),
  );
}
