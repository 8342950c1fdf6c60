---@meta shield

-- Shield's Lua API, for the Lua language server (LuaLS / sumneko): point the
-- server at this folder ("workspace.library": ["lua/types"]) and editors
-- complete and check every shield.* call in a service script.
--
-- This file is never loaded by Shield: the real `shield` global is built in
-- Go (luavm/shield.go and luavm/shield_*.go).
-- luavm/annotations_test.go fails when a function the VM registers has no
-- annotated stub here, or a stub here names a function the VM lacks.
-- The guide is docs/lua-api.md; the contract is SPEC §8.

---------------------------------------------------------------------------
-- Values handed to a service
---------------------------------------------------------------------------

---The first argument of every handler, method and hook: who is running and
---until when.
---@class ShieldCtx
---@field service string The service (actor) name, as in actors.yaml.
---@field instance integer This VM's instance index, 0-based.
---@field deadline integer When this run's budget ends, in unix milliseconds.

---A session at one epoch, as plain data: store it, pass it to another
---service, push to it later. Ids above 2^53 are decimal strings.
---@class ShieldClientRef
---@field session_id integer|string The gateway's session id.
---@field epoch integer|string The binding's epoch; every bind increments it.
---@field player_id? string The bound player; nil before bind.
---@field gateway string The gateway's node name (node.name).

