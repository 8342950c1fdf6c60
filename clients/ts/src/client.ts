/**
 * The client: calls paired with their answers, notifies, pushes, notices and
 * status frames, heartbeats, and reconnect with session resume (SPEC §4).
 * It knows nothing of sockets: a Dialer (transport.ts) opens connections.
 */
import {
  decodeMessage,
  encodeMessage,
  isLegacy,
  frameMessage,
  maxRequestId,
  StreamDecoder,
  utf8,
  fromUtf8,
  type EnvelopeName,
  type InBody,
  type InFrame,
  type OutBody,
  type OutFrame,
  ENVELOPES,
} from './envelope.js';
import { AbortError, ClosedError, ProtocolError, ShieldError, TimeoutError, type Notice } from './errors.js';
import type { Conn, ConnEvents, Dialer } from './transport.js';
import { attachRoom, isRoomStatePush, type Room, type RoomHooks } from './room.js';

/**
 * How response and push bodies reach the app. `json`: parsed JSON, or the
 * body as a string when it is not JSON (the gateway's json codec falls back
 * the same way), undefined when empty. `raw`: the bytes (Uint8Array).
 */
export type BodyMode = 'json' | 'raw';

/** Reconnect policy: exponential backoff with jitter. */
export interface ReconnectOptions {
  /** The first delay in ms, doubled after each failed attempt. Default 250. */
  baseMs?: number;
  /** The largest delay in ms. Default 10000. */
  maxMs?: number;
  /** Attempts after one drop before the client gives up and closes; Infinity: never. Default 10. */
  attempts?: number;
  /** The part of each delay (0..1) taken off at random. Default 0.5: a delay of d waits d/2..d. */
  jitter?: number;
}

export interface ClientOptions {
  /** The listener's `protocol.envelope`. Default `idlen`. */
  envelope?: EnvelopeName;
  /** How bodies from the gateway are decoded. Default `json`. */
  body?: BodyMode;
  /**
   * The listener's `max_frame_bytes` (header plus body). A frame from the
   * gateway above it closes the connection; a frame above it is not sent
   * (the call rejects with a RangeError). Default 65536.
   */
  maxFrameBytes?: number;
  /** Interval of heartbeats in ms; 0: none. A connection silent for a whole interval after a heartbeat is taken as dropped. Default 15000. */
  heartbeatMs?: number;
  /** Default timeout of a call in ms; 0: none. Default 30000. */
  callTimeoutMs?: number;
  /**
   * Declare each call's timeout to the gateway as the request's budget
   * (docs/protocol.md "Deadlines"): the handler then gets the shorter of it
   * and its handler_timeout (the gateway clamps it to 1..60 s), so the
   * server gives up when the caller has. Default false: a gateway older
   * than the feature closes the connection on the deadline frame.
   */
  declareDeadlines?: boolean;
  /** Time allowed to open a connection (TCP, TLS, WebSocket handshakes) and, on reconnect, to get the answer to a resume. Default 10000. */
  connectTimeoutMs?: number;
  /** Reconnect after a drop (see README). `false`: never. Default: on, with ReconnectOptions' defaults. */
  reconnect?: boolean | ReconnectOptions;
  /** Aborts the first connect. */
  signal?: AbortSignal;
  /**
   * Receives exceptions thrown by the app's handlers (onPush and the
   * others). Without it they are reported as uncaught errors, after the
   * client has gone on.
   */
  onError?: (error: unknown) => void;
}

export interface CallOptions {
  /** Timeout in ms; 0: none. Default: the client's callTimeoutMs. */
  timeout?: number;
  /** Aborts the wait; the call rejects with an AbortError (a late answer is ignored). */
  signal?: AbortSignal;
  /** Resolve with the response's bytes whatever the client's body mode. */
  raw?: boolean;
}

/**
 * The status frames of SPEC §3: the session goes on. Status codes this
 * client does not know are ignored.
 */
export type StatusFrame =
  | { code: 'session.resume_token'; token: string }
  | { code: 'session.resumed'; token: string }
  | { code: 'session.resume_failed'; message: string }
  | { code: 'gateway.drain_started'; grace_ms: number; retry_after_ms?: number };

