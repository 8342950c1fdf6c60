/**
 * A minimal RFC 6455 WebSocket client for Node, over node:net and node:tls,
 * for Node 20 (which has no WebSocket without a flag) and for what browsers
 * cannot do (an Origin of your choice, TLS client certificates). It speaks
 * what a Shield gateway needs: the opening handshake (no extensions, no
 * subprotocol), masked frames out, unmasked frames in (fragmented messages
 * reassembled, control frames between fragments), ping answered by pong,
 * and the closing handshake. A message above the limit fails before its
 * bytes are buffered.
 */
import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import type net from 'node:net';
import type tls from 'node:tls';
import { ClosedError, ProtocolError, UpgradeError } from '../errors.js';
import type { Conn, ConnEvents, Dialer } from '../transport.js';
import { openSocket } from './tcp.js';

export interface WebSocketDialOptions {
  /** ws://host:port/path or wss://... */
  url: URL;
  /** The Origin header, as a browser would send it; none by default (a native client). */
  origin?: string;
  /** More request headers. */
  headers?: Record<string, string>;
  /** TLS options for wss://. */
  tls?: tls.ConnectionOptions;
  /** The largest message accepted; a longer one closes the connection (1009). */
  maxMessageBytes: number;
}

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** The largest handshake answer read. */
const MAX_HANDSHAKE_BYTES = 16 * 1024;
/** How long close() waits for the gateway's close frame and TCP close. */
const CLOSE_WAIT_MS = 2000;

const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;

const utf8Strict = new TextDecoder('utf-8', { fatal: true });

/** The Sec-WebSocket-Accept value for a key. */
export function acceptKey(key: string): string {
  return createHash('sha1').update(key + GUID).digest('base64');
}

/** One masked frame from a client (RFC 6455 §5.2, §5.3). */
export function encodeClientFrame(opcode: number, payload: Uint8Array, fin = true): Buffer {
  const len = payload.length;
  const hlen = len < 126 ? 2 : len < 0x10000 ? 4 : 10;
  const out = Buffer.allocUnsafe(hlen + 4 + len);
  out[0] = (fin ? 0x80 : 0) | opcode;
  if (len < 126) {
    out[1] = 0x80 | len;
  } else if (len < 0x10000) {
    out[1] = 0x80 | 126;
    out.writeUInt16BE(len, 2);
  } else {
    out[1] = 0x80 | 127;
    out.writeUInt32BE(Math.floor(len / 0x1_0000_0000), 2);
    out.writeUInt32BE(len >>> 0, 6);
  }
  randomFillSync(out, hlen, 4);
  const m0 = out[hlen]!,
    m1 = out[hlen + 1]!,
    m2 = out[hlen + 2]!,
    m3 = out[hlen + 3]!;
  const base = hlen + 4;
  for (let i = 0; i < len; i++) {
    const m = (i & 3) === 0 ? m0 : (i & 3) === 1 ? m1 : (i & 3) === 2 ? m2 : m3;
    out[base + i] = payload[i]! ^ m;
  }
  return out;
}

/** Checks the handshake answer's head (status line and headers, without the blank line). */
function checkHandshake(head: string, key: string): Error | undefined {
  const [statusLine = '', ...lines] = head.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!m) return new ProtocolError('websocket', `not an HTTP answer to the upgrade: ${JSON.stringify(statusLine.slice(0, 64))}`);
  const status = Number(m[1]);
  if (status !== 101) return new UpgradeError(status, `WebSocket upgrade refused: ${statusLine}`);
  const headers = new Map<string, string>();
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const name = line.slice(0, i).trim().toLowerCase();
    const value = line.slice(i + 1).trim();
    headers.set(name, headers.has(name) ? `${headers.get(name)}, ${value}` : value);
  }
  const tokens = (name: string) => (headers.get(name) ?? '').toLowerCase().split(',').map((t) => t.trim());
  if (!tokens('upgrade').includes('websocket')) return new ProtocolError('websocket', 'the upgrade answer lacks "Upgrade: websocket"');
  if (!tokens('connection').includes('upgrade')) return new ProtocolError('websocket', 'the upgrade answer lacks "Connection: Upgrade"');
  if (headers.get('sec-websocket-accept') !== acceptKey(key)) return new ProtocolError('websocket', 'wrong Sec-WebSocket-Accept');
  if (headers.has('sec-websocket-extensions')) return new ProtocolError('websocket', 'the gateway chose an extension none was offered');
  if (headers.has('sec-websocket-protocol')) return new ProtocolError('websocket', 'the gateway chose a subprotocol none was offered');
  return undefined;
}

