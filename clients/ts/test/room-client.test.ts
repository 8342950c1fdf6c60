// Client.room() against the REAL gateway (docs/rooms.md §8.3, docs/clients.md
// §9): the lobby and the arena kind of the Go acceptance tests
// (acceptance/testdata/rooms_lobby.lua, rooms_arena.lua). join resolves once
// the SNAPSHOT applied, inputs come back in the state, a refused join is the
// room's code, leave resolves once END came and the next call reaches home,
// a resume keeps the room and catches up, and a new session forgets it
// (reason closed). Over TCP idlen (binary state frames) and WebSocket
// delimiter (their base64 in a JSON string).
//
// The gateway is SHIELD_GATEWAY_BIN, or built with `go build ./cmd/gateway`
// from the repository root; without either the suite is skipped.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { connect, ShieldError, type Client, type RoomEnd, type StatePatch } from '@shieldrpc/client/node';
import { dialer, LISTENERS, Proxy, unavailable, type Listener } from './helpers/real-gateway.js';
import { ARENA_MOVE, LOBBY, startRoomsGateway, type RoomsGateway } from './helpers/room-client-gateway.js';
import { until } from './helpers/fake-gateway.js';

const listeners: Listener[] = [LISTENERS.tcp_idlen, LISTENERS.ws_delimiter];

const skip = unavailable();

