// docs/rooms.md §15's property row, TypeScript side: the state RoomState
// (src/room.ts) applies from the REAL gateway's frames equals the room's
// state after every tick. The gateway and the room are
// acceptance/rooms_property_test.go's (acceptance/testdata/
// rooms_property.yaml, rooms_lobby.lua, rooms_property_room.lua):
// a room kind at 60 Hz whose every tick makes random (seeded) changes to
// room.state and pushes {v = tick, json = shield.json.encode(room.state)}
// on route 3201. ROOMS rooms run at once, TICKS ticks each, each with
// four members that check, at every version they apply, that their state
// is that version's report as their view shows it:
//
//   - full: TCP idlen, bodies raw (state frames as bytes);
//   - web: WebSocket delimiter, bodies JSON (state frames as base64 strings);
//   - view: joins with a view (room:view in room_join, from the join's
//     meta), then changes it three times (set_view), each a SNAPSHOT;
//   - slow: behind a proxy that stops reading from the gateway twice while
//     the room pushes it ballast, until a report to it is refused (its
//     queue is full): once briefly (its next frame a DELTA from an older
//     base), once for longer than room.history (a SNAPSHOT).
//
// No member may see a gap. SHIELD_PROP_SEED replays a run's changes.
// Skipped without the gateway (as real-gateway.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { connect, decodeStateFrame, RoomState, type Client } from '@shieldrpc/client/node';
import { unavailable } from './helpers/real-gateway.js';
import { PausingProxy, startPropGateway, type PropGateway } from './helpers/room-gateway.js';

const LOGIN = 1;
const MAKE = 2;
const REPORT = 3201;
const SET_VIEW = 3202;
const BALLAST = 3203;
const STATE = 65520;
const JOIN = 65522;

const ROOMS = 4;
const TICKS = 520; // per room: 2,080 in all, 8.7 s at 60 Hz
const HISTORY = 8; // rooms_property.yaml's room.history

type Tree = Record<string, unknown>;
type View = string[][] | null; // null: everything

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A JSON value in the form both sides compare in: arrays are the maps the state syncs them as (keys "1".."n", null holes absent), -0 is 0. */
function norm(v: unknown): unknown {
  if (Array.isArray(v)) {
    const out: Tree = Object.create(null);
    v.forEach((e, i) => {
      if (e !== null) out[String(i + 1)] = norm(e);
    });
    return out;
  }
  if (v !== null && typeof v === 'object') {
    const out: Tree = Object.create(null);
    for (const k of Object.keys(v)) {
      const e = (v as Tree)[k];
      if (e !== null) out[k] = norm(e);
    }
    return out;
  }
  if (v === 0) return 0;
  return v;
}

/** What a member with view sees of tree (docs/rooms.md §7.4, written from the doc). */
function filter(tree: Tree, view: View): Tree {
  if (view === null) return tree;
  const out: Tree = Object.create(null);
  for (const k of Object.keys(tree)) {
    let whole = false;
    const rests: string[][] = [];
    for (const p of view) {
      if (p[0] !== k) continue;
      if (p.length === 1) whole = true;
      else rests.push(p.slice(1));
    }
    const v = tree[k];
    if (whole) out[k] = v;
    else if (rests.length > 0 && v !== null && typeof v === 'object') out[k] = filter(v as Tree, rests);
  }
  return out;
}

/** JSON with sorted keys. */
function canon(v: unknown): string {
  if (v !== null && typeof v === 'object') {
    const o = v as Tree;
    return '{' + Object.keys(o).sort().map((k) => JSON.stringify(k) + ':' + canon(o[k])).join(',') + '}';
  }
  return JSON.stringify(v);
}

