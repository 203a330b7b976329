/**
 * What the data plane reports about the bodies it holds and relays, so that a memory policy can act on it
 * (the runtime installs one: runtime/memory-policy.ts). Without one, the reports cost a call that does nothing.
 */
export interface BodyMemoryObserver {
  /** A body of `bytes` (NaN when unknown) is about to be held whole in memory; returns its release, if any. */
  bodyHeld(bytes: number): (() => void) | undefined;
  /** An upload is received whole into a spool file; returns its release (safe to call more than once). */
  bodySpooled(): () => void;
  /** `bytes` of a body were relayed as they arrived (their buffers are garbage once written). */
  bodyRelayed(bytes: number): void;
}

const nothing = () => undefined;
const IGNORED: BodyMemoryObserver = { bodyHeld: nothing, bodySpooled: () => nothing, bodyRelayed: nothing };

let observer: BodyMemoryObserver = IGNORED;

/** Installs the process-wide observer (memory policy is process-wide: V8's heap is). */
export function observeBodyMemory(next: BodyMemoryObserver): void {
  observer = next;
}

export function bodyHeld(bytes: number): (() => void) | undefined {
  return observer.bodyHeld(bytes);
}

export function bodySpooled(): () => void {
  return observer.bodySpooled();
}

export function bodyRelayed(bytes: number): void {
  observer.bodyRelayed(bytes);
}

/**
 * The bound on request-body bytes held in memory across the requests in flight (server.max_buffered_bytes), given
 * to the proxy by the runtime (runtime/memory-policy.ts). A body is reserved before it is read into memory and
 * released once its request is over (core/body-intake.ts): an integer add and a subtraction per request.
 */
export interface BodyMemoryBudget {
  /** Reserves `bytes` more; false, reserving nothing, when that would pass the bound. */
  reserve(bytes: number): boolean;
  /** Returns `bytes` reserved earlier. */
  release(bytes: number): void;
}

/**
 * A JSON body counts twice against the budget: its bytes, and its parsed form (the context's json), kept for routing
 * and plugins while the request is in flight and about as large for text. A form's plain fields are small: its
 * bytes count once.
 */
export const JSON_BODY_COPIES = 2;
