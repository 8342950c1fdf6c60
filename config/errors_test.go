package config_test

import (
	"strings"
	"testing"

	"github.com/shieldrpc/shield/config"
)

// The snippets below share these opening lines so that every case's line
// numbers can be read off at a glance:
//
//	1 network:
//	2   listeners:
//	3     - {name: game, ...}
//	4 actors:
//	5   - name: auth
//	6     script: auth.lua
//	7     rpc:
//	8       routes:
//	9         - {id: 1001, name: login, binding: login}
const (
	listenersHead = "network:\n  listeners:\n    - {name: game, address: \"127.0.0.1:7000\", entry_service: auth}\n"
	authHead      = listenersHead + "actors:\n  - name: auth\n    script: auth.lua\n"
	routesHead    = authHead + "    rpc:\n      routes:\n"
	valid         = routesHead + "        - {id: 1001, name: login, binding: login}\n"

	// clusterHead puts a cluster on line 10 of valid: node.services cases
	// add their node mapping from line 11.
	clusterHead = valid + "cluster: {embedded: \"127.0.0.1:4222\"}\n"
	// shardedHead gives auth two instances (line 7), a cluster on line 8,
	// and leaves node for line 9.
	shardedHead = authHead + "    instances: 2\ncluster: {embedded: \"127.0.0.1:4222\"}\n"
	// actorsOnly is authHead without the network mapping: the actors
	// mapping on line 1 of its own, for nodes without listeners.
	actorsOnly = "actors:\n  - name: auth\n    script: auth.lua\n"
)

// file is the name every snippet is parsed as: messages start with it.
const file = "conf/game.yaml"

// errCase is one invalid configuration and the errors it must produce, in
// order. Each error is given as pieces its message must all contain; the
// first piece is always the exact "file:line:" prefix (or "file: " for an
// error without a line).
type errCase struct {
	name string
	src  string
	want [][]string
}

