/**
 * The wire envelopes of SPEC §3, client side: encoding what a client sends
 * (request, notify, heartbeat, resume) and decoding what a gateway sends
 * (response, push, error, notice/status, heartbeat echo).
 *
 * A "message" is one frame without its stream framing, as one WebSocket
 * message carries it; on a stream (TCP) idlen, typelen and lenprefix add a
 * u32 big-endian length and delimiter a trailing newline. StreamDecoder
 * turns a byte stream back into frames, checking every limit before a
 * frame's claimed size is buffered.
 */
import { ProtocolError } from './errors.js';

/** The envelopes, as a listener's `protocol.envelope` spells them. */
export type EnvelopeName = 'idlen' | 'typelen' | 'lenprefix' | 'delimiter';

export const ENVELOPES: readonly EnvelopeName[] = ['idlen', 'typelen', 'lenprefix', 'delimiter'];

/** Header sizes after the u32 length. */
export const IDLEN_HEADER_SIZE = 8;
export const TYPELEN_HEADER_SIZE = 12;
/** The largest route_id each envelope can carry. */
export const MAX_IDLEN_ROUTE_ID = 0xffffff;
export const MAX_TYPELEN_ROUTE_ID = 0xffff;
export const MAX_LEGACY_ROUTE_ID = 0xffffffff;
/** The largest idlen request_id (u32); the others go to 2^53-1 here, JavaScript's exact integers. */
export const MAX_IDLEN_REQUEST_ID = 0xffffffff;

/** The protocol version byte of idlen and typelen. */
export const VERSION = 1;

/** typelen's type byte. */
export const TYPE = {
  request: 1,
  response: 2,
  error: 3,
  push: 4,
  heartbeat: 5,
  notice: 6,
  notify: 7,
  deadline: 8,
} as const;

/** A body as decoded: the bytes of a header envelope, or a legacy wrapper's parsed `payload`. */
export type InBody = { bytes: Uint8Array } | { json: unknown } | undefined;

/**
 * A frame from the gateway. `notice` is SPEC's notice and status frames both
 * (route 0, request 0, a JSON body; typelen type 6; legacy type `notice`):
 * `fields` is that JSON object (on the legacy envelopes, the wrapper without
 * its `type`).
 */
export type InFrame =
  | { kind: 'response'; routeId: number; route?: string; requestId: number; body: InBody }
  | { kind: 'push'; routeId: number; route?: string; body: InBody }
  | { kind: 'error'; routeId: number; route?: string; requestId: number; code: string; message: string; retryAfterMs: number }
  | { kind: 'notice'; code: string; message: string; fields: Record<string, unknown> }
  | { kind: 'heartbeat' };

/** A body to send: bytes as they are, or a value to encode as JSON (undefined: no body). */
export type OutBody = Uint8Array | { json: unknown } | undefined;

/**
 * A frame a client sends. A route is a route_id, or, on the legacy
 * envelopes only, a route name. A heartbeat with `resume` is the resume
 * frame of SPEC §4.
 */
export type OutFrame =
  | { kind: 'request'; route: number | string; requestId: number; body?: OutBody; deadlineMs?: number }
  | { kind: 'notify'; route: number | string; body?: OutBody }
  | { kind: 'heartbeat'; resume?: string }
  | { kind: 'deadline'; requestId: number; deadlineMs: number };

const utf8Encoder = new TextEncoder();
const utf8Strict = new TextDecoder('utf-8', { fatal: true });

/** UTF-8 bytes of a string. */
export function utf8(s: string): Uint8Array {
  return utf8Encoder.encode(s);
}

/** The string of UTF-8 bytes, or undefined when they are not valid UTF-8. */
export function fromUtf8(b: Uint8Array): string | undefined {
  try {
    return utf8Strict.decode(b);
  } catch {
    return undefined;
  }
}

/** Whether an envelope carries its route in a JSON wrapper (lenprefix, delimiter). */
export function isLegacy(env: EnvelopeName): boolean {
  return env === 'lenprefix' || env === 'delimiter';
}