export interface PushInfo {
  /** The push's route_id. */
  routeId: number;
  /** The route's name, on the legacy envelopes. */
  route?: string;
}

export interface ReconnectInfo {
  /**
   * true: the gateway resumed the session (`session.resumed`): the player is
   * still logged in and the pushes queued meanwhile follow, in order. false:
   * a new session (`session.resume_failed`, or no resume token was held):
   * log in again.
   */
  resumed: boolean;
  /** Which attempt succeeded, from 1. */
  attempt: number;
  /** The gateway's message, with `session.resume_failed`. */
  message?: string;
}

export interface DisconnectInfo {
  /** Why the connection ended (a ClosedError whose cause is the transport's error). */
  error: ClosedError;
  /** Whether the client will try to reconnect. */
  reconnecting: boolean;
}

/**
 * `connecting`: the first connect. `open`: calls may be made. `reconnecting`:
 * waiting or dialling after a drop. `resuming`: reconnected, the resume frame
 * sent, its answer not yet in. `closed`: for good.
 */
export type ClientState = 'connecting' | 'open' | 'reconnecting' | 'resuming' | 'closed';

/** The notices of SPEC §3: sent just before the gateway closes the session. */
export const NOTICE_CODES: ReadonlySet<string> = new Set([
  'session.kicked',
  'session.idle_timeout',
  'session.rate_limited',
  'session.auth_timeout',
  'session.target_lost',
  'gateway.draining',
]);

/**
 * Notices after which a resume is worth trying: the gateway suspends a bound
 * session that idled out (SPEC §4) rather than ending it.
 */
const RESUMABLE_NOTICES: ReadonlySet<string> = new Set(['session.idle_timeout']);

type PushHandler = (body: any, info: PushInfo) => void;