var errCases = []errCase{
	// Malformed YAML: the parser's message, with the line it stopped at.
	{"yaml unclosed flow list", valid + "session: {rate_limit: [1, 2\nlog: {}\n",
		[][]string{{file + ":10:", "yaml: did not find expected ',' or ']'"}}},
	{"yaml tab indentation", "node:\n  name: gw\n\tlog: x\n",
		[][]string{{file + ":2:", "yaml: found a tab character that violates indentation"}}},
	{"yaml unknown anchor", valid + "session: {idle_timeout: *nope}\n",
		[][]string{{file + ":10:", "yaml: unknown anchor 'nope' referenced"}}},
	{"yaml control character", valid + "node: {name: \"a\x01\"}\n",
		[][]string{{file + ":10:", "yaml: control characters are not allowed"}}},
	{"yaml bad utf-8", valid + "node: {name: \"a\xff\"}\n",
		[][]string{{file + ":10:", "yaml: invalid"}}},
	{"yaml block mapping", valid + "session:\n  idle_timeout: 5s\n - write_timeout: 5s\n",
		[][]string{{file + ":12:", "yaml: did not find expected key"}}},
	{"yaml second document", valid + "---\nnode: {name: x}\n",
		[][]string{{file + ":10:", "a second YAML document"}}},
	{"empty file", "",
		[][]string{{file + ": ", "the file is empty"}}},
	{"only comments", "# nothing here\n\n",
		[][]string{{file + ": ", "the file is empty"}}},
	{"top level not a mapping", "- a\n- b\n",
		[][]string{{file + ":1:", "the top level: must be a mapping, got a list"}}},

	// Wrong types.
	{"string for an int", authHead + "    instances: two\n",
		[][]string{{file + ":7:", `actor "auth": `, `instances: must be an integer, got the string "two"`}}},
	{"float for an int", valid + "session: {max_inflight: 1.5}\n",
		[][]string{{file + ":10:", "session.max_inflight: must be an integer, got the number 1.5"}}},
	{"quoted number for an int", valid + "session: {max_sessions: \"10\"}\n",
		[][]string{{file + ":10:", `session.max_sessions: must be an integer, got the string "10"`}}},
	{"list for a mapping", valid + "session: [1, 2]\n",
		[][]string{{file + ":10:", "session: must be a mapping, got a list"}}},
	{"mapping for a list", listenersHead + "actors: {name: auth}\n",
		[][]string{
			{file + ": ", "actors: at least one actor is required"},
			{file + ":3:", `listener "game": entry_service "auth" is not an actor`},
			{file + ":4:", "actors: must be a list, got a mapping"},
		}},
	{"scalar for a mapping", valid + "log: json\n",
		[][]string{{file + ":10:", `log: must be a mapping, got the string "json"`}}},
	{"string for a bool", routesHead + "        - {id: 1001, name: login, binding: login, requires_auth: \"no\"}\n",
		[][]string{{file + ":9:", `actor "auth": route 1001 (login): requires_auth: must be true or false, got the string "no"`}}},
	{"int for a string", routesHead + "        - {id: 1001, name: login, binding: 7}\n",
		[][]string{{file + ":9:", `actor "auth": route 1001 (login): binding: must be a string, got the integer 7`}}},
	{"duplicate key top", valid + "network: {}\n",
		[][]string{{file + ":10:", `the top level: key "network" appears twice (first at line 1)`}}},
	{"int in a string list", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, transport: ws, allowed_origins: [1]}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", "network.listeners[0].allowed_origins: must be a string, got the integer 1"}}},
	{"mapping for a string list", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, transport: ws, allowed_origins: {a: b}}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", "network.listeners[0].allowed_origins: must be a list, got a mapping"}}},
	{"non-string key", valid + "session: {[a]: 1}\n",
		[][]string{{file + ":10:", "session: keys must be strings, got a list"}}},

	// Unknown keys at every level, each with the nearest known key.
	{"unknown key top", valid + "sesion: {}\n",
		[][]string{{file + ":10:", `the top level: unknown key "sesion" (did you mean "session"?)`}}},
	{"unknown key node", valid + "node: {nmae: gw}\n",
		[][]string{{file + ":10:", `node: unknown key "nmae" (did you mean "name"?)`}}},
	{"unknown key network", "network:\n  listener: []\n" + authHead[len(listenersHead):],
		[][]string{
			{file + ": ", "network.listeners: at least one listener is required"},
			{file + ":2:", `network: unknown key "listener" (did you mean "listeners"?)`},
		}},
	{"unknown key listener", "network:\n  listeners:\n    - name: game\n      adress: 1.2.3.4:5\n      address: \":7000\"\n      entry_service: auth\n" + authHead[len(listenersHead):],
		[][]string{{file + ":4:", `network.listeners[0]: unknown key "adress" (did you mean "address"?)`}}},
	{"unknown key protocol", "network:\n  listeners:\n    - name: game\n      address: \":7000\"\n      entry_service: auth\n      protocol: {envelop: idlen}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":6:", `network.listeners[0].protocol: unknown key "envelop" (did you mean "envelope"?)`}}},
	{"unknown key tls", "network:\n  listeners:\n    - name: game\n      address: \":7000\"\n      entry_service: auth\n      tls: {cert_file: a.crt, key_file: a.key, key_fil: ca.crt}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":6:", `network.listeners[0].tls: unknown key "key_fil" (did you mean "key_file"?)`}}},
	{"unknown key admin", "network:\n  admin: {adress: \":9100\", address: \":9100\"}\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":2:", `network.admin: unknown key "adress" (did you mean "address"?)`}}},
	{"unknown key log", valid + "log:\n  format: json\n  levle: info\n",
		[][]string{{file + ":12:", `log: unknown key "levle" (did you mean "level"?)`}}},
	{"unknown key lua", valid + "lua: {max_string_byte: 10}\n",
		[][]string{{file + ":10:", `lua: unknown key "max_string_byte" (did you mean "max_string_bytes"?)`}}},
	{"unknown key session", valid + "session:\n  idle_timout: 5s\n",
		[][]string{{file + ":11:", `session: unknown key "idle_timout" (did you mean "idle_timeout"?)`}}},
	{"unknown key rate_limit", valid + "session:\n  rate_limit: {persecond: 5}\n",
		[][]string{{file + ":11:", `session.rate_limit: unknown key "persecond" (did you mean "per_second"?)`}}},
	{"unknown key actor", authHead + "    mailbx: 10\n",
		[][]string{{file + ":7:", `actor "auth": actor: unknown key "mailbx" (did you mean "mailbox"?)`}}},
	{"unknown key rpc", authHead + "    rpc:\n      route: []\n",
		[][]string{{file + ":8:", `actor "auth": rpc: unknown key "route" (did you mean "routes"?)`}}},
	{"unknown key route", routesHead + "        - {id: 1001, name: login, bindng: login, binding: login}\n",
		[][]string{{file + ":9:", `actor "auth": route 1001 (login): route: unknown key "bindng" (did you mean "binding"?)`}}},
	{"unknown key far from any", valid + "zzzzzzzzzz: 1\n",
		[][]string{{file + ":10:", `the top level: unknown key "zzzzzzzzzz"`}}},

	// Duplicate keys.
	{"duplicate key node", valid + "node:\n  name: a\n  name: b\n",
		[][]string{{file + ":12:", `node: key "name" appears twice (first at line 11)`}}},
	{"duplicate key route", routesHead + "        - id: 1001\n          name: login\n          binding: a\n          binding: b\n",
		[][]string{{file + ":12:", `actor "auth": route 1001 (login): route: key "binding" appears twice (first at line 11)`}}},

	// Route ids.
	{"id 0", routesHead + "        - {id: 0, name: login, binding: login}\n",
		[][]string{{file + ":9:", `actor "auth": route (login): id: 0 is out of range 1..16777215`}}},
	{"id 16777216", routesHead + "        - {id: 16777216, name: login, binding: login}\n",
		[][]string{{file + ":9:", `actor "auth": route 16777216 (login): id: 16777216 is out of range 1..16777215`}}},
	{"zero max_sessions", valid + "session: {max_sessions: 0}\n",
		[][]string{{file + ":10:", "session.max_sessions: 0 is out of range (at least 1)"}}},
	{"id -1", routesHead + "        - {id: -1, name: login, binding: login}\n",
		[][]string{{file + ":9:", `actor "auth": route -1 (login): id: -1 is out of range 1..16777215`}}},
	{"id abc", routesHead + "        - {id: abc, name: login, binding: login}\n",
		[][]string{{file + ":9:", `actor "auth": route (login): id: must be an integer, got the string "abc"`}}},
	{"id quoted", routesHead + "        - {id: \"1001\", name: login, binding: login}\n",
		[][]string{{file + ":9:", `actor "auth": route (login): id: must be an integer, got the string "1001"`}}},
	{"id beyond int64", routesHead + "        - {id: 99999999999999999999, name: login, binding: login}\n",
		[][]string{{file + ":9:", `actor "auth": route (login): id: must be an integer, got the number 99999999999999999999`}}},
	{"missing id", routesHead + "        - {name: login, binding: login}\n",
		[][]string{{file + ":9:", `actor "auth": route (login): id is required`}}},
	{"null id", routesHead + "        - {id: ~, name: login, binding: login}\n",
		[][]string{{file + ":9:", `actor "auth": route (login): id is required`}}},
	{"duplicate id in an actor", valid + "        - {id: 1001, name: login2, binding: b}\n",
		[][]string{{file + ":10:", `actor "auth": route 1001 (login2): id 1001 used twice in this actor (first at line 9)`}}},
	{"duplicate name in an actor", valid + "        - {id: 1002, name: login, binding: b}\n",
		[][]string{{file + ":10:", `actor "auth": route 1002 (login): name "login" used twice in this actor (first at line 9)`}}},

	// Bindings, directions, actions.
	{"empty binding", routesHead + "        - {id: 1001, name: login, binding: \"\"}\n",
		[][]string{{file + ":9:", `actor "auth": route 1001 (login): binding: must not be empty`}}},
	{"missing binding", routesHead + "        - {id: 1001, name: login}\n",
		[][]string{{file + ":9:", `actor "auth": route 1001 (login): binding is required`}}},
	{"route without id or name", routesHead + "        - {binding: x}\n",
		[][]string{{file + ":9:", `actor "auth": route without id: id is required`}}},
	{"route not a mapping", routesHead + "        - 1001\n",
		[][]string{{file + ":9:", `actor "auth": route without id: route: must be a mapping, got the integer 1001`}}},
	{"unknown direction", routesHead + "        - {id: 1001, name: login, binding: login, direction: up}\n",
		[][]string{{file + ":9:", `actor "auth": route 1001 (login): direction: "up" is not one of c2s, client_to_server, s2c, server_to_client, bidi, bidirectional`}}},
	{"unknown action", routesHead + "        - {id: 1001, name: login, binding: login, action: forward}\n",
		[][]string{{file + ":9:", `actor "auth": route 1001 (login): action: "forward" is not one of decode_local, forward_raw, drop`}}},
	{"empty owner_service", routesHead + "        - {id: 1001, name: login, binding: login, owner_service: \"\"}\n",
		[][]string{{file + ":9:", `actor "auth": route 1001 (login): owner_service: must not be empty`}}},

	// The removed inline route table.
	{"network.protocol.routes", listenersHead[:len("network:\n")] + "  protocol:\n    envelope: idlen\n    routes:\n      - {id: 1, binding: x}\n" + listenersHead[len("network:\n"):] + authHead[len(listenersHead):],
		[][]string{{file + ":4:", "network.protocol.routes was removed: declare routes under each actor's rpc.routes"}}},
	{"network.protocol without routes", "network:\n  protocol: {envelope: idlen}\n" + listenersHead[len("network:\n"):] + authHead[len(listenersHead):],
		[][]string{{file + ":2:", "network.protocol was removed: set envelope and body on each listener's protocol"}}},
	{"listener protocol.routes", "network:\n  listeners:\n    - name: game\n      address: \":7000\"\n      entry_service: auth\n      protocol:\n        routes:\n          - {id: 1, binding: x}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":7:", "network.listeners[0].protocol.routes was removed: declare routes under each actor's rpc.routes"}}},
	{"listener protocol.routes null", "network:\n  listeners:\n    - name: game\n      address: \":7000\"\n      entry_service: auth\n      protocol: {routes: ~}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":6:", "network.listeners[0].protocol.routes was removed"}}},

	// Zero, negative and malformed durations and counts.
	{"zero duration", valid + "session: {idle_timeout: 0s}\n",
		[][]string{{file + ":10:", `session.idle_timeout: must be above zero, got "0s"`}}},
	{"negative duration", authHead + "    handler_timeout: -1s\n",
		[][]string{{file + ":7:", `actor "auth": handler_timeout: must be above zero, got "-1s"`}}},
	{"duration without unit", valid + "session: {write_timeout: 5}\n",
		[][]string{{file + ":10:", `session.write_timeout: must be a duration such as "15s", got the integer 5`}}},
	{"bad duration string", valid + "session: {shutdown_grace: 10 seconds}\n",
		[][]string{{file + ":10:", `session.shutdown_grace: "10 seconds" is not a duration such as "15s" or "250ms"`}}},
	{"bad handshake_timeout", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, handshake_timeout: 1d}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `network.listeners[0].handshake_timeout: "1d" is not a duration`}}},
	{"zero instances", authHead + "    instances: 0\n",
		[][]string{{file + ":7:", `actor "auth": instances: 0 is out of range 1..1024`}}},
	{"negative mailbox", authHead + "    mailbox: -5\n",
		[][]string{{file + ":7:", `actor "auth": mailbox: -5 is out of range (at least 1)`}}},
	{"zero max_pending", authHead + "    max_pending: 0\n",
		[][]string{{file + ":7:", `actor "auth": max_pending: 0 is out of range (at least 1)`}}},
	{"zero max_inflight", valid + "session: {max_inflight: 0}\n",
		[][]string{{file + ":10:", "session.max_inflight: 0 is out of range (at least 1)"}}},
	{"retry_hints not a bool", valid + "session: {retry_hints: 1}\n",
		[][]string{{file + ":10:", "session.retry_hints: must be true or false, got the integer 1"}}},
	{"negative outbound_queue", valid + "session: {outbound_queue: -1}\n",
		[][]string{{file + ":10:", "session.outbound_queue: -1 is out of range (at least 1)"}}},
	{"negative per_second", valid + "session: {rate_limit: {per_second: -1}}\n",
		[][]string{{file + ":10:", "session.rate_limit.per_second: -1 is out of range (at least 0)"}}},
	{"zero burst under a rate", valid + "session: {rate_limit: {per_second: 10, burst: 0}}\n",
		[][]string{{file + ":10:", "session.rate_limit.burst: 0 is allowed only with per_second 0"}}},
	{"zero lua limit", valid + "lua: {max_string_bytes: 0}\n",
		[][]string{{file + ":10:", "lua.max_string_bytes: 0 is out of range (at least 1)"}}},
	{"zero max_frame_bytes", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, protocol: {max_frame_bytes: 0}}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", "network.listeners[0].protocol.max_frame_bytes: 0 is out of range 16..1073741824"}}},

	// Enums.
	{"bad transport", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, transport: udp}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `network.listeners[0].transport: "udp" is not one of tcp, ws`}}},
	{"bad envelope", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, protocol: {envelope: json}}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `network.listeners[0].protocol.envelope: "json" is not one of idlen, typelen, lenprefix, delimiter`}}},
	{"bad body", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, protocol: {body: xml}}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `network.listeners[0].protocol.body: "xml" is not one of json, raw, protobuf`}}},
	{"bad log format", valid + "log: {format: yaml}\n",
		[][]string{{file + ":10:", `log.format: "yaml" is not one of json, text`}}},
	{"bad log level", valid + "log: {level: verbose}\n",
		[][]string{{file + ":10:", `log.level: "verbose" is not one of debug, info, warn, error`}}},
	{"bad duplicate_login", valid + "session: {duplicate_login: kick_new}\n",
		[][]string{{file + ":10:", `session.duplicate_login: "kick_new" is not one of kick_old, reject_new`}}},

	// Listeners.
	{"listener without name", "network:\n  listeners:\n    - {address: \":7000\", entry_service: auth}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", "network.listeners[0]: name is required"}}},
	{"listener without address", "network:\n  listeners:\n    - {name: game, entry_service: auth}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", "network.listeners[0]: address is required"}}},
	{"listener without entry_service", "network:\n  listeners:\n    - {name: game, address: \":7000\"}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", "network.listeners[0]: entry_service is required"}}},
	{"listener empty", "network:\n  listeners:\n    - {}\n" + authHead[len(listenersHead):],
		[][]string{
			{file + ":3:", "network.listeners[0]: name is required"},
			{file + ":3:", "network.listeners[0]: address is required"},
			{file + ":3:", "network.listeners[0]: entry_service is required"},
		}},
	{"entry_service not an actor", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: lobby}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `listener "game": entry_service "lobby" is not an actor`}}},
	{"duplicate listener names", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth}\n    - {name: game, address: \":7001\", entry_service: auth}\n    - {name: game, address: \":7002\", entry_service: auth}\n" + authHead[len(listenersHead):],
		[][]string{
			{file + ":4:", `listener "game": name used twice (first at line 3)`},
			{file + ":5:", `listener "game": name used twice (first at line 3)`},
		}},
	{"duplicate listener addresses", "network:\n  listeners:\n    - {name: a, address: \":7000\", entry_service: auth}\n    - {name: b, address: \":7000\", entry_service: auth}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":4:", `listener "b": address :7000 used twice (first at line 3)`}}},
	{"address not host:port", "network:\n  listeners:\n    - {name: game, address: \"7000\", entry_service: auth}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `network.listeners[0].address: "7000" is not host:port`}}},
	{"protobuf without descriptor_set", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, protocol: {body: protobuf}}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `listener "game": body protobuf needs protocol.descriptor_set`}}},
	{"descriptor_set without protobuf", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, protocol: {descriptor_set: game.pb}}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `listener "game": descriptor_set applies to body protobuf only`}}},
	{"lenprefix with body raw", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, protocol: {envelope: lenprefix, body: raw}}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `listener "game": envelope lenprefix carries JSON wrappers and needs body json, not raw`}}},
	{"delimiter with body raw", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, protocol: {envelope: delimiter, body: raw}}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `listener "game": envelope delimiter carries JSON wrappers and needs body json, not raw`}}},
	{"path on a tcp listener", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, path: /ws}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `listener "game": path applies to transport ws only`}}},
	{"allowed_origins on a tcp listener", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, allowed_origins: [\"https://a\"]}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `listener "game": allowed_origins applies to transport ws only`}}},
	{"ws path without slash", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, transport: ws, path: ws}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", `network.listeners[0].path: "ws" must start with "/"`}}},
	{"tls without key_file", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, tls: {cert_file: a.crt}}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", "network.listeners[0].tls: key_file is required"}}},
	{"tls with an empty cert_file", "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, tls: {cert_file: \"\", key_file: a.key}}\n" + authHead[len(listenersHead):],
		[][]string{{file + ":3:", "network.listeners[0].tls.cert_file: must not be empty"}}},
	{"admin address not host:port", "network:\n  admin: {address: \"9100\"}\n" + listenersHead[len("network:\n"):] + authHead[len(listenersHead):],
		[][]string{{file + ":2:", `network.admin.address: "9100" is not host:port`}}},
	{"duplicate key top with a null value", valid + "network: ~\n",
		[][]string{{file + ":10:", `the top level: key "network" appears twice`}}},
	{"admin empty", "network:\n  admin: {pprof: true}\n" + listenersHead[len("network:\n"):] + authHead[len(listenersHead):],
		[][]string{{file + ":2:", "network.admin.address: required when admin is set"}}},
	{"no listeners", "actors:\n  - {name: auth, script: auth.lua}\n",
		[][]string{{file + ": ", "network.listeners: at least one listener is required"}}},

	// Actors.
	{"no actors", listenersHead,
		[][]string{
			{file + ": ", "actors: at least one actor is required"},
			{file + ":3:", `listener "game": entry_service "auth" is not an actor`},
		}},
	{"empty actors list", listenersHead + "actors: []\n",
		[][]string{
			{file + ": ", "actors: at least one actor is required"},
			{file + ":3:", `listener "game": entry_service "auth" is not an actor`},
		}},
	{"duplicate actor names", valid + "  - {name: auth, script: other.lua}\n",
		[][]string{{file + ":10:", `actor "auth": actor name used twice (first at line 5)`}}},
	{"bad actor name", authHead + "  - {name: \"my room\", script: room.lua}\n",
		[][]string{{file + ":7:", `actor "my room": actor name "my room": use letters, digits`}}},
	{"actor name starting with a digit", authHead + "  - {name: 1room, script: room.lua}\n",
		[][]string{{file + ":7:", `actor "1room": actor name "1room"`}}},
	{"actor without name", authHead + "  - {script: room.lua}\n",
		[][]string{{file + ":7:", "actor: name is required"}}},
	{"actor without script", authHead + "  - {name: room}\n",
		[][]string{{file + ":7:", `actor "room": script is required`}}},
	{"actor name not a string", authHead + "  - {name: 7, script: room.lua}\n",
		[][]string{{file + ":7:", "name: must be a string, got the integer 7"}}},

	// Anchors and aliases: a merge that loops, and a merge of a scalar.
	{"merge into itself", authHead + "  - &self {<<: *self, name: room, script: room.lua}\n",
		[][]string{{file + ":7:", `actor "room": actor: <<: a mapping cannot merge itself`}}},
	{"merge of a scalar", authHead + "  - {<<: 5, name: room, script: room.lua}\n",
		[][]string{{file + ":7:", `actor "room": actor: <<: must be a mapping or a list of mappings, got the integer 5`}}},
	{"alias to a wrong type", valid + "node: {name: &n gw}\nsession: {max_inflight: *n}\n",
		[][]string{{file + ":10:", `session.max_inflight: must be an integer, got the string "gw"`}}},

	// node.services (SPEC §10): cluster only, known actors and instances,
	// each named once.
	{"node.services without cluster", valid + "node: {services: [auth]}\n",
		[][]string{{file + ":10:", "node.services applies in a cluster only"}}},
	{"node.services empty without cluster", valid + "node: {services: []}\n",
		[][]string{{file + ":10:", "node.services applies in a cluster only"}}},
	{"node.services unknown actor", clusterHead + "node: {services: [lobby]}\n",
		[][]string{{file + ":11:", `node.services: "lobby" is not an actor`}}},
	{"node.services instance out of range", clusterHead + "node: {services: [auth/1]}\n",
		[][]string{{file + ":11:", `node.services: auth/1 is out of range: actor "auth" has 1 instance (0..0)`}}},
	{"node.services instance out of range of 2", shardedHead + "node: {services: [auth/2]}\n",
		[][]string{{file + ":9:", `node.services: auth/2 is out of range: actor "auth" has 2 instances (0..1)`}}},
	{"node.services huge instance", clusterHead + "node: {services: [auth/99999999999999999999]}\n",
		[][]string{{file + ":11:", `node.services: "auth/99999999999999999999" names an instance out of range (at most 1023)`}}},
	{"node.services malformed", clusterHead + "node:\n  services:\n    - auth/x\n    - auth/\n    - /0\n    - auth/0/1\n    - \"\"\n    - auth/-1\n",
		[][]string{
			{file + ":13:", `node.services: "auth/x" is not an actor name or an instance such as "player/0"`},
			{file + ":14:", `node.services: "auth/" is not an actor name`},
			{file + ":15:", `node.services: "/0" is not an actor name`},
			{file + ":16:", `node.services: "auth/0/1" is not an actor name`},
			{file + ":17:", `node.services: "" is not an actor name`},
			{file + ":18:", `node.services: "auth/-1" is not an actor name`},
		}},
	{"node.services not a string", clusterHead + "node: {services: [7]}\n",
		[][]string{{file + ":11:", "node.services: must be a string, got the integer 7"}}},
	{"node.services not a list", clusterHead + "node: {services: auth}\n",
		[][]string{{file + ":11:", `node.services: must be a list, got the string "auth"`}}},
	{"node.services duplicate actor", clusterHead + "node:\n  services:\n    - auth\n    - auth\n",
		[][]string{{file + ":14:", `node.services: "auth" listed twice (first at line 13)`}}},
	{"node.services duplicate instance", shardedHead + "node:\n  services:\n    - auth/1\n    - auth/1\n",
		[][]string{{file + ":12:", `node.services: "auth/1" listed twice (first at line 11)`}}},
	{"node.services instance after its actor", shardedHead + "node:\n  services:\n    - auth\n    - auth/1\n",
		[][]string{{file + ":12:", `node.services: "auth/1" is already hosted through "auth" (line 11)`}}},
	{"node.services actor after its instance", shardedHead + "node:\n  services:\n    - auth/0\n    - auth\n",
		[][]string{{file + ":12:", `node.services: "auth" covers "auth/0" (line 11): list one of them`}}},
	{"node without listeners or services", "cluster: {embedded: \"127.0.0.1:4222\"}\nnode: {services: []}\n" + actorsOnly,
		[][]string{{file + ":2:", "node: no network.listeners and node.services is []: the node would neither serve clients nor host an actor"}}},
	{"node without listeners outside a cluster", "node: {name: svc}\n" + actorsOnly,
		[][]string{{file + ": ", "network.listeners: at least one listener is required"}}},
	{"unknown key node services", valid + "node: {service: [auth]}\n",
		[][]string{{file + ":10:", `node: unknown key "service" (did you mean "services"?)`}}},

	// cluster.
	{"cluster nats and embedded", valid + "cluster:\n  nats: nats://127.0.0.1:4222\n  embedded: 127.0.0.1:4222\n",
		[][]string{{file + ":12:", "cluster: nats and embedded are alternatives: set one of them"}}},
	{"cluster without nats or embedded", valid + "cluster: {prefix: eu}\n",
		[][]string{{file + ":10:", "cluster: nats or embedded is required"}}},
	{"cluster empty", valid + "cluster: {}\n",
		[][]string{{file + ":10:", "cluster: nats or embedded is required"}}},
	{"cluster not a mapping", valid + "cluster: nats://127.0.0.1:4222\n",
		[][]string{{file + ":10:", `cluster: must be a mapping, got the string "nats://127.0.0.1:4222"`}}},
	{"cluster nats without scheme", valid + "cluster: {nats: \"127.0.0.1:4222\"}\n",
		[][]string{{file + ":10:", `cluster.nats: "127.0.0.1:4222" is not a NATS URL such as "nats://127.0.0.1:4222" (schemes nats, tls, ws, wss)`}}},
	{"cluster nats http", valid + "cluster: {nats: \"http://127.0.0.1:4222\"}\n",
		[][]string{{file + ":10:", `cluster.nats: "http://127.0.0.1:4222" is not a NATS URL`}}},
	{"cluster nats empty item", valid + "cluster: {nats: \"nats://a:4222,,nats://b:4222\"}\n",
		[][]string{{file + ":10:", `cluster.nats: "" is not a NATS URL`}}},
	{"cluster nats empty", valid + "cluster: {nats: \"\"}\n",
		[][]string{{file + ":10:", "cluster.nats: must not be empty"}}},
	{"cluster embedded not host:port", valid + "cluster: {embedded: \"4222\"}\n",
		[][]string{{file + ":10:", `cluster.embedded: "4222" is not host:port`}}},
	{"cluster prefix with a dot", valid + "cluster: {embedded: \":4222\", prefix: shield.eu}\n",
		[][]string{{file + ":10:", `cluster.prefix: "shield.eu" may hold only letters, digits, '_' and '-' (it is the first token of every NATS subject)`}}},
	{"cluster prefix wildcard", valid + "cluster: {embedded: \":4222\", prefix: \">\"}\n",
		[][]string{{file + ":10:", `cluster.prefix: ">" may hold only letters, digits`}}},
	{"cluster prefix empty", valid + "cluster: {embedded: \":4222\", prefix: \"\"}\n",
		[][]string{{file + ":10:", "cluster.prefix: must not be empty"}}},
	{"cluster zero heartbeat", valid + "cluster: {embedded: \":4222\", heartbeat: 0s}\n",
		[][]string{{file + ":10:", `cluster.heartbeat: must be above zero, got "0s"`}}},
	{"cluster node_timeout below twice the heartbeat", valid + "cluster:\n  embedded: \":4222\"\n  heartbeat: 2s\n",
		[][]string{{file + ":12:", "cluster.node_timeout: 3s must be at least twice heartbeat (2s)"}}},
	{"cluster short node_timeout", valid + "cluster:\n  embedded: \":4222\"\n  node_timeout: 1500ms\n",
		[][]string{{file + ":12:", "cluster.node_timeout: 1.5s must be at least twice heartbeat (1s)"}}},
	{"unknown key cluster", valid + "cluster: {embedded: \":4222\", nodetimeout: 5s}\n",
		[][]string{{file + ":10:", `cluster: unknown key "nodetimeout" (did you mean "node_timeout"?)`}}},
	{"unknown key top cluster", valid + "clustr: {}\n",
		[][]string{{file + ":10:", `the top level: unknown key "clustr" (did you mean "cluster"?)`}}},

	// tracing.
	{"tracing endpoint not http", valid + "tracing: {enabled: true, endpoint: \"grpc://127.0.0.1:4317\"}\n",
		[][]string{{file + ":10:", `tracing.endpoint: "grpc://127.0.0.1:4317" is not an http(s) URL such as "http://127.0.0.1:4318/v1/traces"`}}},
	{"tracing endpoint no host", valid + "tracing: {endpoint: \"http:///v1/traces\"}\n",
		[][]string{{file + ":10:", `tracing.endpoint: "http:///v1/traces" is not an http(s) URL`}}},
	{"tracing endpoint empty", valid + "tracing: {endpoint: \"\"}\n",
		[][]string{{file + ":10:", "tracing.endpoint: must not be empty"}}},
	{"tracing ratio above 1", valid + "tracing: {sample_ratio: 1.5}\n",
		[][]string{{file + ":10:", "tracing.sample_ratio: 1.5 is out of range [0, 1]"}}},
	{"tracing ratio negative", valid + "tracing: {sample_ratio: -0.1}\n",
		[][]string{{file + ":10:", "tracing.sample_ratio: -0.1 is out of range [0, 1]"}}},
	{"tracing ratio not a number", valid + "tracing: {sample_ratio: half}\n",
		[][]string{{file + ":10:", `tracing.sample_ratio: must be a number from 0 to 1, got the string "half"`}}},
	{"tracing enabled not a bool", valid + "tracing: {enabled: yes please}\n",
		[][]string{{file + ":10:", "tracing.enabled: must be"}}},
	{"unknown key tracing", valid + "tracing: {sample_rate: 0.5}\n",
		[][]string{{file + ":10:", `tracing: unknown key "sample_rate" (did you mean "sample_ratio"?)`}}},

	// storage.
	{"unknown key storage", valid + "storage: {bucket: []}\n",
		[][]string{{file + ":10:", `storage: unknown key "bucket" (did you mean "buckets"?)`}}},
	{"storage replicas 0", valid + "storage: {replicas: 0}\n",
		[][]string{{file + ":10:", "storage.replicas: 0 is out of range"}}},
	{"storage replicas 6", valid + "storage: {replicas: 6}\n",
		[][]string{{file + ":10:", "storage.replicas: 6 is out of range"}}},
	{"storage empty data_dir", valid + "storage: {data_dir: \"\"}\n",
		[][]string{{file + ":10:", "storage.data_dir: must not be empty"}}},
	{"storage buckets not a list", valid + "storage: {buckets: players}\n",
		[][]string{{file + ":10:", `storage.buckets: must be a list, got the string "players"`}}},
	{"bucket not a mapping", valid + "storage: {buckets: [players]}\n",
		[][]string{{file + ":10:", `storage.buckets[0]: must be a mapping, got the string "players"`}}},
	{"bucket without name", valid + "storage: {buckets: [{ttl: 1h}]}\n",
		[][]string{{file + ":10:", "storage.buckets[0]: name is required"}}},
	{"bucket bad name", valid + "storage: {buckets: [{name: my bucket}]}\n",
		[][]string{{file + ":10:", `storage.buckets[0].name: "my bucket" may hold only letters, digits, '_' and '-' (a JetStream bucket name)`}}},
	{"bucket name with a dot", valid + "storage: {buckets: [{name: a}, {name: b.c}]}\n",
		[][]string{{file + ":10:", `storage.buckets[1].name: "b.c" may hold only`}}},
	{"bucket names twice", valid + "storage:\n  buckets:\n    - {name: players}\n    - {name: players, ttl: 1h}\n",
		[][]string{{file + ":13:", `bucket "players": name used twice (first at line 12)`}}},
	{"bucket zero max_value_bytes", valid + "storage: {buckets: [{name: players, max_value_bytes: 0}]}\n",
		[][]string{{file + ":10:", "storage.buckets[0].max_value_bytes: 0 is out of range (at least 1)"}}},
	{"bucket negative ttl", valid + "storage: {buckets: [{name: players, ttl: -1s}]}\n",
		[][]string{{file + ":10:", `storage.buckets[0].ttl: must not be negative, got "-1s"`}}},
	{"bucket ttl not a duration", valid + "storage: {buckets: [{name: players, ttl: forever}]}\n",
		[][]string{{file + ":10:", `storage.buckets[0].ttl: "forever" is not a duration`}}},
	{"unknown key bucket", valid + "storage: {buckets: [{name: players, tll: 1h}]}\n",
		[][]string{{file + ":10:", `storage.buckets[0]: unknown key "tll" (did you mean "ttl"?)`}}},

	// network.admin play and token.
	{"admin play not a bool", "network:\n  admin: {address: \":9100\", play: \"yes\"}\n" + listenersHead[len("network:\n"):] + authHead[len(listenersHead):],
		[][]string{{file + ":2:", `network.admin.play: must be true or false, got the string "yes"`}}},
	{"admin token not a string", "network:\n  admin: {address: \":9100\", token: 1234}\n" + listenersHead[len("network:\n"):] + authHead[len(listenersHead):],
		[][]string{{file + ":2:", "network.admin.token: must be a string, got the integer 1234"}}},
	{"admin token with a space", "network:\n  admin: {address: \":9100\", token: \"a b\"}\n" + listenersHead[len("network:\n"):] + authHead[len(listenersHead):],
		[][]string{{file + ":2:", "network.admin.token: must not hold spaces or control characters"}}},
	{"admin token with a newline", "network:\n  admin: {address: \":9100\", token: \"ab\\n\"}\n" + listenersHead[len("network:\n"):] + authHead[len(listenersHead):],
		[][]string{{file + ":2:", "network.admin.token: must not hold spaces or control characters"}}},
	{"unknown key admin token", "network:\n  admin: {address: \":9100\", tokn: x}\n" + listenersHead[len("network:\n"):] + authHead[len(listenersHead):],
		[][]string{{file + ":2:", `network.admin: unknown key "tokn" (did you mean "token"?)`}}},

	// lua.http.
	{"http allow without port", valid + "lua: {http: {allow: [example.com]}}\n",
		[][]string{{file + ":10:", `lua.http.allow: "example.com" is not host:port (such as "api.example.com:443")`}}},
	{"http allow without host", valid + "lua: {http: {allow: [\":443\"]}}\n",
		[][]string{{file + ":10:", `lua.http.allow: ":443" has no host`}}},
	{"http allow named port", valid + "lua: {http: {allow: [\"example.com:https\"]}}\n",
		[][]string{{file + ":10:", `lua.http.allow: "example.com:https": the port must be a number 1..65535`}}},
	{"http allow port 0", valid + "lua:\n  http:\n    allow:\n      - example.com:443\n      - example.com:0\n      - \"[::1]:65536\"\n      - example.com:+80\n",
		[][]string{
			{file + ":14:", `lua.http.allow: "example.com:0": the port must be a number 1..65535`},
			{file + ":15:", `lua.http.allow: "[::1]:65536": the port must be a number 1..65535`},
			{file + ":16:", `lua.http.allow: "example.com:+80": the port must be a number 1..65535`},
		}},
	{"http allow not a string", valid + "lua: {http: {allow: [443]}}\n",
		[][]string{{file + ":10:", "lua.http.allow: must be a string, got the integer 443"}}},
	{"http allow not a list", valid + "lua: {http: {allow: \"a.example:443\"}}\n",
		[][]string{{file + ":10:", `lua.http.allow: must be a list, got the string "a.example:443"`}}},
	{"http zero timeout", valid + "lua: {http: {timeout: 0s}}\n",
		[][]string{{file + ":10:", `lua.http.timeout: must be above zero, got "0s"`}}},
	{"http zero max_response_bytes", valid + "lua: {http: {max_response_bytes: 0}}\n",
		[][]string{{file + ":10:", "lua.http.max_response_bytes: 0 is out of range (at least 1)"}}},
	{"http not a mapping", valid + "lua: {http: [a]}\n",
		[][]string{{file + ":10:", "lua.http: must be a mapping, got a list"}}},
	{"unknown key http", valid + "lua: {http: {alow: []}}\n",
		[][]string{{file + ":10:", `lua.http: unknown key "alow" (did you mean "allow"?)`}}},

	// The session keys of resume, auth and outbound bytes.
	{"zero outbound_queue_bytes", valid + "session: {outbound_queue_bytes: 0}\n",
		[][]string{{file + ":10:", "session.outbound_queue_bytes: 0 is out of range (at least 1)"}}},
	{"small auth_max_frame_bytes", valid + "session: {auth_max_frame_bytes: 5}\n",
		[][]string{{file + ":10:", "session.auth_max_frame_bytes: 5 is out of range: 0 (the listener's max_frame_bytes) or 16..1073741824"}}},
	{"negative auth_max_frame_bytes", valid + "session: {auth_max_frame_bytes: -1}\n",
		[][]string{{file + ":10:", "session.auth_max_frame_bytes: -1 is out of range: 0 (the listener's max_frame_bytes) or 16..1073741824"}}},
	{"huge auth_max_frame_bytes", valid + "session: {auth_max_frame_bytes: 0x7fffffffffffffff}\n",
		[][]string{{file + ":10:", "session.auth_max_frame_bytes: 0x7fffffffffffffff is out of range: 0"}}},
	{"auth_max_frame_bytes not an int", valid + "session: {auth_max_frame_bytes: big}\n",
		[][]string{{file + ":10:", `session.auth_max_frame_bytes: must be an integer, got the string "big"`}}},
	{"negative auth_timeout", valid + "session: {auth_timeout: -1s}\n",
		[][]string{{file + ":10:", `session.auth_timeout: must not be negative, got "-1s"`}}},
	{"resume_window not a duration", valid + "session: {resume_window: soon}\n",
		[][]string{{file + ":10:", `session.resume_window: "soon" is not a duration such as "15s" or "250ms"`}}},
	{"resume_window without unit", valid + "session: {resume_window: 5}\n",
		[][]string{{file + ":10:", `session.resume_window: must be a duration such as "15s", got the integer 5`}}},
	{"unknown key session resume", valid + "session: {resume_windw: 5s}\n",
		[][]string{{file + ":10:", `session: unknown key "resume_windw" (did you mean "resume_window"?)`}}},

	// handler_timeout's limit.
	{"handler_timeout above the limit", authHead + "    handler_timeout: 90s\n",
		[][]string{{file + ":7:", `actor "auth": handler_timeout: 90s is above the limit of 60s`}}},
	{"handler_timeout just above the limit", authHead + "    handler_timeout: 60001ms\n",
		[][]string{{file + ":7:", `actor "auth": handler_timeout: 60001ms is above the limit of 60s`}}},

	// Settings: any mapping, of what the JSON <-> Lua mapping can carry.
	{"settings a list", authHead + "    settings: [1]\n",
		[][]string{{file + ":7:", `actor "auth": settings: must be a mapping, got a list`}}},
	{"settings a scalar", authHead + "    settings: 5\n",
		[][]string{{file + ":7:", `actor "auth": settings: must be a mapping, got the integer 5`}}},
	{"settings integer key", authHead + "    settings: {1: a}\n",
		[][]string{{file + ":7:", `actor "auth": settings: keys must be strings, got the integer 1 (quote it)`}}},
	{"settings nested integer key", authHead + "    settings:\n      levels: {2: x}\n",
		[][]string{{file + ":8:", `actor "auth": settings.levels: keys must be strings, got the integer 2`}}},
	{"settings key in a list", authHead + "    settings: {a: [x, {true: 1}]}\n",
		[][]string{{file + ":7:", `actor "auth": settings.a[1]: keys must be strings, got the boolean true`}}},
	{"settings null key", authHead + "    settings: {~: 1}\n",
		[][]string{{file + ":7:", `actor "auth": settings: keys must be strings, got null`}}},
	{"settings list key", authHead + "    settings: {[a]: 1}\n",
		[][]string{{file + ":7:", `actor "auth": settings: keys must be strings, got a list`}}},
	{"settings duplicate key", authHead + "    settings:\n      a: 1\n      a: 2\n",
		[][]string{{file + ":9:", `actor "auth": settings: key "a" appears twice (first at line 8)`}}},
	{"settings infinity", authHead + "    settings: {x: .inf}\n",
		[][]string{{file + ":7:", `actor "auth": settings.x: .inf is not a finite number`}}},
	{"settings nan", authHead + "    settings:\n      x: [1, .NaN]\n",
		[][]string{{file + ":8:", `actor "auth": settings.x[1]: .NaN is not a finite number`}}},
	{"settings unknown tag", authHead + "    settings: {x: !secret abc}\n",
		[][]string{{file + ":7:", `actor "auth": settings.x: the YAML tag !secret is not supported`}}},
	{"settings tagged mapping", authHead + "    settings: {x: !point {a: 1}, y: !list [1]}\n",
		[][]string{
			{file + ":7:", `actor "auth": settings.x: the YAML tag !point is not supported`},
			{file + ":7:", `actor "auth": settings.y: the YAML tag !list is not supported`},
		}},
	{"settings tagged", authHead + "    settings: !config {a: 1}\n",
		[][]string{{file + ":7:", `actor "auth": settings: the YAML tag !config is not supported`}}},
	{"settings bad binary", authHead + "    settings: {x: !!binary \"%%%\"}\n",
		[][]string{{file + ":7:", `actor "auth": settings.x: "%%%" is not a valid !!binary`}}},
	{"settings integer beyond 64 bits", authHead + "    settings: {x: 18446744073709551615}\n",
		[][]string{{file + ":7:", `actor "auth": settings.x: 18446744073709551615 is not an integer of 64 bits`}}},
	{"settings errors are all reported", authHead + "    settings:\n      a: .inf\n      b: {1: x}\n      c: ok\n",
		[][]string{
			{file + ":8:", `actor "auth": settings.a: .inf is not a finite number`},
			{file + ":9:", `actor "auth": settings.b: keys must be strings, got the integer 1`},
		}},
	{"unknown key actor settings", authHead + "    setings: {}\n",
		[][]string{{file + ":7:", `actor "auth": actor: unknown key "setings" (did you mean "settings"?)`}}},
}

func TestParseErrors(t *testing.T) {
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := config.Parse(file, []byte(tc.src))
			expectErrors(t, errs, tc.want)
		})
	}
}

// TestParseErrorCount keeps the table honest: the issue asks for one case
// per rule, at least 25 of them.
func TestParseErrorCount(t *testing.T) {
	if len(errCases) < 30 {
		t.Fatalf("%d error cases, want at least 30", len(errCases))
	}
}

// expectErrors checks that errs are exactly want, in order: each message
// must start with the first piece and contain every other piece.
func expectErrors(t testing.TB, errs config.Errors, want [][]string) {
	t.Helper()
	got := make([]string, len(errs))
	for i, e := range errs {
		got[i] = e.Error()
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, pieces := range want {
		if !strings.HasPrefix(got[i], pieces[0]) {
			t.Errorf("error %d = %q\nwant it to start with %q", i, got[i], pieces[0])
		}
		for _, p := range pieces[1:] {
			if !strings.Contains(got[i], p) {
				t.Errorf("error %d = %q\nwant it to contain %q", i, got[i], p)
			}
		}
	}
}
