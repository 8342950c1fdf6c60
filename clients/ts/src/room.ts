/**
 * Rooms' state sync, client side (docs/rooms.md §7 and §8: the state frame
 * of §8.2 and what a client does with it, §8.3). decodeStateFrame reads one
 * body of the `shield.room.state` push (route 65520); RoomState keeps a
 * room's state as a plain object and applies each version to it, buffering
 * a version's parts, spotting gaps and dropping the state at END.
 *
 * It is the Go package statesync in TypeScript, message for message: both
 * are held to the vectors statesync writes (test/fixtures/). It uses no
 * platform API but TextDecoder, DataView, atob and timers, so it runs in
 * browsers.
 *
 * Room (Client.room()) is the client's side of its session's room, the Go
 * SDK's client.Room: it feeds a RoomState the state pushes, asks for syncs,
 * and joins and leaves (docs/clients.md §9).
 */
import type { Client } from './client.js';
import type { InBody } from './envelope.js';
import { AbortError, ClosedError, TimeoutError } from './errors.js';

/** The reserved routes of docs/rooms.md §8.1, in a config with rooms or queues. */
export const ROOM_ROUTES = {
  /** s2c push: a state frame (binary; base64 in a JSON string on lenprefix and delimiter). */
  state: 65520,
  /** c2s notify: `{"version":N}`, or `{}` from a client holding no state (RoomState.syncBody). */
  sync: 65521,
  /** c2s request: `{"room":"<id>","token":"<token>","meta":<any>}` -> `{"room":"<id>"}`. */
  join: 65522,
  /** c2s request: empty -> `{}`. */
  leave: 65523,
  /** s2c push: a matchmaking event, JSON. */
  match: 65524,
} as const;

/** A synced value: a state holds maps, strings, numbers and booleans (§7.1). */
export type StateValue = boolean | number | string | StateTable;
/** A synced table: keys are strings. */
export interface StateTable {
  [key: string]: StateValue;
}

/** One op of a frame. A SET of a table puts a new empty table (`value` is `{}`); its entries follow as SETs. */
export type StateOp = { op: 'set'; path: string[]; value: StateValue } | { op: 'remove'; path: string[] };

/** A decoded state frame (§8.2). */
export type StateFrame =
  | { kind: 'snapshot'; continues: boolean; base: number; version: number; roomId: string; tickHz: number; ops: StateOp[] }
  | { kind: 'delta'; continues: boolean; base: number; version: number; ops: StateOp[] }
  | { kind: 'end'; reason: string; message: string };

/**
 * Bytes that are not a state frame, or a version that does not apply to the
 * state held. The message is the Go decoder's for the same bytes: `state
 * frame: byte N: ...` (N the offset of the field at fault) or `state frame:
 * op N (SET /a/b): ...`.
 */
/**
 * A join whose membership ended (END) before its SNAPSHOT was applied, the
 * room having closed meanwhile: the session is home again.
 */
export class RoomEndedError extends Error {
  readonly room: string;
  readonly reason: string;
  readonly endMessage: string;
  constructor(room: string, end: RoomEnd) {
    super(`room ${room} ended the join (${end.reason}${end.message ? `: ${end.message}` : ''})`);
    this.name = 'RoomEndedError';
    this.room = room;
    this.reason = end.reason;
    this.endMessage = end.message;
  }
}

export class StateFrameError extends Error {
  override readonly name = 'StateFrameError';
  readonly code = 'client.bad_state_frame';
}

const MAX_SAFE = 2 ** 53;
const MAX_DEPTH = 16;
/** The most ops RoomState buffers for one version's parts (statesync.MaxVersionOps). */
export const MAX_VERSION_OPS = 2 ** 22;

const utf8Fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function frameErrorAt(off: number, what: string): StateFrameError {
  return new StateFrameError(`state frame: byte ${off}: ${what}`);
}

/** A path as a JSON Pointer (RFC 6901), the way messages and events write it: `/players/alice/x`. */
export function statePointer(path: readonly string[]): string {
  let s = '';
  for (const k of path) s += '/' + k.replace(/~/g, '~0').replace(/\//g, '~1');
  return s;
}

/** Bytewise order of two keys' UTF-8 (which is not JavaScript's UTF-16 order). */
function compareKeyBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  return a.length - b.length;
}

/** A varint as two exact halves: value = hi * 2^28 + lo. */
interface Varint {
  lo: number;
  hi: number;
}

class FrameReader {
  off = 0;
  constructor(readonly b: Uint8Array) {}

  byte(field: string): number {
    if (this.off >= this.b.length) throw frameErrorAt(this.off, `truncated in the ${field}`);
    return this.b[this.off++]!;
  }