interface Pending {
  resolve(v: unknown): void;
  reject(e: unknown): void;
  raw: boolean;
  route: number | string;
  timer?: ReturnType<typeof setTimeout>;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/** One connection's state. */
interface Link {
  conn?: Conn;
  decoder?: StreamDecoder;
  /** Data and the end that came before the dial resolved. */
  early: (Uint8Array | string)[];
  earlyEnd?: { error: Error | undefined };
  dead: boolean;
  /** Frames received, for the heartbeat check. */
  rx: number;
  /** The last notice, and whether it ended the session. */
  notice?: Notice;
  sessionOver: boolean;
  ended: Promise<void>;
  markEnded: () => void;
}

interface Resolved {
  envelope: EnvelopeName;
  body: BodyMode;
  maxFrameBytes: number;
  heartbeatMs: number;
  callTimeoutMs: number;
  declareDeadlines: boolean;
  connectTimeoutMs: number;
  reconnect: Required<ReconnectOptions> | undefined;
  onError: ((e: unknown) => void) | undefined;
}

function resolveOptions(o: ClientOptions): Resolved {
  const envelope = o.envelope ?? 'idlen';
  if (!ENVELOPES.includes(envelope)) throw new TypeError(`unknown envelope ${JSON.stringify(envelope)} (want ${ENVELOPES.join(', ')})`);
  const body = o.body ?? 'json';
  if (body !== 'json' && body !== 'raw') throw new TypeError(`unknown body mode ${JSON.stringify(body)} (want json or raw)`);
  const num = (v: number | undefined, def: number, name: string, min = 0): number => {
    const n = v ?? def;
    if (typeof n !== 'number' || Number.isNaN(n) || n < min) throw new RangeError(`${name} must be a number >= ${min}`);
    return n;
  };
  let reconnect: Required<ReconnectOptions> | undefined;
  if (o.reconnect !== false) {
    const r = typeof o.reconnect === 'object' ? o.reconnect : {};
    reconnect = {
      baseMs: num(r.baseMs, 250, 'reconnect.baseMs'),
      maxMs: num(r.maxMs, 10_000, 'reconnect.maxMs'),
      attempts: num(r.attempts, 10, 'reconnect.attempts', 1),
      jitter: Math.min(1, num(r.jitter, 0.5, 'reconnect.jitter')),
    };
  }
  return {
    envelope,
    body,
    maxFrameBytes: num(o.maxFrameBytes, 65536, 'maxFrameBytes', envelope === 'typelen' ? 12 : 8),
    heartbeatMs: num(o.heartbeatMs, 15_000, 'heartbeatMs'),
    callTimeoutMs: num(o.callTimeoutMs, 30_000, 'callTimeoutMs'),
    declareDeadlines: o.declareDeadlines ?? false,
    connectTimeoutMs: num(o.connectTimeoutMs, 10_000, 'connectTimeoutMs', 1),
    reconnect,
    onError: o.onError,
  };
}

/** The delay before reconnect attempt n (from 1). */
export function backoffDelay(attempt: number, r: Required<ReconnectOptions>, random: () => number = Math.random): number {
  const exp = Math.min(r.maxMs, r.baseMs * 2 ** Math.min(attempt - 1, 52));
  return exp * (1 - r.jitter * random());
}

/** A body the app passed, as the envelope encoder takes it. */
function outBody(body: unknown): OutBody {
  if (body === undefined) return undefined;
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  return { json: body };
}

/** A body from the gateway, as the app gets it. */
function appBody(body: InBody, raw: boolean): unknown {
  if (body === undefined) return raw ? new Uint8Array(0) : undefined;
  if ('json' in body) return raw ? utf8(JSON.stringify(body.json)) : body.json;
  if (raw) return body.bytes;
  const text = fromUtf8(body.bytes) ?? new TextDecoder().decode(body.bytes);
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A status frame's typed form; undefined for a code this client does not know. */
function statusOf(f: { code: string; fields: Record<string, unknown> }): StatusFrame | undefined {
  const bad = (what: string): never => {
    throw new ProtocolError('bad_system_frame', `${f.code} status without a valid ${what}`);
  };
  switch (f.code) {
    case 'session.resume_token':
    case 'session.resumed': {
      const token = f.fields['token'];
      if (typeof token !== 'string' || token === '') bad('token');
      return { code: f.code, token: token as string };
    }
    case 'session.resume_failed': {
      const message = f.fields['message'] ?? '';
      if (typeof message !== 'string') bad('message');
      return { code: f.code, message: message as string };
    }
    case 'gateway.drain_started': {
      const grace = f.fields['grace_ms'];
      if (typeof grace !== 'number' || !(grace >= 0)) bad('grace_ms');
      // An operator's drain of this one session says when to come back.
      const retry = f.fields['retry_after_ms'];
      if (retry === undefined || retry === null) return { code: f.code, grace_ms: grace as number };
      if (typeof retry !== 'number' || !(retry >= 0)) bad('retry_after_ms');
      return { code: f.code, grace_ms: grace as number, retry_after_ms: retry as number };
    }
    default:
      return undefined;
  }
}

/** Reports an exception from an app handler without letting it break the client. */
function reportLater(e: unknown): void {
  const report = (globalThis as { reportError?: (e: unknown) => void }).reportError;
  if (typeof report === 'function') report(e);
  else
    queueMicrotask(() => {
      throw e;
    });
}

/**
 * One client of a gateway. Make one with connect() (browser or Node entry
 * point) or createClient() with a Dialer of your own.
 */
export class Client {
  readonly #o: Resolved;
  readonly #dial: Dialer;
  #state: ClientState = 'connecting';
  #link: Link | undefined;
  #dialing: AbortController | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #token: string | undefined;
  #attempt = 0;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #resumeTimer: ReturnType<typeof setTimeout> | undefined;
  #heartbeatTimer: ReturnType<typeof setInterval> | undefined;

  readonly #pushes = new Map<number | string, Set<PushHandler>>();
  readonly #anyPush = new Set<PushHandler>();
  readonly #notices = new Set<(code: string, message: string) => void>();
  readonly #statuses = new Set<(frame: StatusFrame) => void>();
  readonly #reconnects = new Set<(info: ReconnectInfo) => void>();
  readonly #disconnects = new Set<(info: DisconnectInfo) => void>();
  readonly #closes = new Set<(error: Error | undefined) => void>();
  #room: RoomHooks | undefined;

  /** Resolves once the client is closed for good: undefined when the app closed it, else why. Never rejects. */
  readonly closed: Promise<Error | undefined>;
  #resolveClosed!: (e: Error | undefined) => void;

  /** Use connect() or createClient(). */
  private constructor(dial: Dialer, options: ClientOptions) {
    this.#o = resolveOptions(options);
    this.#dial = dial;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
  }

  /** Opens a client over dial; resolves once the first connection is open. */
  static async open(dial: Dialer, options: ClientOptions = {}): Promise<Client> {
    const c = new Client(dial, options);
    const signal = options.signal;
    if (signal?.aborted) throw new AbortError('connect aborted', { cause: signal.reason });
    const onAbort = () => c.#dialing?.abort(new AbortError('connect aborted', { cause: signal?.reason }));
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const link = await c.#openLink();
      if (c.#state === 'closed') throw (await c.closed) ?? new ClosedError('the client was closed while connecting');
      c.#state = 'open';
      c.#startHeartbeat(link);
    } catch (e) {
      c.#finish(e instanceof Error ? e : new Error(String(e)));
      throw e;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    return c;
  }

  /** The envelope this client speaks. */
  get envelope(): EnvelopeName {
    return this.#o.envelope;
  }

  get state(): ClientState {
    return this.#state;
  }

  /** The latest resume token (`session.resume_token`, `session.resumed`), if the session has one. */
  get resumeToken(): string | undefined {
    return this.#token;
  }

  /** Calls pending an answer. */
  get pendingCalls(): number {
    return this.#pending.size;
  }

  /**
   * Sends a request on route (a route_id; on lenprefix and delimiter also a
   * route name) and resolves with the response's body. body is sent as it
   * is when it is a Uint8Array (protobuf, raw), else as JSON; undefined
   * sends an empty body. Rejects with ShieldError for an error frame,
   * TimeoutError, AbortError, or ClosedError when the client is not open or
   * the connection ends first. A call is never sent twice: one pending when
   * the connection dropped is rejected, and the app decides whether to retry.
   */
  call<T = unknown>(route: number | string, body?: unknown, options: CallOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const signal = options.signal;
      if (signal?.aborted) {
        reject(new AbortError('call aborted', { cause: signal.reason }));
        return;
      }
      const link = this.#link;
      if (this.#state !== 'open' || link === undefined || link.conn === undefined || link.dead) {
        reject(this.#notOpen());
        return;
      }
      const id = this.#newId();
      const timeout = options.timeout ?? this.#o.callTimeoutMs;
      let wire: (Uint8Array | string)[];
      try {
        wire = this.#encodeRequest(route, id, outBody(body), this.#o.declareDeadlines && timeout > 0 ? Math.ceil(timeout) : undefined);
      } catch (e) {
        reject(e);
        return;
      }
      const p: Pending = { resolve: resolve as (v: unknown) => void, reject, raw: options.raw ?? this.#o.body === 'raw', route };
      if (timeout > 0) {
        p.timer = setTimeout(() => {
          if (this.#settle(id) === p) reject(new TimeoutError(`no answer on route ${route} within ${timeout} ms`));
        }, timeout);
      }
      if (signal) {
        p.signal = signal;
        p.onAbort = () => {
          if (this.#settle(id) === p) reject(new AbortError('call aborted', { cause: signal.reason }));
        };
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      this.#pending.set(id, p);
      // Back to back: nothing else is sent between a deadline and its request.
      for (const w of wire) link.conn.send(w);
    });
  }

  /**
   * Sends a notify (no answer ever comes). Returns false when the client is
   * not open (the notify is dropped), true once it is written.
   */
  notify(route: number | string, body?: unknown): boolean {
    const link = this.#link;
    const wire = this.#encode({ kind: 'notify', route, body: outBody(body) });
    if (this.#state !== 'open' || link?.conn === undefined || link.dead) return false;
    link.conn.send(wire);
    return true;
  }

  /** Sends one heartbeat now (they are also sent every heartbeatMs). false when not open. */
  heartbeat(): boolean {
    const link = this.#link;
    if (this.#state !== 'open' || link?.conn === undefined || link.dead) return false;
    link.conn.send(this.#encode({ kind: 'heartbeat' }));
    return true;
  }

  /**
   * Handles pushes on route (a route_id, or on the legacy envelopes a route
   * name). Returns a function that removes the handler.
   */
  onPush<T = unknown>(route: number | string, handler: (body: T, info: PushInfo) => void): () => void {
    let set = this.#pushes.get(route);
    if (!set) this.#pushes.set(route, (set = new Set()));
    set.add(handler);
    return () => {
      set.delete(handler);
      if (set.size === 0 && this.#pushes.get(route) === set) this.#pushes.delete(route);
    };
  }

  /** Handles pushes on routes that have no handler of their own. */
  onAnyPush(handler: (body: unknown, info: PushInfo) => void): () => void {
    return add(this.#anyPush, handler);
  }

  /** Notices (session.kicked, gateway.draining, ...): the gateway closes the session right after. */
  onNotice(handler: (code: string, message: string) => void): () => void {
    return add(this.#notices, handler);
  }

  /** Status frames the client knows (session.resume_token, session.resumed, session.resume_failed, gateway.drain_started). */
  onStatus(handler: (frame: StatusFrame) => void): () => void {
    return add(this.#statuses, handler);
  }

  /** A reconnect succeeded; `resumed` says whether the session survived or the app must log in again. */
  onReconnect(handler: (info: ReconnectInfo) => void): () => void {
    return add(this.#reconnects, handler);
  }

  /** The open connection ended; pending calls have been rejected. */
  onDisconnect(handler: (info: DisconnectInfo) => void): () => void {
    return add(this.#disconnects, handler);
  }

  /**
   * The client closed for good: undefined when the app closed it, else the
   * error (a ProtocolError for a malformed frame, a ClosedError with the
   * notice that ended the session, or with the cause of the last failed
   * reconnect).
   */
  onClose(handler: (error: Error | undefined) => void): () => void {
    return add(this.#closes, handler);
  }

  /**
   * The client's Room (docs/rooms.md §8.3), made on the first call: it takes
   * every `shield.room.state` push from then on, so call it before the
   * session may be joined to a room (a lobby handler's `shield.room.join`
   * included), or the SNAPSHOT is missed. The same Room follows the session
   * from room to room.
   */
  room(): Room {
    this.#room ??= attachRoom(this, this.#o.callTimeoutMs, this.#o.onError);
    return this.#room.room;
  }

  /** Closes the client: no reconnect; pending calls reject with ClosedError. Resolves once the connection is closed. */
  async close(): Promise<void> {
    const link = this.#link;
    this.#finish(undefined);
    if (link?.conn !== undefined) await link.ended;
  }

  // -------------------------------------------------------------------------

  #notOpen(): ClosedError {
    return new ClosedError(this.#state === 'closed' ? 'the client is closed' : `the client is not connected (${this.#state})`);
  }

  #newId(): number {
    const max = maxRequestId(this.#o.envelope);
    do {
      this.#nextId = this.#nextId >= max ? 1 : this.#nextId + 1;
    } while (this.#pending.has(this.#nextId));
    return this.#nextId;
  }

  /** Encodes a frame for the current link's kind of transport, refusing one above maxFrameBytes. */
  /**
   * A request's wire messages: with deadlineMs, on a legacy envelope the
   * request carries it; on a header envelope a deadline frame goes first
   * (one stream write on TCP, two messages on a WebSocket).
   */
  #encodeRequest(route: number | string, id: number, body: OutBody, deadlineMs: number | undefined): (Uint8Array | string)[] {
    if (deadlineMs === undefined) return [this.#encode({ kind: 'request', route, requestId: id, body })];
    if (isLegacy(this.#o.envelope)) return [this.#encode({ kind: 'request', route, requestId: id, body, deadlineMs })];
    const d = this.#encode({ kind: 'deadline', requestId: id, deadlineMs });
    const r = this.#encode({ kind: 'request', route, requestId: id, body });
    if (d instanceof Uint8Array && r instanceof Uint8Array && this.#link?.conn?.stream) {
      const both = new Uint8Array(d.length + r.length);
      both.set(d);
      both.set(r, d.length);
      return [both];
    }
    return [d, r];
  }

  #encode(f: OutFrame): Uint8Array | string {
    const stream = this.#link?.conn?.stream ?? false;
    const msg = encodeMessage(this.#o.envelope, f);
    const size = typeof msg === 'string' ? utf8(msg).length : msg.length;
    if (size > this.#o.maxFrameBytes) {
      throw new RangeError(`frame of ${size} bytes above maxFrameBytes ${this.#o.maxFrameBytes}`);
    }
    return stream ? frameMessage(msg) : msg;
  }

  /** Removes a pending call and its timer and listener; returns it. */
  #settle(id: number): Pending | undefined {
    const p = this.#pending.get(id);
    if (p === undefined) return undefined;
    this.#pending.delete(id);
    if (p.timer !== undefined) clearTimeout(p.timer);
    if (p.signal && p.onAbort) p.signal.removeEventListener('abort', p.onAbort);
    return p;
  }

  #rejectPending(err: Error): void {
    for (const id of [...this.#pending.keys()]) this.#settle(id)?.reject(err);
  }

  #emit<A extends unknown[]>(handlers: Iterable<(...args: A) => void>, ...args: A): void {
    for (const h of [...handlers]) {
      try {
        h(...args);
      } catch (e) {
        if (this.#o.onError) {
          try {
            this.#o.onError(e);
          } catch (e2) {
            reportLater(e2);
          }
        } else reportLater(e);
      }
    }
  }

  /** Dials one connection, within connectTimeoutMs; the link is current from the start. */
  async #openLink(): Promise<Link> {
    let markEnded!: () => void;
    const ended = new Promise<void>((r) => (markEnded = r));
    const link: Link = { early: [], dead: false, rx: 0, sessionOver: false, ended, markEnded };
    this.#link = link;
    const ac = new AbortController();
    this.#dialing = ac;
    const ms = this.#o.connectTimeoutMs;
    const timer = setTimeout(() => ac.abort(new TimeoutError(`connect took longer than ${ms} ms`)), ms);
    const events: ConnEvents = {
      data: (d) => this.#onData(link, d),
      close: (e) => this.#onEnd(link, e),
    };
    let conn: Conn;
    try {
      conn = await this.#dial(events, ac.signal);
    } catch (e) {
      link.dead = true;
      markEnded();
      throw ac.signal.aborted && ac.signal.reason instanceof Error ? ac.signal.reason : e;
    } finally {
      clearTimeout(timer);
      if (this.#dialing === ac) this.#dialing = undefined;
    }
    if (link.dead || this.#state === 'closed') {
      // close() came while dialling.
      conn.close();
      link.dead = true;
      throw new ClosedError('the client was closed while connecting');
    }
    link.conn = conn;
    if (conn.stream) link.decoder = new StreamDecoder(this.#o.envelope, this.#o.maxFrameBytes);
    for (const d of link.early.splice(0)) this.#onData(link, d);
    if (link.earlyEnd) this.#onEnd(link, link.earlyEnd.error);
    return link;
  }

  #onData(link: Link, data: Uint8Array | string): void {
    if (link !== this.#link || link.dead) return;
    if (link.conn === undefined) {
      link.early.push(data);
      return;
    }
    try {
      let frames: InFrame[];
      if (link.decoder) frames = link.decoder.push(typeof data === 'string' ? utf8(data) : data);
      else frames = [decodeMessage(this.#o.envelope, data, this.#o.maxFrameBytes)];
      for (const f of frames) {
        if (link !== this.#link || link.dead) return;
        link.rx++;
        this.#onFrame(link, f);
      }
    } catch (e) {
      // A malformed frame (a ProtocolError): the stream cannot be trusted
      // any more, and reconnecting would most likely meet the same gateway
      // bug. Nothing is thrown into the transport's (or the app's) code.
      link.dead = true;
      this.#stopHeartbeat();
      link.conn.close();
      this.#finish(e instanceof Error ? e : new Error(String(e)));
    }
  }

  #onFrame(link: Link, f: InFrame): void {
    switch (f.kind) {
      case 'heartbeat':
        return;
      case 'response':
      case 'error': {
        // Unknown ids are late answers: timed out, aborted, or owed to a
        // call of a connection that dropped (a resumed session delivers them).
        const p = this.#settle(f.requestId);
        if (p === undefined) return;
        // idlen's error frames are on route 0: name the call's route.
        const routeId = f.kind === 'error' && f.routeId === 0 && typeof p.route === 'number' ? p.route : f.routeId;
        if (f.kind === 'error') p.reject(new ShieldError(f.code, f.message, routeId, f.retryAfterMs > 0 ? f.retryAfterMs : undefined));
        else p.resolve(appBody(f.body, p.raw));
        return;
      }
      case 'push': {
        const info: PushInfo = f.route === undefined ? { routeId: f.routeId } : { routeId: f.routeId, route: f.route };
        const handlers = [...(this.#pushes.get(f.routeId) ?? [])];
        if (f.route !== undefined) handlers.push(...(this.#pushes.get(f.route) ?? []));
        const room = this.#room !== undefined && isRoomStatePush(f.routeId, f.route) ? this.#room : undefined;
        if (room !== undefined) {
          // The Room takes over the route: onAnyPush handlers no longer see it.
          this.#emit([(b: InBody) => room.receive(b)], f.body);
          if (handlers.length === 0) return;
        }
        const body = appBody(f.body, this.#o.body === 'raw');
        this.#emit(handlers.length > 0 ? handlers : this.#anyPush, body, info);
        return;
      }
      case 'notice':
        this.#onNotice(link, f);
        return;
    }
  }

  #onNotice(link: Link, f: { code: string; message: string; fields: Record<string, unknown> }): void {
    if (NOTICE_CODES.has(f.code)) {
      const retry = f.fields['retry_after_ms'];
      link.notice =
        typeof retry === 'number' && retry > 0 ? { code: f.code, message: f.message, retry_after_ms: retry } : { code: f.code, message: f.message };
      // The session is over unless the gateway may have suspended it.
      link.sessionOver = !(RESUMABLE_NOTICES.has(f.code) && this.#token !== undefined);
      this.#emit(this.#notices, f.code, f.message);
      return;
    }
    const st = statusOf(f);
    if (st === undefined) return; // a status this client does not know: ignored (SPEC §3)
    if (st.code === 'session.resume_token' || st.code === 'session.resumed') this.#token = st.token;
    else if (st.code === 'session.resume_failed') this.#token = undefined;
    this.#emit(this.#statuses, st);
    if (this.#state === 'resuming' && link === this.#link && !link.dead) {
      if (st.code === 'session.resumed') this.#reconnected(link, { resumed: true, attempt: this.#attempt });
      else if (st.code === 'session.resume_failed') this.#reconnected(link, { resumed: false, attempt: this.#attempt, message: st.message });
    }
  }

  /** The transport reports the end of a link. */
  #onEnd(link: Link, error: Error | undefined): void {
    if (link.conn === undefined) {
      // Before the dial resolved: a transport should reject instead; hold it.
      link.earlyEnd ??= { error };
      return;
    }
    link.markEnded();
    if (link !== this.#link || link.dead) return;
    link.dead = true;
    this.#stopHeartbeat();
    if (error === undefined) error = link.decoder?.end();
    if (error instanceof ProtocolError && error.reason !== 'truncated') {
      this.#finish(error);
      return;
    }
    const message = link.notice ? `the gateway closed the session (${link.notice.code}: ${link.notice.message})` : 'the connection closed';
    const closed = new ClosedError(message, link.notice ? { cause: error, notice: link.notice } : { cause: error });
    this.#lost(link, closed);
  }

  /** A link is gone: reject its calls, then reconnect or close. */
  #lost(link: Link, closed: ClosedError): void {
    const wasOpen = this.#state === 'open';
    this.#rejectPending(closed);
    if (this.#resumeTimer !== undefined) clearTimeout(this.#resumeTimer);
    this.#resumeTimer = undefined;
    const reconnecting = this.#o.reconnect !== undefined && !link.sessionOver && this.#state !== 'connecting';
    if (wasOpen) this.#emit(this.#disconnects, { error: closed, reconnecting });
    if (this.#state === 'closed') return; // a disconnect handler closed the client
    if (!reconnecting) {
      this.#finish(closed);
      return;
    }
    this.#scheduleReconnect(closed);
  }

  /** Ends a link that is still open as if it had dropped (a dead heartbeat, a resume unanswered). */
  #drop(link: Link, error: Error): void {
    if (link !== this.#link || link.dead || link.conn === undefined) return;
    link.dead = true;
    this.#stopHeartbeat();
    link.conn.close();
    this.#lost(link, new ClosedError(error.message, { cause: error }));
  }

  #scheduleReconnect(lastError: Error): void {
    const r = this.#o.reconnect!;
    this.#state = 'reconnecting';
    this.#attempt++;
    if (this.#attempt > r.attempts) {
      this.#finish(new ClosedError(`gave up reconnecting after ${r.attempts} attempts`, { cause: lastError }));
      return;
    }
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      void this.#tryReconnect();
    }, backoffDelay(this.#attempt, r));
  }

  async #tryReconnect(): Promise<void> {
    let link: Link;
    try {
      link = await this.#openLink();
    } catch (e) {
      if (this.#state !== 'closed') this.#scheduleReconnect(e instanceof Error ? e : new Error(String(e)));
      return;
    }
    if (link.dead || link !== this.#link || this.#state === 'closed') return;
    const token = this.#token;
    if (token === undefined) {
      this.#reconnected(link, { resumed: false, attempt: this.#attempt });
      return;
    }
    // The resume is the connection's first frame (SPEC §4); nothing else
    // is sent until its answer.
    this.#state = 'resuming';
    link.conn!.send(this.#encode({ kind: 'heartbeat', resume: token }));
    const ms = this.#o.connectTimeoutMs;
    this.#resumeTimer = setTimeout(() => {
      this.#resumeTimer = undefined;
      this.#drop(link, new TimeoutError(`no answer to the resume within ${ms} ms`));
    }, ms);
  }

  #reconnected(link: Link, info: ReconnectInfo): void {
    if (this.#resumeTimer !== undefined) clearTimeout(this.#resumeTimer);
    this.#resumeTimer = undefined;
    this.#state = 'open';
    this.#attempt = 0;
    this.#startHeartbeat(link);
    // Before the app's handlers: a new session is in no room; a resumed one syncs once.
    this.#room?.reconnected(info.resumed);
    this.#emit(this.#reconnects, info);
  }

  #startHeartbeat(link: Link): void {
    this.#stopHeartbeat();
    const every = this.#o.heartbeatMs;
    if (every <= 0) return;
    let beatAt = -1; // link.rx when the last heartbeat was sent
    this.#heartbeatTimer = setInterval(() => {
      if (link !== this.#link || link.dead || link.conn === undefined) return;
      if (beatAt === link.rx) {
        this.#drop(link, new TimeoutError(`no frame from the gateway for ${every} ms after a heartbeat`));
        return;
      }
      beatAt = link.rx;
      link.conn.send(this.#encode({ kind: 'heartbeat' }));
    }, every);
  }

  #stopHeartbeat(): void {
    if (this.#heartbeatTimer !== undefined) clearInterval(this.#heartbeatTimer);
    this.#heartbeatTimer = undefined;
  }

  /** Closes for good, once: timers, the link, pending calls, then the close handlers. */
  #finish(error: Error | undefined): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#stopHeartbeat();
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    if (this.#resumeTimer !== undefined) clearTimeout(this.#resumeTimer);
    this.#retryTimer = this.#resumeTimer = undefined;
    this.#dialing?.abort(new ClosedError('the client was closed while connecting'));
    const link = this.#link;
    if (link !== undefined && !link.dead) {
      link.dead = true;
      link.conn?.close();
    }
    const notice = error instanceof ClosedError ? error.notice : undefined;
    this.#rejectPending(
      error === undefined
        ? new ClosedError('the client was closed')
        : error instanceof ClosedError
          ? error
          : new ClosedError(`the connection failed: ${error.message}`, notice ? { cause: error, notice } : { cause: error }),
    );
    this.#emit(this.#closes, error);
    this.#resolveClosed(error);
  }
}

function add<T>(set: Set<T>, handler: T): () => void {
  set.add(handler);
  return () => {
    set.delete(handler);
  };
}

/** Opens a client over a Dialer of your own (a custom transport, a test double). */
export function createClient(dial: Dialer, options: ClientOptions = {}): Promise<Client> {
  return Client.open(dial, options);
}
