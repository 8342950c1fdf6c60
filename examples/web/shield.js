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
  NOTICE_CODES,
  ProtocolError,
  ShieldError,
  StreamDecoder,
  TimeoutError,
  UpgradeError,
  backoffDelay,
  connect,
  createClient,
  decodeMessage,
  encodeMessage,
  encodeStreamFrame,
  webSocketDialer
};