---The trusted ClientContext of a client frame (the handler's `client`):
---read-only, nothing in it comes from the body. It is a userdata whose fields
---are read on access (assigning one raises); pairs, json.encode and the
---JSON mapping see it as the table of its fields.
---@class ShieldClient: ShieldClientRef
---@field route string The route's name ("" when the route has none).
---@field route_id integer The route id of the frame.
---@field request_id integer|string The request id; 0 for a notify.
---@field remote_addr string The peer's address, "ip:port".

---@alias ClientContext ShieldClient

---An error raised by a shield.* function or by shield.error: a table with a
---__tostring that prints "code: message", so pcall can inspect it.
---@class ShieldError
---@field code string A client_rpc.* code, or a business code such as "shop.sold_out".
---@field message string A human-readable message ("" when none was given).

---Where shield.call and shield.send go: a service name, or a service and a
---shard key for a service with instances > 1 (the VM is fnv1a64(key) % instances).
---@alias ShieldAddress string|{service: string, key?: string}

---One push target, or an array of them (the body is encoded once).
---@alias ShieldPushTarget ShieldClient|ShieldClientRef|(ShieldClient|ShieldClientRef)[]

---Why a session closed, as client_disconnected receives it.
---@alias ShieldDisconnectReason
---| "closed"
---| "kicked"
---| "idle_timeout"
---| "protocol_error"
---| "write_failed"
---| "slow_consumer"
---| "rate_limited"
---| "draining"
---| "auth_timeout"
---| "gateway_lost"

---The sentinel that JSON null decodes to and that encodes as null.
---@class ShieldNull: userdata

---A c2s or bidi handler: its first result is the response body; returning
---nothing sends an empty body.
---@alias ShieldHandler fun(ctx: ShieldCtx, client: ShieldClient, req: any): any

---The table a service script returns. Route bindings and shield.call
---methods are its other functions: a handler is
---`fun(ctx, client, req)`, a method `fun(ctx, ...)`.
---@class ShieldModule
---Hooks are run by the runtime only: shield.call and shield.send refuse them
---(and a client route's handler) with client_rpc.unavailable.
---@field init? fun(ctx: ShieldCtx) Runs once per VM before serving; raising fails the start.
---@field stop? fun(ctx: ShieldCtx) Runs once per VM at shutdown.
---@field draining? fun(ctx: ShieldCtx) Runs once per VM when the gateway starts draining.
---@field client_bound? fun(ctx: ShieldCtx, client: ShieldClientRef) Runs first when a bind makes this VM a session's target.
---@field client_suspended? fun(ctx: ShieldCtx, client: ShieldClientRef) Runs when a session lost its connection and waits for a resume.
---@field client_resumed? fun(ctx: ShieldCtx, client: ShieldClientRef) Runs when a connection resumed the session.
---@field client_disconnected? fun(ctx: ShieldCtx, client: ShieldClientRef, reason: ShieldDisconnectReason) Runs when a session bound to this VM closes.
---@field reload_save? fun(ctx: ShieldCtx): any Runs in the old VM of a reload; returns the state (plain data) handed to the new one.
---@field reload_load? fun(ctx: ShieldCtx, state: any) Runs in the new VM of a reload, instead of init, when the old module had reload_save.
---@field [string] function Handlers (ShieldHandler) and methods for shield.call/send.

---------------------------------------------------------------------------
-- The shield module: a global in every VM, and require("shield")
---------------------------------------------------------------------------

---The Shield API (SPEC §8). The functions that wait (call, sleep, client.bind, kv.*, http.*)
---suspend the calling coroutine; inside Lua that a Go function runs (a table.sort comparator, a
---string.gsub callback, a metamethod, a for iterator, a module's top level under require) they
---raise "attempt to yield across metamethod/C-call boundary" instead, as Lua 5.1 does.
---@class shield
shield = {}

---Calls `method` of another service (or this one) and waits for its results; only this coroutine suspends.
---Raises a ShieldError: client_rpc.timeout, client_rpc.unavailable,
---client_rpc.busy, the callee's business error, or client_rpc.handler_failed.
---@param addr ShieldAddress The service name, or {service = name, key = shard key}.
---@param method string A function of the callee's module, called as fn(ctx, ...).
---@param ... any Arguments, copied under the JSON mapping (no functions, coroutines or userdata).
---@return any ... The callee's return values.
function shield.call(addr, method, ...) end

---Sends a message to `method` of a service without waiting; the result is lost.
---@param addr ShieldAddress The service name, or {service = name, key = shard key}.
---@param method string A function of the callee's module, called as fn(ctx, ...).
---@param ... any Arguments, copied as plain data.
---@return true|nil ok true when the message was queued.
---@return string? code client_rpc.unavailable or client_rpc.busy when it was not.
function shield.send(addr, method, ...) end

---Suspends the calling coroutine for `ms` milliseconds; the VM serves other messages meanwhile.
---Raises client_rpc.busy past max_pending; the handler's budget keeps running.
---@param ms number Milliseconds to wait (negative counts as 0).
function shield.sleep(ms) end

---Runs `fn` once, after `ms` milliseconds, as a message of its own with a fresh handler_timeout budget.
---Raises client_rpc.busy past max_pending.
---@param ms number Milliseconds to wait.
---@param fn fun() The callback; it gets no arguments.
---@return integer id The timer's id, for shield.cancel.
function shield.timeout(ms, fn) end

---Cancels a shield.timeout that has not fired yet.
---@param id integer An id returned by shield.timeout.
---@return boolean cancelled true when the timer was still pending.
function shield.cancel(id) end

---Returns the wall-clock time in unix milliseconds.
---@return integer ms
function shield.now() end

---Returns this VM's service name and instance index (0-based).
---@return string service
---@return integer instance
function shield.self() end

---Raises a business error {code, message}: a request's client gets this code and message on its error frame.
---The code must match ^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$ outside client_rpc., session. and gateway.;
---any other code raises a plain error instead (the client sees client_rpc.handler_failed).
---@param code string A business code, e.g. "shop.sold_out".
---@param message? string A message for the client ("" when absent).
function shield.error(code, message) end

---Marks `t` (or a new empty table) as a JSON array, so it encodes as [] even when empty.
---Raises when `t` already has another metatable.
---@generic T: table
---@param t? T The table to mark; a new one when absent.
---@return T t The same table.
function shield.array(t) end

---Returns a new copy of the actor's `settings` mapping from the config (an empty table without
---one): YAML mappings as tables, sequences as arrays, null as shield.null. Writing into the copy
---changes nothing anyone else sees.
---@return table settings
function shield.settings() end

---The sentinel for JSON null: null inside a decoded array or object, and encoded as null.
---Compare with `v == shield.null`; tostring gives "null".
---@type ShieldNull
shield.null = nil

---------------------------------------------------------------------------
-- shield.log: structured logs (slog) carrying service and instance
---------------------------------------------------------------------------

---Structured logging at the levels of `log.level`.
---@class shield.log
shield.log = {}

---Logs `msg` at debug level with key/value pairs (tables are logged as JSON).
---@param msg string The message.
---@param ... any Alternating keys and values: "player_id", id, "room", room.
function shield.log.debug(msg, ...) end

---Logs `msg` at info level with key/value pairs (tables are logged as JSON).
---@param msg string The message.
---@param ... any Alternating keys and values.
function shield.log.info(msg, ...) end

---Logs `msg` at warn level with key/value pairs (tables are logged as JSON).
---@param msg string The message.
---@param ... any Alternating keys and values.
function shield.log.warn(msg, ...) end

---Logs `msg` at error level with key/value pairs (tables are logged as JSON).
---@param msg string The message.
---@param ... any Alternating keys and values.
function shield.log.error(msg, ...) end

---------------------------------------------------------------------------
-- shield.json: the JSON <-> Lua mapping of SPEC §8
---------------------------------------------------------------------------

---JSON text to and from Lua values, with the same mapping as request and response bodies.
---@class shield.json
shield.json = {}

---Encodes a value as compact JSON with sorted keys; raises (a plain error) for functions, userdata, NaN, invalid UTF-8 or cycles.
---@param value any A table, string, number, boolean, nil or shield.null.
---@return string json
function shield.json.encode(value) end

---Decodes one JSON value: objects to tables, arrays to marked sequences, null to shield.null, integers above 2^53 to strings.
---Raises a plain error for invalid JSON.
---@param json string The JSON text.
---@return any value
function shield.json.decode(json) end

---------------------------------------------------------------------------
-- shield.client: session operations (through the gateway)
---------------------------------------------------------------------------

---Session operations on a ClientContext or ClientRef.
---@class shield.client
shield.client = {}

---Returns a ClientRef (session_id, epoch, player_id, gateway): plain data to store and pass on.
---@param client ShieldClient|ShieldClientRef The handler's client, or a ref.
---@return ShieldClientRef ref
function shield.client.ref(client) end

---Binds the session to `player_id` and the service `target` by compare-and-set on the epoch; returns the new ref.
---Raises client_rpc.epoch_expired, client_rpc.not_target, client_rpc.player_online,
---client_rpc.session_not_found, client_rpc.gateway_mismatch or client_rpc.unavailable.
---@param client ShieldClient|ShieldClientRef The session, at the epoch the caller saw.
---@param player_id string The player to bind (non-empty); with instances > 1 it picks the VM.
---@param target string The service that receives the session's frames from now on.
---@return ShieldClientRef ref The session at its new epoch.
function shield.client.bind(client, player_id, target) end

---Closes the session with a session.kicked notice whose message is `reason`, if the ref is still current.
---@param client ShieldClient|ShieldClientRef The session to close.
---@param reason? string The notice's message ("kicked" when absent).
---@return true|nil ok true when the session was closed.
---@return string? code Why not: client_rpc.epoch_expired, client_rpc.session_not_found, ...
function shield.client.kick(client, reason) end

---------------------------------------------------------------------------
-- shield.client_rpc: one push helper per s2c/bidi route this service owns
---------------------------------------------------------------------------

---Push helpers, named by the bindings of the s2c and bidi routes whose owner
---is this service: shield.client_rpc.<binding>(target, body).
---For one target: true, or nil and a code. For an array: the number accepted,
---and a table mapping each rejected index (1-based) to its code.
---@type table<string, fun(target: ShieldClient|ShieldClientRef|(ShieldClient|ShieldClientRef)[], body: any): (true|integer|nil), (string|table<integer, string>|nil)>
shield.client_rpc = {}

---------------------------------------------------------------------------
-- shield.kv: key-value buckets of storage.buckets, on NATS JetStream (SPEC §11)
---------------------------------------------------------------------------

---Rooms (docs/rooms.md): a room kind is an actor with a room: block; each room is one VM of its
---own, made by shield.room.create, ticking room_tick at room.tick_hz. Being built (docs/rooms.md §16).
---@class shield.room
shield.room = {}

---Makes a room of a kind (docs/rooms.md §4.3) and returns its id once room_init returned; waits
---like shield.call. Raises client_rpc.unavailable ("player" is not a room service), client_rpc.busy
---(room.max_rooms), client_rpc.timeout, or room_init's error.
---@param kind string A room kind: an actor with a room block.
---@param params table? Copied (the JSON mapping) and handed to room_init.
---@return string room_id
function shield.room.create(kind, params) end

---Joins the session to a room (docs/rooms.md §4.4): the room's room_join decides, then the session
---is bound to the room with this VM as its return target. Returns the session's new ClientRef.
---Raises client_rpc.room_not_found, room_full, join_refused, in_room, or room_join's code.
---@param client any The session's client or ClientRef, at its current epoch; this VM must be its target.
---@param room_id string
---@param opts table? {token = string, meta = any}
---@return table ref
function shield.room.join(client, room_id, opts) end

---The room of this VM (ctx.room), or nil outside a room VM.
---@return table?
function shield.room.current() end

---Matchmaking (docs/rooms.md §4.5, §9): each queue of the config's match block forms rooms of its
---kind from compatible tickets and pushes each player a "matched" event on shield.match (65524)
---with the room and a seat token for shield.room.join.
---@class shield.match
shield.match = {}

---Puts the client's player in a queue and returns its ticket id, "<queue>/<16 hex>"; waits like
---shield.call. The matched push goes to this client (its epoch now). Raises client_rpc.unavailable
---(no such queue, the node is stopping), client_rpc.busy (max_tickets), client_rpc.already_queued
---(the player waits in this queue), client_rpc.timeout; bad props or query raise a plain error.
---@param client any A bound client or ClientRef.
---@param queue string A queue of match.queues.
---@param props table<string, string|number|boolean>? At most 16; keys of a-z 0-9 _, values <= 64 bytes.
---@param query table<string, string|number|boolean|{min: number?, max: number?}>? Equality or a range per key.
---@return string ticket
function shield.match.enqueue(client, queue, props, query) end

---Cancels a ticket: true if it was waiting (it is then in no match), false if it was matched,
---expired, cancelled or unknown. Raises client_rpc.unavailable or client_rpc.timeout.
---@param ticket string
---@return boolean
function shield.match.cancel(ticket) end

---A key-value store that survives restarts. Every function suspends only the calling
---coroutine (like shield.call), runs within the handler's budget and works inside pcall.
---Raises client_rpc.unavailable without a storage block or when the store cannot be reached,
---client_rpc.timeout when it does not answer within the handler's budget, client_rpc.busy past
---max_pending; a bucket not in storage.buckets or a bad key raises a plain error naming it.
---Keys: 1 to 255 of A-Z a-z 0-9 _ - = . /, not starting or ending with ".", no "..".
---@class shield.kv
shield.kv = {}

---Reads a key: its value and revision, or nil when the key is absent (a stored null is shield.null).
---@param bucket string A bucket of storage.buckets.
---@param key string The key.
---@return any value The value, or nil.
---@return integer? revision The revision of that value.
function shield.kv.get(bucket, key) end

---Writes a value (any value of the JSON mapping; nil is an error: use delete) and returns its revision.
---Raises client_rpc.resource_exhausted when its JSON is longer than the bucket's max_value_bytes.
---@param bucket string A bucket of storage.buckets.
---@param key string The key.
---@param value any A table, string, number, boolean or shield.null.
---@return integer revision Larger than every revision the bucket gave before.
function shield.kv.put(bucket, key, value) end

---Writes a value only if the key is absent: its revision, or nil, "exists".
---@param bucket string A bucket of storage.buckets.
---@param key string The key.
---@param value any A table, string, number, boolean or shield.null.
---@return integer|nil revision
---@return "exists"|nil why
function shield.kv.create(bucket, key, value) end

---Writes a value only if the key's revision is `revision` (compare-and-set): the new revision, or nil,
---"conflict" when the key is absent or was written since.
---@param bucket string A bucket of storage.buckets.
---@param key string The key.
---@param value any A table, string, number, boolean or shield.null.
---@param revision integer The revision the caller read (a positive integer).
---@return integer|nil revision
---@return "conflict"|nil why
function shield.kv.update(bucket, key, value, revision) end

---Removes a key; returns true, for an absent key too. create works again after it.
---@param bucket string A bucket of storage.buckets.
---@param key string The key.
---@return true
function shield.kv.delete(bucket, key) end

---Lists the keys that start with the plain string `prefix` (nil or "": all), sorted, at most the first 10,000.
---@param bucket string A bucket of storage.buckets.
---@param prefix? string A plain prefix, no pattern.
---@return string[] keys An array (encodes as [] when empty).
function shield.kv.keys(bucket, prefix) end

---------------------------------------------------------------------------
-- shield.http: calls to the hosts of lua.http.allow (SPEC §11)
---------------------------------------------------------------------------

---What shield.http.request sends.
---@class ShieldHTTPRequest
---@field method? string "GET" when absent.
---@field url string An http:// or https:// URL whose host:port is in lua.http.allow (no port: 80 or 443).
---@field headers? table<string, string> Request headers, name -> value.
---@field body? string The request body.

---What shield.http.request returns, whatever the status.
---@class ShieldHTTPResponse
---@field status integer The HTTP status (a 3xx is returned as it is: redirects are not followed).
---@field headers table<string, string> Canonical names ("Content-Type"); repeated values joined with ", ".
---@field body string The body, decoded (gzip), at most lua.http.max_response_bytes.

---HTTP calls out of the VM.
---@class shield.http
shield.http = {}

---Sends an HTTP request and waits for the answer; only this coroutine suspends, and pcall works around it.
---Raises client_rpc.unavailable for a host:port not in lua.http.allow (before anything is sent) and
---for a failure to connect (refused, DNS, TLS); client_rpc.timeout after min(lua.http.timeout, the
---handler's budget); client_rpc.resource_exhausted for a body over lua.http.max_response_bytes;
---client_rpc.busy past max_pending. Any status is returned, never raised.
---@param req ShieldHTTPRequest
---@return ShieldHTTPResponse resp
function shield.http.request(req) end

---------------------------------------------------------------------------
-- shield.crypto and shield.base64: hashes, MACs, random bytes (SPEC §11)
---------------------------------------------------------------------------

---Hashes and MACs from Go's crypto packages, over Lua strings (any bytes).
---@class shield.crypto
shield.crypto = {}

---Returns the SHA-256 digest of `s` as 64 lowercase hex digits.
---@param s string The bytes to hash.
---@return string hex
function shield.crypto.sha256(s) end

---Returns the HMAC-SHA-256 of `s` under `key` as 64 lowercase hex digits.
---@param key string The secret key (any bytes, any length).
---@param s string The message.
---@return string hex
function shield.crypto.hmac_sha256(key, s) end

---Returns `n` bytes from the operating system's cryptographic random source (a binary string).
---An `n` that is not an integer from 1 to 1024 raises a plain error.
---@param n integer How many bytes, 1..1024.
---@return string bytes
function shield.crypto.random(n) end

---Compares two strings in time that depends only on their lengths: use it for MACs and tokens.
---@param a string
---@param b string
---@return boolean equal
function shield.crypto.equal(a, b) end

---Base64 with the standard alphabet and padding (RFC 4648 section 4).
---@class shield.base64
shield.base64 = {}

---Encodes any bytes as standard base64 with padding.
---@param s string The bytes.
---@return string text
function shield.base64.encode(s) end

---Decodes standard base64 with padding and no whitespace; bad input returns nil, "invalid"; "" decodes to "".
---@param s string The base64 text.
---@return string|nil bytes
---@return "invalid"|nil err
function shield.base64.decode(s) end

return shield
