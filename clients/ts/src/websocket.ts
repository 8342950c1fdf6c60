/**
 * The WebSocket transport over the platform's WebSocket (browsers, Deno,
 * Bun, Node 22+): one frame per message, binary for idlen, typelen and
 * lenprefix, text for delimiter.
 */
import { ClosedError } from './errors.js';
import type { Conn, ConnEvents, Dialer } from './transport.js';

/** The part of the WebSocket API this transport uses. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  onopen: ((ev: any) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onerror: ((ev: any) => void) | null;
  onclose: ((ev: { code: number; reason: string; wasClean?: boolean }) => void) | null;
  send(data: string | ArrayBufferView | ArrayBuffer): void;
  close(code?: number, reason?: string): void;
}

export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocketLike;

/** How long close() waits for the gateway's closing handshake before it gives up on it. */
const CLOSE_WAIT_MS = 2000;

/**
 * A Dialer over a WebSocket constructor: globalThis.WebSocket by default.
 * Throws when the platform has none (Node 20: use @shieldrpc/client/node).
 */
export function webSocketDialer(url: string, ctor?: WebSocketConstructor): Dialer {
  const WS = ctor ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (typeof WS !== 'function') {
    throw new TypeError('no WebSocket on this platform: in Node, import { connect } from "@shieldrpc/client/node"');
  }
  return (events: ConnEvents, signal: AbortSignal) =>
    new Promise<Conn>((resolve, reject) => {
      let opened = false;
      let ended = false;
      let closeTimer: ReturnType<typeof setTimeout> | undefined;
      let ws: WebSocketLike;
      try {
        ws = new WS(url);
      } catch (e) {
        reject(e);
        return;
      }
      ws.binaryType = 'arraybuffer';
      const end = (error: Error | undefined) => {
        if (ended) return;
        ended = true;
        if (closeTimer !== undefined) clearTimeout(closeTimer);
        ws.onopen = ws.onmessage = ws.onerror = ws.onclose = null;
        if (opened) events.close(error);
        else reject(error ?? new ClosedError('the WebSocket closed before it opened'));
      };
      const onAbort = () => {
        if (opened) return;
        try {
          ws.close();
        } catch {
          /* not open yet */
        }
        end(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener('abort', onAbort, { once: true });
      let closing = false;
      const conn: Conn = {
        stream: false,
        send(data) {
          if (ended || closing) return;
          ws.send(data);
        },
        close() {
          if (ended || closing) return;
          closing = true;
          ws.close(1000);
          // A gateway that never answers the close still ends the connection here.
          closeTimer = setTimeout(() => end(undefined), CLOSE_WAIT_MS);
        },
      };
      ws.onopen = () => {
        opened = true;
        signal.removeEventListener('abort', onAbort);
        resolve(conn);
      };
      ws.onmessage = (ev) => {
        if (ended) return;
        const d = ev.data;
        if (typeof d === 'string') events.data(d);
        else if (d instanceof ArrayBuffer) events.data(new Uint8Array(d));
        else if (ArrayBuffer.isView(d)) events.data(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
      };
      ws.onerror = () => {
        // The close event follows with the code; before open it may not.
        if (!opened) end(new Error(`WebSocket to ${url} failed`));
      };
      ws.onclose = (ev) => {
        end(closing ? undefined : new ClosedError(`WebSocket closed by the peer (code ${ev.code}${ev.reason ? `: ${ev.reason}` : ''})`));
      };
    });
}
