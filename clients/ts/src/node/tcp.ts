/**
 * The TCP transport (Node): the envelope's bytes as they are, optionally
 * over TLS.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { Conn, ConnEvents, Dialer } from '../transport.js';

export interface TcpDialOptions {
  host: string;
  port: number;
  /** Run the connection over TLS with these options (ca, cert, key, servername, rejectUnauthorized, ...). */
  tls?: tls.ConnectionOptions;
}

/** How long close() waits for the gateway to close its end before it destroys the socket. */
const CLOSE_WAIT_MS = 1000;

/** Opens a raw TCP socket, or a TLS one. */
export function openSocket(host: string, port: number, tlsOptions: tls.ConnectionOptions | undefined, alpn?: string[]): net.Socket {
  if (tlsOptions === undefined) return net.connect({ host, port });
  return tls.connect({
    host,
    port,
    // SNI takes a name, never an address.
    ...(net.isIP(host) === 0 ? { servername: host } : {}),
    ...(alpn ? { ALPNProtocols: alpn } : {}),
    ...tlsOptions,
  });
}

/** A Dialer of TCP (or TLS) connections to host:port. */
export function tcpDialer(o: TcpDialOptions): Dialer {
  return (events: ConnEvents, signal: AbortSignal) =>
    new Promise<Conn>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const sock = openSocket(o.host, o.port, o.tls);
      let opened = false;
      let ended = false;
      let closing = false;
      let lastError: Error | undefined;
      let closeTimer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => {
        if (opened) return;
        ended = true;
        sock.destroy();
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const conn: Conn = {
        stream: true,
        send(data) {
          if (ended || closing || sock.destroyed) return;
          sock.write(data);
        },
        close() {
          if (ended || closing) return;
          closing = true;
          sock.end();
          closeTimer = setTimeout(() => sock.destroy(), CLOSE_WAIT_MS);
          closeTimer.unref();
        },
      };
      sock.once(o.tls ? 'secureConnect' : 'connect', () => {
        if (ended) return;
        opened = true;
        signal.removeEventListener('abort', onAbort);
        sock.setNoDelay(true);
        resolve(conn);
      });
      sock.on('data', (chunk: Buffer) => {
        if (!ended && !closing) events.data(chunk);
      });
      sock.on('error', (e) => {
        lastError = e;
      });
      sock.on('close', () => {
        if (closeTimer !== undefined) clearTimeout(closeTimer);
        signal.removeEventListener('abort', onAbort);
        if (ended) return;
        ended = true;
        if (!opened) reject(lastError ?? new Error(`connection to ${o.host}:${o.port} closed while connecting`));
        else events.close(closing ? undefined : lastError);
      });
    });
}
