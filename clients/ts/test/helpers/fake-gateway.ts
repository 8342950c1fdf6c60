/**
 * A fake gateway for the tests: a TCP server, or a minimal WebSocket server
 * (RFC 6455 server side over node:net), that speaks the envelopes of SPEC
 * §3. Its encoders and decoders are written here from the SPEC's layouts,
 * not taken from the package, so the tests check the package against the
 * SPEC rather than against itself.
 */
import { createHash } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';

export type Env = 'idlen' | 'typelen' | 'lenprefix' | 'delimiter';
export type Transport = 'tcp' | 'ws';

// ---------------------------------------------------------------------------
// Server-side frames (gateway -> client)

export type ServerFrame =
  | { kind: 'response'; route: number; rid: number; body?: string }
  | { kind: 'push'; route: number; body?: string; name?: string }
  | { kind: 'error'; route: number; rid: number; code: string; message: string }
  | { kind: 'notice'; fields: Record<string, unknown> }
  | { kind: 'heartbeat' };

export function idlenMessage(route: number, rid: number, body: string | Uint8Array = ''): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body);
  const h = Buffer.alloc(8);
  h[0] = 1;
  h[1] = (route >> 16) & 0xff;
  h[2] = (route >> 8) & 0xff;
  h[3] = route & 0xff;
  h.writeUInt32BE(rid, 4);
  return Buffer.concat([h, b]);
}

export function typelenMessage(type: number, route: number, rid: number, body: string | Uint8Array = ''): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body);
  const h = Buffer.alloc(12);
  h[0] = 1;
  h[1] = type;
  h.writeUInt16BE(route, 2);
  h.writeBigUInt64BE(BigInt(rid), 4);
  return Buffer.concat([h, b]);
}

/** One frame from the gateway as one message (no stream framing): bytes, or a string for delimiter. */
export function serverMessage(env: Env, f: ServerFrame): Buffer | string {
  if (env === 'idlen' || env === 'typelen') {
    const status = (o: object) => JSON.stringify(o);
    const t = env === 'typelen';
    switch (f.kind) {
      case 'response':
        return t ? typelenMessage(2, f.route, f.rid, f.body) : idlenMessage(f.route, f.rid, f.body);
      case 'push':
        return t ? typelenMessage(4, f.route, 0, f.body) : idlenMessage(f.route, 0, f.body);
      case 'error': {
        const body = status({ code: f.code, message: f.message });
        return t ? typelenMessage(3, f.route, f.rid, body) : idlenMessage(0, f.rid, body);
      }
      case 'notice':
        return t ? typelenMessage(6, 0, 0, status(f.fields)) : idlenMessage(0, 0, status(f.fields));
      case 'heartbeat':
        return t ? typelenMessage(5, 0, 0) : idlenMessage(0, 0);
    }
  }
  let w: string;
  switch (f.kind) {
    case 'response':
      w = `{"type":"response","route_id":${f.route},"request_id":${f.rid}${f.body ? `,"payload":${f.body}` : ''}}`;
      break;
    case 'push':
      w = `{"type":"push"${f.name ? `,"route":${JSON.stringify(f.name)}` : ''},"route_id":${f.route}${f.body ? `,"payload":${f.body}` : ''}}`;
      break;
    case 'error':
      w = JSON.stringify({ type: 'error', route_id: f.route, request_id: f.rid, code: f.code, message: f.message });
      break;
    case 'notice':
      w = JSON.stringify({ type: 'notice', ...f.fields });
      break;
    case 'heartbeat':
      w = '{"type":"heartbeat"}';
      break;
  }
  return env === 'delimiter' ? w : Buffer.from(w);
}

/** A message with its stream framing, as TCP carries it. */
export function streamFrame(env: Env, msg: Buffer | string): Buffer {
  if (env === 'delimiter') return Buffer.from(String(msg) + '\n');
  const b = Buffer.from(msg);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(b.length);
  return Buffer.concat([len, b]);
}

// ---------------------------------------------------------------------------
// Client frames (client -> gateway), as this fake reads them

