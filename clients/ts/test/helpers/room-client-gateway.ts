/**
 * Starts the real gateway (cmd/gateway) with rooms, for the Room tests: the
 * lobby and the "arena" room kind of the Go acceptance tests
 * (acceptance/testdata/rooms_lobby.lua, rooms_arena.lua; the YAML is
 * acceptance/rooms_harness_test.go's), on listeners at ports picked free
 * beforehand, and an admin server for /metrics.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePorts, gatewayBinary, repoRoot, type Listener } from './real-gateway.js';

/** The lobby's routes (rooms_lobby.lua) and the arena's input route (rooms_arena.lua). */
export const LOBBY = { login: 1, make: 2, ask: 3, enter: 4, hold: 5, ping: 6 } as const;
export const ARENA_MOVE = 3001;

export interface RoomsGateway {
  urls: Record<string, string>;
  adminUrl: string;
  /** The value of an unlabelled metric on /metrics; undefined when absent. */
  metric(name: string): Promise<number | undefined>;
  logs(): string;
  stop(ms?: number): Promise<void>;
}

const script = (name: string) => JSON.stringify(path.join(repoRoot, 'acceptance', 'testdata', name));

/** The config: a lobby (the entry service) and the arena kind at tickHz, session keys in sessionYAML. */
export function roomsConfig(listeners: { l: Listener; addr: string }[], adminAddr: string, sessionYAML: string, tickHz: number): string {
  const lines = listeners.map(({ l, addr }) => {
    const ws = l.transport === 'ws' ? ', path: /ws' : '';
    return `    - {name: ${l.name}, address: "${addr}", transport: ${l.transport}${ws}, entry_service: lobby, protocol: {envelope: ${l.envelope}, body: json}}`;
  });
  return `node: {name: gw-ts-rooms}
network:
  listeners:
${lines.join('\n')}
  admin: {address: "${adminAddr}", token: ts-admin}
session:
  idle_timeout: 60s
  duplicate_login: kick_old
  shutdown_grace: 1s
${sessionYAML}
log: {format: text, level: warn}
actors:
  - name: lobby
    script: ${script('rooms_lobby.lua')}
    rpc:
      routes:
        - {id: 1, name: login, binding: login, requires_auth: false}
        - {id: 2, name: make, binding: make}
        - {id: 3, name: ask, binding: ask}
        - {id: 4, name: enter, binding: enter}
        - {id: 5, name: hold, binding: hold}
        - {id: 6, name: ping, binding: ping}
  - name: arena
    script: ${script('rooms_arena.lua')}
    room: {tick_hz: ${tickHz}, reconnect_grace: 5s}
    rpc:
      routes:
        - {id: 3001, name: move, room_input: true}
`;
}

/** Starts the gateway and waits for every port. */
export async function startRoomsGateway(listeners: Listener[], sessionYAML = '  resume_window: 10s', tickHz = 20): Promise<RoomsGateway> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'shield-ts-rooms-'));
  const bin = gatewayBinary(tmp);
  const ports = await freePorts(listeners.length + 1);
  const adminPort = ports.pop()!;
  const urls: Record<string, string> = {};
  const placed = listeners.map((l, i) => {
    const addr = `127.0.0.1:${ports[i]}`;
    urls[l.name] = l.transport === 'tcp' ? `tcp://${addr}` : `ws://${addr}/ws`;
    return { l, addr };
  });
  const config = roomsConfig(placed, `127.0.0.1:${adminPort}`, sessionYAML, tickHz);
  const cfgFile = path.join(tmp, 'gateway.yaml');
  writeFileSync(cfgFile, config);

  const child = spawn(bin, ['run', '-c', cfgFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  let logs = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => {
    if (logs.length < 64 * 1024) logs += d;
  });
  let done = false;
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', (e) => {
      logs += `cannot run ${bin}: ${e.message}\n`;
      resolve(null);
    });
  });
  void exited.then(() => (done = true));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const stop = async (ms = 5000) => {
    if (!done) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), ms);
      await exited;
      clearTimeout(t);
    }
    process.off('exit', killOnExit);
    rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
  };
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  const metric = async (name: string): Promise<number | undefined> => {
    const text = await (await fetch(`${adminUrl}/metrics`)).text();
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  try {
    const deadline = Date.now() + 30_000;
    for (const port of [...ports, adminPort]) {
      for (;;) {
        if (done) throw new Error(`the gateway exited before listening:\n${logs}\nconfig:\n${config}`);
        if (await canConnect(port)) break;
        if (Date.now() > deadline) throw new Error(`the gateway did not listen on ${port} within 30 s:\n${logs}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } catch (e) {
    await stop(1000);
    throw e;
  }
  return { urls, adminUrl, metric, logs: () => logs, stop };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
