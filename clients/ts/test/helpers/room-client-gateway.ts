/**
 * Starts the real gateway (cmd/gateway) with rooms, for the Room tests: the
 * lobby and the "arena" room kind of the Go acceptance tests
 * (acceptance/testdata/rooms_lobby.lua, rooms_arena.lua; the YAML is
 * acceptance/rooms_harness_test.go's), on listeners at ports picked free
 * beforehand, and an admin server for /metrics (real-gateway.ts's
 * startGateway with the rooms' actors).
 */
import path from 'node:path';
import { repoRoot, startGateway, type Listener, type RunningGateway } from './real-gateway.js';

/** The lobby's routes (rooms_lobby.lua) and the arena's input route (rooms_arena.lua). */
export const LOBBY = { login: 1, make: 2, ask: 3, enter: 4, hold: 5, ping: 6 } as const;
export const ARENA_MOVE = 3001;

export type RoomsGateway = RunningGateway & { adminUrl: string };

const script = (name: string) => JSON.stringify(path.join(repoRoot, 'acceptance', 'testdata', name));

/** The actors block: a lobby (the entry service) and the arena kind at tickHz. */
export function roomsActors(tickHz: number): string {
  return `actors:
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
  const setup = { node: 'gw-ts-rooms', entry: 'lobby', actors: roomsActors(tickHz), tmpPrefix: 'shield-ts-rooms-' };
  return (await startGateway(listeners, sessionYAML, true, setup)) as RoomsGateway;
}
