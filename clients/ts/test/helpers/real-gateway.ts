/**
 * Starts the real gateway (cmd/gateway) for the tests: SHIELD_GATEWAY_BIN,
 * or `go build` from the repository root, with a config written to a temp
 * folder that serves the example game (configs/actors.yaml's actors, their
 * scripts by absolute path) on listeners at ports picked free beforehand.
 * launchGateway is the one way the test helpers start it: on any config
 * (room-client-gateway.ts's and room-gateway.ts's too), waiting for every
 * port it was given.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, type Client, type NodeConnectOptions } from '@shieldrpc/client/node';

/** The repository root: clients/ts/build/test/helpers -> five levels up. */
export const repoRoot = fileURLToPath(new URL('../../../../../', import.meta.url));

/** Why the real gateway cannot be had here, or undefined when it can. */
export function unavailable(): string | undefined {
  // Asked for by name: a wrong path fails the suite rather than skipping it.
  if (process.env['SHIELD_GATEWAY_BIN']) return undefined;
  if (!existsSync(path.join(repoRoot, 'go.mod')) || !existsSync(path.join(repoRoot, 'cmd', 'gateway'))) return 'not inside the shield repository';
  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (go.status !== 0) return 'no SHIELD_GATEWAY_BIN and no go toolchain to build cmd/gateway';
  return undefined;
}

let built: string | undefined;

/** The gateway binary: SHIELD_GATEWAY_BIN, or one built once into a temp folder. */
export function gatewayBinary(tmp: string): string {
  const env = process.env['SHIELD_GATEWAY_BIN'];
  if (env) return path.resolve(env);
  if (built) return built;
  const out = path.join(tmp, 'gateway');
  const r = spawnSync('go', ['build', '-o', out, './cmd/gateway'], { cwd: repoRoot, encoding: 'utf8', timeout: 600_000 });
  if (r.status !== 0) throw new Error(`go build ./cmd/gateway failed:\n${r.stderr}`);
  built = out;
  return out;
}

/** Ports free now on 127.0.0.1: each bound on port 0, all held until all are picked, then released. */
export async function freePorts(n: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const s = net.createServer();
      servers.push(s);
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(0, '127.0.0.1', resolve);
      });
    }
    return servers.map((s) => (s.address() as net.AddressInfo).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  }
}

/** configs/actors.yaml's actors block, with every script path made absolute. */
export function exampleActors(): string {
  const file = path.join(repoRoot, 'configs', 'actors.yaml');
  const text = readFileSync(file, 'utf8');
  const start = text.search(/^actors:/m);
  if (start < 0) throw new Error(`${file}: no actors block`);
  let block = text.slice(start);
  const next = block.search(/\n[a-z_]+:/); // the next top-level key, if any
  if (next >= 0) block = block.slice(0, next + 1);
  return block.replace(/^(\s*script:\s*)(\S+)\s*$/gm, (_m, lead: string, p: string) => `${lead}${JSON.stringify(path.resolve(path.dirname(file), p))}`);
}

/** The admin server's bearer token (network.admin.token), for /admin/*. */
export const ADMIN_TOKEN = 'ts-admin';

export interface Listener {
  name: string;
  transport: 'tcp' | 'ws';
  envelope: 'idlen' | 'typelen' | 'lenprefix' | 'delimiter';
}

/** The listeners the tests dial, by name. */
export const LISTENERS = {
  tcp_idlen: { name: 'tcp_idlen', transport: 'tcp', envelope: 'idlen' },
  tcp_typelen: { name: 'tcp_typelen', transport: 'tcp', envelope: 'typelen' },
  ws_idlen: { name: 'ws_idlen', transport: 'ws', envelope: 'idlen' },
  ws_delimiter: { name: 'ws_delimiter', transport: 'ws', envelope: 'delimiter' },
} as const satisfies Record<string, Listener>;

/**
 * A dial function for a suite: connects to the listener by name (its URL
 * from urls(), its envelope from listeners), without heartbeats or
 * reconnects unless opts say so, and adds the client to clients.
 */
export function dialer(listeners: readonly Listener[], urls: () => Record<string, string>, clients: Client[]) {
  return async (listener: string, opts: Omit<NodeConnectOptions, 'url'> = {}): Promise<Client> => {
    const l = listeners.find((x) => x.name === listener)!;
    const c = await connect({ url: urls()[listener]!, envelope: l.envelope, callTimeoutMs: 5000, heartbeatMs: 0, reconnect: false, ...opts });
    clients.push(c);
    return c;
  };
}

/** A gateway process that launchGateway started. */
export interface GatewayProcess {
  /** The ports picked free for its config, all of them listened on. */
  ports: number[];
  child: ChildProcess;
  /** 64 KiB of what the gateway wrote to stderr (its logs), for failure messages. */
  logs(): string;
  /** Resolves with the exit code when the process ends. */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL if it has not exited after ms; removes the temp folder. */
  stop(ms?: number): Promise<void>;
}

export interface LaunchOptions {
  /** The temp folder's name prefix. */
  tmpPrefix?: string;
  /** Which 64 KiB of stderr logs() keeps: the first (the default) or the last. */
  keep?: 'first' | 'last';
  /** Also called with each chunk of stderr. */
  onStderr?: (chunk: string) => void;
}

/**
 * Runs the gateway binary on the config that config(ports) gives for n ports
 * picked free on 127.0.0.1, and waits until it listens on every one of them
 * (30 s at most); a gateway that exits or does not listen is stopped and the
 * promise rejected with its logs.
 */
