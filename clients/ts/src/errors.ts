/**
 * The errors a client hands to the app. Every one is an Error with a stable
 * `name`, so that code which cannot use `instanceof` (several copies of the
 * package, errors crossing realms) can still tell them apart.
 */

/** An error frame from the gateway: the request's one answer was a failure. */
export class ShieldError extends Error {
  override readonly name = 'ShieldError';
  /** The gateway's or the service's code, e.g. `client_rpc.busy` or `auth.bad_request`. */
  readonly code: string;
  /** The route_id of the request (0 when the call named its route by name and the gateway did not say). */
  readonly routeId: number;
  /**
   * The error's retry_after_ms, when it has one: wait this long before
   * trying again (`client_rpc.draining`; `client_rpc.busy` and
   * `client_rpc.rate_limited` from a gateway with `session.retry_hints`).
   */
  readonly retryAfterMs: number | undefined;

  constructor(code: string, message: string, routeId = 0, retryAfterMs?: number) {
    super(message);
    this.code = code;
    this.routeId = routeId;
    this.retryAfterMs = retryAfterMs;
  }
}

/** A call that got no answer within its timeout, or a connect, resume or heartbeat that took too long. */
export class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
  readonly code = 'client.timeout';
}

/** A call whose AbortSignal fired; `cause` is the signal's reason. */
export class AbortError extends Error {
  override readonly name = 'AbortError';
  readonly code = 'client.aborted';

  constructor(message = 'the operation was aborted', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A notice as the gateway sent it just before it closed the session. */
export interface Notice {
  code: string;
  message: string;
  /** When to connect again, if the notice says (a drained session's `gateway.draining`). */
  retry_after_ms?: number;
}

/**
 * The connection is not open: it closed (the gateway closed it, it broke, the
 * app closed it) while a call was pending, or a call was made while the client
 * was reconnecting or closed. `cause` is why the connection ended, when known;
 * `notice` is the gateway's notice when one came first.
 */
export class ClosedError extends Error {
  override readonly name = 'ClosedError';
  readonly code = 'client.closed';
  readonly notice: Notice | undefined;

  constructor(message: string, options?: { cause?: unknown; notice?: Notice }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.notice = options?.notice;
  }
}

/**
 * Why a frame from the gateway could not be read. The reasons are SPEC §3's
 * (the labels of shield_protocol_errors_total) plus `websocket` for a
 * violation of RFC 6455 itself.
 */
export type ProtocolReason =
  | 'bad_version'
  | 'too_large'
  | 'too_short'
  | 'bad_system_frame'
  | 'bad_type'
  | 'bad_wrapper'
  | 'truncated'
  | 'websocket';

/**
 * A malformed frame from the gateway (or a broken WebSocket). The client
 * closes the connection, does not reconnect, and passes this error to the
 * close handlers.
 */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  readonly code = 'client.protocol_error';
  readonly reason: ProtocolReason;

  constructor(reason: ProtocolReason, message: string) {
    super(`${reason}: ${message}`);
    this.reason = reason;
  }
}

/** A WebSocket upgrade the gateway answered with an HTTP status other than 101 (403: Origin refused, 404: wrong path). */
export class UpgradeError extends Error {
  override readonly name = 'UpgradeError';
  readonly code = 'client.upgrade_refused';
  readonly status: number;

  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}