/** Whether the envelope's WebSocket messages are text (delimiter) rather than binary. */
export function isText(env: EnvelopeName): boolean {
  return env === 'delimiter';
}

/** The largest request_id a client sends on the envelope. */
export function maxRequestId(env: EnvelopeName): number {
  return env === 'idlen' ? MAX_IDLEN_REQUEST_ID : Number.MAX_SAFE_INTEGER;
}

function maxRouteId(env: EnvelopeName): number {
  switch (env) {
    case 'idlen':
      return MAX_IDLEN_ROUTE_ID;
    case 'typelen':
      return MAX_TYPELEN_ROUTE_ID;
    default:
      return MAX_LEGACY_ROUTE_ID;
  }
}

// ---------------------------------------------------------------------------
// Encoding (client -> gateway)

/**
 * Encodes one frame as one message (no stream framing): bytes for idlen,
 * typelen and lenprefix, a string for delimiter. Throws TypeError or
 * RangeError for a frame the gateway would refuse (a route out of range, a
 * route name on a header envelope, a body that is not JSON on a legacy
 * envelope).
 */
export function encodeMessage(env: EnvelopeName, f: OutFrame): Uint8Array | string {
  switch (env) {
    case 'idlen':
    case 'typelen':
      return encodeHeader(env, f);
    case 'lenprefix':
      return utf8(encodeWrapper(env, f));
    case 'delimiter':
      return encodeWrapper(env, f);
  }
}

/** Encodes one frame with its stream framing, as TCP carries it. */
export function encodeStreamFrame(env: EnvelopeName, f: OutFrame): Uint8Array {
  return frameMessage(encodeMessage(env, f));
}

/** Adds the stream framing to a message: a u32 length before bytes, a newline after a delimiter wrapper. */
export function frameMessage(msg: Uint8Array | string): Uint8Array {
  if (typeof msg === 'string') return utf8(msg + '\n');
  const out = new Uint8Array(4 + msg.length);
  new DataView(out.buffer).setUint32(0, msg.length);
  out.set(msg, 4);
  return out;
}

/** The body of a resume frame: {"resume":"<token>"}. */
function resumeBody(token: string): string {
  return `{"resume":${JSON.stringify(token)}}`;
}

function checkRoute(env: EnvelopeName, route: number | string): void {
  if (typeof route === 'string') {
    if (!isLegacy(env)) throw new TypeError(`${env}: a route is a route_id here, not a name (${JSON.stringify(route)})`);
    if (route === '') throw new TypeError(`${env}: empty route name`);
    return;
  }
  const max = maxRouteId(env);
  if (!Number.isInteger(route) || route < 1 || route > max) {
    throw new RangeError(`${env}: route_id ${route} outside 1..${max}`);
  }
}

/** The bytes of a header envelope's body. */
function bodyBytes(body: OutBody): Uint8Array {
  if (body === undefined) return new Uint8Array(0);
  if (body instanceof Uint8Array) return body;
  return utf8(jsonText(body.json));
}

/** JSON.stringify, refusing what it silently drops (functions, undefined inside a box, symbols). */
function jsonText(v: unknown): string {
  const s = JSON.stringify(v);
  if (s === undefined) throw new TypeError(`body cannot be encoded as JSON: ${typeof v}`);
  return s;
}

