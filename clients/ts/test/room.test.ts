// Rooms' state frames (docs/rooms.md §8.2, §8.3): the worked example as the
// doc writes it, then the vectors the Go codec writes
// (test/fixtures/statesync-vectors.json, by statesync's TestWriteVectors),
// then random and mutated bytes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  decodeStateFrame,
  applyStateOps,
  RoomState,
  StateFrameError,
  ROOM_ROUTES,
  type StateChange,
  type StateFrame,
  type StatePatch,
  type StateTable,
  type RoomEnd,
  type RoomGap,
} from '@shieldrpc/client';

const repo = fileURLToPath(new URL('../../../../', import.meta.url)); // build/test -> the repository
const fromHex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s.replace(/\s+/g, ''), 'hex'));

/** The worked example of §8.2 as docs/rooms.md writes it (idlen messages, the delimiter line). */
function docExample(): { snapshot: Uint8Array; delta: Uint8Array; end: Uint8Array; delimiter: string } {
  const doc = readFileSync(path.join(repo, 'docs', 'rooms.md'), 'utf8');
  const start = doc.indexOf('**Worked example.**');
  const stop = doc.indexOf('**8.3 ');
  assert.ok(start >= 0 && stop > start, 'docs/rooms.md has no worked example in §8.2');
  const part = doc.slice(start, stop);
  const blocks = [...part.matchAll(/```\n([\s\S]*?)```/g)].map((m) => m[1]!);
  assert.equal(blocks.length, 3);
  const delta = blocks[1]!
    .split('\n')
    .map((line) => line.split('  ')[0])
    .join(' ');
  const end = /ran out: `([0-9a-f\s]+)`/.exec(part);
  assert.ok(end, 'docs/rooms.md has no END example');
  return { snapshot: fromHex(blocks[0]!), delta: fromHex(delta), end: fromHex(end[1]!), delimiter: blocks[2]!.trim() };
}

/** An idlen push's body: after the u32 length and the 8-byte header, whose route must be 65520. */
function idlenBody(msg: Uint8Array): Uint8Array {
  assert.equal(new DataView(msg.buffer, msg.byteOffset).getUint32(0), msg.length - 4);
  assert.deepEqual([...msg.subarray(4, 12)], [1, 0x00, 0xff, 0xf0, 0, 0, 0, 0]);
  assert.equal(ROOM_ROUTES.state, 0xfff0);
  return msg.subarray(12);
}

const state41 = { clock: 41, players: { alice: { hp: 100, x: 3, y: 4 }, bob: { hp: 100, x: 7, y: 1 } } };
const state42 = { clock: 42, players: { alice: { hp: 100, x: 3.5, y: 4 } } };

