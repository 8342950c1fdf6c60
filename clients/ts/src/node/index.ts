/**
 * @shieldrpc/client/node: everything of the core entry point, with a
 * connect() for Node that speaks raw TCP (tcp://, tls://) and WebSocket
 * (ws://, wss://) through the package's own RFC 6455 client, so that it
 * needs no WebSocket global and no dependency.
 */
import type tls from 'node:tls';
import { Client, type ClientOptions } from '../client.js';
import type { Dialer } from '../transport.js';
import { tcpDialer } from './tcp.js';
import { nodeWebSocketDialer } from './ws.js';

export * from '../index.js';
export { tcpDialer, type TcpDialOptions } from './tcp.js';
export { nodeWebSocketDialer, type WebSocketDialOptions } from './ws.js';

export interface NodeConnectOptions extends ClientOptions {
  /**
   * The listener: `tcp://host:port` (transport tcp), `tls://host:port`
   * (tcp over TLS), `ws://host:port/ws` or `wss://host:port/ws`.
   */
  url: string;
  /** TLS options for tls:// and wss:// (ca, cert and key for mutual TLS, servername, ...). */
  tls?: tls.ConnectionOptions;
  /** ws: the Origin header to send (a listener with allowed_origins checks it); none by default. */
  origin?: string;
  /** ws: more upgrade request headers. */
  headers?: Record<string, string>;
}

/** The Dialer for a URL, as connect() picks it. */
export function dialerFor(options: NodeConnectOptions): Dialer {
  const u = new URL(options.url);
  switch (u.protocol) {
    case 'tcp:':
    case 'tls:': {
      const port = Number(u.port);
      if (u.hostname === '' || !Number.isInteger(port) || port <= 0) throw new TypeError(`${options.url}: want ${u.protocol}//host:port`);
      const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
      return tcpDialer(u.protocol === 'tls:' ? { host, port, tls: options.tls ?? {} } : { host, port });
    }
    case 'ws:':
    case 'wss:':
      return nodeWebSocketDialer({
        url: u,
        maxMessageBytes: options.maxFrameBytes ?? 65536,
        ...(options.origin !== undefined ? { origin: options.origin } : {}),
        ...(options.headers !== undefined ? { headers: options.headers } : {}),
        ...(options.tls !== undefined ? { tls: options.tls } : {}),
      });
    default:
      throw new TypeError(`${options.url}: unknown scheme (want tcp://, tls://, ws:// or wss://)`);
  }
}

/** Connects to a gateway listener; resolves once the connection is open. */
export function connect(options: NodeConnectOptions): Promise<Client> {
  let dial: Dialer;
  try {
    dial = dialerFor(options);
  } catch (e) {
    return Promise.reject(e);
  }
  const { url: _url, tls: _tls, origin: _origin, headers: _headers, ...rest } = options;
  return Client.open(dial, rest);
}