export interface ClientFrame {
  /** The frame's bytes as they were on the wire (stream framing included on TCP; one message on ws). */
  wire: Buffer;
  /** Whether a ws message was text. */
  text: boolean;
  kind: 'request' | 'notify' | 'heartbeat' | 'invalid';
  route: number | string;
  rid: number;
  /** The body (header envelopes) or the payload's JSON (legacy), '' when none. */
  body: string;
}

export function parseClientMessage(env: Env, msg: Buffer, wire: Buffer, text: boolean): ClientFrame {
  const base = { wire, text };
  if (env === 'idlen') {
    if (msg.length < 8 || msg[0] !== 1) return { ...base, kind: 'invalid', route: 0, rid: 0, body: '' };
    const route = (msg[1]! << 16) | (msg[2]! << 8) | msg[3]!;
    const rid = msg.readUInt32BE(4);
    const body = msg.subarray(8).toString();
    const kind = route !== 0 && rid !== 0 ? 'request' : route !== 0 ? 'notify' : rid === 0 ? 'heartbeat' : 'invalid';
    return { ...base, kind, route, rid, body };
  }
  if (env === 'typelen') {
    if (msg.length < 12 || msg[0] !== 1) return { ...base, kind: 'invalid', route: 0, rid: 0, body: '' };
    const kinds: Record<number, ClientFrame['kind']> = { 1: 'request', 5: 'heartbeat', 7: 'notify' };
    return {
      ...base,
      kind: kinds[msg[1]!] ?? 'invalid',
      route: msg.readUInt16BE(2),
      rid: Number(msg.readBigUInt64BE(4)),
      body: msg.subarray(12).toString(),
    };
  }
  const w = JSON.parse(msg.toString()) as Record<string, unknown>;
  const kind = (w['type'] as ClientFrame['kind']) ?? 'invalid';
  return {
    ...base,
    kind,
    route: (w['route_id'] as number | undefined) ?? (w['route'] as string | undefined) ?? 0,
    rid: (w['request_id'] as number | undefined) ?? 0,
    body: 'payload' in w ? JSON.stringify(w['payload']) : '',
  };
}

// ---------------------------------------------------------------------------

class Queue<T> {
  #items: T[] = [];
  #waiters: ((v: T) => void)[] = [];
  push(v: T): void {
    const w = this.#waiters.shift();
    if (w) w(v);
    else this.#items.push(v);
  }
  get length(): number {
    return this.#items.length;
  }
  next(timeoutMs: number, what: string): Promise<T> {
    const v = this.#items.shift();
    if (v !== undefined) return Promise.resolve(v);
    return new Promise<T>((resolve, reject) => {
      const w = (x: T) => {
        clearTimeout(t);
        resolve(x);
      };
      const t = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.#waiters.push(w);
    });
  }
}

/** One connection the fake accepted. */
export class ServerConn {
  readonly env: Env;
  readonly transport: Transport;
  readonly socket: net.Socket;
  /** The WebSocket upgrade request's headers (lowercased names). */
  headers: Record<string, string> = {};
  /** Pong payloads received (ws). */
  readonly pongs: Buffer[] = [];
  /** The close frame the client sent (ws). */
  clientClose: number | undefined;
  /** A violation of RFC 6455 by the client (e.g. an unmasked frame). */
  violation: string | undefined;
  readonly closed: Promise<void>;
  #frames = new Queue<ClientFrame>();
  #buf: Buffer = Buffer.alloc(0);
  #frag: Buffer[] = [];
  #fragOp = 0;