  /** A minimal varint of at most 8 bytes, unbounded. */
  varint(field: string): Varint {
    const start = this.off;
    let lo = 0;
    let hi = 0;
    for (let i = 0; ; i++) {
      if (this.off >= this.b.length) throw frameErrorAt(start, `truncated in the ${field}`);
      const c = this.b[this.off++]!;
      if (i < 4) lo += (c & 0x7f) * 2 ** (7 * i);
      else hi += (c & 0x7f) * 2 ** (7 * (i - 4));
      if (c < 0x80) {
        if (c === 0 && i > 0) throw frameErrorAt(start, `the ${field} is a varint that is not minimal`);
        return { lo, hi };
      }
      if (i === 7) throw frameErrorAt(start, `the ${field} is a varint longer than 8 bytes`);
    }
  }

  /** A varint field other than an integer value: at most 2^53, a number held exactly. */
  uvarint(field: string): number {
    const start = this.off;
    const { lo, hi } = this.varint(field);
    if (hi > 2 ** 25 || (hi === 2 ** 25 && lo > 0)) throw frameErrorAt(start, `the ${field} is above 2^53`);
    return hi * 2 ** 28 + lo;
  }

  bytes(field: string): { bytes: Uint8Array; at: number } {
    const at = this.off;
    const n = this.uvarint(`${field} length`);
    if (n > this.b.length - this.off) throw frameErrorAt(at, `truncated in the ${field}`);
    const bytes = this.b.subarray(this.off, this.off + n);
    this.off += n;
    return { bytes, at };
  }

  string(field: string): string {
    const { bytes, at } = this.bytes(field);
    const s = utf8Text(bytes);
    if (s === undefined) throw frameErrorAt(at, `the ${field} is not valid UTF-8`);
    return s;
  }
}

function utf8Text(b: Uint8Array): string | undefined {
  try {
    return utf8Fatal.decode(b);
  } catch {
    return undefined;
  }
}

/**
 * Reads one state frame body, checking every rule of §8.2 as the Go
 * decoder does; throws a StateFrameError (and nothing else) for bytes that
 * are not one. Its work is bounded by the body's length.
 */
export function decodeStateFrame(body: Uint8Array): StateFrame {
  const r = new FrameReader(body);
  const format = r.byte('format');
  if (format !== 1) throw frameErrorAt(0, `format ${format} is not 1`);
  const kind = r.byte('kind');
  if (kind < 1 || kind > 3) throw frameErrorAt(1, `kind ${kind} is not 1 (SNAPSHOT), 2 (DELTA) or 3 (END)`);
  const flags = r.byte('flags');
  const hexFlags = '0x' + flags.toString(16).padStart(2, '0');
  if ((flags & ~1) !== 0) throw frameErrorAt(2, `flags ${hexFlags}: only bit 0 (CONTINUES) is defined`);
  if (kind === 3) {
    if (flags !== 0) throw frameErrorAt(2, `flags ${hexFlags}: an END has no flags`);
    const reason = r.string('reason');
    const message = r.string('message');
    if (r.off < body.length) throw frameErrorAt(r.off, "trailing bytes after the END's message");
    return { kind: 'end', reason, message };
  }
  const continues = flags === 1;
  const baseAt = r.off;
  const base = r.uvarint('base');
  const version = r.uvarint('version');
  if (kind === 1 && base !== 0) throw frameErrorAt(baseAt, `a SNAPSHOT's base is 0, got ${base}`);
  if (kind === 2 && base >= version) throw frameErrorAt(baseAt, `a DELTA's base ${base} is not below its version ${version}`);
  let roomId = '';
  let tickHz = 0;
  if (kind === 1) {
    roomId = r.string('room id');
    tickHz = r.byte('tick_hz');
  }
  const count = r.uvarint('count');
  const ops: StateOp[] = [];
  let prev: string[] = [];
  let prevBytes: Uint8Array[] = [];
  for (let i = 1; i <= count; i++) {
    if (r.off === body.length) throw frameErrorAt(r.off, `count ${count}, but the frame ends after ${i - 1} of them`);
    const start = r.off;
    const code = r.byte('op');
    if (code !== 1 && code !== 2) throw frameErrorAt(start, `op ${i}: code ${code} is not 1 (SET) or 2 (REMOVE)`);
    const sharedAt = r.off;
    const shared = r.uvarint('shared');
    if (shared > prev.length) throw frameErrorAt(sharedAt, `op ${i}: shared ${shared} is above the previous path's length ${prev.length}`);
    const addedAt = r.off;
    const added = r.uvarint('added');
    if (shared + added === 0 || shared + added > MAX_DEPTH) {
      throw frameErrorAt(addedAt, `op ${i}: shared ${shared} + added ${added} keys: a path is 1 to ${MAX_DEPTH} keys`);
    }
    const path = prev.slice(0, shared);
    const keyBytes = prevBytes.slice(0, shared);
    for (let j = 0; j < added; j++) {
      const { bytes, at } = r.bytes('key');
      const k = utf8Text(bytes);
      if (k === undefined) throw frameErrorAt(at, `op ${i}: key ${shared + j + 1} is not valid UTF-8`);
      path.push(k);
      keyBytes.push(bytes);
    }
    const cmp = shared < prev.length && added > 0 ? compareKeyBytes(keyBytes[shared]!, prevBytes[shared]!) : 0;
    if (added === 0 && shared === prev.length) throw frameErrorAt(start, `op ${i}: ${statePointer(path)} twice`);
    if (added === 0 || cmp < 0) {
      throw frameErrorAt(start, `op ${i}: ${statePointer(path)} comes before the previous op's ${statePointer(prev)} (path order)`);
    }
    if (shared < prev.length && cmp === 0) {
      let n = 0;
      while (n < path.length && n < prev.length && compareKeyBytes(keyBytes[n]!, prevBytes[n]!) === 0) n++;
      throw frameErrorAt(start, `op ${i}: shared ${shared}, but the path shares ${n} keys with the previous op's ${statePointer(prev)}`);
    }
    if (code === 1) ops.push({ op: 'set', path, value: readValue(r, i) });
    else ops.push({ op: 'remove', path });
    prev = path;
    prevBytes = keyBytes;
  }
  if (r.off < body.length) throw frameErrorAt(r.off, `trailing bytes after the last of count ${count} ops`);
  return kind === 1 ? { kind: 'snapshot', continues, base, version, roomId, tickHz, ops } : { kind: 'delta', continues, base, version, ops };
}