function fnv(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

const utf8 = new TextDecoder();
/** A body as JSON: raw bytes parsed, or the parsed body itself. */
function json(body: unknown): any {
  if (body instanceof Uint8Array) return body.length === 0 ? undefined : JSON.parse(utf8.decode(body));
  return body;
}

interface Report {
  tree: Tree;
  full: string;
}

interface Applied {
  canon: string;
  view: View;
  first: boolean;
}

class Room {
  id = '';
  maxV = 0;
  readonly reports = new Map<number, Report>();
  readonly hashes = new Map<number, number>(); // every version's report, kept to the end
  readonly members: Member[] = [];
  readonly errors: string[] = [];

  constructor(
    readonly index: number,
    readonly seed: number,
  ) {}

  fail(what: string): void {
    if (this.errors.length < 20) this.errors.push(what);
  }

  onReport(from: string, body: unknown): void {
    let rep: { v: number; json: string };
    try {
      rep = json(body);
    } catch (e) {
      this.fail(`${from}: report: ${(e as Error).message}`);
      return;
    }
    const h = fnv(rep.json);
    const have = this.hashes.get(rep.v);
    if (have !== undefined) {
      if (have !== h) this.fail(`${from}: report of version ${rep.v} differs from another member's`);
      return;
    }
    const tree = norm(JSON.parse(rep.json)) as Tree;
    const r: Report = { tree, full: canon(tree) };
    this.reports.set(rep.v, r);
    this.hashes.set(rep.v, h);
    if (rep.v > this.maxV) this.maxV = rep.v;
    if (rep.v % 60 === 0) {
      const low = Math.min(...this.members.map((m) => m.version));
      for (const v of this.reports.keys()) if (v < low) this.reports.delete(v);
    }
    for (const m of this.members) {
      const a = m.pending.get(rep.v);
      if (a !== undefined) {
        m.pending.delete(rep.v);
        m.check(rep.v, a, r);
      }
    }
  }

  /** Whether the state changed at a version after b and before v (a DELTA from b to v then covers versions not sent). */
  changedWithin(b: number, v: number): boolean {
    const hb = this.hashes.get(b);
    for (let u = b + 1; u < v; u++) {
      const hu = this.hashes.get(u);
      if (hu !== undefined && hu !== hb) return true;
    }
    return false;
  }
}

class Member {
  readonly state = new RoomState();
  client!: Client;
  view: View = null;
  nextView: { view: View } | undefined;
  readonly pending = new Map<number, Applied>();
  applied = 0;
  compared = 0;
  snapshots = 0;
  behind = 0;
  viewChanges = 0;
  frames = 0;
  version = 0;
  readonly spans: [number, number][] = [];
  readonly errors: string[] = [];

  constructor(
    readonly name: string,
    readonly room: Room,
  ) {}

  fail(what: string): void {
    if (this.errors.length < 20) this.errors.push(what);
  }

  onState(body: unknown): void {
    this.frames++;
    if (!(body instanceof Uint8Array) && typeof body !== 'string') {
      this.fail(`a state push of ${typeof body}`);
      return;
    }
    let kind: string | undefined;
    let base = 0;
    try {
      const f = decodeStateFrame(typeof body === 'string' ? Uint8Array.from(Buffer.from(body, 'base64')) : body);
      kind = f.kind;
      if (f.kind === 'delta') base = f.base;
    } catch (e) {
      this.fail(`state frame: ${(e as Error).message}`);
    }
    const u = this.state.receive(body);
    if (u.sync) this.fail(`a ${u.status} update of version ${u.version} asks for a sync: ${u.why ?? u.error?.message}`);
    if (u.status === 'partial') return;
    if (u.status !== 'applied' || u.version === undefined) {
      this.fail(`a ${u.status} frame (version ${u.version}): ${u.why ?? u.error?.message ?? u.end?.reason}`);
      return;
    }
    const first = this.applied === 0;
    this.applied++;
    if (kind === 'snapshot') {
      this.snapshots++;
      if (this.nextView !== undefined) {
        this.view = this.nextView.view;
        this.nextView = undefined;
        this.viewChanges++;
      } else if (!first) this.behind++;
    } else if (u.version > base + 1) this.spans.push([base, u.version]);
    if (!first && u.version <= this.version) this.fail(`version ${u.version} applied after version ${this.version}`);
    this.version = u.version;
    const a: Applied = { canon: canon(norm(this.state.state)), view: this.view, first };
    const rep = this.room.reports.get(u.version);
    if (rep !== undefined) this.check(u.version, a, rep);
    else this.pending.set(u.version, a);
  }

  check(v: number, a: Applied, rep: Report): void {
    const want = a.view === null ? rep.full : canon(filter(rep.tree, a.view));
    if (a.canon !== want) {
      this.fail(`version ${v} (view ${JSON.stringify(a.view)}): the applied state\n  ${a.canon}\nis not the room's\n  ${want}`);
      return;
    }
    this.compared++;
  }
}

/** Polls cond every 5 ms for at most ms; resolves with whether it held. */
async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) return false;
    await sleep(5);
  }
  return true;
}

