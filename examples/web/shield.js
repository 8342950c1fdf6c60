// @shieldrpc/client 0.1.0, the browser entry point bundled by `npm run build:demo` (clients/ts). DO NOT EDIT.

// src/errors.ts
var ShieldError = class extends Error {
  name = "ShieldError";
  /** The gateway's or the service's code, e.g. `client_rpc.busy` or `auth.bad_request`. */
  code;
  /** The route_id of the request (0 when the call named its route by name and the gateway did not say). */
  routeId;
  /**
   * The error's retry_after_ms, when it has one: wait this long before
   * trying again (`client_rpc.draining`; `client_rpc.busy` and
   * `client_rpc.rate_limited` from a gateway with `session.retry_hints`).
   */
  retryAfterMs;
  constructor(code, message, routeId = 0, retryAfterMs) {
    super(message);
    this.code = code;
    this.routeId = routeId;
    this.retryAfterMs = retryAfterMs;
  }
};
var TimeoutError = class extends Error {
  name = "TimeoutError";
  code = "client.timeout";
};
var AbortError = class extends Error {
  name = "AbortError";
  code = "client.aborted";
  constructor(message = "the operation was aborted", options) {
    super(message, options);
  }
};
var ClosedError = class extends Error {
  name = "ClosedError";
  code = "client.closed";
  notice;
  constructor(message, options) {
    super(message, options?.cause === void 0 ? void 0 : { cause: options.cause });
    this.notice = options?.notice;
  }
};
var ProtocolError = class extends Error {
  name = "ProtocolError";
  code = "client.protocol_error";
  reason;
  constructor(reason, message) {
    super(`${reason}: ${message}`);
    this.reason = reason;
  }
};
var UpgradeError = class extends Error {
  name = "UpgradeError";
  code = "client.upgrade_refused";
  status;
  constructor(status, message) {
    super(message);
    this.status = status;
  }
};