function encodeHeader(env: 'idlen' | 'typelen', f: OutFrame): Uint8Array {
  let route = 0;
  let rid = 0;
  let body: Uint8Array;
  switch (f.kind) {
    case 'request':
      checkRoute(env, f.route);
      route = f.route as number;
      rid = f.requestId;
      if (!Number.isInteger(rid) || rid < 1 || rid > maxRequestId(env)) {
        throw new RangeError(`${env}: request_id ${rid} outside 1..${maxRequestId(env)}`);
      }
      body = bodyBytes(f.body);
      break;
    case 'notify':
      checkRoute(env, f.route);
      route = f.route as number;
      body = bodyBytes(f.body);
      break;
    case 'heartbeat':
      body = f.resume === undefined ? new Uint8Array(0) : utf8(resumeBody(f.resume));
      break;
    case 'deadline':
      // On route 0, with the request_id of the request that follows it.
      rid = f.requestId;
      if (!Number.isInteger(rid) || rid < 1 || rid > maxRequestId(env)) {
        throw new RangeError(`${env}: request_id ${rid} outside 1..${maxRequestId(env)}`);
      }
      body = utf8(`{"deadline_ms":${checkDeadline(f.deadlineMs)}}`);
      break;
  }
  if (env === 'idlen') {
    const out = new Uint8Array(IDLEN_HEADER_SIZE + body.length);
    const dv = new DataView(out.buffer);
    out[0] = VERSION;
    out[1] = (route >>> 16) & 0xff;
    out[2] = (route >>> 8) & 0xff;
    out[3] = route & 0xff;
    dv.setUint32(4, rid);
    out.set(body, IDLEN_HEADER_SIZE);
    return out;
  }
  const out = new Uint8Array(TYPELEN_HEADER_SIZE + body.length);
  const dv = new DataView(out.buffer);
  out[0] = VERSION;
  out[1] = TYPE[f.kind];
  dv.setUint16(2, route);
  // u64 request_id as two u32 halves: exact for every safe integer.
  dv.setUint32(4, Math.floor(rid / 0x1_0000_0000));
  dv.setUint32(8, rid >>> 0);
  out.set(body, TYPELEN_HEADER_SIZE);
  return out;
}

/** A declared deadline: a whole number of milliseconds, at least 1 (the gateway clamps it to 1000..60000). */
function checkDeadline(ms: number): number {
  if (!Number.isInteger(ms) || ms < 1 || ms > Number.MAX_SAFE_INTEGER) throw new RangeError(`deadline_ms ${ms} is not a whole number of ms >= 1`);
  return ms;
}

/** The payload's JSON text for a wrapper, on one line. */
function payloadText(env: EnvelopeName, body: OutBody): string | undefined {
  if (body === undefined) return undefined;
  if (!(body instanceof Uint8Array)) return jsonText(body.json);
  if (body.length === 0) return undefined;
  // Bytes go into the wrapper as the JSON text they hold. Newlines can only
  // sit between a valid document's tokens, so dropping them keeps the
  // delimiter frame on one line without changing the value.
  const text = fromUtf8(body);
  if (text === undefined) throw new TypeError(`${env}: payload is not UTF-8`);
  try {
    JSON.parse(text);
  } catch {
    throw new TypeError(`${env}: payload is not JSON`);
  }
  return text.replace(/[\r\n]/g, '');
}

/**
 * A legacy wrapper, keys in the gateway's order: type, route, route_id,
 * request_id, deadline_ms, payload.
 */
function encodeWrapper(env: EnvelopeName, f: OutFrame): string {
  if (f.kind === 'heartbeat') {
    return f.resume === undefined ? '{"type":"heartbeat"}' : `{"type":"heartbeat","payload":${resumeBody(f.resume)}}`;
  }
  if (f.kind === 'deadline') {
    throw new TypeError(`${env}: a deadline travels on its request (deadlineMs), not as a frame`);
  }
  checkRoute(env, f.route);
  let s = `{"type":"${f.kind}"`;
  s += typeof f.route === 'string' ? `,"route":${JSON.stringify(f.route)}` : `,"route_id":${f.route}`;
  if (f.kind === 'request') {
    if (!Number.isInteger(f.requestId) || f.requestId < 1 || f.requestId > Number.MAX_SAFE_INTEGER) {
      throw new RangeError(`${env}: request_id ${f.requestId} outside 1..${Number.MAX_SAFE_INTEGER}`);
    }
    s += `,"request_id":${f.requestId}`;
    if (f.deadlineMs !== undefined) s += `,"deadline_ms":${checkDeadline(f.deadlineMs)}`;
  }
  const payload = payloadText(env, f.body);
  if (payload !== undefined) s += `,"payload":${payload}`;
  return s + '}';
}