const skip = unavailable();

describe('rooms: clients track the state (real gateway)', { skip: skip ?? false }, () => {
  let gw: PropGateway;
  const clients: Client[] = [];
  const proxies: PausingProxy[] = [];

  before(async () => {
    gw = await startPropGateway();
  });

  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(proxies.map((p) => p.close()));
    await gw?.stop();
  });

  async function dial(room: Room, role: string, url: string, envelope: 'idlen' | 'delimiter'): Promise<Member> {
    const m = new Member(`ts${room.index}-${role}`, room);
    const c = await connect({
      url,
      envelope,
      body: envelope === 'idlen' ? 'raw' : 'json',
      maxFrameBytes: 1 << 20,
      heartbeatMs: 0,
      reconnect: false,
      callTimeoutMs: 10_000,
    });
    clients.push(c);
    m.client = c;
    c.onPush(REPORT, (b) => room.onReport(m.name, b));
    c.onPush(STATE, (b) => m.onState(b));
    await c.call(LOGIN, { user: m.name });
    return m;
  }

  /** The slow member stops reading (and gets ballast) until a report to it is refused, then extra ms longer. */
  async function stall(room: Room, m: Member, proxy: PausingProxy, extra: number): Promise<void> {
    const before = m.version;
    const seen = gw.count('report refused', m.name);
    proxy.pause();
    const stopped = Date.now();
    m.client.notify(BALLAST, { on: true });
    const full = await until(() => gw.count('report refused', m.name) > seen, 6000);
    const filled = Date.now() - stopped;
    await sleep(extra);
    m.client.notify(BALLAST, { on: false });
    proxy.resume();
    if (!full) {
      room.fail(`${m.name} stopped reading for ${filled} ms, and its queue never filled`);
      return;
    }
    if (!(await until(() => m.version > before + HISTORY, 5000))) room.fail(`${m.name} applied nothing new within 5 s of reading again`);
  }

  async function run(room: Room): Promise<void> {
    const full = await dial(room, 'full', gw.urls.game, 'idlen');
    const made = json(await full.client.call(MAKE, { kind: 'prop', params: { seed: room.seed } })) as { room: string };
    room.id = made.room;
    const proxy = await PausingProxy.start(gw.gamePort);
    proxies.push(proxy);
    const web = await dial(room, 'web', gw.urls.web, 'delimiter');
    const view = await dial(room, 'view', gw.urls.game, 'idlen');
    const slow = await dial(room, 'slow', proxy.url, 'idlen');
    const view1 = [['pub'], ['priv', 'b'], ['hand', 'c', 'x'], ['list']];
    for (const m of [full, web, view, slow]) {
      room.members.push(m);
      const join: Record<string, unknown> = { room: room.id };
      if (m === view) {
        m.view = view1;
        join['meta'] = { view: view1 };
      }
      await m.client.call(JOIN, join);
    }
    const slowRun = (async () => {
      for (const [at, extra] of [
        [Math.floor((TICKS * 15) / 100), 100],
        [Math.floor((TICKS * 45) / 100), 1200],
      ] as const) {
        if (!(await until(() => room.maxV >= at, 30_000))) return;
        await stall(room, slow, proxy, extra);
      }
    })();
    const views: [number, View][] = [
      [Math.floor((TICKS * 30) / 100), [['a'], ['deep'], ['__proto__', 'x'], ['ключ', 'a', 'b']]],
      [Math.floor((TICKS * 55) / 100), []],
      [Math.floor((TICKS * 75) / 100), null],
    ];
    for (const [at, next] of views) {
      if (!(await until(() => room.maxV >= at, 30_000))) {
        room.fail(`the run did not reach tick ${at}`);
        break;
      }
      view.nextView = { view: next };
      const ok = json(await view.client.call(SET_VIEW, { view: next })) as { ok: boolean };
      if (!ok.ok) room.fail(`set_view ${JSON.stringify(next)}: ${JSON.stringify(ok)}`);
    }
    if (!(await until(() => room.maxV >= TICKS, 30_000))) room.fail(`the run did not reach tick ${TICKS}`);
    await slowRun;
    const last = room.maxV;
    await until(() => room.members.every((m) => [...m.pending.values()].every((a) => a.first) && (m === view || m.version >= last)), 5000);
  }

  test(`${ROOMS} rooms of ${TICKS} ticks at 60 Hz: every applied version is the room's state`, async () => {
    const base = process.env['SHIELD_PROP_SEED'] ? Number(process.env['SHIELD_PROP_SEED']) : Date.now() % 1_000_000_007;
    const started = Date.now();
    const rooms = Array.from({ length: ROOMS }, (_, i) => new Room(i, base + i * 7919));
    await Promise.all(rooms.map((r) => run(r)));

    const problems: string[] = [];
    let ticks = 0;
    let compared = 0;
    let catchUps = 0;
    let behind = 0;
    const lines: string[] = [];
    for (const [i, r] of rooms.entries()) {
      for (const e of r.errors) problems.push(`room ${i} (seed ${r.seed}): ${e}`);
      ticks += r.hashes.size;
      for (const m of r.members) {
        for (const e of m.errors) problems.push(`room ${i} (seed ${r.seed}) ${m.name}: ${e}`);
        for (const [v, a] of m.pending) if (!a.first) problems.push(`room ${i} ${m.name}: version ${v} applied, but no member got its report`);
        if (m.compared === 0 || m.compared < m.applied - 1) problems.push(`room ${i} ${m.name}: ${m.compared} of ${m.applied} versions compared`);
        const slow = m.name.endsWith('-slow');
        const ups = m.spans.filter(([b, v]) => r.changedWithin(b, v)).length;
        if (slow) {
          catchUps += ups;
          behind += m.behind;
        } else if (m.behind > 0) problems.push(`room ${i} ${m.name}: ${m.behind} SNAPSHOTs that neither the join nor a view change explains`);
        if (m.name.endsWith('-view') && m.viewChanges !== 3) problems.push(`room ${i} ${m.name}: ${m.viewChanges} view changes took effect, want 3`);
        compared += m.compared;
        lines.push(
          `room ${i} ${m.name}: ${m.frames} frames, ${m.applied} versions (last ${m.version}), ${m.compared} compared, ${m.snapshots} snapshots (${m.behind} behind), ${slow ? ups : 0} catch-up deltas`,
        );
      }
    }
    // Every tick from the first member's join on is reported (a tick or two before it is not).
    if (ticks < 2000) problems.push(`${ticks} ticks reported, want at least 2,000`);
    if (catchUps === 0) problems.push('no slow member got a DELTA from an older base covering versions it was refused');
    if (behind === 0) problems.push('no slow member got a SNAPSHOT for falling more than room.history behind');
    const summary = `seed ${base}: ${ticks} ticks in ${ROOMS} rooms, ${compared} versions compared, slow members: ${catchUps} catch-up deltas, ${behind} behind snapshots; ${Date.now() - started} ms`;
    console.log(`${summary}\n${lines.join('\n')}`);
    assert.deepEqual(problems, [], `${summary}\n${problems.join('\n')}\ngateway log (tail):\n${gw.logs().slice(-4000)}`);
  });
});