function readValue(r: FrameReader, i: number): StateValue {
  const at = r.off;
  const tag = r.byte('value tag');
  switch (tag) {
    case 0:
      return false;
    case 1:
      return true;
    case 2: {
      const intAt = r.off;
      const { lo, hi } = r.varint('integer');
      // The zigzag integer is at most 2^54 (2^53's); -2^53's is 2^54 - 1.
      if (hi > 2 ** 26 || (hi === 2 ** 26 && lo > 0)) throw frameErrorAt(intAt, `op ${i}: an integer beyond ±2^53`);
      const m = hi * 2 ** 27 + Math.floor(lo / 2);
      return lo % 2 === 1 ? -m - 1 : m;
    }
    case 3: {
      if (r.b.length - r.off < 8) throw frameErrorAt(r.off, 'truncated in the float64');
      const floatAt = r.off;
      const f = new DataView(r.b.buffer, r.b.byteOffset + r.off, 8).getFloat64(0, false);
      r.off += 8;
      if (!Number.isFinite(f)) throw frameErrorAt(floatAt, `op ${i}: a float64 that is not finite`);
      if (Number.isInteger(f) && Math.abs(f) <= MAX_SAFE) throw frameErrorAt(floatAt, `op ${i}: an integral float64 within ±2^53 (it is an integer, tag 2)`);
      return f;
    }
    case 4: {
      const { bytes, at: strAt } = r.bytes('string');
      const s = utf8Text(bytes);
      if (s === undefined) throw frameErrorAt(strAt, `op ${i}: the string is not valid UTF-8`);
      return s;
    }
    case 5:
      return {};
  }
  throw frameErrorAt(at, `op ${i}: value tag ${tag} is not 0 to 5`);
}

const hasOwnKey = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
const isStateTable = (v: unknown): v is StateTable => typeof v === 'object' && v !== null;

/** Sets an own property, whatever its name (`__proto__` included): never the prototype's setter. */
function putOwn(t: StateTable, k: string, v: StateValue): void {
  Object.defineProperty(t, k, { value: v, writable: true, enumerable: true, configurable: true });
}

function ownChild(t: StateTable, k: string): StateValue | undefined {
  return hasOwnKey(t, k) ? t[k] : undefined;
}

const opPathKey = (p: readonly string[]): string => p.map((k) => `${k.length}:${k}`).join('');

/**
 * Applies a version's ops (in path order, as frames hold them) to state:
 * all of them, or none and a StateFrameError (a SET or REMOVE under a path
 * that is not a table, a REMOVE of a missing path). Ops are numbered from 1
 * across a version's parts.
 */