export async function launchGateway(n: number, config: (ports: number[]) => string, opts: LaunchOptions = {}): Promise<GatewayProcess> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), opts.tmpPrefix ?? 'shield-ts-'));
  const bin = gatewayBinary(tmp);
  const ports = await freePorts(n);
  const text = config(ports);
  const cfgFile = path.join(tmp, 'gateway.yaml');
  writeFileSync(cfgFile, text);

  const child = spawn(bin, ['run', '-c', cfgFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  let logs = '';
  const limit = 64 * 1024;
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => {
    if (opts.keep === 'last') logs = (logs + d).slice(-limit);
    else if (logs.length < limit) logs += d;
    opts.onStderr?.(d);
  });
  let done = false;
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      done = true;
      resolve(code);
    });
    child.once('error', (e) => {
      logs += `cannot run ${bin}: ${e.message}\n`;
      done = true;
      resolve(null);
    });
  });
  // A test run that dies leaves no gateway behind.
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
  try {
    const deadline = Date.now() + 30_000;
    for (const port of ports) {
      for (;;) {
        if (done) throw new Error(`the gateway exited before listening:\n${logs}\nconfig:\n${text}`);
        if (await canConnect(port)) break;
        if (Date.now() > deadline) throw new Error(`the gateway did not listen on ${port} within 30 s:\n${logs}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } catch (e) {
    await stop(1000);
    throw e;
  }
  return { ports, child, logs: () => logs, exited, stop };
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

export interface RunningGateway extends GatewayProcess {
  /** The URL of each listener by name. */
  urls: Record<string, string>;
  /** The admin server's base URL (http://127.0.0.1:port), when startGateway was asked for one. */
  adminUrl?: string;
  /** The value of an unlabelled metric on /metrics (needs adminUrl); undefined when absent. */
  metric(name: string): Promise<number | undefined>;
}

/** What startGateway's config holds besides its listeners, admin server and session keys. */
export interface GatewaySetup {
  /** node.name; gw-ts by default. */
  node?: string;
  /** Every listener's entry_service; auth (the example game's) by default. */
  entry?: string;
  /** The actors block; exampleActors() by default. */
  actors?: string;
  /** The temp folder's name prefix (LaunchOptions.tmpPrefix). */
  tmpPrefix?: string;
}

/**
 * Starts the gateway with the listeners and extra session keys, and waits for
 * every port; with admin, also an admin server (for /metrics, and /admin/*
 * with ADMIN_TOKEN). It serves the example game unless setup says otherwise.
 */
export async function startGateway(listeners: Listener[], sessionYAML = '', admin = false, setup: GatewaySetup = {}): Promise<RunningGateway> {
  const urls: Record<string, string> = {};
  let adminPort: number | undefined;
  const config = (ports: number[]) => {
    adminPort = admin ? ports[listeners.length] : undefined;
    const lines = listeners.map((l, i) => {
      const addr = `127.0.0.1:${ports[i]}`;
      urls[l.name] = l.transport === 'tcp' ? `tcp://${addr}` : `ws://${addr}/ws`;
      const ws = l.transport === 'ws' ? ', path: /ws' : '';
      return `    - {name: ${l.name}, address: "${addr}", transport: ${l.transport}${ws}, entry_service: ${setup.entry ?? 'auth'}, protocol: {envelope: ${l.envelope}, body: json}}`;
    });
    const adminYAML = adminPort === undefined ? '' : `  admin: {address: "127.0.0.1:${adminPort}", token: ${ADMIN_TOKEN}}\n`;
    return `node: {name: ${setup.node ?? 'gw-ts'}}
network:
  listeners:
${lines.join('\n')}
${adminYAML}session:
  idle_timeout: 60s
  duplicate_login: kick_old
  shutdown_grace: 1s
${sessionYAML}
log: {format: text, level: warn}
${setup.actors ?? exampleActors()}`;
  };
  const opts: LaunchOptions = {};
  if (setup.tmpPrefix !== undefined) opts.tmpPrefix = setup.tmpPrefix;
  const proc = await launchGateway(listeners.length + (admin ? 1 : 0), config, opts);
  const adminUrl = adminPort === undefined ? undefined : `http://127.0.0.1:${adminPort}`;
  const metric = async (name: string): Promise<number | undefined> => {
    if (adminUrl === undefined) throw new Error('startGateway was not asked for an admin server');
    const text = await (await fetch(`${adminUrl}/metrics`)).text();
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  const gw: RunningGateway = { ...proc, urls, metric };
  if (adminUrl !== undefined) gw.adminUrl = adminUrl;
  return gw;
}

/** A TCP proxy in front of a port, whose connections a test can cut (a dropped network). */
export class Proxy {
  readonly server: net.Server;
  /** While true, new connections are closed as soon as they are accepted (a network still down). */
  refusing = false;
  readonly #pairs = new Set<[net.Socket, net.Socket]>();

  private constructor(target: number) {
    this.server = net.createServer((down) => {
      if (this.refusing) {
        down.destroy();
        return;
      }
      const up = net.connect({ host: '127.0.0.1', port: target });
      const pair: [net.Socket, net.Socket] = [down, up];
      this.#pairs.add(pair);
      down.pipe(up);
      up.pipe(down);
      const end = () => {
        down.destroy();
        up.destroy();
        this.#pairs.delete(pair);
      };
      down.on('error', end).on('close', end);
      up.on('error', end).on('close', end);
    });
  }

  static async start(target: number): Promise<Proxy> {
    const p = new Proxy(target);
    await new Promise<void>((r) => p.server.listen(0, '127.0.0.1', r));
    return p;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Cuts every connection, both ways, without a close frame or FIN to the gateway first. */
  cut(): void {
    for (const [a, b] of this.#pairs) {
      a.destroy();
      b.destroy();
    }
    this.#pairs.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((r) => this.server.close(r));
  }
}