// src/envelope.ts
var ENVELOPES = ["idlen", "typelen", "lenprefix", "delimiter"];
var IDLEN_HEADER_SIZE = 8;
var TYPELEN_HEADER_SIZE = 12;
var MAX_IDLEN_ROUTE_ID = 16777215;
var MAX_TYPELEN_ROUTE_ID = 65535;
var MAX_LEGACY_ROUTE_ID = 4294967295;
var MAX_IDLEN_REQUEST_ID = 4294967295;
var VERSION = 1;
var TYPE = {
  request: 1,
  response: 2,
  error: 3,
  push: 4,
  heartbeat: 5,
  notice: 6,
  notify: 7,
  deadline: 8
};
var utf8Encoder = new TextEncoder();
var utf8Strict = new TextDecoder("utf-8", { fatal: true });
function utf8(s) {
  return utf8Encoder.encode(s);
}
function fromUtf8(b) {
  try {
    return utf8Strict.decode(b);
  } catch {
    return void 0;
  }
}
function isLegacy(env) {
  return env === "lenprefix" || env === "delimiter";
}
function isText(env) {
  return env === "delimiter";
}
function maxRequestId(env) {
  return env === "idlen" ? MAX_IDLEN_REQUEST_ID : Number.MAX_SAFE_INTEGER;
}
function maxRouteId(env) {
  switch (env) {
    case "idlen":
      return MAX_IDLEN_ROUTE_ID;
    case "typelen":
      return MAX_TYPELEN_ROUTE_ID;
    default:
      return MAX_LEGACY_ROUTE_ID;
  }
}
function encodeMessage(env, f) {
  switch (env) {
    case "idlen":
    case "typelen":
      return encodeHeader(env, f);
    case "lenprefix":
      return utf8(encodeWrapper(env, f));
    case "delimiter":
      return encodeWrapper(env, f);
  }
}
function encodeStreamFrame(env, f) {
  return frameMessage(encodeMessage(env, f));
}
function frameMessage(msg) {
  if (typeof msg === "string") return utf8(msg + "\n");
  const out = new Uint8Array(4 + msg.length);
  new DataView(out.buffer).setUint32(0, msg.length);
  out.set(msg, 4);
  return out;
}
function resumeBody(token) {
  return `{"resume":${JSON.stringify(token)}}`;
}
function checkRoute(env, route) {
  if (typeof route === "string") {
    if (!isLegacy(env)) throw new TypeError(`${env}: a route is a route_id here, not a name (${JSON.stringify(route)})`);
    if (route === "") throw new TypeError(`${env}: empty route name`);
    return;
  }
  const max = maxRouteId(env);
  if (!Number.isInteger(route) || route < 1 || route > max) {
    throw new RangeError(`${env}: route_id ${route} outside 1..${max}`);
  }
}
function bodyBytes(body) {
  if (body === void 0) return new Uint8Array(0);
  if (body instanceof Uint8Array) return body;
  return utf8(jsonText(body.json));
}
function jsonText(v) {
  const s = JSON.stringify(v);
  if (s === void 0) throw new TypeError(`body cannot be encoded as JSON: ${typeof v}`);
  return s;
}
function encodeHeader(env, f) {
  let route = 0;
  let rid = 0;
  let body;
  switch (f.kind) {
    case "request":
      checkRoute(env, f.route);
      route = f.route;
      rid = f.requestId;
      if (!Number.isInteger(rid) || rid < 1 || rid > maxRequestId(env)) {
        throw new RangeError(`${env}: request_id ${rid} outside 1..${maxRequestId(env)}`);
      }
      body = bodyBytes(f.body);
      break;
    case "notify":
      checkRoute(env, f.route);
      route = f.route;
      body = bodyBytes(f.body);
      break;
    case "heartbeat":
      body = f.resume === void 0 ? new Uint8Array(0) : utf8(resumeBody(f.resume));
      break;
    case "deadline":
      rid = f.requestId;
      if (!Number.isInteger(rid) || rid < 1 || rid > maxRequestId(env)) {
        throw new RangeError(`${env}: request_id ${rid} outside 1..${maxRequestId(env)}`);
      }
      body = utf8(`{"deadline_ms":${checkDeadline(f.deadlineMs)}}`);
      break;
  }
  if (env === "idlen") {
    const out2 = new Uint8Array(IDLEN_HEADER_SIZE + body.length);
    const dv2 = new DataView(out2.buffer);
    out2[0] = VERSION;
    out2[1] = route >>> 16 & 255;
    out2[2] = route >>> 8 & 255;
    out2[3] = route & 255;
    dv2.setUint32(4, rid);
    out2.set(body, IDLEN_HEADER_SIZE);
    return out2;
  }
  const out = new Uint8Array(TYPELEN_HEADER_SIZE + body.length);
  const dv = new DataView(out.buffer);
  out[0] = VERSION;
  out[1] = TYPE[f.kind];
  dv.setUint16(2, route);
  dv.setUint32(4, Math.floor(rid / 4294967296));
  dv.setUint32(8, rid >>> 0);
  out.set(body, TYPELEN_HEADER_SIZE);
  return out;
}
function checkDeadline(ms) {
  if (!Number.isInteger(ms) || ms < 1 || ms > Number.MAX_SAFE_INTEGER) throw new RangeError(`deadline_ms ${ms} is not a whole number of ms >= 1`);
  return ms;
}
function payloadText(env, body) {
  if (body === void 0) return void 0;
  if (!(body instanceof Uint8Array)) return jsonText(body.json);
  if (body.length === 0) return void 0;
  const text = fromUtf8(body);
  if (text === void 0) throw new TypeError(`${env}: payload is not UTF-8`);
  try {
    JSON.parse(text);
  } catch {
    throw new TypeError(`${env}: payload is not JSON`);
  }
  return text.replace(/[\r\n]/g, "");
}
function encodeWrapper(env, f) {
  if (f.kind === "heartbeat") {
    return f.resume === void 0 ? '{"type":"heartbeat"}' : `{"type":"heartbeat","payload":${resumeBody(f.resume)}}`;
  }
  if (f.kind === "deadline") {
    throw new TypeError(`${env}: a deadline travels on its request (deadlineMs), not as a frame`);
  }
  checkRoute(env, f.route);
  let s = `{"type":"${f.kind}"`;
  s += typeof f.route === "string" ? `,"route":${JSON.stringify(f.route)}` : `,"route_id":${f.route}`;
  if (f.kind === "request") {
    if (!Number.isInteger(f.requestId) || f.requestId < 1 || f.requestId > Number.MAX_SAFE_INTEGER) {
      throw new RangeError(`${env}: request_id ${f.requestId} outside 1..${Number.MAX_SAFE_INTEGER}`);
    }
    s += `,"request_id":${f.requestId}`;
    if (f.deadlineMs !== void 0) s += `,"deadline_ms":${checkDeadline(f.deadlineMs)}`;
  }
  const payload = payloadText(env, f.body);
  if (payload !== void 0) s += `,"payload":${payload}`;
  return s + "}";
}
function minSize(env) {
  switch (env) {
    case "idlen":
      return IDLEN_HEADER_SIZE;
    case "typelen":
      return TYPELEN_HEADER_SIZE;
    default:
      return 1;
  }
}
function decodeMessage(env, msg, maxFrameBytes) {
  if (typeof msg === "string") {
    if (!isText(env)) throw new ProtocolError("bad_type", `text message on the ${env} envelope`);
    if (msg.length * 3 > maxFrameBytes && utf8(msg).length > maxFrameBytes) {
      throw new ProtocolError("too_large", `message above max_frame_bytes ${maxFrameBytes}`);
    }
    return decodeWrapper(msg);
  }
  if (isText(env)) throw new ProtocolError("bad_type", "binary message on the delimiter envelope");
  if (msg.length > maxFrameBytes) {
    throw new ProtocolError("too_large", `message of ${msg.length} bytes above max_frame_bytes ${maxFrameBytes}`);
  }
  if (msg.length < minSize(env)) {
    throw new ProtocolError("too_short", `message of ${msg.length} bytes below ${minSize(env)}`);
  }
  switch (env) {
    case "idlen":
      return decodeIdlen(msg);
    case "typelen":
      return decodeTypelen(msg);
    default: {
      const text = fromUtf8(msg);
      if (text === void 0) throw new ProtocolError("bad_wrapper", "wrapper is not UTF-8");
      return decodeWrapper(text);
    }
  }
}
function checkVersion(v, env) {
  if (v !== VERSION) throw new ProtocolError("bad_version", `${env} version ${v}`);
}
function decodeIdlen(msg) {
  checkVersion(msg[0], "idlen");
  const dv = new DataView(msg.buffer, msg.byteOffset, msg.byteLength);
  const route = msg[1] << 16 | msg[2] << 8 | msg[3];
  const rid = dv.getUint32(4);
  const body = msg.subarray(IDLEN_HEADER_SIZE);
  if (route !== 0 && rid !== 0) return { kind: "response", routeId: route, requestId: rid, body: ownBody(body) };
  if (route !== 0) return { kind: "push", routeId: route, body: ownBody(body) };
  if (rid !== 0) {
    const st = parseStatus(body);
    return { kind: "error", routeId: 0, requestId: rid, code: st.code, message: st.message, retryAfterMs: st.retryAfterMs };
  }
  if (body.length !== 0) {
    const st = parseStatus(body);
    return { kind: "notice", code: st.code, message: st.message, fields: st.fields };
  }
  return { kind: "heartbeat" };
}
function decodeTypelen(msg) {
  checkVersion(msg[0], "typelen");
  const dv = new DataView(msg.buffer, msg.byteOffset, msg.byteLength);
  const type = msg[1];
  const route = dv.getUint16(2);
  const rid = dv.getUint32(4) * 4294967296 + dv.getUint32(8);
  const body = msg.subarray(TYPELEN_HEADER_SIZE);
  switch (type) {
    case TYPE.response:
      return { kind: "response", routeId: route, requestId: rid, body: ownBody(body) };
    case TYPE.push:
      return { kind: "push", routeId: route, body: ownBody(body) };
    case TYPE.error: {
      const st = parseStatus(body);
      return { kind: "error", routeId: route, requestId: rid, code: st.code, message: st.message, retryAfterMs: st.retryAfterMs };
    }
    case TYPE.notice: {
      const st = parseStatus(body);
      return { kind: "notice", code: st.code, message: st.message, fields: st.fields };
    }
    case TYPE.heartbeat:
      if (route !== 0 || body.length !== 0) {
        throw new ProtocolError("bad_system_frame", `heartbeat with route_id ${route} and a ${body.length}-byte body`);
      }
      return { kind: "heartbeat" };
    default:
      throw new ProtocolError("bad_type", `typelen type ${type} from the gateway`);
  }
}
function ownBody(body) {
  return body.length === 0 ? void 0 : { bytes: body.slice() };
}
function parseStatus(body) {
  const text = fromUtf8(body);
  let v;
  try {
    v = text === void 0 ? void 0 : JSON.parse(text);
  } catch {
    v = void 0;
  }
  if (!isObject(v)) throw new ProtocolError("bad_system_frame", "status body is not a JSON object");
  const code = optString(v, "code", "bad_system_frame");
  const message = optString(v, "message", "bad_system_frame");
  const retryAfterMs = optUint(v, "retry_after_ms", Number.MAX_SAFE_INTEGER, "bad_system_frame");
  return { code, message, retryAfterMs, fields: v };
}
function isObject(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
function optString(o, key, reason) {
  const v = o[key];
  if (v === void 0 || v === null) return "";
  if (typeof v !== "string") throw new ProtocolError(reason, `"${key}" is not a string`);
  return v;
}
function optUint(o, key, max, reason = "bad_wrapper") {
  const v = o[key];
  if (v === void 0 || v === null) return 0;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > max) {
    throw new ProtocolError(reason, `"${key}" is not an integer in 0..${max}`);
  }
  return v;
}
var WRAPPER_TYPES = /* @__PURE__ */ new Set(["request", "response", "error", "push", "heartbeat", "notice", "notify"]);
function decodeWrapper(text) {
  let w;
  try {
    w = JSON.parse(text);
  } catch {
    w = void 0;
  }
  if (!isObject(w)) throw new ProtocolError("bad_wrapper", "not a JSON object");
  let type = optString(w, "type", "bad_wrapper");
  if (type !== "" && !WRAPPER_TYPES.has(type)) throw new ProtocolError("bad_wrapper", `unknown type ${JSON.stringify(type.slice(0, 32))}`);
  const route = optString(w, "route", "bad_wrapper");
  const code = optString(w, "code", "bad_wrapper");
  const message = optString(w, "message", "bad_wrapper");
  const routeId = optUint(w, "route_id", MAX_LEGACY_ROUTE_ID);
  const requestId = optUint(w, "request_id", Number.MAX_SAFE_INTEGER * 2048);
  const retryAfterMs = optUint(w, "retry_after_ms", Number.MAX_SAFE_INTEGER);
  if (type === "") type = requestId > 0 ? "request" : "notify";
  const named = route === "" ? {} : { route };
  const body = Object.prototype.hasOwnProperty.call(w, "payload") ? { json: w["payload"] } : void 0;
  switch (type) {
    case "response":
      return { kind: "response", routeId, ...named, requestId, body };
    case "push":
      return { kind: "push", routeId, ...named, body };
    case "error":
      return { kind: "error", routeId, ...named, requestId, code, message, retryAfterMs };
    case "notice": {
      const fields = { ...w };
      delete fields["type"];
      return { kind: "notice", code, message, fields };
    }
    case "heartbeat":
      return { kind: "heartbeat" };
    default:
      throw new ProtocolError("bad_type", `type ${JSON.stringify(type)} from the gateway`);
  }
}
var StreamDecoder = class {
  #env;
  #max;
  #buf = new Uint8Array(0);
  #scanned = 0;
  // delimiter: bytes of #buf already searched for '\n'
  constructor(env, maxFrameBytes) {
    this.#env = env;
    this.#max = maxFrameBytes;
  }
  /** Bytes held of a frame not yet complete. */
  get buffered() {
    return this.#buf.length;
  }
  push(chunk) {
    let buf = this.#buf;
    if (buf.length === 0) {
      buf = chunk;
    } else {
      const joined = new Uint8Array(buf.length + chunk.length);
      joined.set(buf);
      joined.set(chunk, buf.length);
      buf = joined;
    }
    const frames = [];
    const pos = this.#env === "delimiter" ? this.#lines(buf, frames) : this.#lengths(buf, frames);
    this.#buf = pos === buf.length ? new Uint8Array(0) : buf.slice(pos);
    if (this.#env === "delimiter") this.#scanned = this.#buf.length;
    return frames;
  }
  /**
   * The error for an end of stream here: undefined at a frame boundary, a
   * truncated ProtocolError inside a frame.
   */
  end() {
    if (this.#buf.length === 0) return void 0;
    return new ProtocolError("truncated", `EOF after ${this.#buf.length} bytes of a frame`);
  }
  #lengths(buf, frames) {
    const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const min = minSize(this.#env);
    let pos = 0;
    while (buf.length - pos >= 4) {
      const n = dv.getUint32(pos);
      if (n > this.#max) throw new ProtocolError("too_large", `length ${n} above max_frame_bytes ${this.#max}`);
      if (n < min) throw new ProtocolError("too_short", `length ${n} below ${min}`);
      if (!isLegacy(this.#env) && buf.length - pos > 4) checkVersion(buf[pos + 4], this.#env);
      if (buf.length - pos - 4 < n) break;
      frames.push(decodeMessage(this.#env, buf.subarray(pos + 4, pos + 4 + n), this.#max));
      pos += 4 + n;
    }
    return pos;
  }
  #lines(buf, frames) {
    let pos = 0;
    let from = this.#scanned;
    for (; ; ) {
      const nl = buf.indexOf(10, from);
      if (nl < 0) {
        if (buf.length - pos > this.#max) {
          throw new ProtocolError("too_large", `line of ${buf.length - pos}+ bytes above max_frame_bytes ${this.#max}`);
        }
        return pos;
      }
      const line = buf.subarray(pos, nl);
      if (line.length > this.#max) {
        throw new ProtocolError("too_large", `line of ${line.length} bytes above max_frame_bytes ${this.#max}`);
      }
      const text = fromUtf8(line);
      if (text === void 0) throw new ProtocolError("bad_wrapper", "line is not UTF-8");
      frames.push(decodeWrapper(text));
      pos = nl + 1;
      from = pos;
    }
  }
};

// src/room.ts
var ROOM_ROUTES = {
  /** s2c push: a state frame (binary; base64 in a JSON string on lenprefix and delimiter). */
  state: 65520,
  /** c2s notify: `{"version":N}`, or `{}` from a client holding no state (RoomState.syncBody). */
  sync: 65521,
  /** c2s request: `{"room":"<id>","token":"<token>","meta":<any>}` -> `{"room":"<id>"}`. */
  join: 65522,
  /** c2s request: empty -> `{}`. */
  leave: 65523,
  /** s2c push: a matchmaking event, JSON. */
  match: 65524
};
var RoomEndedError = class extends Error {
  room;
  reason;
  endMessage;
  constructor(room, end) {
    super(`room ${room} ended the join (${end.reason}${end.message ? `: ${end.message}` : ""})`);
    this.name = "RoomEndedError";
    this.room = room;
    this.reason = end.reason;
    this.endMessage = end.message;
  }
};
var StateFrameError = class extends Error {
  name = "StateFrameError";
  code = "client.bad_state_frame";
};
var MAX_SAFE = 2 ** 53;
var MAX_DEPTH = 16;
var MAX_VERSION_OPS = 2 ** 22;
var utf8Fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
function frameErrorAt(off, what) {
  return new StateFrameError(`state frame: byte ${off}: ${what}`);
}
function statePointer(path) {
  let s = "";
  for (const k of path) s += "/" + k.replace(/~/g, "~0").replace(/\//g, "~1");
  return s;
}
function compareKeyBytes(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return a.length - b.length;
}
var FrameReader = class {
  constructor(b) {
    this.b = b;
  }
  b;
  off = 0;
  byte(field) {
    if (this.off >= this.b.length) throw frameErrorAt(this.off, `truncated in the ${field}`);
    return this.b[this.off++];
  }
  /** A minimal varint of at most 8 bytes, unbounded. */
  varint(field) {
    const start = this.off;
    let lo = 0;
    let hi = 0;
    for (let i = 0; ; i++) {
      if (this.off >= this.b.length) throw frameErrorAt(start, `truncated in the ${field}`);
      const c = this.b[this.off++];
      if (i < 4) lo += (c & 127) * 2 ** (7 * i);
      else hi += (c & 127) * 2 ** (7 * (i - 4));
      if (c < 128) {
        if (c === 0 && i > 0) throw frameErrorAt(start, `the ${field} is a varint that is not minimal`);
        return { lo, hi };
      }
      if (i === 7) throw frameErrorAt(start, `the ${field} is a varint longer than 8 bytes`);
    }
  }
  /** A varint field other than an integer value: at most 2^53, a number held exactly. */
  uvarint(field) {
    const start = this.off;
    const { lo, hi } = this.varint(field);
    if (hi > 2 ** 25 || hi === 2 ** 25 && lo > 0) throw frameErrorAt(start, `the ${field} is above 2^53`);
    return hi * 2 ** 28 + lo;
  }
  bytes(field) {
    const at = this.off;
    const n = this.uvarint(`${field} length`);
    if (n > this.b.length - this.off) throw frameErrorAt(at, `truncated in the ${field}`);
    const bytes = this.b.subarray(this.off, this.off + n);
    this.off += n;
    return { bytes, at };
  }
  string(field) {
    const { bytes, at } = this.bytes(field);
    const s = utf8Text(bytes);
    if (s === void 0) throw frameErrorAt(at, `the ${field} is not valid UTF-8`);
    return s;
  }
};
function utf8Text(b) {
  try {
    return utf8Fatal.decode(b);
  } catch {
    return void 0;
  }
}
function decodeStateFrame(body) {
  const r = new FrameReader(body);
  const format = r.byte("format");
  if (format !== 1) throw frameErrorAt(0, `format ${format} is not 1`);
  const kind = r.byte("kind");
  if (kind < 1 || kind > 3) throw frameErrorAt(1, `kind ${kind} is not 1 (SNAPSHOT), 2 (DELTA) or 3 (END)`);
  const flags = r.byte("flags");
  const hexFlags = "0x" + flags.toString(16).padStart(2, "0");
  if ((flags & ~1) !== 0) throw frameErrorAt(2, `flags ${hexFlags}: only bit 0 (CONTINUES) is defined`);
  if (kind === 3) {
    if (flags !== 0) throw frameErrorAt(2, `flags ${hexFlags}: an END has no flags`);
    const reason = r.string("reason");
    const message = r.string("message");
    if (r.off < body.length) throw frameErrorAt(r.off, "trailing bytes after the END's message");
    return { kind: "end", reason, message };
  }
  const continues = flags === 1;
  const baseAt = r.off;
  const base = r.uvarint("base");
  const version = r.uvarint("version");
  if (kind === 1 && base !== 0) throw frameErrorAt(baseAt, `a SNAPSHOT's base is 0, got ${base}`);
  if (kind === 2 && base >= version) throw frameErrorAt(baseAt, `a DELTA's base ${base} is not below its version ${version}`);
  let roomId = "";
  let tickHz = 0;
  if (kind === 1) {
    roomId = r.string("room id");
    tickHz = r.byte("tick_hz");
  }
  const count = r.uvarint("count");
  const ops = [];
  let prev = [];
  let prevBytes = [];
  for (let i = 1; i <= count; i++) {
    if (r.off === body.length) throw frameErrorAt(r.off, `count ${count}, but the frame ends after ${i - 1} of them`);
    const start = r.off;
    const code = r.byte("op");
    if (code !== 1 && code !== 2) throw frameErrorAt(start, `op ${i}: code ${code} is not 1 (SET) or 2 (REMOVE)`);
    const sharedAt = r.off;
    const shared = r.uvarint("shared");
    if (shared > prev.length) throw frameErrorAt(sharedAt, `op ${i}: shared ${shared} is above the previous path's length ${prev.length}`);
    const addedAt = r.off;
    const added = r.uvarint("added");
    if (shared + added === 0 || shared + added > MAX_DEPTH) {
      throw frameErrorAt(addedAt, `op ${i}: shared ${shared} + added ${added} keys: a path is 1 to ${MAX_DEPTH} keys`);
    }
    const path = prev.slice(0, shared);
    const keyBytes = prevBytes.slice(0, shared);
    for (let j = 0; j < added; j++) {
      const { bytes, at } = r.bytes("key");
      const k = utf8Text(bytes);
      if (k === void 0) throw frameErrorAt(at, `op ${i}: key ${shared + j + 1} is not valid UTF-8`);
      path.push(k);
      keyBytes.push(bytes);
    }
    const cmp = shared < prev.length && added > 0 ? compareKeyBytes(keyBytes[shared], prevBytes[shared]) : 0;
    if (added === 0 && shared === prev.length) throw frameErrorAt(start, `op ${i}: ${statePointer(path)} twice`);
    if (added === 0 || cmp < 0) {
      throw frameErrorAt(start, `op ${i}: ${statePointer(path)} comes before the previous op's ${statePointer(prev)} (path order)`);
    }
    if (shared < prev.length && cmp === 0) {
      let n = 0;
      while (n < path.length && n < prev.length && compareKeyBytes(keyBytes[n], prevBytes[n]) === 0) n++;
      throw frameErrorAt(start, `op ${i}: shared ${shared}, but the path shares ${n} keys with the previous op's ${statePointer(prev)}`);
    }
    if (code === 1) ops.push({ op: "set", path, value: readValue(r, i) });
    else ops.push({ op: "remove", path });
    prev = path;
    prevBytes = keyBytes;
  }
  if (r.off < body.length) throw frameErrorAt(r.off, `trailing bytes after the last of count ${count} ops`);
  return kind === 1 ? { kind: "snapshot", continues, base, version, roomId, tickHz, ops } : { kind: "delta", continues, base, version, ops };
}
function readValue(r, i) {
  const at = r.off;
  const tag = r.byte("value tag");
  switch (tag) {
    case 0:
      return false;
    case 1:
      return true;
    case 2: {
      const intAt = r.off;
      const { lo, hi } = r.varint("integer");
      if (hi > 2 ** 26 || hi === 2 ** 26 && lo > 0) throw frameErrorAt(intAt, `op ${i}: an integer beyond ±2^53`);
      const m = hi * 2 ** 27 + Math.floor(lo / 2);
      return lo % 2 === 1 ? -m - 1 : m;
    }
    case 3: {
      if (r.b.length - r.off < 8) throw frameErrorAt(r.off, "truncated in the float64");
      const floatAt = r.off;
      const f = new DataView(r.b.buffer, r.b.byteOffset + r.off, 8).getFloat64(0, false);
      r.off += 8;
      if (!Number.isFinite(f)) throw frameErrorAt(floatAt, `op ${i}: a float64 that is not finite`);
      if (Number.isInteger(f) && Math.abs(f) <= MAX_SAFE) throw frameErrorAt(floatAt, `op ${i}: an integral float64 within ±2^53 (it is an integer, tag 2)`);
      return f;
    }
    case 4: {
      const { bytes, at: strAt } = r.bytes("string");
      const s = utf8Text(bytes);
      if (s === void 0) throw frameErrorAt(strAt, `op ${i}: the string is not valid UTF-8`);
      return s;
    }
    case 5:
      return {};
  }
  throw frameErrorAt(at, `op ${i}: value tag ${tag} is not 0 to 5`);
}
var hasOwnKey = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
var isStateTable = (v) => typeof v === "object" && v !== null;
function putOwn(t, k, v) {
  Object.defineProperty(t, k, { value: v, writable: true, enumerable: true, configurable: true });
}
function ownChild(t, k) {
  return hasOwnKey(t, k) ? t[k] : void 0;
}
var opPathKey = (p) => p.map((k) => `${k.length}:${k}`).join("");
function applyStateOps(state, ops) {
  const seen = /* @__PURE__ */ new Map();
  ops.forEach((op, i) => {
    const p = op.path;
    const n = p.length;
    const fail = (what) => new StateFrameError(`state frame: op ${i + 1} (${op.op === "set" ? "SET" : "REMOVE"} ${statePointer(p)}): ${what}`);
    let near = -1;
    let table = false;
    for (let d = n - 1; d >= 1 && seen.size > 0; d--) {
      const t = seen.get(opPathKey(p.slice(0, d)));
      if (t !== void 0) {
        near = d;
        table = t;
        break;
      }
    }
    if (near >= 0 && !table) throw fail(`${statePointer(p.slice(0, near))} is not a table`);
    if (near >= 0 && near < n - 1) throw fail(`${statePointer(p.slice(0, near + 1))} is not a table`);
    if (near >= 0 && op.op === "remove") throw fail("no such path");
    if (near < 0) {
      let node = state;
      for (let d = 0; d < n - 1; d++) {
        const next = ownChild(node, p[d]);
        if (!isStateTable(next)) throw fail(`${statePointer(p.slice(0, d + 1))} is not a table`);
        node = next;
      }
      if (op.op === "remove" && !hasOwnKey(node, p[n - 1])) throw fail("no such path");
    }
    seen.set(opPathKey(p), op.op === "set" && isStateTable(op.value));
  });
  for (const op of ops) {
    let node = state;
    for (let d = 0; d < op.path.length - 1; d++) node = node[op.path[d]];
    const last = op.path[op.path.length - 1];
    if (op.op === "remove") delete node[last];
    else putOwn(node, last, isStateTable(op.value) ? {} : op.value);
  }
}
var RoomState = class {
  #state;
  #version = 0;
  #roomId = "";
  #tickHz = 0;
  #pending;
  #ops = [];
  #parts = 0;
  #skipping = false;
  #changes = /* @__PURE__ */ new Set();
  #patches = /* @__PURE__ */ new Set();
  #ends = /* @__PURE__ */ new Set();
  #gaps = /* @__PURE__ */ new Set();
  #onError;
  constructor(options = {}) {
    this.#onError = options.onError;
  }
  /** The state at `version`; undefined before the first SNAPSHOT and after END. Read it; do not change it. */
  get state() {
    return this.#state;
  }
  /** The state's version; undefined without a state. */
  get version() {
    return this.#state === void 0 ? void 0 : this.#version;
  }
  /** The last SNAPSHOT's room id. */
  get roomId() {
    return this.#roomId;
  }
  /** The last SNAPSHOT's tick rate: clients clock themselves with it. */
  get tickHz() {
    return this.#tickHz;
  }
  /** The body of `shield.room.sync`: `{"version":N}`, or `{}` without a state. */
  syncBody() {
    return this.#state === void 0 ? {} : { version: this.#version };
  }
  onChange(handler) {
    return subscribe(this.#changes, handler);
  }
  onPatch(handler) {
    return subscribe(this.#patches, handler);
  }
  onEnd(handler) {
    return subscribe(this.#ends, handler);
  }
  /** Called whenever a body calls for a sync (RoomUpdate.sync). */
  onGap(handler) {
    return subscribe(this.#gaps, handler);
  }
  /** Forgets the state and any buffered parts (a client that left the room or lost its session). */
  reset() {
    this.#state = void 0;
    this.#version = 0;
    this.#drop();
    this.#skipping = false;
  }
  /**
   * Takes one `shield.room.state` body: bytes, or on lenprefix and
   * delimiter the payload's standard base64 string. Malformed input never
   * throws: it is a `gap` update with its StateFrameError, the state left
   * as it was.
   */
  receive(body) {
    const u = this.#receive(body);
    if (u.end !== void 0) this.#emit(this.#ends, u.end);
    if (u.sync) this.#emit(this.#gaps, { why: u.why ?? u.error?.message ?? "parts of a version were broken off", error: u.error, version: this.version });
    return u;
  }
  #receive(body) {
    const gap = (version, error, why) => ({
      status: "gap",
      version,
      sync: true,
      ops: [],
      ...error ? { error } : {},
      ...why ? { why } : {}
    });
    let b = new Uint8Array();
    let f;
    try {
      b = typeof body === "string" ? stateFromBase64(body) : body;
      f = decodeStateFrame(b);
    } catch (e) {
      if (!(e instanceof StateFrameError)) throw e;
      this.#drop();
      this.#skipping = b.length >= 3 && b[0] === 1 && (b[2] & 1) === 1 && b[1] !== 3;
      return gap(void 0, e);
    }
    if (this.#skipping && f.kind !== "end") {
      this.#skipping = f.continues;
      return gap(f.version, void 0, "the rest of a version whose part did not decode");
    }
    this.#skipping = false;
    let broken = false;
    if (this.#pending !== void 0 && !continuesPending(this.#pending, f)) {
      this.#drop();
      broken = true;
    }
    if (f.kind === "end") {
      this.reset();
      this.#roomId = "";
      this.#tickHz = 0;
      return { status: "end", version: void 0, sync: false, ops: [], end: { reason: f.reason, message: f.message } };
    }
    if (f.kind === "delta" && this.#pending === void 0) {
      if (this.#state === void 0) return gap(f.version, void 0, "a DELTA before any SNAPSHOT");
      if (f.base !== this.#version) return gap(f.version, void 0, `a DELTA from version ${f.base}, but the state is at version ${this.#version}`);
    }
    const err = this.#buffer(f);
    if (err !== void 0) {
      this.#drop();
      this.#skipping = f.continues;
      return gap(f.version, err);
    }
    if (f.continues) return { status: "partial", version: f.version, sync: broken, ops: [] };
    const ops = this.#ops;
    this.#drop();
    let target;
    if (f.kind === "snapshot") target = {};
    else target = this.#state;
    try {
      applyStateOps(target, ops);
    } catch (e) {
      if (!(e instanceof StateFrameError)) throw e;
      return gap(f.version, e);
    }
    this.#state = target;
    this.#version = f.version;
    if (f.kind === "snapshot") {
      this.#roomId = f.roomId;
      this.#tickHz = f.tickHz;
    }
    this.#events(f.kind, f.version, ops);
    return { status: "applied", version: f.version, sync: broken, ops };
  }
  #buffer(f) {
    if (this.#pending === void 0) {
      this.#pending = { kind: f.kind, base: f.base, version: f.version, roomId: f.kind === "snapshot" ? f.roomId : "", tickHz: f.kind === "snapshot" ? f.tickHz : 0 };
    }
    this.#parts++;
    if (this.#ops.length > 0 && f.ops.length > 0) {
      const prev = this.#ops[this.#ops.length - 1].path;
      const first = f.ops[0].path;
      const c = comparePaths(first, prev);
      if (c === 0) return new StateFrameError(`state frame: part ${this.#parts}: op 1: ${statePointer(first)} twice`);
      if (c < 0) return new StateFrameError(`state frame: part ${this.#parts}: op 1: ${statePointer(first)} comes before the previous part's ${statePointer(prev)} (path order)`);
    }
    if (this.#ops.length + f.ops.length > MAX_VERSION_OPS) {
      return new StateFrameError(`state frame: part ${this.#parts}: more than ${MAX_VERSION_OPS} ops in one version`);
    }
    this.#ops = this.#ops.length === 0 ? f.ops : this.#ops.concat(f.ops);
    return void 0;
  }
  #drop() {
    this.#pending = void 0;
    this.#ops = [];
    this.#parts = 0;
  }
  #events(kind, version, ops) {
    if (this.#changes.size === 0 && this.#patches.size === 0) return;
    const changes = ops.map((op) => {
      let value;
      if (op.op === "set") value = isStateTable(op.value) ? valueAt(this.#state, op.path) : op.value;
      return { op: op.op, path: op.path, pointer: statePointer(op.path), value };
    });
    for (const c of changes) this.#emit(this.#changes, c);
    this.#emit(this.#patches, { kind, version, changes });
  }
  #emit(handlers, arg) {
    for (const h of [...handlers]) {
      try {
        h(arg);
      } catch (e) {
        if (this.#onError) {
          try {
            this.#onError(e);
          } catch (e2) {
            reportHandlerError(e2);
          }
        } else reportHandlerError(e);
      }
    }
  }
};
function subscribe(set, h) {
  set.add(h);
  return () => set.delete(h);
}
function reportHandlerError(e) {
  const report = globalThis.reportError;
  if (typeof report === "function") report(e);
  else
    queueMicrotask(() => {
      throw e;
    });
}
function continuesPending(p, f) {
  if (f.kind === "end" || f.kind !== p.kind || f.base !== p.base || f.version !== p.version) return false;
  return f.kind === "delta" || f.roomId === p.roomId && f.tickHz === p.tickHz;
}
var keyEncoder = new TextEncoder();
function comparePaths(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return compareKeyBytes(keyEncoder.encode(a[i]), keyEncoder.encode(b[i]));
  }
  return a.length - b.length;
}
function valueAt(t, path) {
  let v = t;
  for (const k of path) v = isStateTable(v) ? ownChild(v, k) : void 0;
  return v;
}
var STANDARD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
function stateFromBase64(s) {
  if (!STANDARD_BASE64.test(s)) throw new StateFrameError("state frame: the payload is not standard base64");
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
var STATE_ROUTE_NAME = "shield.room.state";
var newRoom;
var Room = class _Room {
  #client;
  #callTimeoutMs;
  #onError;
  #rs;
  #end;
  /** ENDs taken (a leave waits for one more, whether it comes before or after the leave's answer). */
  #ends = 0;
  /** When the last shield.room.sync went out (Date.now()). */
  #lastSync = -Infinity;
  #waiters = /* @__PURE__ */ new Set();
  #changes = /* @__PURE__ */ new Set();
  #patches = /* @__PURE__ */ new Set();
  #endHandlers = /* @__PURE__ */ new Set();
  #gaps = /* @__PURE__ */ new Set();
  #updates = /* @__PURE__ */ new Set();
  static {
    newRoom = (client, callTimeoutMs, onError) => {
      const r = new _Room(client, callTimeoutMs, onError);
      return { room: r, receive: (body) => r.#receive(body), reconnected: (resumed) => r.#reconnected(resumed) };
    };
  }
  constructor(client, callTimeoutMs, onError) {
    this.#client = client;
    this.#callTimeoutMs = callTimeoutMs;
    this.#onError = onError;
    this.#fresh();
    client.onClose((error) => {
      const err = error instanceof ClosedError ? error : new ClosedError("the client was closed", error === void 0 ? void 0 : { cause: error });
      for (const w of [...this.#waiters]) w.reject(err);
    });
  }
  /** The state; undefined before the first SNAPSHOT and after END. Read it; do not change it. */
  get state() {
    return this.#rs.state;
  }
  /** The state's version; undefined without a state. */
  get version() {
    return this.#rs.version;
  }
  /** The room's id (its last SNAPSHOT's); '' when in no room. */
  get roomId() {
    return this.#rs.roomId;
  }
  /** The room's tick rate, as its last SNAPSHOT said; 0 when in no room. */
  get tickHz() {
    return this.#rs.tickHz;
  }
  /** Whether the session is in a room: a SNAPSHOT applied, no END since. */
  get inRoom() {
    return this.#rs.state !== void 0;
  }
  /**
   * The last END's reason and message (docs/rooms.md §5.2: `left`,
   * `removed`, `timeout`, `room_closed`, `closed`, ...); undefined while in a
   * room and before any END.
   */
  get end() {
    return this.inRoom ? void 0 : this.#end;
  }
  /** One event per op of each applied version, in order (RoomState.onChange). */
  onChange(handler) {
    return subscribe(this.#changes, handler);
  }
  /** One event per applied version, after its changes (RoomState.onPatch). */
  onPatch(handler) {
    return subscribe(this.#patches, handler);
  }
  /** The membership ended: an END, or reason `closed` when a reconnect made a new session. */
  onEnd(handler) {
    return subscribe(this.#endHandlers, handler);
  }
  /** A body called for a sync (RoomState.onGap); the Room sends it itself, at most once a second. */
  onGap(handler) {
    return subscribe(this.#gaps, handler);
  }
  /** What each state push did (applied, partial, gap, end), after the state and the other events. */
  onUpdate(handler) {
    return subscribe(this.#updates, handler);
  }
  /**
   * Sends `shield.room.join` for room (with meta, when given), then waits for
   * the room's SNAPSHOT: once it resolves the state is there and inputs may
   * go out (§8.3 step 4). The room's refusal rejects with its ShieldError
   * (`client_rpc.join_refused`, `room_full`, `in_room`, the room's own
   * code); also TimeoutError, AbortError, and ClosedError when the
   * connection ends before the answer or a reconnect makes a new session.
   */
  async join(room, meta, options = {}) {
    if (typeof room !== "string" || room === "") throw new TypeError("join: room must be a non-empty string");
    const body = { room };
    if (options.token !== void 0) body["token"] = options.token;
    if (meta !== void 0) body["meta"] = meta;
    const before = this.#ends;
    const t0 = Date.now();
    const timeout = options.timeout ?? this.#callTimeoutMs;
    const answer = jsonOf(await this.#client.call(ROOM_ROUTES.join, body, callOptions(timeout, options.signal)));
    const joined = typeof answer === "object" && answer !== null ? answer.room : void 0;
    if (joined !== room) throw new Error(`the join answered room ${JSON.stringify(joined)}, want ${JSON.stringify(room)}`);
    const inIt = () => this.inRoom && this.#rs.roomId === room;
    await this.#wait(() => inIt() || this.#ends > before, remaining(t0, timeout), options.signal, true, `the SNAPSHOT of ${room}`);
    if (!inIt() && this.#end !== void 0) throw new RoomEndedError(room, this.#end);
  }
  /**
   * Sends `shield.room.leave` and waits for END: once it resolves the session
   * is home again and its next call reaches home (§5.2). Outside a room it
   * rejects with `client_rpc.not_member`.
   */
  async leave(options = {}) {
    const before = this.#ends;
    const t0 = Date.now();
    const timeout = options.timeout ?? this.#callTimeoutMs;
    await this.#client.call(ROOM_ROUTES.leave, void 0, callOptions(timeout, options.signal));
    await this.#wait(() => this.#ends > before, remaining(t0, timeout), options.signal, false, "the END after the leave");
  }
  /**
   * Sends `shield.room.sync` with the version held: the next tick sends the
   * changes since, or a SNAPSHOT (§7.5). false when the client is not open.
   */
  sync() {
    this.#lastSync = Date.now();
    return this.#client.notify(ROOM_ROUTES.sync, this.#rs.syncBody());
  }
  // -------------------------------------------------------------------------
  /** A new RoomState, its events forwarded to the Room's handlers. */
  #fresh() {
    const rs = new RoomState({ onError: (e) => this.#report(e) });
    rs.onChange((c) => this.#emit(this.#changes, c));
    rs.onPatch((p) => this.#emit(this.#patches, p));
    rs.onEnd((e) => {
      this.#end = e;
      this.#ends++;
      this.#emit(this.#endHandlers, e);
    });
    rs.onGap((g) => this.#emit(this.#gaps, g));
    this.#rs = rs;
  }
  #receive(body) {
    let b = new Uint8Array(0);
    if (body !== void 0) {
      if ("bytes" in body) b = body.bytes;
      else if (typeof body.json === "string") b = body.json;
    }
    const u = this.#rs.receive(b);
    if (u.sync && Date.now() - this.#lastSync >= 1e3) this.sync();
    this.#emit(this.#updates, u);
    this.#settle();
  }
  #reconnected(resumed) {
    if (resumed) {
      if (this.inRoom) this.sync();
      return;
    }
    for (const w of [...this.#waiters]) {
      if (w.failOnNewSession) w.reject(new ClosedError("a reconnect made a new session, which is in no room"));
    }
    if (!this.inRoom) return;
    this.#fresh();
    const end = { reason: "closed", message: "" };
    this.#end = end;
    this.#ends++;
    this.#emit(this.#endHandlers, end);
    this.#emit(this.#updates, { status: "end", version: void 0, sync: false, ops: [], end });
    this.#settle();
  }
  /** Settles the waiters whose condition now holds. */
  #settle() {
    for (const w of [...this.#waiters]) if (w.done()) w.resolve();
  }
  /** Resolves once done() holds, checked now and after every update; rejects past ms (0: never), on abort, on close. */
  #wait(done, ms, signal, failOnNewSession, what) {
    if (done()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      let timer;
      const onAbort = () => w.reject(new AbortError("aborted", { cause: signal?.reason }));
      const finish = () => {
        this.#waiters.delete(w);
        if (timer !== void 0) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const w = {
        done,
        failOnNewSession,
        resolve: () => {
          finish();
          resolve();
        },
        reject: (e) => {
          finish();
          reject(e);
        }
      };
      if (signal?.aborted) {
        reject(new AbortError("aborted", { cause: signal.reason }));
        return;
      }
      this.#waiters.add(w);
      signal?.addEventListener("abort", onAbort, { once: true });
      if (ms > 0) timer = setTimeout(() => w.reject(new TimeoutError(`no ${what} within the timeout`)), ms);
      else if (ms < 0) w.reject(new TimeoutError(`no ${what} within the timeout`));
    });
  }
  #emit(handlers, arg) {
    for (const h of [...handlers]) {
      try {
        h(arg);
      } catch (e) {
        this.#report(e);
      }
    }
  }
  #report(e) {
    if (this.#onError) {
      try {
        this.#onError(e);
      } catch (e2) {
        reportHandlerError(e2);
      }
    } else reportHandlerError(e);
  }
};
function isRoomStatePush(routeId, route) {
  return routeId === ROOM_ROUTES.state || route === STATE_ROUTE_NAME;
}
function attachRoom(client, callTimeoutMs, onError) {
  return newRoom(client, callTimeoutMs, onError);
}
function remaining(t0, timeout) {
  if (timeout <= 0) return 0;
  const left = timeout - (Date.now() - t0);
  return left > 0 ? left : -1;
}
function callOptions(timeout, signal) {
  return signal === void 0 ? { timeout, raw: true } : { timeout, raw: true, signal };
}
function jsonOf(raw) {
  if (!(raw instanceof Uint8Array) || raw.length === 0) return void 0;
  try {
    return JSON.parse(new TextDecoder().decode(raw));
  } catch {
    return void 0;
  }
}

// src/client.ts
var NOTICE_CODES = /* @__PURE__ */ new Set([
  "session.kicked",
  "session.idle_timeout",
  "session.rate_limited",
  "session.auth_timeout",
  "session.target_lost",
  "gateway.draining"
]);
var RESUMABLE_NOTICES = /* @__PURE__ */ new Set(["session.idle_timeout"]);
function resolveOptions(o) {
  const envelope = o.envelope ?? "idlen";
  if (!ENVELOPES.includes(envelope)) throw new TypeError(`unknown envelope ${JSON.stringify(envelope)} (want ${ENVELOPES.join(", ")})`);
  const body = o.body ?? "json";
  if (body !== "json" && body !== "raw") throw new TypeError(`unknown body mode ${JSON.stringify(body)} (want json or raw)`);
  const num = (v, def, name, min = 0) => {
    const n = v ?? def;
    if (typeof n !== "number" || Number.isNaN(n) || n < min) throw new RangeError(`${name} must be a number >= ${min}`);
    return n;
  };
  let reconnect;
  if (o.reconnect !== false) {
    const r = typeof o.reconnect === "object" ? o.reconnect : {};
    reconnect = {
      baseMs: num(r.baseMs, 250, "reconnect.baseMs"),
      maxMs: num(r.maxMs, 1e4, "reconnect.maxMs"),
      attempts: num(r.attempts, 10, "reconnect.attempts", 1),
      jitter: Math.min(1, num(r.jitter, 0.5, "reconnect.jitter"))
    };
  }
  return {
    envelope,
    body,
    maxFrameBytes: num(o.maxFrameBytes, 65536, "maxFrameBytes", envelope === "typelen" ? 12 : 8),
    heartbeatMs: num(o.heartbeatMs, 15e3, "heartbeatMs"),
    callTimeoutMs: num(o.callTimeoutMs, 3e4, "callTimeoutMs"),
    declareDeadlines: o.declareDeadlines ?? false,
    connectTimeoutMs: num(o.connectTimeoutMs, 1e4, "connectTimeoutMs", 1),
    reconnect,
    onError: o.onError
  };
}
function backoffDelay(attempt, r, random = Math.random) {
  const exp = Math.min(r.maxMs, r.baseMs * 2 ** Math.min(attempt - 1, 52));
  return exp * (1 - r.jitter * random());
}
function outBody(body) {
  if (body === void 0) return void 0;
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  return { json: body };
}
function appBody(body, raw) {
  if (body === void 0) return raw ? new Uint8Array(0) : void 0;
  if ("json" in body) return raw ? utf8(JSON.stringify(body.json)) : body.json;
  if (raw) return body.bytes;
  const text = fromUtf8(body.bytes) ?? new TextDecoder().decode(body.bytes);
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
function statusOf(f) {
  const bad = (what) => {
    throw new ProtocolError("bad_system_frame", `${f.code} status without a valid ${what}`);
  };
  switch (f.code) {
    case "session.resume_token":
    case "session.resumed": {
      const token = f.fields["token"];
      if (typeof token !== "string" || token === "") bad("token");
      return { code: f.code, token };
    }
    case "session.resume_failed": {
      const message = f.fields["message"] ?? "";
      if (typeof message !== "string") bad("message");
      return { code: f.code, message };
    }
    case "gateway.drain_started": {
      const grace = f.fields["grace_ms"];
      if (typeof grace !== "number" || !(grace >= 0)) bad("grace_ms");
      const retry = f.fields["retry_after_ms"];
      if (retry === void 0 || retry === null) return { code: f.code, grace_ms: grace };
      if (typeof retry !== "number" || !(retry >= 0)) bad("retry_after_ms");
      return { code: f.code, grace_ms: grace, retry_after_ms: retry };
    }
    default:
      return void 0;
  }
}
function reportLater(e) {
  const report = globalThis.reportError;
  if (typeof report === "function") report(e);
  else
    queueMicrotask(() => {
      throw e;
    });
}
var Client = class _Client {
  #o;
  #dial;
  #state = "connecting";
  #link;
  #dialing;
  #pending = /* @__PURE__ */ new Map();
  #nextId = 0;
  #token;
  #attempt = 0;
  #retryTimer;
  #resumeTimer;
  #heartbeatTimer;
  #pushes = /* @__PURE__ */ new Map();
  #anyPush = /* @__PURE__ */ new Set();
  #notices = /* @__PURE__ */ new Set();
  #statuses = /* @__PURE__ */ new Set();
  #reconnects = /* @__PURE__ */ new Set();
  #disconnects = /* @__PURE__ */ new Set();
  #closes = /* @__PURE__ */ new Set();
  #room;
  /** Resolves once the client is closed for good: undefined when the app closed it, else why. Never rejects. */
  closed;
  #resolveClosed;
  /** Use connect() or createClient(). */
  constructor(dial, options) {
    this.#o = resolveOptions(options);
    this.#dial = dial;
    this.closed = new Promise((resolve) => this.#resolveClosed = resolve);
  }
  /** Opens a client over dial; resolves once the first connection is open. */
  static async open(dial, options = {}) {
    const c = new _Client(dial, options);
    const signal = options.signal;
    if (signal?.aborted) throw new AbortError("connect aborted", { cause: signal.reason });
    const onAbort = () => c.#dialing?.abort(new AbortError("connect aborted", { cause: signal?.reason }));
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const link = await c.#openLink();
      if (c.#state === "closed") throw await c.closed ?? new ClosedError("the client was closed while connecting");
      c.#state = "open";
      c.#startHeartbeat(link);
    } catch (e) {
      c.#finish(e instanceof Error ? e : new Error(String(e)));
      throw e;
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
    return c;
  }
  /** The envelope this client speaks. */
  get envelope() {
    return this.#o.envelope;
  }
  get state() {
    return this.#state;
  }
  /** The latest resume token (`session.resume_token`, `session.resumed`), if the session has one. */
  get resumeToken() {
    return this.#token;
  }
  /** Calls pending an answer. */
  get pendingCalls() {
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
  call(route, body, options = {}) {
    return new Promise((resolve, reject) => {
      const signal = options.signal;
      if (signal?.aborted) {
        reject(new AbortError("call aborted", { cause: signal.reason }));
        return;
      }
      const link = this.#link;
      if (this.#state !== "open" || link === void 0 || link.conn === void 0 || link.dead) {
        reject(this.#notOpen());
        return;
      }
      const id = this.#newId();
      const timeout = options.timeout ?? this.#o.callTimeoutMs;
      let wire;
      try {
        wire = this.#encodeRequest(route, id, outBody(body), this.#o.declareDeadlines && timeout > 0 ? Math.ceil(timeout) : void 0);
      } catch (e) {
        reject(e);
        return;
      }
      const p = { resolve, reject, raw: options.raw ?? this.#o.body === "raw", route };
      if (timeout > 0) {
        p.timer = setTimeout(() => {
          if (this.#settle(id) === p) reject(new TimeoutError(`no answer on route ${route} within ${timeout} ms`));
        }, timeout);
      }
      if (signal) {
        p.signal = signal;
        p.onAbort = () => {
          if (this.#settle(id) === p) reject(new AbortError("call aborted", { cause: signal.reason }));
        };
        signal.addEventListener("abort", p.onAbort, { once: true });
      }
      this.#pending.set(id, p);
      for (const w of wire) link.conn.send(w);
    });
  }
  /**
   * Sends a notify (no answer ever comes). Returns false when the client is
   * not open (the notify is dropped), true once it is written.
   */
  notify(route, body) {
    const link = this.#link;
    const wire = this.#encode({ kind: "notify", route, body: outBody(body) });
    if (this.#state !== "open" || link?.conn === void 0 || link.dead) return false;
    link.conn.send(wire);
    return true;
  }
  /** Sends one heartbeat now (they are also sent every heartbeatMs). false when not open. */
  heartbeat() {
    const link = this.#link;
    if (this.#state !== "open" || link?.conn === void 0 || link.dead) return false;
    link.conn.send(this.#encode({ kind: "heartbeat" }));
    return true;
  }
  /**
   * Handles pushes on route (a route_id, or on the legacy envelopes a route
   * name). Returns a function that removes the handler.
   */
  onPush(route, handler) {
    let set = this.#pushes.get(route);
    if (!set) this.#pushes.set(route, set = /* @__PURE__ */ new Set());
    set.add(handler);
    return () => {
      set.delete(handler);
      if (set.size === 0 && this.#pushes.get(route) === set) this.#pushes.delete(route);
    };
  }
  /** Handles pushes on routes that have no handler of their own. */
  onAnyPush(handler) {
    return add(this.#anyPush, handler);
  }
  /** Notices (session.kicked, gateway.draining, ...): the gateway closes the session right after. */
  onNotice(handler) {
    return add(this.#notices, handler);
  }
  /** Status frames the client knows (session.resume_token, session.resumed, session.resume_failed, gateway.drain_started). */
  onStatus(handler) {
    return add(this.#statuses, handler);
  }
  /** A reconnect succeeded; `resumed` says whether the session survived or the app must log in again. */
  onReconnect(handler) {
    return add(this.#reconnects, handler);
  }
  /** The open connection ended; pending calls have been rejected. */
  onDisconnect(handler) {
    return add(this.#disconnects, handler);
  }
  /**
   * The client closed for good: undefined when the app closed it, else the
   * error (a ProtocolError for a malformed frame, a ClosedError with the
   * notice that ended the session, or with the cause of the last failed
   * reconnect).
   */
  onClose(handler) {
    return add(this.#closes, handler);
  }
  /**
   * The client's Room (docs/rooms.md §8.3), made on the first call: it takes
   * every `shield.room.state` push from then on, so call it before the
   * session may be joined to a room (a lobby handler's `shield.room.join`
   * included), or the SNAPSHOT is missed. The same Room follows the session
   * from room to room.
   */
  room() {
    this.#room ??= attachRoom(this, this.#o.callTimeoutMs, this.#o.onError);
    return this.#room.room;
  }
  /** Closes the client: no reconnect; pending calls reject with ClosedError. Resolves once the connection is closed. */
  async close() {
    const link = this.#link;
    this.#finish(void 0);
    if (link?.conn !== void 0) await link.ended;
  }
  // -------------------------------------------------------------------------
  #notOpen() {
    return new ClosedError(this.#state === "closed" ? "the client is closed" : `the client is not connected (${this.#state})`);
  }
  #newId() {
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
  #encodeRequest(route, id, body, deadlineMs) {
    if (deadlineMs === void 0) return [this.#encode({ kind: "request", route, requestId: id, body })];
    if (isLegacy(this.#o.envelope)) return [this.#encode({ kind: "request", route, requestId: id, body, deadlineMs })];
    const d = this.#encode({ kind: "deadline", requestId: id, deadlineMs });
    const r = this.#encode({ kind: "request", route, requestId: id, body });
    if (d instanceof Uint8Array && r instanceof Uint8Array && this.#link?.conn?.stream) {
      const both = new Uint8Array(d.length + r.length);
      both.set(d);
      both.set(r, d.length);
      return [both];
    }
    return [d, r];
  }
  #encode(f) {
    const stream = this.#link?.conn?.stream ?? false;
    const msg = encodeMessage(this.#o.envelope, f);
    const size = typeof msg === "string" ? utf8(msg).length : msg.length;
    if (size > this.#o.maxFrameBytes) {
      throw new RangeError(`frame of ${size} bytes above maxFrameBytes ${this.#o.maxFrameBytes}`);
    }
    return stream ? frameMessage(msg) : msg;
  }
  /** Removes a pending call and its timer and listener; returns it. */
  #settle(id) {
    const p = this.#pending.get(id);
    if (p === void 0) return void 0;
    this.#pending.delete(id);
    if (p.timer !== void 0) clearTimeout(p.timer);
    if (p.signal && p.onAbort) p.signal.removeEventListener("abort", p.onAbort);
    return p;
  }
  #rejectPending(err) {
    for (const id of [...this.#pending.keys()]) this.#settle(id)?.reject(err);
  }
  #emit(handlers, ...args) {
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
  async #openLink() {
    let markEnded;
    const ended = new Promise((r) => markEnded = r);
    const link = { early: [], dead: false, rx: 0, sessionOver: false, ended, markEnded };
    this.#link = link;
    const ac = new AbortController();
    this.#dialing = ac;
    const ms = this.#o.connectTimeoutMs;
    const timer = setTimeout(() => ac.abort(new TimeoutError(`connect took longer than ${ms} ms`)), ms);
    const events = {
      data: (d) => this.#onData(link, d),
      close: (e) => this.#onEnd(link, e)
    };
    let conn;
    try {
      conn = await this.#dial(events, ac.signal);
    } catch (e) {
      link.dead = true;
      markEnded();
      throw ac.signal.aborted && ac.signal.reason instanceof Error ? ac.signal.reason : e;
    } finally {
      clearTimeout(timer);
      if (this.#dialing === ac) this.#dialing = void 0;
    }
    if (link.dead || this.#state === "closed") {
      conn.close();
      link.dead = true;
      throw new ClosedError("the client was closed while connecting");
    }
    link.conn = conn;
    if (conn.stream) link.decoder = new StreamDecoder(this.#o.envelope, this.#o.maxFrameBytes);
    for (const d of link.early.splice(0)) this.#onData(link, d);
    if (link.earlyEnd) this.#onEnd(link, link.earlyEnd.error);
    return link;
  }
  #onData(link, data) {
    if (link !== this.#link || link.dead) return;
    if (link.conn === void 0) {
      link.early.push(data);
      return;
    }
    try {
      let frames;
      if (link.decoder) frames = link.decoder.push(typeof data === "string" ? utf8(data) : data);
      else frames = [decodeMessage(this.#o.envelope, data, this.#o.maxFrameBytes)];
      for (const f of frames) {
        if (link !== this.#link || link.dead) return;
        link.rx++;
        this.#onFrame(link, f);
      }
    } catch (e) {
      link.dead = true;
      this.#stopHeartbeat();
      link.conn.close();
      this.#finish(e instanceof Error ? e : new Error(String(e)));
    }
  }
  #onFrame(link, f) {
    switch (f.kind) {
      case "heartbeat":
        return;
      case "response":
      case "error": {
        const p = this.#settle(f.requestId);
        if (p === void 0) return;
        const routeId = f.kind === "error" && f.routeId === 0 && typeof p.route === "number" ? p.route : f.routeId;
        if (f.kind === "error") p.reject(new ShieldError(f.code, f.message, routeId, f.retryAfterMs > 0 ? f.retryAfterMs : void 0));
        else p.resolve(appBody(f.body, p.raw));
        return;
      }
      case "push": {
        const info = f.route === void 0 ? { routeId: f.routeId } : { routeId: f.routeId, route: f.route };
        const handlers = [...this.#pushes.get(f.routeId) ?? []];
        if (f.route !== void 0) handlers.push(...this.#pushes.get(f.route) ?? []);
        const room = this.#room !== void 0 && isRoomStatePush(f.routeId, f.route) ? this.#room : void 0;
        if (room !== void 0) {
          this.#emit([(b) => room.receive(b)], f.body);
          if (handlers.length === 0) return;
        }
        const body = appBody(f.body, this.#o.body === "raw");
        this.#emit(handlers.length > 0 ? handlers : this.#anyPush, body, info);
        return;
      }
      case "notice":
        this.#onNotice(link, f);
        return;
    }
  }
  #onNotice(link, f) {
    if (NOTICE_CODES.has(f.code)) {
      const retry = f.fields["retry_after_ms"];
      link.notice = typeof retry === "number" && retry > 0 ? { code: f.code, message: f.message, retry_after_ms: retry } : { code: f.code, message: f.message };
      link.sessionOver = !(RESUMABLE_NOTICES.has(f.code) && this.#token !== void 0);
      this.#emit(this.#notices, f.code, f.message);
      return;
    }
    const st = statusOf(f);
    if (st === void 0) return;
    if (st.code === "session.resume_token" || st.code === "session.resumed") this.#token = st.token;
    else if (st.code === "session.resume_failed") this.#token = void 0;
    this.#emit(this.#statuses, st);
    if (this.#state === "resuming" && link === this.#link && !link.dead) {
      if (st.code === "session.resumed") this.#reconnected(link, { resumed: true, attempt: this.#attempt });
      else if (st.code === "session.resume_failed") this.#reconnected(link, { resumed: false, attempt: this.#attempt, message: st.message });
    }
  }
  /** The transport reports the end of a link. */
  #onEnd(link, error) {
    if (link.conn === void 0) {
      link.earlyEnd ??= { error };
      return;
    }
    link.markEnded();
    if (link !== this.#link || link.dead) return;
    link.dead = true;
    this.#stopHeartbeat();
    if (error === void 0) error = link.decoder?.end();
    if (error instanceof ProtocolError && error.reason !== "truncated") {
      this.#finish(error);
      return;
    }
    const message = link.notice ? `the gateway closed the session (${link.notice.code}: ${link.notice.message})` : "the connection closed";
    const closed = new ClosedError(message, link.notice ? { cause: error, notice: link.notice } : { cause: error });
    this.#lost(link, closed);
  }
  /** A link is gone: reject its calls, then reconnect or close. */
  #lost(link, closed) {
    const wasOpen = this.#state === "open";
    this.#rejectPending(closed);
    if (this.#resumeTimer !== void 0) clearTimeout(this.#resumeTimer);
    this.#resumeTimer = void 0;
    const reconnecting = this.#o.reconnect !== void 0 && !link.sessionOver && this.#state !== "connecting";
    if (wasOpen) this.#emit(this.#disconnects, { error: closed, reconnecting });
    if (this.#state === "closed") return;
    if (!reconnecting) {
      this.#finish(closed);
      return;
    }
    this.#scheduleReconnect(closed);
  }
  /** Ends a link that is still open as if it had dropped (a dead heartbeat, a resume unanswered). */
  #drop(link, error) {
    if (link !== this.#link || link.dead || link.conn === void 0) return;
    link.dead = true;
    this.#stopHeartbeat();
    link.conn.close();
    this.#lost(link, new ClosedError(error.message, { cause: error }));
  }
  #scheduleReconnect(lastError) {
    const r = this.#o.reconnect;
    this.#state = "reconnecting";
    this.#attempt++;
    if (this.#attempt > r.attempts) {
      this.#finish(new ClosedError(`gave up reconnecting after ${r.attempts} attempts`, { cause: lastError }));
      return;
    }
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = void 0;
      void this.#tryReconnect();
    }, backoffDelay(this.#attempt, r));
  }
  async #tryReconnect() {
    let link;
    try {
      link = await this.#openLink();
    } catch (e) {
      if (this.#state !== "closed") this.#scheduleReconnect(e instanceof Error ? e : new Error(String(e)));
      return;
    }
    if (link.dead || link !== this.#link || this.#state === "closed") return;
    const token = this.#token;
    if (token === void 0) {
      this.#reconnected(link, { resumed: false, attempt: this.#attempt });
      return;
    }
    this.#state = "resuming";
    link.conn.send(this.#encode({ kind: "heartbeat", resume: token }));
    const ms = this.#o.connectTimeoutMs;
    this.#resumeTimer = setTimeout(() => {
      this.#resumeTimer = void 0;
      this.#drop(link, new TimeoutError(`no answer to the resume within ${ms} ms`));
    }, ms);
  }
  #reconnected(link, info) {
    if (this.#resumeTimer !== void 0) clearTimeout(this.#resumeTimer);
    this.#resumeTimer = void 0;
    this.#state = "open";
    this.#attempt = 0;
    this.#startHeartbeat(link);
    this.#room?.reconnected(info.resumed);
    this.#emit(this.#reconnects, info);
  }
  #startHeartbeat(link) {
    this.#stopHeartbeat();
    const every = this.#o.heartbeatMs;
    if (every <= 0) return;
    let beatAt = -1;
    this.#heartbeatTimer = setInterval(() => {
      if (link !== this.#link || link.dead || link.conn === void 0) return;
      if (beatAt === link.rx) {
        this.#drop(link, new TimeoutError(`no frame from the gateway for ${every} ms after a heartbeat`));
        return;
      }
      beatAt = link.rx;
      link.conn.send(this.#encode({ kind: "heartbeat" }));
    }, every);
  }
  #stopHeartbeat() {
    if (this.#heartbeatTimer !== void 0) clearInterval(this.#heartbeatTimer);
    this.#heartbeatTimer = void 0;
  }
  /** Closes for good, once: timers, the link, pending calls, then the close handlers. */
  #finish(error) {
    if (this.#state === "closed") return;
    this.#state = "closed";
    this.#stopHeartbeat();
    if (this.#retryTimer !== void 0) clearTimeout(this.#retryTimer);
    if (this.#resumeTimer !== void 0) clearTimeout(this.#resumeTimer);
    this.#retryTimer = this.#resumeTimer = void 0;
    this.#dialing?.abort(new ClosedError("the client was closed while connecting"));
    const link = this.#link;
    if (link !== void 0 && !link.dead) {
      link.dead = true;
      link.conn?.close();
    }
    const notice = error instanceof ClosedError ? error.notice : void 0;
    this.#rejectPending(
      error === void 0 ? new ClosedError("the client was closed") : error instanceof ClosedError ? error : new ClosedError(`the connection failed: ${error.message}`, notice ? { cause: error, notice } : { cause: error })
    );
    this.#emit(this.#closes, error);
    this.#resolveClosed(error);
  }
};
function add(set, handler) {
  set.add(handler);
  return () => {
    set.delete(handler);
  };
}
function createClient(dial, options = {}) {
  return Client.open(dial, options);
}

// src/websocket.ts
var CLOSE_WAIT_MS = 2e3;
function webSocketDialer(url, ctor) {
  const WS = ctor ?? globalThis.WebSocket;
  if (typeof WS !== "function") {
    throw new TypeError('no WebSocket on this platform: in Node, import { connect } from "@shieldrpc/client/node"');
  }
  return (events, signal) => new Promise((resolve, reject) => {
    let opened = false;
    let ended = false;
    let closeTimer;
    let ws;
    try {
      ws = new WS(url);
    } catch (e) {
      reject(e);
      return;
    }
    ws.binaryType = "arraybuffer";
    const end = (error) => {
      if (ended) return;
      ended = true;
      if (closeTimer !== void 0) clearTimeout(closeTimer);
      ws.onopen = ws.onmessage = ws.onerror = ws.onclose = null;
      if (opened) events.close(error);
      else reject(error ?? new ClosedError("the WebSocket closed before it opened"));
    };
    const onAbort = () => {
      if (opened) return;
      try {
        ws.close();
      } catch {
      }
      end(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener("abort", onAbort, { once: true });
    let closing = false;
    const conn = {
      stream: false,
      send(data) {
        if (ended || closing) return;
        ws.send(data);
      },
      close() {
        if (ended || closing) return;
        closing = true;
        ws.close(1e3);
        closeTimer = setTimeout(() => end(void 0), CLOSE_WAIT_MS);
      }
    };
    ws.onopen = () => {
      opened = true;
      signal.removeEventListener("abort", onAbort);
      resolve(conn);
    };
    ws.onmessage = (ev) => {
      if (ended) return;
      const d = ev.data;
      if (typeof d === "string") events.data(d);
      else if (d instanceof ArrayBuffer) events.data(new Uint8Array(d));
      else if (ArrayBuffer.isView(d)) events.data(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
    };
    ws.onerror = () => {
      if (!opened) end(new Error(`WebSocket to ${url} failed`));
    };
    ws.onclose = (ev) => {
      end(closing ? void 0 : new ClosedError(`WebSocket closed by the peer (code ${ev.code}${ev.reason ? `: ${ev.reason}` : ""})`));
    };
  });
}

// src/index.ts
function connect(options) {
  const { url, WebSocket, ...rest } = options;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme !== "ws" && scheme !== "wss") {
    return Promise.reject(
      new TypeError(`this entry point speaks ws:// and wss:// only, not ${JSON.stringify(url)}; for TCP use "@shieldrpc/client/node"`)
    );
  }
  let dial;
  try {
    dial = webSocketDialer(url, WebSocket);
  } catch (e) {
    return Promise.reject(e);
  }
  return Client.open(dial, rest);
}
export {
  AbortError,
  Client,
  ClosedError,
  ENVELOPES,
  MAX_VERSION_OPS,
  NOTICE_CODES,
  ProtocolError,
  ROOM_ROUTES,
  Room,
  RoomEndedError,
  RoomState,
  ShieldError,
  StateFrameError,
  StreamDecoder,
  TimeoutError,
  UpgradeError,
  applyStateOps,
  backoffDelay,
  connect,
  createClient,
  decodeMessage,
  decodeStateFrame,
  encodeMessage,
  encodeStreamFrame,
  statePointer,
  webSocketDialer
};
