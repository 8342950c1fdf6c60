/**
 * What a Client needs from a transport: a connection that moves messages
 * (WebSocket: one frame per message) or bytes (TCP: a stream the client
 * frames itself). The package has one dialer per transport; a custom one
 * (another socket API, a test double) can be passed to createClient.
 */

/** The events a connection reports to the client, each in order. */
export interface ConnEvents {
  /** One WebSocket message (string: text, Uint8Array: binary), or one chunk of a stream. */
  data(data: Uint8Array | string): void;
  /**
   * The connection has ended, once. `error` says why when it was not a
   * clean close asked for by close(); a ProtocolError (other than
   * `truncated`) means the peer broke the protocol.
   */
  close(error?: Error): void;
}

/** An open connection. */
export interface Conn {
  /** true: send() takes stream bytes and data() yields chunks (TCP); false: one message each (WebSocket). */
  readonly stream: boolean;
  /** Sends one message, or stream bytes. A string is sent as a WebSocket text message. */
  send(data: Uint8Array | string): void;
  /** Starts a clean close; events.close follows (a transport gives up waiting for its peer after a short while). */
  close(): void;
}

/**
 * Opens one connection. It resolves once the connection is open (the TCP
 * connect, TLS and WebSocket handshakes done) and rejects when it cannot be
 * or when signal aborts, without calling events.close. events.data may be
 * called before it resolves (bytes that came with the handshake's answer);
 * after it resolved, the end of the connection is events.close.
 */
export type Dialer = (events: ConnEvents, signal: AbortSignal) => Promise<Conn>;