/** A Dialer of WebSocket connections in Node. */
export function nodeWebSocketDialer(o: WebSocketDialOptions): Dialer {
  const url = o.url;
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new TypeError(`not a ws:// or wss:// URL: ${url.href}`);
  const secure = url.protocol === 'wss:';
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(url.port || (secure ? 443 : 80));
  const path = (url.pathname || '/') + url.search;
  const max = o.maxMessageBytes;

  return (events: ConnEvents, signal: AbortSignal) =>
    new Promise<Conn>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const sock: net.Socket = openSocket(host, port, secure ? (o.tls ?? {}) : undefined, ['http/1.1']);
      const key = randomBytes(16).toString('base64');
      let phase: 'handshake' | 'open' | 'ended' = 'handshake';
      let head: Buffer = Buffer.alloc(0);
      let buf: Buffer = Buffer.alloc(0);
      // The message being reassembled.
      let msgOp = 0;
      let parts: Buffer[] = [];
      let msgLen = 0;
      let closeSent = false;
      let closing = false; // close() was called
      let failure: Error | undefined;
      let peerClose: { code: number; reason: string } | undefined;
      let lastError: Error | undefined;
      let closeTimer: ReturnType<typeof setTimeout> | undefined;

      const write = (op: number, payload: Uint8Array) => {
        if (!sock.destroyed && sock.writable) sock.write(encodeClientFrame(op, payload));
      };
      const sendClose = (code: number) => {
        if (closeSent) return;
        closeSent = true;
        const p = Buffer.alloc(2);
        p.writeUInt16BE(code);
        write(OP_CLOSE, p);
      };
      const destroyLater = () => {
        if (closeTimer !== undefined) return;
        closeTimer = setTimeout(() => sock.destroy(), CLOSE_WAIT_MS);
        closeTimer.unref();
      };
      /** A protocol violation by the gateway: close with code, report error. */
      const fail = (code: number, error: Error) => {
        if (phase !== 'open' || failure) return;
        failure = error;
        sendClose(code);
        sock.end();
        destroyLater();
      };
      const onAbort = () => {
        if (phase !== 'handshake') return;
        phase = 'ended';
        sock.destroy();
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });

      const conn: Conn = {
        stream: false,
        send(data) {
          if (phase !== 'open' || closing || closeSent) return;
          if (typeof data === 'string') write(OP_TEXT, Buffer.from(data, 'utf8'));
          else write(OP_BINARY, data);
        },
        close() {
          if (phase !== 'open' || closing) return;
          closing = true;
          sendClose(1000);
          // The gateway answers with its close frame and closes the TCP
          // connection; one that does not is cut off.
          destroyLater();
        },
      };

      const deliver = () => {
        const msg = parts.length === 1 ? parts[0]! : Buffer.concat(parts, msgLen);
        const op = msgOp;
        parts = [];
        msgLen = 0;
        msgOp = 0;
        if (closing) return;
        if (op === OP_TEXT) {
          let text: string;
          try {
            text = utf8Strict.decode(msg);
          } catch {
            fail(1007, new ProtocolError('websocket', 'text message is not UTF-8'));
            return;
          }
          events.data(text);
        } else {
          events.data(new Uint8Array(msg.buffer, msg.byteOffset, msg.byteLength));
        }
      };

      /** Parses as many frames as buf holds. */
      const feed = (chunk: Buffer) => {
        buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
        while (phase === 'open' && !failure && buf.length >= 2) {
          const b0 = buf[0]!;
          const b1 = buf[1]!;
          const fin = (b0 & 0x80) !== 0;
          const op = b0 & 0x0f;
          let len = b1 & 0x7f;
          let off = 2;
          if (b0 & 0x70) return fail(1002, new ProtocolError('websocket', 'reserved bits set (no extension was negotiated)'));
          if (b1 & 0x80) return fail(1002, new ProtocolError('websocket', 'masked frame from the server'));
          if (len === 126) {
            if (buf.length < 4) return;
            len = buf.readUInt16BE(2);
            off = 4;
          } else if (len === 127) {
            if (buf.length < 10) return;
            const hi = buf.readUInt32BE(2);
            if (hi > 0x1fffff) return fail(1009, new ProtocolError('too_large', 'frame length above 2^53'));
            len = hi * 0x1_0000_0000 + buf.readUInt32BE(6);
            off = 10;
          }
          if (op >= 0x8) {
            if (!fin || len > 125) return fail(1002, new ProtocolError('websocket', 'fragmented or long control frame'));
          } else {
            if (op === OP_CONTINUATION ? msgOp === 0 : msgOp !== 0) {
              return fail(1002, new ProtocolError('websocket', op === OP_CONTINUATION ? 'continuation without a message' : 'new message inside a fragmented one'));
            }
            if (op !== OP_CONTINUATION && op !== OP_TEXT && op !== OP_BINARY) {
              return fail(1002, new ProtocolError('websocket', `unknown opcode ${op}`));
            }
            // Judged on the claimed length, before the bytes are buffered.
            if (msgLen + len > max) {
              return fail(1009, new ProtocolError('too_large', `message of ${msgLen + len}+ bytes above max_frame_bytes ${max}`));
            }
          }
          if (buf.length < off + len) return;
          const payload = buf.subarray(off, off + len);
          buf = buf.subarray(off + len);
          switch (op) {
            case OP_CLOSE: {
              if (len === 1) return fail(1002, new ProtocolError('websocket', 'close frame with a 1-byte body'));
              const code = len >= 2 ? payload.readUInt16BE(0) : 1005;
              peerClose = { code, reason: len > 2 ? payload.subarray(2).toString('utf8') : '' };
              // Echo the code (RFC 6455 §5.5.1), then let the gateway close TCP.
              sendClose(len >= 2 ? code : 1000);
              sock.end();
              destroyLater();
              return;
            }
            case OP_PING:
              if (!closeSent) write(OP_PONG, payload);
              break;
            case OP_PONG:
              break;
            default:
              if (op !== OP_CONTINUATION) msgOp = op;
              parts.push(payload);
              msgLen += len;
              if (fin) deliver();
          }
        }
      };

      sock.once(secure ? 'secureConnect' : 'connect', () => {
        if (phase !== 'handshake') return;
        sock.setNoDelay(true);
        const lines = [
          `GET ${path} HTTP/1.1`,
          `Host: ${url.host}`,
          'Upgrade: websocket',
          'Connection: Upgrade',
          `Sec-WebSocket-Key: ${key}`,
          'Sec-WebSocket-Version: 13',
        ];
        if (o.origin !== undefined) lines.push(`Origin: ${o.origin}`);
        for (const [k, v] of Object.entries(o.headers ?? {})) lines.push(`${k}: ${v}`);
        sock.write(lines.join('\r\n') + '\r\n\r\n');
      });

      sock.on('data', (chunk: Buffer) => {
        if (phase === 'open') {
          feed(chunk);
          return;
        }
        if (phase !== 'handshake') return;
        head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) {
          if (head.length > MAX_HANDSHAKE_BYTES) {
            phase = 'ended';
            sock.destroy();
            reject(new ProtocolError('websocket', 'the upgrade answer is too long'));
          }
          return;
        }
        const err = checkHandshake(head.subarray(0, end).toString('latin1'), key);
        if (err) {
          phase = 'ended';
          sock.destroy();
          reject(err);
          return;
        }
        const rest = head.subarray(end + 4);
        head = Buffer.alloc(0);
        phase = 'open';
        signal.removeEventListener('abort', onAbort);
        resolve(conn);
        if (rest.length > 0) feed(rest);
      });

      sock.on('error', (e) => {
        lastError = e;
      });

      sock.on('close', () => {
        if (closeTimer !== undefined) clearTimeout(closeTimer);
        signal.removeEventListener('abort', onAbort);
        const was = phase;
        phase = 'ended';
        if (was === 'handshake') {
          reject(lastError ?? new Error(`connection to ${url.host} closed during the WebSocket handshake`));
          return;
        }
        if (was !== 'open') return;
        if (failure) events.close(failure);
        else if (closing) events.close(undefined);
        else if (peerClose)
          events.close(new ClosedError(`WebSocket closed by the gateway (code ${peerClose.code}${peerClose.reason ? `: ${peerClose.reason}` : ''})`));
        else events.close(lastError ?? new ClosedError('the connection closed without a WebSocket close frame'));
      });
    });
}