  constructor(socket: net.Socket, transport: Transport, env: Env) {
    this.socket = socket;
    this.transport = transport;
    this.env = env;
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => {});
  }

  /** Starts reading client frames from the socket, after any handshake. */
  start(initial: Buffer): void {
    this.socket.on('data', (chunk: Buffer) => this.#feed(chunk));
    if (initial.length > 0) this.#feed(initial);
  }

  /** The next frame the client sent. */
  next(timeoutMs = 2000): Promise<ClientFrame> {
    return this.#frames.next(timeoutMs, 'a client frame');
  }

  /** Resolves true when no frame comes within ms. */
  async silent(ms: number): Promise<boolean> {
    try {
      await this.next(ms);
      return false;
    } catch {
      return true;
    }
  }

  /** Sends frames, each as one message (ws) or all in one write (tcp). */
  send(...frames: ServerFrame[]): void {
    const msgs = frames.map((f) => serverMessage(this.env, f));
    if (this.transport === 'tcp') this.socket.write(Buffer.concat(msgs.map((m) => streamFrame(this.env, m))));
    else for (const m of msgs) this.sendMessage(m);
  }

  /** Writes bytes as they are (tcp), or one message (ws; a string is a text message). */
  sendRaw(data: Buffer | string): void {
    if (this.transport === 'tcp') this.socket.write(data);
    else this.sendMessage(data);
  }

  /** One WebSocket message, in `pieces` fragments. */
  sendMessage(data: Buffer | string, pieces = 1): void {
    const op = typeof data === 'string' ? 1 : 2;
    const b = Buffer.from(data);
    const size = Math.ceil(b.length / pieces) || 1;
    const out: Buffer[] = [];
    for (let i = 0, first = true; first || i < b.length; i += size, first = false) {
      const last = i + size >= b.length;
      out.push(wsFrame(first ? op : 0, b.subarray(i, i + size), last));
    }
    this.socket.write(Buffer.concat(out));
  }

  /** A raw WebSocket frame (for malformed ones). */
  sendWsFrame(frame: Buffer): void {
    this.socket.write(frame);
  }

  ping(payload: string): void {
    this.socket.write(wsFrame(9, Buffer.from(payload), true));
  }

  /** A clean close: a ws close frame first on ws. */
  end(code = 1000): void {
    if (this.transport === 'ws') {
      const p = Buffer.alloc(2);
      p.writeUInt16BE(code);
      this.socket.write(wsFrame(8, p, true));
    }
    this.socket.end();
  }

  /** An abrupt close (a dropped connection). */
  destroy(): void {
    this.socket.destroy();
  }

  #feed(chunk: Buffer): void {
    this.#buf = Buffer.concat([this.#buf, chunk]);
    if (this.transport === 'tcp') this.#feedStream();
    else this.#feedWs();
  }

  #feedStream(): void {
    for (;;) {
      if (this.env === 'delimiter') {
        const nl = this.#buf.indexOf(0x0a);
        if (nl < 0) return;
        const wire = this.#buf.subarray(0, nl + 1);
        this.#buf = this.#buf.subarray(nl + 1);
        this.#frames.push(parseClientMessage(this.env, wire.subarray(0, nl), Buffer.from(wire), false));
        continue;
      }
      if (this.#buf.length < 4) return;
      const n = this.#buf.readUInt32BE(0);
      if (this.#buf.length < 4 + n) return;
      const wire = Buffer.from(this.#buf.subarray(0, 4 + n));
      this.#buf = this.#buf.subarray(4 + n);
      this.#frames.push(parseClientMessage(this.env, wire.subarray(4), wire, false));
    }
  }

  #feedWs(): void {
    for (;;) {
      const b = this.#buf;
      if (b.length < 2) return;
      const fin = (b[0]! & 0x80) !== 0;
      const op = b[0]! & 0x0f;
      const masked = (b[1]! & 0x80) !== 0;
      let len = b[1]! & 0x7f;
      let off = 2;
      if (len === 126) {
        if (b.length < 4) return;
        len = b.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (b.length < 10) return;
        len = Number(b.readBigUInt64BE(2));
        off = 10;
      }
      if (!masked) this.violation = 'unmasked frame from the client';
      const maskOff = off;
      if (masked) off += 4;
      if (b.length < off + len) return;
      const payload = Buffer.from(b.subarray(off, off + len));
      if (masked) for (let i = 0; i < len; i++) payload[i]! ^= b[maskOff + (i & 3)]!;
      this.#buf = b.subarray(off + len);
      if (op === 8) {
        this.clientClose = len >= 2 ? payload.readUInt16BE(0) : 1005;
        this.socket.write(wsFrame(8, payload.subarray(0, 2), true));
        this.socket.end();
        return;
      }
      if (op === 9) {
        this.socket.write(wsFrame(10, payload, true));
        continue;
      }
      if (op === 10) {
        this.pongs.push(payload);
        continue;
      }
      if (op !== 0) this.#fragOp = op;
      this.#frag.push(payload);
      if (!fin) continue;
      const msg = Buffer.concat(this.#frag);
      this.#frag = [];
      this.#frames.push(parseClientMessage(this.env, msg, msg, this.#fragOp === 1));
    }
  }
}

/** An unmasked frame from the server. */
export function wsFrame(op: number, payload: Buffer, fin: boolean): Buffer {
  const len = payload.length;
  let h: Buffer;
  if (len < 126) {
    h = Buffer.from([(fin ? 0x80 : 0) | op, len]);
  } else if (len < 0x10000) {
    h = Buffer.alloc(4);
    h[0] = (fin ? 0x80 : 0) | op;
    h[1] = 126;
    h.writeUInt16BE(len, 2);
  } else {
    h = Buffer.alloc(10);
    h[0] = (fin ? 0x80 : 0) | op;
    h[1] = 127;
    h.writeBigUInt64BE(BigInt(len), 2);
  }
  return Buffer.concat([h, payload]);
}

/** A fake gateway listening on 127.0.0.1, on a port of its own. */
export class FakeGateway {
  readonly transport: Transport;
  readonly env: Env;
  readonly server: net.Server;
  readonly connections: ServerConn[] = [];
  /** ws: the answer to an upgrade; 101 by default. */
  upgradeStatus = 101;
  #accepted = new Queue<ServerConn>();

  readonly secure: boolean;

  private constructor(transport: Transport, env: Env, tlsOptions?: tls.TlsOptions) {
    this.transport = transport;
    this.env = env;
    this.secure = tlsOptions !== undefined;
    this.server = tlsOptions
      ? tls.createServer(tlsOptions, (sock) => this.#onSocket(sock))
      : net.createServer((sock) => this.#onSocket(sock));
  }

  /** Listens on a free port; with tlsOptions, over TLS. */
  static async start(transport: Transport, env: Env, tlsOptions?: tls.TlsOptions): Promise<FakeGateway> {
    const g = new FakeGateway(transport, env, tlsOptions);
    await new Promise<void>((resolve) => g.server.listen(0, '127.0.0.1', resolve));
    return g;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  get url(): string {
    const scheme = this.transport === 'tcp' ? (this.secure ? 'tls' : 'tcp') : this.secure ? 'wss' : 'ws';
    return `${scheme}://127.0.0.1:${this.port}${this.transport === 'ws' ? '/ws' : ''}`;
  }

  /** The next connection (after its WebSocket upgrade). */
  accept(timeoutMs = 2000): Promise<ServerConn> {
    return this.#accepted.next(timeoutMs, 'a connection');
  }

  /** Resolves true when no connection comes within ms. */
  async noConnection(ms: number): Promise<boolean> {
    try {
      await this.accept(ms);
      return false;
    } catch {
      return true;
    }
  }

  /** Stops listening and destroys every connection. */
  async close(): Promise<void> {
    for (const c of this.connections) c.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #onSocket(sock: net.Socket): void {
    const conn = new ServerConn(sock, this.transport, this.env);
    this.connections.push(conn);
    if (this.transport === 'tcp') {
      conn.start(Buffer.alloc(0));
      this.#accepted.push(conn);
      return;
    }
    let head: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      sock.off('data', onData);
      const lines = head.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      conn.headers = headers;
      if (this.upgradeStatus !== 101) {
        sock.end(`HTTP/1.1 ${this.upgradeStatus} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
        return;
      }
      const accept = createHash('sha1')
        .update(headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11')
        .digest('base64');
      sock.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      conn.start(head.subarray(end + 4));
      this.#accepted.push(conn);
    };
    sock.on('data', onData);
  }
}

/** Hex of bytes, for readable assertions. */
export function hex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex');
}

/** Bytes from spaced hex. */
export function unhex(s: string): Buffer {
  return Buffer.from(s.replace(/\s+/g, ''), 'hex');
}

/** Waits until cond() holds, polling. */
export async function until(cond: () => boolean, timeoutMs = 2000, what = 'a condition'): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
