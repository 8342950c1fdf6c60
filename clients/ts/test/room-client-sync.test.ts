// Client.room() against the fake gateway, for what the real one does not
// show on demand: syncs on gaps (at most one a second), one sync after
// session.resumed, a SNAPSHOT before the join's answer and an END before the
// leave's (count, do not order), an END instead of the SNAPSHOT, and a new
// session forgetting the room.
// Frames are docs/rooms.md §8.2's worked example (room
// arena/9f3c2a1b4d5e6f70@gw-1, version 41, then 42).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ClosedError, connect, RoomEndedError, ROOM_ROUTES, type Client, type RoomEnd, type RoomGap } from '@shieldrpc/client/node';
import { FakeGateway, idlenMessage, streamFrame, until, type ServerConn } from './helpers/fake-gateway.js';

const repo = fileURLToPath(new URL('../../../../', import.meta.url));
const ROOM = 'arena/9f3c2a1b4d5e6f70@gw-1';

/** The worked example's SNAPSHOT, DELTA and END as idlen stream frames. */
function example(): { snapshot: Buffer; delta: Buffer; end: Buffer } {
  const doc = readFileSync(path.join(repo, 'docs', 'rooms.md'), 'utf8');
  const part = doc.slice(doc.indexOf('**Worked example.**'), doc.indexOf('**8.3 '));
  const blocks = [...part.matchAll(/```\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
  const delta = blocks[1]!
    .split('\n')
    .map((line) => line.split('  ')[0])
    .join(' ');
  return { snapshot: hex(blocks[0]!), delta: hex(delta), end: hex(/ran out: `([0-9a-f\s]+)`/.exec(part)![1]!) };
}

/** A state push of body on idlen over TCP. */
const statePush = (body: number[]): Buffer => streamFrame('idlen', idlenMessage(ROOM_ROUTES.state, 0, Uint8Array.from(body)));
/** A DELTA from base 40 to 43 with no ops: a gap for a state at 41. */
const wrongBase = () => statePush([1, 2, 0, 40, 43, 0]);

async function setup(t: TestContext, reconnect = false): Promise<{ gw: FakeGateway; c: Client; s: ServerConn }> {
  const gw = await FakeGateway.start('tcp', 'idlen');
  let c: Client | undefined;
  t.after(async () => {
    await c?.close();
    await gw.close();
  });
  c = await connect({ url: gw.url, heartbeatMs: 0, callTimeoutMs: 2000, reconnect: reconnect ? { baseMs: 5, maxMs: 20, attempts: 5 } : false });
  return { gw, c, s: await gw.accept() };
}

/** Joins ROOM: answers the join, then sends the SNAPSHOT (or the SNAPSHOT first, with snapshotFirst). */
async function join(c: Client, s: ServerConn, snapshotFirst = false): Promise<void> {
  const ex = example();
  const p = c.room().join(ROOM, { seat: 1 });
  const f = await s.next();
  assert.equal(f.route, ROOM_ROUTES.join);
  assert.deepEqual(JSON.parse(f.body), { room: ROOM, meta: { seat: 1 } });
  if (snapshotFirst) s.sendRaw(ex.snapshot);
  s.send({ kind: 'response', route: ROOM_ROUTES.join, rid: f.rid, body: JSON.stringify({ room: ROOM }) });
  if (!snapshotFirst) s.sendRaw(ex.snapshot);
  await p;
  assert.equal(c.room().version, 41);
}

describe('Client.room() on the fake gateway', () => {
  test('join waits for the SNAPSHOT; gaps ask for a sync at most once a second; the Room takes the route', async (t) => {
    const { c, s } = await setup(t);
    const room = c.room();
    const any: unknown[] = [];
    c.onAnyPush((b) => any.push(b));
    const gaps: RoomGap[] = [];
    room.onGap((g) => gaps.push(g));
    await join(c, s);
    assert.equal(room.roomId, ROOM);
    assert.equal(room.tickHz, 20);
    assert.deepEqual(room.state, { clock: 41, players: { alice: { hp: 100, x: 3, y: 4 }, bob: { hp: 100, x: 7, y: 1 } } });

    s.sendRaw(Buffer.concat([wrongBase(), wrongBase(), wrongBase()]));
    const sync = await s.next();
    assert.equal(sync.kind, 'notify');
    assert.equal(sync.route, ROOM_ROUTES.sync);
    assert.deepEqual(JSON.parse(sync.body), { version: 41 });
    await until(() => gaps.length === 3, 2000, 'three gaps');
    assert.equal(await s.silent(300), true, 'one sync for three gaps within a second');
    await new Promise((r) => setTimeout(r, 800));
    s.sendRaw(wrongBase());
    assert.deepEqual(JSON.parse((await s.next()).body), { version: 41 });
    // The DELTA the sync asked for applies.
    s.sendRaw(example().delta);
    await until(() => room.version === 42, 2000, 'version 42');
    assert.deepEqual(room.state, { clock: 42, players: { alice: { hp: 100, x: 3.5, y: 4 } } });
    // A manual sync.
    assert.equal(room.sync(), true);
    assert.deepEqual(JSON.parse((await s.next()).body), { version: 42 });
    assert.deepEqual(any, []);
  });

  test('a SNAPSHOT before the join answer, an END before the leave answer', async (t) => {
    const { c, s } = await setup(t);
    const room = c.room();
    const ends: RoomEnd[] = [];
    room.onEnd((e) => ends.push(e));
    await join(c, s, true);
    const p = room.leave();
    const f = await s.next();
    assert.equal(f.route, ROOM_ROUTES.leave);
    assert.equal(f.body, '');
    s.sendRaw(example().end);
    await until(() => ends.length === 1, 2000, 'the END');
    s.send({ kind: 'response', route: ROOM_ROUTES.leave, rid: f.rid, body: '{}' });
    await p;
    assert.deepEqual(room.end, { reason: 'timeout', message: '' });
    assert.equal(room.inRoom, false);
    assert.equal(room.roomId, '');
  });

  test('join times out without a SNAPSHOT, and rejects when the client closes', async (t) => {
    const { c, s } = await setup(t);
    const room = c.room();
    const p = room.join(ROOM, undefined, { timeout: 300 });
    const f = await s.next();
    assert.deepEqual(JSON.parse(f.body), { room: ROOM });
    s.send({ kind: 'response', route: ROOM_ROUTES.join, rid: f.rid, body: JSON.stringify({ room: ROOM }) });
    await assert.rejects(p, (e: unknown) => (e as Error).name === 'TimeoutError');
    const q = room.join(ROOM, undefined, { timeout: 0 });
    const g = await s.next();
    s.send({ kind: 'response', route: ROOM_ROUTES.join, rid: g.rid, body: JSON.stringify({ room: ROOM }) });
    await new Promise((r) => setTimeout(r, 50));
    const rejected = assert.rejects(q, ClosedError);
    await c.close();
    await rejected;
  });

  test('an END before the SNAPSHOT (the room closed meanwhile) rejects the join with RoomEndedError', async (t) => {
    const { c, s } = await setup(t);
    const room = c.room();
    const p = room.join(ROOM, undefined, { timeout: 5000 });
    const f = await s.next();
    s.send({ kind: 'response', route: ROOM_ROUTES.join, rid: f.rid, body: JSON.stringify({ room: ROOM }) });
    s.sendRaw(example().end);
    await assert.rejects(p, (e: unknown) => e instanceof RoomEndedError && e.room === ROOM && e.reason === 'timeout');
    assert.equal(room.inRoom, false);
  });

  test('one sync after session.resumed; a new session forgets the room with reason closed', async (t) => {
    const { gw, c, s } = await setup(t, true);
    const room = c.room();
    const ends: RoomEnd[] = [];
    room.onEnd((e) => ends.push(e));
    // Log in: the resume token.
    const login = c.call(1, { user: 'alice' });
    const lf = await s.next();
    s.send({ kind: 'notice', fields: { code: 'session.resume_token', token: 'tok-1' } }, { kind: 'response', route: 1, rid: lf.rid, body: '{}' });
    await login;
    await join(c, s);

    s.destroy();
    const s2 = await gw.accept();
    assert.equal((await s2.next()).kind, 'heartbeat'); // the resume
    s2.send({ kind: 'notice', fields: { code: 'session.resumed', token: 'tok-2' } });
    const sync = await s2.next();
    assert.equal(sync.route, ROOM_ROUTES.sync);
    assert.deepEqual(JSON.parse(sync.body), { version: 41 });
    assert.equal(await s2.silent(200), true, 'one sync');
    assert.equal(room.inRoom, true);
    assert.deepEqual(ends, []);

    s2.destroy();
    const s3 = await gw.accept();
    assert.equal((await s3.next()).kind, 'heartbeat');
    let seen: RoomEnd | undefined;
    const reconnected = new Promise<boolean>((resolve) =>
      c.onReconnect((r) => {
        seen = room.end;
        resolve(r.resumed);
      }),
    );
    s3.send({ kind: 'notice', fields: { code: 'session.resume_failed', message: 'no such session' } });
    assert.equal(await reconnected, false);
    assert.deepEqual(seen, { reason: 'closed', message: '' });
    assert.deepEqual(ends, [{ reason: 'closed', message: '' }]);
    assert.equal(room.inRoom, false);
    assert.equal(room.state, undefined);
    assert.equal(room.roomId, '');
    assert.equal(await s3.silent(200), true, 'no sync for a new session');
  });
});