describe('the worked example of docs/rooms.md §8.2', () => {
  const ex = docExample();

  test('the SNAPSHOT, DELTA and END decode to the frames the doc states', () => {
    assert.deepEqual(decodeStateFrame(idlenBody(ex.snapshot)), {
      kind: 'snapshot',
      continues: false,
      base: 0,
      version: 41,
      roomId: 'arena/9f3c2a1b4d5e6f70@gw-1',
      tickHz: 20,
      ops: [
        { op: 'set', path: ['clock'], value: 41 },
        { op: 'set', path: ['players'], value: {} },
        { op: 'set', path: ['players', 'alice'], value: {} },
        { op: 'set', path: ['players', 'alice', 'hp'], value: 100 },
        { op: 'set', path: ['players', 'alice', 'x'], value: 3 },
        { op: 'set', path: ['players', 'alice', 'y'], value: 4 },
        { op: 'set', path: ['players', 'bob'], value: {} },
        { op: 'set', path: ['players', 'bob', 'hp'], value: 100 },
        { op: 'set', path: ['players', 'bob', 'x'], value: 7 },
        { op: 'set', path: ['players', 'bob', 'y'], value: 1 },
      ],
    } satisfies StateFrame);
    assert.deepEqual(decodeStateFrame(idlenBody(ex.delta)), {
      kind: 'delta',
      continues: false,
      base: 41,
      version: 42,
      ops: [
        { op: 'set', path: ['clock'], value: 42 },
        { op: 'set', path: ['players', 'alice', 'x'], value: 3.5 },
        { op: 'remove', path: ['players', 'bob'] },
      ],
    } satisfies StateFrame);
    assert.deepEqual(decodeStateFrame(idlenBody(ex.end)), { kind: 'end', reason: 'timeout', message: '' });
  });

  test('a RoomState goes 41 -> 42 -> END with the events of §8.3', () => {
    const room = new RoomState();
    const changes: StateChange[] = [];
    const patches: StatePatch[] = [];
    const ends: RoomEnd[] = [];
    const gaps: RoomGap[] = [];
    room.onChange((c) => changes.push(c));
    room.onPatch((p) => patches.push(p));
    room.onEnd((e) => ends.push(e));
    room.onGap((g) => gaps.push(g));
    assert.deepEqual(room.syncBody(), {});

    let u = room.receive(idlenBody(ex.snapshot));
    assert.equal(u.status, 'applied');
    assert.equal(u.version, 41);
    assert.deepEqual(room.state, state41);
    assert.equal(room.version, 41);
    assert.equal(room.roomId, 'arena/9f3c2a1b4d5e6f70@gw-1');
    assert.equal(room.tickHz, 20);
    assert.deepEqual(room.syncBody(), { version: 41 });
    assert.equal(changes.length, 10);
    assert.deepEqual(changes[1], { op: 'set', path: ['players'], pointer: '/players', value: room.state!.players });
    assert.deepEqual(patches.map((p) => [p.kind, p.version, p.changes.length]), [['snapshot', 41, 10]]);

    changes.length = 0;
    u = room.receive(idlenBody(ex.delta));
    assert.equal(u.status, 'applied');
    assert.deepEqual(room.state, state42);
    assert.equal(room.version, 42);
    assert.deepEqual(changes, [
      { op: 'set', path: ['clock'], pointer: '/clock', value: 42 },
      { op: 'set', path: ['players', 'alice', 'x'], pointer: '/players/alice/x', value: 3.5 },
      { op: 'remove', path: ['players', 'bob'], pointer: '/players/bob', value: undefined },
    ]);

    // A DELTA from another base: a gap, the state kept, a sync asked for.
    const gap = room.receive(Uint8Array.from([1, 2, 0, 40, 43, 0]));
    assert.deepEqual([gap.status, gap.version, gap.sync, gap.why], ['gap', 43, true, 'a DELTA from version 40, but the state is at version 42']);
    assert.deepEqual(gaps.map((g) => [g.version, g.why]), [[42, 'a DELTA from version 40, but the state is at version 42']]);
    assert.deepEqual(room.syncBody(), { version: 42 });
    gaps.length = 0;

    u = room.receive(idlenBody(ex.end));
    assert.equal(u.status, 'end');
    assert.deepEqual(u.end, { reason: 'timeout', message: '' });
    assert.deepEqual(ends, [{ reason: 'timeout', message: '' }]);
    assert.equal(room.state, undefined);
    assert.equal(room.version, undefined);
    assert.deepEqual(gaps, []);
  });

  test("the delimiter line's base64 payload is the same DELTA", () => {
    const line = JSON.parse(ex.delimiter) as { type: string; route: string; route_id: number; payload: string };
    assert.equal(line.type, 'push');
    assert.equal(line.route, 'shield.room.state');
    assert.equal(line.route_id, ROOM_ROUTES.state);
    const room = new RoomState();
    room.receive(idlenBody(ex.snapshot));
    assert.equal(room.receive(line.payload).status, 'applied');
    assert.deepEqual(room.state, state42);
    const bad = room.receive('AQIAKSoD*');
    assert.equal(bad.status, 'gap');
    assert.equal(bad.error?.message, 'state frame: the payload is not standard base64');
  });
});