// ---------------------------------------------------------------------------
// Decoding (gateway -> client)

/** The smallest valid message of an envelope. */
function minSize(env: EnvelopeName): number {
  switch (env) {
    case 'idlen':
      return IDLEN_HEADER_SIZE;
    case 'typelen':
      return TYPELEN_HEADER_SIZE;
    default:
      return 1;
  }
}

/**
 * Decodes one message (a WebSocket message, or a stream frame without its
 * framing). Throws ProtocolError for anything SPEC §3 says closes the
 * connection: a bad version, a size outside the limits, a kind a gateway
 * may not send, a route 0 body that is not a JSON status object, a wrapper
 * that is not one.
 */
export function decodeMessage(env: EnvelopeName, msg: Uint8Array | string, maxFrameBytes: number): InFrame {
  if (typeof msg === 'string') {
    if (!isText(env)) throw new ProtocolError('bad_type', `text message on the ${env} envelope`);
    // A UTF-16 unit is at most 3 UTF-8 bytes: count only when it matters.
    if (msg.length * 3 > maxFrameBytes && utf8(msg).length > maxFrameBytes) {
      throw new ProtocolError('too_large', `message above max_frame_bytes ${maxFrameBytes}`);
    }
    return decodeWrapper(msg);
  }
  if (isText(env)) throw new ProtocolError('bad_type', 'binary message on the delimiter envelope');
  if (msg.length > maxFrameBytes) {
    throw new ProtocolError('too_large', `message of ${msg.length} bytes above max_frame_bytes ${maxFrameBytes}`);
  }
  if (msg.length < minSize(env)) {
    throw new ProtocolError('too_short', `message of ${msg.length} bytes below ${minSize(env)}`);
  }
  switch (env) {
    case 'idlen':
      return decodeIdlen(msg);
    case 'typelen':
      return decodeTypelen(msg);
    default: {
      const text = fromUtf8(msg);
      if (text === undefined) throw new ProtocolError('bad_wrapper', 'wrapper is not UTF-8');
      return decodeWrapper(text);
    }
  }
}

function checkVersion(v: number, env: string): void {
  if (v !== VERSION) throw new ProtocolError('bad_version', `${env} version ${v}`);
}

function decodeIdlen(msg: Uint8Array): InFrame {
  checkVersion(msg[0]!, 'idlen');
  const dv = new DataView(msg.buffer, msg.byteOffset, msg.byteLength);
  const route = (msg[1]! << 16) | (msg[2]! << 8) | msg[3]!;
  const rid = dv.getUint32(4);
  const body = msg.subarray(IDLEN_HEADER_SIZE);
  if (route !== 0 && rid !== 0) return { kind: 'response', routeId: route, requestId: rid, body: ownBody(body) };
  if (route !== 0) return { kind: 'push', routeId: route, body: ownBody(body) };
  if (rid !== 0) {
    const st = parseStatus(body);
    return { kind: 'error', routeId: 0, requestId: rid, code: st.code, message: st.message, retryAfterMs: st.retryAfterMs };
  }
  if (body.length !== 0) {
    const st = parseStatus(body);
    return { kind: 'notice', code: st.code, message: st.message, fields: st.fields };
  }
  return { kind: 'heartbeat' };
}

function decodeTypelen(msg: Uint8Array): InFrame {
  checkVersion(msg[0]!, 'typelen');
  const dv = new DataView(msg.buffer, msg.byteOffset, msg.byteLength);
  const type = msg[1]!;
  const route = dv.getUint16(2);
  // Above 2^53 the id is not exact, but no call of this client has one.
  const rid = dv.getUint32(4) * 0x1_0000_0000 + dv.getUint32(8);
  const body = msg.subarray(TYPELEN_HEADER_SIZE);
  switch (type) {
    case TYPE.response:
      return { kind: 'response', routeId: route, requestId: rid, body: ownBody(body) };
    case TYPE.push:
      return { kind: 'push', routeId: route, body: ownBody(body) };
    case TYPE.error: {
      const st = parseStatus(body);
      return { kind: 'error', routeId: route, requestId: rid, code: st.code, message: st.message, retryAfterMs: st.retryAfterMs };
    }
    case TYPE.notice: {
      const st = parseStatus(body);
      return { kind: 'notice', code: st.code, message: st.message, fields: st.fields };
    }
    case TYPE.heartbeat:
      if (route !== 0 || body.length !== 0) {
        throw new ProtocolError('bad_system_frame', `heartbeat with route_id ${route} and a ${body.length}-byte body`);
      }
      return { kind: 'heartbeat' };
    default:
      throw new ProtocolError('bad_type', `typelen type ${type} from the gateway`);
  }
}

