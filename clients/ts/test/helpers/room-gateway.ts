/**
 * Starts the real gateway (cmd/gateway, with real-gateway.ts's
 * launchGateway) on the rooms property config that
 * acceptance/rooms_property_test.go uses too: acceptance/testdata/rooms_property.yaml with its listeners on
 * free ports and its scripts (rooms_lobby.lua,
 * rooms_property_room.lua) by absolute path. Also a TCP proxy that can stop
 * reading from the gateway (a client that stops reading).
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { launchGateway, repoRoot } from './real-gateway.js';

export interface PropGateway {
  /** tcp://... of the idlen listener "game", tcp://... of the typelen "typed", ws://.../ws of the delimiter "web". */
  urls: { game: string; typed: string; web: string };
  /** The port of "game". */
  gamePort: number;
  /** How many lines the gateway logged with this msg and, when given, this player_id (shield.log's arg.player_id). */
  count(msg: string, playerId?: string): number;
  /** The gateway's last 64 KiB of log, for failure messages. */
  logs(): string;
  /** SIGTERM, then SIGKILL after ms; removes the temp folder. */
  stop(ms?: number): Promise<void>;
}

const testdata = path.join(repoRoot, 'acceptance', 'testdata');

export async function startPropGateway(): Promise<PropGateway> {
  const template = readFileSync(path.join(testdata, 'rooms_property.yaml'), 'utf8');
  const config = ([game, typed, web]: number[]) =>
    template
      .replaceAll('{{GAME}}', `127.0.0.1:${game}`)
      .replaceAll('{{TYPED}}', `127.0.0.1:${typed}`)
      .replaceAll('{{WEB}}', `127.0.0.1:${web}`)
      .replaceAll('{{LOBBY}}', JSON.stringify(path.join(testdata, 'rooms_lobby.lua')))
      .replaceAll('{{ROOM}}', JSON.stringify(path.join(testdata, 'rooms_property_room.lua')));
  let partial = '';
  const counts = new Map<string, number>();
  const bump = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  const onStderr = (d: string) => {
    const lines = (partial + d).split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      const msg = String(rec['msg'] ?? '');
      bump(msg);
      const pid = rec['arg.player_id'] ?? rec['player_id'];
      if (typeof pid === 'string') bump(`${msg}\u0000${pid}`);
    }
  };
  const gw = await launchGateway(3, config, { tmpPrefix: 'shield-ts-prop-', keep: 'last', onStderr });
  const [game, typed, web] = gw.ports as [number, number, number];
  return {
    urls: { game: `tcp://127.0.0.1:${game}`, typed: `tcp://127.0.0.1:${typed}`, web: `ws://127.0.0.1:${web}/ws` },
    gamePort: game,
    count: (msg, playerId) => counts.get(playerId === undefined ? msg : `${msg}\u0000${playerId}`) ?? 0,
    logs: gw.logs,
    stop: gw.stop,
  };
}

/**
 * A TCP proxy in front of a port whose connections can stop reading from
 * the gateway (pause) and go on (resume): the gateway's socket then fills
 * as for a client that stopped reading, while the client's own writes
 * still reach it.
 */
export class PausingProxy {
  readonly server: net.Server;
  /** Each connection: its socket to the gateway and its socket to the client. */
  readonly #pairs = new Map<net.Socket, net.Socket>();

  private constructor(target: number) {
    this.server = net.createServer((down) => {
      const up = net.connect({ host: '127.0.0.1', port: target });
      this.#pairs.set(up, down);
      down.pipe(up);
      up.pipe(down);
      const end = () => {
        down.destroy();
        up.destroy();
        this.#pairs.delete(up);
      };
      down.on('error', end).on('close', end);
      up.on('error', end).on('close', end);
    });
  }

  static async start(target: number): Promise<PausingProxy> {
    const p = new PausingProxy(target);
    await new Promise<void>((r) => p.server.listen(0, '127.0.0.1', r));
    return p;
  }

  get url(): string {
    return `tcp://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** Stops reading from the gateway (unpiped, so that a drain does not resume it). */
  pause(): void {
    for (const [up, down] of this.#pairs) {
      up.unpipe(down);
      up.pause();
    }
  }

  /** Reads from the gateway again. */
  resume(): void {
    for (const [up, down] of this.#pairs) up.pipe(down);
  }

  async close(): Promise<void> {
    for (const [up, down] of this.#pairs) {
      up.destroy();
      down.destroy();
    }
    this.#pairs.clear();
    await new Promise((r) => this.server.close(r));
  }
}