describe('Client.room() on the real gateway', { skip: skip ?? false }, () => {
  let gw: RoomsGateway;
  const clients: Client[] = [];
  const proxies: Proxy[] = [];

  before(async () => {
    gw = await startRoomsGateway(listeners);
  });

  after(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(clients.map((c) => c.close()));
    await gw?.stop();
  });

  const dial = dialer(listeners, () => gw.urls, clients);

  async function login(c: Client, user: string): Promise<void> {
    assert.deepEqual(await c.call(LOBBY.login, { user }), { ok: true });
  }

  /** Makes an arena room from c's lobby; its id. */
  async function make(c: Client, name: string): Promise<string> {
    const made = (await c.call(LOBBY.make, { kind: 'arena', params: { name } })) as { room: string };
    assert.ok(typeof made.room === 'string' && made.room !== '', `make: ${JSON.stringify(made)}`);
    return made.room;
  }

  const posOf = (c: Client, user: string): unknown => {
    const pos = c.room().state?.['pos'];
    return typeof pos === 'object' ? pos[user] : undefined;
  };

  /** Polls until the gateway holds n suspended sessions. */
  async function suspended(n: number): Promise<void> {
    const deadline = Date.now() + 5000;
    while ((await gw.metric('shield_sessions_suspended')) !== n) {
      if (Date.now() > deadline) throw new Error(`shield_sessions_suspended did not reach ${n} within 5 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** A client through a proxy of its own, reconnecting at once. */
  async function viaProxy(): Promise<{ c: Client; proxy: Proxy }> {
    const proxy = await Proxy.start(Number(new URL(gw.urls['tcp_idlen']!).port));
    proxies.push(proxy);
    const c = await connect({
      url: `tcp://127.0.0.1:${proxy.port}`,
      callTimeoutMs: 5000,
      heartbeatMs: 0,
      reconnect: { baseMs: 20, maxMs: 100, attempts: Infinity },
    });
    clients.push(c);
    return { c, proxy };
  }

  for (const l of listeners) {
    test(`${l.name}: join resolves with the SNAPSHOT applied, and an input comes back in the state`, async () => {
      const c = await dial(l.name);
      const user = `alice-${l.name}`;
      await login(c, user);
      const room = c.room();
      assert.equal(c.room(), room, 'one Room per client');
      assert.equal(room.inRoom, false);
      assert.equal(room.state, undefined);
      const patches: StatePatch[] = [];
      const changed: string[] = [];
      const anyPush: unknown[] = [];
      room.onPatch((p) => patches.push(p));
      room.onChange((ch) => changed.push(ch.pointer));
      c.onAnyPush((b) => anyPush.push(b));
      const id = await make(c, `pit-${l.name}`);
      await room.join(id);
      // Once join resolves the state is there.
      assert.equal(room.inRoom, true);
      assert.equal(room.roomId, id);
      assert.equal(room.tickHz, 20);
      assert.equal(room.state?.['name'], `pit-${l.name}`);
      assert.equal(typeof room.version, 'number');
      assert.equal(room.end, undefined);
      assert.equal(patches[0]?.kind, 'snapshot');

      assert.equal(c.notify(ARENA_MOVE, { x: 5 }), true);
      await until(() => posOf(c, user) === 5, 5000, 'the input in the state');
      assert.ok(changed.includes(`/pos/${user}`), `the change events: ${changed.join(' ')}`);
      assert.ok(patches.some((p) => p.kind === 'delta'));
      assert.equal(c.notify(ARENA_MOVE, { x: 6.5 }), true);
      await until(() => posOf(c, user) === 6.5, 5000, 'the second input in the state');
      assert.deepEqual(anyPush, [], 'the Room takes the state pushes');
      await room.leave();
    });
  }

  test('a refused join rejects with the room code, and the Room holds no state', async () => {
    const owner = await dial('tcp_idlen');
    await login(owner, 'owner');
    const id = await make(owner, 'guarded');
    const m = await dial('ws_delimiter');
    await login(m, 'mallory');
    const room = m.room();
    await assert.rejects(room.join(id, { hat: 'black' }), (e: unknown) => {
      assert.ok(e instanceof ShieldError, String(e));
      assert.equal(e.code, 'arena.banned');
      assert.equal(e.message, 'not you');
      return true;
    });
    assert.equal(room.inRoom, false);
    assert.equal(room.state, undefined);
    assert.equal(room.roomId, '');
    // A room that does not exist: the gateway's code.
    await assert.rejects(room.join('arena/0000000000000000@nowhere'), (e: unknown) => e instanceof ShieldError && e.code.startsWith('client_rpc.'));
    // The session is still home.
    assert.deepEqual(await m.call(LOBBY.ping), { home: true });
  });

  for (const l of listeners) {
    test(`${l.name}: leave resolves once END came, and the next lobby call reaches home`, async () => {
      const c = await dial(l.name);
      await login(c, `leaver-${l.name}`);
      const room = c.room();
      const ends: RoomEnd[] = [];
      room.onEnd((e) => ends.push(e));
      const id = await make(c, 'exit');
      await room.join(id);
      await room.leave();
      assert.deepEqual(ends, [{ reason: 'left', message: '' }]);
      assert.deepEqual(room.end, { reason: 'left', message: '' });
      assert.equal(room.inRoom, false);
      assert.equal(room.state, undefined);
      assert.equal(room.version, undefined);
      // At once: no wait between END and a call that must reach home.
      assert.deepEqual(await c.call(LOBBY.ping), { home: true });
      // Out of any room, a leave is the gateway's refusal.
      await assert.rejects(room.leave(), (e: unknown) => e instanceof ShieldError && e.code === 'client_rpc.not_member');
      // And the same Room joins again.
      await room.join(id);
      assert.equal(room.inRoom, true);
      assert.equal(room.end, undefined);
      await room.leave();
      assert.equal(ends.length, 2);
    });
  }

  test('a resume keeps the room, and what changed meanwhile arrives', async () => {
    const { c, proxy } = await viaProxy();
    await login(c, 'resumer');
    const room = c.room();
    const ends: RoomEnd[] = [];
    room.onEnd((e) => ends.push(e));
    const other = await dial('tcp_idlen');
    await login(other, 'resumer-mover');
    const id = await make(other, 'flaky');
    await room.join(id);
    await other.room().join(id);

    const reconnected = new Promise<boolean>((resolve) => c.onReconnect((r) => resolve(r.resumed)));
    let inRoomAtReconnect: boolean | undefined;
    c.onReconnect(() => (inRoomAtReconnect = room.inRoom));
    proxy.refusing = true;
    proxy.cut();
    await suspended(1);
    // The room goes on without the suspended member's connection.
    assert.equal(other.notify(ARENA_MOVE, { x: 7 }), true);
    await until(() => posOf(other, 'resumer-mover') === 7, 5000, 'the mover sees its input');
    assert.notEqual(posOf(c, 'resumer-mover'), 7);
    proxy.refusing = false;
    assert.equal(await reconnected, true);
    assert.equal(inRoomAtReconnect, true);
    await until(() => posOf(c, 'resumer-mover') === 7, 5000, 'the change made while suspended');
    assert.equal(room.inRoom, true);
    assert.equal(room.roomId, id);
    // Still a member: its inputs reach the room.
    assert.equal(c.notify(ARENA_MOVE, { x: 9 }), true);
    await until(() => posOf(c, 'resumer') === 9 && posOf(other, 'resumer') === 9, 5000, 'the input after the resume');
    assert.deepEqual(ends, []);
    await suspended(0);
    await room.leave();
    assert.deepEqual(ends, [{ reason: 'left', message: '' }]);
  });

  test('a reconnect that makes a new session forgets the room: END reason closed', async () => {
    const { c, proxy } = await viaProxy();
    await login(c, 'ousted');
    const room = c.room();
    const ends: RoomEnd[] = [];
    room.onEnd((e) => ends.push(e));
    const id = await make(c, 'lost');
    await room.join(id);
    const reconnected = new Promise<boolean>((resolve) => c.onReconnect((r) => resolve(r.resumed)));
    let endAtReconnect: RoomEnd | undefined;
    c.onReconnect(() => (endAtReconnect = room.end));
    proxy.refusing = true;
    proxy.cut();
    await suspended(1);
    // A login elsewhere under kick_old ends the suspended session at once.
    const elsewhere = await dial('tcp_idlen');
    await login(elsewhere, 'ousted');
    await suspended(0);
    proxy.refusing = false;
    assert.equal(await reconnected, false);
    assert.deepEqual(endAtReconnect, { reason: 'closed', message: '' }, 'the Room forgot the room before the app heard of the reconnect');
    assert.deepEqual(ends, [{ reason: 'closed', message: '' }]);
    assert.equal(room.inRoom, false);
    assert.equal(room.state, undefined);
    assert.equal(room.roomId, '');
    assert.equal(room.tickHz, 0);
    // The new session logs in again and joins again with the same Room.
    await login(c, 'ousted-again');
    await room.join(id);
    assert.equal(room.inRoom, true);
    assert.equal(room.state?.['name'], 'lost');
    await room.leave();
  });
});