interface VecStep {
  frame: string;
  status: string;
  version: number | null;
  sync: boolean;
  ops: number;
  error?: string;
}
interface VecScenario {
  name: string;
  steps: VecStep[];
  state: StateTable | null;
  room?: string;
}
interface VecOp {
  op: 'set' | 'remove';
  path: string[];
  value?: unknown;
  table?: boolean;
}
interface VecFrame {
  kind: 'snapshot' | 'delta' | 'end';
  continues?: boolean;
  base: number;
  version: number;
  room?: string;
  tick_hz?: number;
  ops: VecOp[];
  reason?: string;
  message?: string;
}
interface VecDecode {
  frame: string;
  error?: string;
  decoded?: VecFrame;
}
const vectors = JSON.parse(readFileSync(path.join(repo, 'clients', 'ts', 'test', 'fixtures', 'statesync-vectors.json'), 'utf8')) as {
  scenarios: VecScenario[];
  decode: VecDecode[];
};

/** The expected frame of a decode case, in decodeStateFrame's shape. */
function expected(v: VecFrame): StateFrame {
  if (v.kind === 'end') return { kind: 'end', reason: v.reason ?? '', message: v.message ?? '' };
  const ops = v.ops.map((o) => (o.op === 'remove' ? { op: 'remove' as const, path: o.path } : { op: 'set' as const, path: o.path, value: (o.table ? {} : o.value) as never }));
  if (v.kind === 'snapshot') return { kind: 'snapshot', continues: v.continues ?? false, base: v.base, version: v.version, roomId: v.room ?? '', tickHz: v.tick_hz ?? 0, ops };
  return { kind: 'delta', continues: v.continues ?? false, base: v.base, version: v.version, ops };
}

describe('the Go codec vectors', () => {
  test('every scenario gives the Go Tracker\'s statuses, versions, errors and state', () => {
    assert.ok(vectors.scenarios.length > 50);
    for (const s of vectors.scenarios) {
      const room = new RoomState();
      let changes = 0;
      room.onChange(() => changes++);
      s.steps.forEach((step, i) => {
        changes = 0;
        const u = room.receive(fromHex(step.frame));
        const at = `${s.name}: step ${i + 1}`;
        assert.equal(u.status, step.status, at);
        assert.equal(room.version, step.version ?? undefined, at);
        assert.equal(u.sync, step.sync, at);
        assert.equal(u.ops.length, step.ops, at);
        assert.equal(changes, step.ops, at);
        if (step.error) {
          assert.ok(u.error instanceof StateFrameError, at);
          assert.equal(u.error.message, step.error, at);
        } else assert.equal(u.error, undefined, `${at}: ${u.error?.message}`);
      });
      assert.deepEqual(room.state, s.state ?? undefined, s.name);
      if (s.room !== undefined) assert.equal(room.roomId, s.room);
    }
  });

  test('every decode case gives the Go decoder\'s frame or message', () => {
    let errors = 0;
    for (const d of vectors.decode) {
      const body = fromHex(d.frame);
      if (d.error !== undefined) {
        errors++;
        assert.throws(() => decodeStateFrame(body), (e: unknown) => e instanceof StateFrameError && e.message === d.error, `${d.frame}: want ${d.error}`);
      } else {
        assert.deepEqual(decodeStateFrame(body), expected(d.decoded!), d.frame);
      }
    }
    assert.ok(errors > 300 && vectors.decode.length - errors > 100, `${errors} errors of ${vectors.decode.length}`);
  });
});

