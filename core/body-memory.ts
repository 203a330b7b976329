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
 * Whose body it is: the workspace and key of the request's gateway key (auth runs before the body is read), both
 * undefined when the request carries none (no auth plugin).
 */
export interface BodyOwner {
  workspace: string | undefined;
  key: string | undefined;
}

/** The bound a refused reservation would have passed: the whole, or the owner's workspace or key share. */
export type BufferedBound = 'max_buffered_bytes' | 'workspace_buffered_bytes' | 'key_buffered_bytes';

/**
 * The bound on request-body bytes held in memory across the requests in flight (server.max_buffered_bytes), and
 * each workspace's and key's share of it, given to the proxy by the runtime (runtime/buffered-body-cap.ts). A body
 * is reserved before it is read into memory and released once its request is over (intake/body-intake.ts).
 */
export interface BodyMemoryBudget {
  /** Reserves `bytes` more for `owner`; the bound it would pass (reserving nothing), or undefined once reserved. */
  reserve(bytes: number, owner: BodyOwner): BufferedBound | undefined;
  /** Returns `bytes` reserved earlier for `owner`. */
  release(bytes: number, owner: BodyOwner): void;
}

/**
 * A JSON body counts twice against the budget: its bytes, and its parsed form (the context's json), kept for routing
 * and plugins while the request is in flight and about as large for text. A form's plain fields are small: its
 * bytes count once.
 */
export const JSON_BODY_COPIES = 2;