/** A body the frame owns (the decoder's buffer may be reused); empty is undefined. */
function ownBody(body: Uint8Array): InBody {
  return body.length === 0 ? undefined : { bytes: body.slice() };
}

/**
 * The JSON status body of an error or notice frame on a header envelope:
 * an object whose code and message, when present, are strings, and whose
 * retry_after_ms, when present, is a count of milliseconds (0: none).
 */
function parseStatus(body: Uint8Array): { code: string; message: string; retryAfterMs: number; fields: Record<string, unknown> } {
  const text = fromUtf8(body);
  let v: unknown;
  try {
    v = text === undefined ? undefined : JSON.parse(text);
  } catch {
    v = undefined;
  }
  if (!isObject(v)) throw new ProtocolError('bad_system_frame', 'status body is not a JSON object');
  const code = optString(v, 'code', 'bad_system_frame');
  const message = optString(v, 'message', 'bad_system_frame');
  const retryAfterMs = optUint(v, 'retry_after_ms', Number.MAX_SAFE_INTEGER, 'bad_system_frame');
  return { code, message, retryAfterMs, fields: v };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A string field; absent and null read as "". */
function optString(o: Record<string, unknown>, key: string, reason: 'bad_system_frame' | 'bad_wrapper'): string {
  const v = o[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new ProtocolError(reason, `"${key}" is not a string`);
  return v;
}

/** An integer field in 0..max; absent and null read as 0. */
function optUint(o: Record<string, unknown>, key: string, max: number, reason: 'bad_system_frame' | 'bad_wrapper' = 'bad_wrapper'): number {
  const v = o[key];
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max) {
    throw new ProtocolError(reason, `"${key}" is not an integer in 0..${max}`);
  }
  return v;
}

const WRAPPER_TYPES = new Set(['request', 'response', 'error', 'push', 'heartbeat', 'notice', 'notify']);

/** A legacy wrapper from the gateway (SPEC §3, lenprefix and delimiter). */
function decodeWrapper(text: string): InFrame {
  let w: unknown;
  try {
    w = JSON.parse(text);
  } catch {
    w = undefined;
  }
  if (!isObject(w)) throw new ProtocolError('bad_wrapper', 'not a JSON object');
  let type = optString(w, 'type', 'bad_wrapper');
  if (type !== '' && !WRAPPER_TYPES.has(type)) throw new ProtocolError('bad_wrapper', `unknown type ${JSON.stringify(type.slice(0, 32))}`);
  const route = optString(w, 'route', 'bad_wrapper');
  const code = optString(w, 'code', 'bad_wrapper');
  const message = optString(w, 'message', 'bad_wrapper');
  const routeId = optUint(w, 'route_id', MAX_LEGACY_ROUTE_ID);
  const requestId = optUint(w, 'request_id', Number.MAX_SAFE_INTEGER * 2048); // u64, approximately
  const retryAfterMs = optUint(w, 'retry_after_ms', Number.MAX_SAFE_INTEGER);
  if (type === '') type = requestId > 0 ? 'request' : 'notify';
  const named = route === '' ? {} : { route };
  const body: InBody = Object.prototype.hasOwnProperty.call(w, 'payload') ? { json: w['payload'] } : undefined;
  switch (type) {
    case 'response':
      return { kind: 'response', routeId, ...named, requestId, body };
    case 'push':
      return { kind: 'push', routeId, ...named, body };
    case 'error':
      return { kind: 'error', routeId, ...named, requestId, code, message, retryAfterMs };
    case 'notice': {
      const fields: Record<string, unknown> = { ...w };
      delete fields['type'];
      return { kind: 'notice', code, message, fields };
    }
    case 'heartbeat':
      return { kind: 'heartbeat' };
    default:
      throw new ProtocolError('bad_type', `type ${JSON.stringify(type)} from the gateway`);
  }
}

// ---------------------------------------------------------------------------
// Streams (TCP)

/**
 * Splits a byte stream into frames. push() returns the frames completed by a
 * chunk, or throws ProtocolError; a length above max_frame_bytes (or a
 * delimiter line longer than it) fails as soon as it is seen, before the
 * frame's bytes have arrived, so a bad length costs no memory.
 */
export class StreamDecoder {
  readonly #env: EnvelopeName;
  readonly #max: number;
  #buf: Uint8Array = new Uint8Array(0);
  #scanned = 0; // delimiter: bytes of #buf already searched for '\n'

  constructor(env: EnvelopeName, maxFrameBytes: number) {
    this.#env = env;
    this.#max = maxFrameBytes;
  }

  /** Bytes held of a frame not yet complete. */
  get buffered(): number {
    return this.#buf.length;
  }

  push(chunk: Uint8Array): InFrame[] {
    let buf = this.#buf;
    if (buf.length === 0) {
      buf = chunk;
    } else {
      const joined = new Uint8Array(buf.length + chunk.length);
      joined.set(buf);
      joined.set(chunk, buf.length);
      buf = joined;
    }
    const frames: InFrame[] = [];
    const pos = this.#env === 'delimiter' ? this.#lines(buf, frames) : this.#lengths(buf, frames);
    // Keep only the incomplete rest, copied so that the caller's chunk may be reused.
    this.#buf = pos === buf.length ? new Uint8Array(0) : buf.slice(pos);
    if (this.#env === 'delimiter') this.#scanned = this.#buf.length;
    return frames;
  }

  /**
   * The error for an end of stream here: undefined at a frame boundary, a
   * truncated ProtocolError inside a frame.
   */
  end(): ProtocolError | undefined {
    if (this.#buf.length === 0) return undefined;
    return new ProtocolError('truncated', `EOF after ${this.#buf.length} bytes of a frame`);
  }

  #lengths(buf: Uint8Array, frames: InFrame[]): number {
    const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const min = minSize(this.#env);
    let pos = 0;
    while (buf.length - pos >= 4) {
      const n = dv.getUint32(pos);
      if (n > this.#max) throw new ProtocolError('too_large', `length ${n} above max_frame_bytes ${this.#max}`);
      if (n < min) throw new ProtocolError('too_short', `length ${n} below ${min}`);
      // The version byte is known before the body: fail at once.
      if (!isLegacy(this.#env) && buf.length - pos > 4) checkVersion(buf[pos + 4]!, this.#env);
      if (buf.length - pos - 4 < n) break;
      frames.push(decodeMessage(this.#env, buf.subarray(pos + 4, pos + 4 + n), this.#max));
      pos += 4 + n;
    }
    return pos;
  }

  #lines(buf: Uint8Array, frames: InFrame[]): number {
    let pos = 0;
    let from = this.#scanned;
    for (;;) {
      const nl = buf.indexOf(0x0a, from);
      if (nl < 0) {
        if (buf.length - pos > this.#max) {
          throw new ProtocolError('too_large', `line of ${buf.length - pos}+ bytes above max_frame_bytes ${this.#max}`);
        }
        return pos;
      }
      const line = buf.subarray(pos, nl);
      if (line.length > this.#max) {
        throw new ProtocolError('too_large', `line of ${line.length} bytes above max_frame_bytes ${this.#max}`);
      }
      const text = fromUtf8(line);
      if (text === undefined) throw new ProtocolError('bad_wrapper', 'line is not UTF-8');
      frames.push(decodeWrapper(text));
      pos = nl + 1;
      from = pos;
    }
  }
}