/** mulberry32: a seeded generator, so that a failure repeats. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('malformed input', () => {
  /** Decode may return or throw a StateFrameError, nothing else; a RoomState never throws. */
  function probe(body: Uint8Array, held: RoomState, before: unknown): void {
    try {
      decodeStateFrame(body);
    } catch (e) {
      if (!(e instanceof StateFrameError)) throw new Error(`decodeStateFrame(${Buffer.from(body).toString('hex')}) threw ${String(e)}`);
    }
    new RoomState().receive(body);
    const u = held.receive(body);
    if (u.status !== 'applied' && u.status !== 'end' && held.state !== undefined) {
      assert.deepEqual(held.state, before, `a ${u.status} changed the state: ${Buffer.from(body).toString('hex')}`);
    }
  }

  test('random bytes', () => {
    const next = rng(1);
    const ex = docExample();
    for (let n = 0; n < 20000; n++) {
      const body = new Uint8Array(Math.floor(next() * 48));
      for (let i = 0; i < body.length; i++) body[i] = Math.floor(next() * 256);
      if (body.length > 0 && next() < 0.7) body[0] = 1; // mostly past the format byte
      if (body.length > 1 && next() < 0.7) body[1] = 1 + Math.floor(next() * 3);
      if (body.length > 2 && next() < 0.7) body[2] = next() < 0.5 ? 0 : 1;
      const held = new RoomState();
      held.receive(idlenBody(ex.snapshot));
      probe(body, held, state41);
    }
  });

  test('a seeded mutation loop over the Go vectors', () => {
    const next = rng(2);
    const ex = docExample();
    const corpus = vectors.decode.map((d) => fromHex(d.frame));
    for (let n = 0; n < 20000; n++) {
      let b = Array.from(corpus[Math.floor(next() * corpus.length)]!);
      for (let m = 1 + Math.floor(next() * 3); m > 0; m--) {
        const i = Math.floor(next() * Math.max(b.length, 1));
        switch (Math.floor(next() * 5)) {
          case 0:
            b[i] = (b[i] ?? 0) ^ (1 << Math.floor(next() * 8));
            break;
          case 1:
            b = b.slice(0, i);
            break;
          case 2:
            b.splice(i, 0, Math.floor(next() * 256));
            break;
          case 3:
            b.splice(i, 1);
            break;
          default:
            b[i] = [0x00, 0x01, 0x02, 0x05, 0x7f, 0x80, 0xff][Math.floor(next() * 7)]!;
        }
      }
      const held = new RoomState();
      held.receive(idlenBody(ex.snapshot));
      probe(Uint8Array.from(b), held, state41);
    }
  });

  test('keys that name Object.prototype properties are plain own keys', () => {
    const frame = decodeStateFrame(
      fromHex('01 01 00 00 05 05 61 2f 31 40 67 14 03 01 00 01 09 5f 5f 70 72 6f 74 6f 5f 5f 05 01 01 01 01 78 02 02 01 00 01 0b 63 6f 6e 73 74 72 75 63 74 6f 72 02 0e'),
    );
    const state: StateTable = {};
    if (frame.kind !== 'snapshot') assert.fail(`a ${frame.kind}`);
    applyStateOps(state, frame.ops);
    assert.equal(Object.getPrototypeOf(state), Object.prototype);
    assert.deepEqual(Object.keys(state), ['__proto__', 'constructor']);
    assert.deepEqual(JSON.parse(JSON.stringify(state)), JSON.parse('{"__proto__":{"x":1},"constructor":7}'));
    // A REMOVE of a key the object only inherits is a REMOVE of a missing path.
    assert.throws(() => applyStateOps(state, [{ op: 'remove', path: ['toString'] }]), { message: 'state frame: op 1 (REMOVE /toString): no such path' });
  });

  test('a throwing handler does not break the RoomState', () => {
    const errors: unknown[] = [];
    const room = new RoomState({ onError: (e) => errors.push(e) });
    room.onChange(() => {
      throw new Error('app bug');
    });
    assert.equal(room.receive(idlenBody(docExample().snapshot)).status, 'applied');
    assert.equal(errors.length, 10);
    assert.deepEqual(room.state, state41);
  });
});