export function applyStateOps(state: StateTable, ops: readonly StateOp[]): void {
  // First pass, changing nothing: an op's path against the nearest of its
  // ancestors an earlier op of the version set or removed (path order puts
  // those first); under a new table only what the version made exists.
  const seen = new Map<string, boolean>(); // path -> a new table was set there
  ops.forEach((op, i) => {
    const p = op.path;
    const n = p.length;
    const fail = (what: string) => new StateFrameError(`state frame: op ${i + 1} (${op.op === 'set' ? 'SET' : 'REMOVE'} ${statePointer(p)}): ${what}`);
    let near = -1;
    let table = false;
    for (let d = n - 1; d >= 1 && seen.size > 0; d--) {
      const t = seen.get(opPathKey(p.slice(0, d)));
      if (t !== undefined) {
        near = d;
        table = t;
        break;
      }
    }
    if (near >= 0 && !table) throw fail(`${statePointer(p.slice(0, near))} is not a table`);
    if (near >= 0 && near < n - 1) throw fail(`${statePointer(p.slice(0, near + 1))} is not a table`);
    if (near >= 0 && op.op === 'remove') throw fail('no such path');
    if (near < 0) {
      let node: StateTable = state;
      for (let d = 0; d < n - 1; d++) {
        const next = ownChild(node, p[d]!);
        if (!isStateTable(next)) throw fail(`${statePointer(p.slice(0, d + 1))} is not a table`);
        node = next;
      }
      if (op.op === 'remove' && !hasOwnKey(node, p[n - 1]!)) throw fail('no such path');
    }
    seen.set(opPathKey(p), op.op === 'set' && isStateTable(op.value));
  });
  for (const op of ops) {
    let node = state;
    for (let d = 0; d < op.path.length - 1; d++) node = node[op.path[d]!] as StateTable;
    const last = op.path[op.path.length - 1]!;
    if (op.op === 'remove') delete node[last];
    else putOwn(node, last, isStateTable(op.value) ? {} : op.value);
  }
}

/** One op of an applied version, as a change event: the value now at the path, or removed. */
export interface StateChange {
  op: 'set' | 'remove';
  path: string[];
  /** The path as a JSON Pointer: `/players/alice/x`. */
  pointer: string;
  /** A SET's value: a scalar, or for a table the table as it is in the state now. Undefined for a REMOVE. */
  value: StateValue | undefined;
}

/** An applied version: its kind, its version, and one change per op in order. */
export interface StatePatch {
  kind: 'snapshot' | 'delta';
  version: number;
  changes: StateChange[];
}

/** The END of a membership (docs/rooms.md §5.2's reasons). */
export interface RoomEnd {
  reason: string;
  message: string;
}

/** A gap (§8.3 step 2): send `shield.room.sync` with syncBody() (at most one a second). */
export interface RoomGap {
  /** Why the frame did not apply; an error for one that did not decode or apply. */
  why: string;
  error: StateFrameError | undefined;
  /** The version held (undefined without a state). */
  version: number | undefined;
}

/**
 * What one body did: `applied` (a whole version), `partial` (a part
 * buffered), `gap` (nothing applied; send a sync), `end` (the state
 * dropped). `sync` says to send `shield.room.sync` now: a gap, or parts of
 * a version this frame broke off (it may still have applied).
 */
export interface RoomUpdate {
  status: 'applied' | 'partial' | 'gap' | 'end';
  /** The frame's version (an applied one's is the state's now); undefined for an END or a body that did not decode. */
  version: number | undefined;
  sync: boolean;
  /** An applied version's ops (every part's), one change event each. */
  ops: StateOp[];
  /** Why a gap's frame did not decode or apply. */
  error?: StateFrameError;
  /** Why a gap's frame that decoded was not applied (a DELTA from another base). */
  why?: string;
  /** An END's reason and message. */
  end?: RoomEnd;
}

export interface RoomStateOptions {
  /** Receives exceptions thrown by event handlers; by default they are reported asynchronously. */
  onError?: (e: unknown) => void;
}

type Header = { kind: 'snapshot' | 'delta'; base: number; version: number; roomId: string; tickHz: number };

/**
 * A room's state on a client (§8.3): give it every `shield.room.state` body
 * with receive(). It keeps the state (a plain object) and its version,
 * applies a SNAPSHOT or a DELTA from its version, buffers a version's parts
 * and applies them at once, discards a DELTA from another base and asks
 * for a sync, and drops the state at END. Handlers see each applied
 * version as one change event per op, then one patch event.
 */
export class RoomState {
  #state: StateTable | undefined;
  #version = 0;
  #roomId = '';
  #tickHz = 0;
  #pending: Header | undefined;
  #ops: StateOp[] = [];
  #parts = 0;
  #skipping = false;
  readonly #changes = new Set<(c: StateChange) => void>();
  readonly #patches = new Set<(p: StatePatch) => void>();
  readonly #ends = new Set<(e: RoomEnd) => void>();
  readonly #gaps = new Set<(g: RoomGap) => void>();
  readonly #onError: ((e: unknown) => void) | undefined;

  constructor(options: RoomStateOptions = {}) {
    this.#onError = options.onError;
  }

  /** The state at `version`; undefined before the first SNAPSHOT and after END. Read it; do not change it. */
  get state(): StateTable | undefined {
    return this.#state;
  }

  /** The state's version; undefined without a state. */
  get version(): number | undefined {
    return this.#state === undefined ? undefined : this.#version;
  }

  /** The last SNAPSHOT's room id. */
  get roomId(): string {
    return this.#roomId;
  }

  /** The last SNAPSHOT's tick rate: clients clock themselves with it. */
  get tickHz(): number {
    return this.#tickHz;
  }

