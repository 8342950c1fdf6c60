/**
 * @shieldrpc/client: a client for Shield gateways (SPEC §3 envelopes, §4
 * resume). This entry point uses nothing but web platform APIs, so it runs
 * in browsers; its connect() speaks WebSocket through globalThis.WebSocket.
 * In Node (TCP, or WebSocket on Node 20), use "@shieldrpc/client/node".
 */
import { Client, type ClientOptions } from './client.js';
import { webSocketDialer, type WebSocketConstructor } from './websocket.js';

export {
  Client,
  createClient,
  backoffDelay,
  NOTICE_CODES,
  type BodyMode,
  type CallOptions,
  type ClientOptions,
  type ClientState,
  type DisconnectInfo,
  type PushInfo,
  type ReconnectInfo,
  type ReconnectOptions,
  type StatusFrame,
} from './client.js';
export { AbortError, ClosedError, ProtocolError, ShieldError, TimeoutError, UpgradeError, type Notice, type ProtocolReason } from './errors.js';
export {
  decodeMessage,
  encodeMessage,
  encodeStreamFrame,
  StreamDecoder,
  ENVELOPES,
  type EnvelopeName,
  type InBody,
  type InFrame,
  type OutBody,
  type OutFrame,
} from './envelope.js';
export {
  applyStateOps,
  decodeStateFrame,
  statePointer,
  Room,
  RoomEndedError,
  RoomState,
  StateFrameError,
  MAX_VERSION_OPS,
  ROOM_ROUTES,
  type RoomCallOptions,
  type RoomEnd,
  type RoomGap,
  type RoomJoinOptions,
  type RoomStateOptions,
  type RoomUpdate,
  type StateChange,
  type StateFrame,
  type StateOp,
  type StatePatch,
  type StateTable,
  type StateValue,
} from './room.js';
export type { Conn, ConnEvents, Dialer } from './transport.js';
export { webSocketDialer, type WebSocketConstructor, type WebSocketLike } from './websocket.js';

export interface ConnectOptions extends ClientOptions {
  /** The gateway's ws listener: `ws://host:port/ws` or `wss://...`. */
  url: string;
  /** A WebSocket constructor to use instead of globalThis.WebSocket. */
  WebSocket?: WebSocketConstructor;
}

/** Connects to a gateway's WebSocket listener; resolves once the connection is open. */
export function connect(options: ConnectOptions): Promise<Client> {
  const { url, WebSocket, ...rest } = options;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme !== 'ws' && scheme !== 'wss') {
    return Promise.reject(
      new TypeError(`this entry point speaks ws:// and wss:// only, not ${JSON.stringify(url)}; for TCP use "@shieldrpc/client/node"`),
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