  /** The body of `shield.room.sync`: `{"version":N}`, or `{}` without a state. */
  syncBody(): { version: number } | Record<string, never> {
    return this.#state === undefined ? {} : { version: this.#version };
  }

  onChange(handler: (change: StateChange) => void): () => void {
    return subscribe(this.#changes, handler);
  }

  onPatch(handler: (patch: StatePatch) => void): () => void {
    return subscribe(this.#patches, handler);
  }

  onEnd(handler: (end: RoomEnd) => void): () => void {
    return subscribe(this.#ends, handler);
  }

  /** Called whenever a body calls for a sync (RoomUpdate.sync). */
  onGap(handler: (gap: RoomGap) => void): () => void {
    return subscribe(this.#gaps, handler);
  }

  /** Forgets the state and any buffered parts (a client that left the room or lost its session). */
  reset(): void {
    this.#state = undefined;
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
  receive(body: Uint8Array | string): RoomUpdate {
    const u = this.#receive(body);
    if (u.end !== undefined) this.#emit(this.#ends, u.end);
    if (u.sync) this.#emit(this.#gaps, { why: u.why ?? u.error?.message ?? 'parts of a version were broken off', error: u.error, version: this.version });
    return u;
  }

  #receive(body: Uint8Array | string): RoomUpdate {
    const gap = (version: number | undefined, error?: StateFrameError, why?: string): RoomUpdate => ({
      status: 'gap',
      version,
      sync: true,
      ops: [],
      ...(error ? { error } : {}),
      ...(why ? { why } : {}),
    });
    let b: Uint8Array = new Uint8Array();
    let f: StateFrame;
    try {
      b = typeof body === 'string' ? stateFromBase64(body) : body;
      f = decodeStateFrame(b);
    } catch (e) {
      if (!(e instanceof StateFrameError)) throw e;
      this.#drop();
      // A broken part's version goes on in the frames that follow.
      this.#skipping = b.length >= 3 && b[0] === 1 && (b[2]! & 1) === 1 && b[1] !== 3;
      return gap(undefined, e);
    }
    if (this.#skipping && f.kind !== 'end') {
      this.#skipping = f.continues;
      return gap(f.version, undefined, 'the rest of a version whose part did not decode');
    }
    this.#skipping = false;
    let broken = false;
    if (this.#pending !== undefined && !continuesPending(this.#pending, f)) {
      this.#drop();
      broken = true;
    }
    if (f.kind === 'end') {
      this.reset();
      this.#roomId = '';
      this.#tickHz = 0;
      return { status: 'end', version: undefined, sync: false, ops: [], end: { reason: f.reason, message: f.message } };
    }
    if (f.kind === 'delta' && this.#pending === undefined) {
      if (this.#state === undefined) return gap(f.version, undefined, 'a DELTA before any SNAPSHOT');
      if (f.base !== this.#version) return gap(f.version, undefined, `a DELTA from version ${f.base}, but the state is at version ${this.#version}`);
    }
    const err = this.#buffer(f);
    if (err !== undefined) {
      this.#drop();
      this.#skipping = f.continues;
      return gap(f.version, err);
    }
    if (f.continues) return { status: 'partial', version: f.version, sync: broken, ops: [] };
    const ops = this.#ops;
    this.#drop();
    let target: StateTable;
    if (f.kind === 'snapshot') target = {};
    else target = this.#state!;
    try {
      applyStateOps(target, ops);
    } catch (e) {
      if (!(e instanceof StateFrameError)) throw e;
      return gap(f.version, e);
    }
    this.#state = target;
    this.#version = f.version;
    if (f.kind === 'snapshot') {
      this.#roomId = f.roomId;
      this.#tickHz = f.tickHz;
    }
    this.#events(f.kind, f.version, ops);
    return { status: 'applied', version: f.version, sync: broken, ops };
  }

  #buffer(f: Exclude<StateFrame, { kind: 'end' }>): StateFrameError | undefined {
    if (this.#pending === undefined) {
      this.#pending = { kind: f.kind, base: f.base, version: f.version, roomId: f.kind === 'snapshot' ? f.roomId : '', tickHz: f.kind === 'snapshot' ? f.tickHz : 0 };
    }
    this.#parts++;
    if (this.#ops.length > 0 && f.ops.length > 0) {
      const prev = this.#ops[this.#ops.length - 1]!.path;
      const first = f.ops[0]!.path;
      const c = comparePaths(first, prev);
      if (c === 0) return new StateFrameError(`state frame: part ${this.#parts}: op 1: ${statePointer(first)} twice`);
      if (c < 0) return new StateFrameError(`state frame: part ${this.#parts}: op 1: ${statePointer(first)} comes before the previous part's ${statePointer(prev)} (path order)`);
    }
    if (this.#ops.length + f.ops.length > MAX_VERSION_OPS) {
      return new StateFrameError(`state frame: part ${this.#parts}: more than ${MAX_VERSION_OPS} ops in one version`);
    }
    this.#ops = this.#ops.length === 0 ? f.ops : this.#ops.concat(f.ops);
    return undefined;
  }

  #drop(): void {
    this.#pending = undefined;
    this.#ops = [];
    this.#parts = 0;
  }

  #events(kind: 'snapshot' | 'delta', version: number, ops: StateOp[]): void {
    if (this.#changes.size === 0 && this.#patches.size === 0) return;
    const changes: StateChange[] = ops.map((op) => {
      let value: StateValue | undefined;
      if (op.op === 'set') value = isStateTable(op.value) ? valueAt(this.#state!, op.path) : op.value;
      return { op: op.op, path: op.path, pointer: statePointer(op.path), value };
    });
    for (const c of changes) this.#emit(this.#changes, c);
    this.#emit(this.#patches, { kind, version, changes });
  }

  #emit<A>(handlers: Set<(a: A) => void>, arg: A): void {
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
}

function subscribe<H>(set: Set<H>, h: H): () => void {
  set.add(h);
  return () => set.delete(h);
}

function reportHandlerError(e: unknown): void {
  const report = (globalThis as { reportError?: (e: unknown) => void }).reportError;
  if (typeof report === 'function') report(e);
  else
    queueMicrotask(() => {
      throw e;
    });
}

function continuesPending(p: Header, f: StateFrame): boolean {
  if (f.kind === 'end' || f.kind !== p.kind || f.base !== p.base || f.version !== p.version) return false;
  return f.kind === 'delta' || (f.roomId === p.roomId && f.tickHz === p.tickHz);
}

const keyEncoder = new TextEncoder();

/** Path order of §7.2: key by key, bytewise, a path before its extensions. */
function comparePaths(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return compareKeyBytes(keyEncoder.encode(a[i]!), keyEncoder.encode(b[i]!));
  }
  return a.length - b.length;
}

function valueAt(t: StateTable, path: readonly string[]): StateValue | undefined {
  let v: StateValue | undefined = t;
  for (const k of path) v = isStateTable(v) ? ownChild(v, k) : undefined;
  return v;
}

const STANDARD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Standard base64, strictly (the payload of a state frame on lenprefix and delimiter, §8.1). */
function stateFromBase64(s: string): Uint8Array {
  if (!STANDARD_BASE64.test(s)) throw new StateFrameError('state frame: the payload is not standard base64');
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// ---------------------------------------------------------------------------
// Room: Client.room(), the client's side of its session's room (§8.3).

/** The legacy envelopes' name of the state push's route. */
const STATE_ROUTE_NAME = 'shield.room.state';

/** Options of Room.join and Room.leave. */
export interface RoomCallOptions {
  /**
   * Time in ms for all of it: the request's answer, then the SNAPSHOT (join)
   * or the END (leave); 0: none. Default: the client's callTimeoutMs. Past
   * it the promise rejects with a TimeoutError.
   */
  timeout?: number;
  /** Aborts the wait; the promise rejects with an AbortError. */
  signal?: AbortSignal;
}

/** Options of Room.join. */
export interface RoomJoinOptions extends RoomCallOptions {
  /** A reservation's token (a matchmaking `matched` event's), sent as the join's `token`. */
  token?: string;
}

/** What a Client calls on its Room. Internal: not exported from the package. */
export interface RoomHooks {
  readonly room: Room;
  /** A push on shield.room.state, its body as the envelope decoded it. */
  receive(body: InBody): void;
  /** A reconnect succeeded (resumed, or a new session); runs before the app's onReconnect handlers. */
  reconnected(resumed: boolean): void;
}

interface RoomWaiter {
  /** Checked after every update; true settles the waiter. */
  done(): boolean;
  resolve(): void;
  reject(e: Error): void;
  /** Rejects with a ClosedError when a reconnect makes a new session (a join's SNAPSHOT will never come). */
  failOnNewSession: boolean;
}

let newRoom: (client: Client, callTimeoutMs: number, onError: ((e: unknown) => void) | undefined) => RoomHooks;

/**
 * The client's side of its session's room (docs/rooms.md §8.3), from
 * Client.room(): it takes every `shield.room.state` push into a RoomState,
 * asks for a sync on a gap (at most one a second) and once after a resume,
 * and joins and leaves. A session is in at most one room at a time; the same
 * Room follows it from room to room. A reconnect that made a new session
 * (not resumed) ends the membership: the state is dropped and onEnd gets
 * reason `closed`.
 *
 * It takes over the route: state pushes no longer reach onAnyPush handlers.
 * onPush handlers of route 65520 still get them too (as the body mode
 * decodes them: use `body: 'raw'` for the bytes).
 */
export class Room {
  readonly #client: Client;
  readonly #callTimeoutMs: number;
  readonly #onError: ((e: unknown) => void) | undefined;
  #rs!: RoomState;
  #end: RoomEnd | undefined;
  /** ENDs taken (a leave waits for one more, whether it comes before or after the leave's answer). */
  #ends = 0;
  /** When the last shield.room.sync went out (Date.now()). */
  #lastSync = -Infinity;
  readonly #waiters = new Set<RoomWaiter>();
  readonly #changes = new Set<(c: StateChange) => void>();
  readonly #patches = new Set<(p: StatePatch) => void>();
  readonly #endHandlers = new Set<(e: RoomEnd) => void>();
  readonly #gaps = new Set<(g: RoomGap) => void>();
  readonly #updates = new Set<(u: RoomUpdate) => void>();

  static {
    newRoom = (client, callTimeoutMs, onError) => {
      const r = new Room(client, callTimeoutMs, onError);
      return { room: r, receive: (body) => r.#receive(body), reconnected: (resumed) => r.#reconnected(resumed) };
    };
  }

  private constructor(client: Client, callTimeoutMs: number, onError: ((e: unknown) => void) | undefined) {
    this.#client = client;
    this.#callTimeoutMs = callTimeoutMs;
    this.#onError = onError;
    this.#fresh();
    client.onClose((error) => {
      const err = error instanceof ClosedError ? error : new ClosedError('the client was closed', error === undefined ? undefined : { cause: error });
      for (const w of [...this.#waiters]) w.reject(err);
    });
  }

  /** The state; undefined before the first SNAPSHOT and after END. Read it; do not change it. */
  get state(): StateTable | undefined {
    return this.#rs.state;
  }

  /** The state's version; undefined without a state. */
  get version(): number | undefined {
    return this.#rs.version;
  }

  /** The room's id (its last SNAPSHOT's); '' when in no room. */
  get roomId(): string {
    return this.#rs.roomId;
  }

  /** The room's tick rate, as its last SNAPSHOT said; 0 when in no room. */
  get tickHz(): number {
    return this.#rs.tickHz;
  }

  /** Whether the session is in a room: a SNAPSHOT applied, no END since. */
  get inRoom(): boolean {
    return this.#rs.state !== undefined;
  }

  /**
   * The last END's reason and message (docs/rooms.md §5.2: `left`,
   * `removed`, `timeout`, `room_closed`, `closed`, ...); undefined while in a
   * room and before any END.
   */
  get end(): RoomEnd | undefined {
    return this.inRoom ? undefined : this.#end;
  }

  /** One event per op of each applied version, in order (RoomState.onChange). */
  onChange(handler: (change: StateChange) => void): () => void {
    return subscribe(this.#changes, handler);
  }

  /** One event per applied version, after its changes (RoomState.onPatch). */
  onPatch(handler: (patch: StatePatch) => void): () => void {
    return subscribe(this.#patches, handler);
  }

  /** The membership ended: an END, or reason `closed` when a reconnect made a new session. */
  onEnd(handler: (end: RoomEnd) => void): () => void {
    return subscribe(this.#endHandlers, handler);
  }

  /** A body called for a sync (RoomState.onGap); the Room sends it itself, at most once a second. */
  onGap(handler: (gap: RoomGap) => void): () => void {
    return subscribe(this.#gaps, handler);
  }

  /** What each state push did (applied, partial, gap, end), after the state and the other events. */
  onUpdate(handler: (update: RoomUpdate) => void): () => void {
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
  async join(room: string, meta?: unknown, options: RoomJoinOptions = {}): Promise<void> {
    if (typeof room !== 'string' || room === '') throw new TypeError('join: room must be a non-empty string');
    const body: Record<string, unknown> = { room };
    if (options.token !== undefined) body['token'] = options.token;
    if (meta !== undefined) body['meta'] = meta;
    const before = this.#ends;
    const t0 = Date.now();
    const timeout = options.timeout ?? this.#callTimeoutMs;
    const answer = jsonOf(await this.#client.call(ROOM_ROUTES.join, body, callOptions(timeout, options.signal)));
    const joined = typeof answer === 'object' && answer !== null ? (answer as { room?: unknown }).room : undefined;
    if (joined !== room) throw new Error(`the join answered room ${JSON.stringify(joined)}, want ${JSON.stringify(room)}`);
    const inIt = () => this.inRoom && this.#rs.roomId === room;
    await this.#wait(() => inIt() || this.#ends > before, remaining(t0, timeout), options.signal, true, `the SNAPSHOT of ${room}`);
    if (!inIt() && this.#end !== undefined) throw new RoomEndedError(room, this.#end);
  }

  /**
   * Sends `shield.room.leave` and waits for END: once it resolves the session
   * is home again and its next call reaches home (§5.2). Outside a room it
   * rejects with `client_rpc.not_member`.
   */
  async leave(options: RoomCallOptions = {}): Promise<void> {
    const before = this.#ends;
    const t0 = Date.now();
    const timeout = options.timeout ?? this.#callTimeoutMs;
    await this.#client.call(ROOM_ROUTES.leave, undefined, callOptions(timeout, options.signal));
    // END may come before the leave's answer: count, do not order.
    await this.#wait(() => this.#ends > before, remaining(t0, timeout), options.signal, false, 'the END after the leave');
  }

  /**
   * Sends `shield.room.sync` with the version held: the next tick sends the
   * changes since, or a SNAPSHOT (§7.5). false when the client is not open.
   */
  sync(): boolean {
    this.#lastSync = Date.now();
    return this.#client.notify(ROOM_ROUTES.sync, this.#rs.syncBody());
  }

  // -------------------------------------------------------------------------

  /** A new RoomState, its events forwarded to the Room's handlers. */
  #fresh(): void {
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

  #receive(body: InBody): void {
    // Binary on the header envelopes; a JSON string of base64 on the legacy ones.
    let b: Uint8Array | string = new Uint8Array(0);
    if (body !== undefined) {
      if ('bytes' in body) b = body.bytes;
      else if (typeof body.json === 'string') b = body.json;
    }
    const u = this.#rs.receive(b);
    if (u.sync && Date.now() - this.#lastSync >= 1000) this.sync(); // lost while reconnecting: the next gap asks again
    this.#emit(this.#updates, u);
    this.#settle();
  }

  #reconnected(resumed: boolean): void {
    if (resumed) {
      if (this.inRoom) this.sync(); // §8.3 step 2: once after session.resumed
      return;
    }
    // The gateway closed the old session: its membership ended (reason
    // closed) with no END that could reach this client.
    for (const w of [...this.#waiters]) {
      if (w.failOnNewSession) w.reject(new ClosedError('a reconnect made a new session, which is in no room'));
    }
    if (!this.inRoom) return;
    this.#fresh();
    const end: RoomEnd = { reason: 'closed', message: '' };
    this.#end = end;
    this.#ends++;
    this.#emit(this.#endHandlers, end);
    this.#emit(this.#updates, { status: 'end', version: undefined, sync: false, ops: [], end });
    this.#settle();
  }

  /** Settles the waiters whose condition now holds. */
  #settle(): void {
    for (const w of [...this.#waiters]) if (w.done()) w.resolve();
  }

  /** Resolves once done() holds, checked now and after every update; rejects past ms (0: never), on abort, on close. */
  #wait(done: () => boolean, ms: number, signal: AbortSignal | undefined, failOnNewSession: boolean, what: string): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => w.reject(new AbortError('aborted', { cause: signal?.reason }));
      const finish = () => {
        this.#waiters.delete(w);
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const w: RoomWaiter = {
        done,
        failOnNewSession,
        resolve: () => {
          finish();
          resolve();
        },
        reject: (e) => {
          finish();
          reject(e);
        },
      };
      if (signal?.aborted) {
        reject(new AbortError('aborted', { cause: signal.reason }));
        return;
      }
      this.#waiters.add(w);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (ms > 0) timer = setTimeout(() => w.reject(new TimeoutError(`no ${what} within the timeout`)), ms);
      else if (ms < 0) w.reject(new TimeoutError(`no ${what} within the timeout`));
    });
  }

  #emit<A>(handlers: Set<(a: A) => void>, arg: A): void {
    for (const h of [...handlers]) {
      try {
        h(arg);
      } catch (e) {
        this.#report(e);
      }
    }
  }

  #report(e: unknown): void {
    if (this.#onError) {
      try {
        this.#onError(e);
      } catch (e2) {
        reportHandlerError(e2);
      }
    } else reportHandlerError(e);
  }
}

/** Whether a push is a state frame: route 65520, or its name on the legacy envelopes. */
export function isRoomStatePush(routeId: number, route: string | undefined): boolean {
  return routeId === ROOM_ROUTES.state || route === STATE_ROUTE_NAME;
}

/** Makes a client's Room. Internal: Client.room() calls it once. */
export function attachRoom(client: Client, callTimeoutMs: number, onError: ((e: unknown) => void) | undefined): RoomHooks {
  return newRoom(client, callTimeoutMs, onError);
}

/** What is left of timeout ms begun at t0: 0 for no timeout, -1 for none left. */
function remaining(t0: number, timeout: number): number {
  if (timeout <= 0) return 0;
  const left = timeout - (Date.now() - t0);
  return left > 0 ? left : -1;
}

function callOptions(timeout: number, signal: AbortSignal | undefined): { timeout: number; raw: true; signal?: AbortSignal } {
  return signal === undefined ? { timeout, raw: true } : { timeout, raw: true, signal };
}

/** A raw answer (the room routes answer JSON whatever protocol.body is), parsed. */
function jsonOf(raw: unknown): unknown {
  if (!(raw instanceof Uint8Array) || raw.length === 0) return undefined;
  try {
    return JSON.parse(new TextDecoder().decode(raw));
  } catch {
    return undefined;
  }
}
