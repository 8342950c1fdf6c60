// Package statesync is the rooms' state codec (docs/rooms.md sections 7
// and 8): the values a room's state may hold, the changes between two
// versions of it, their composition across versions, members' views, and
// the bytes of a state frame (format 1, section 8.2), split into parts
// that fit room.max_frame_bytes.
//
// It knows nothing of Lua, sessions or the gateway: the server side (the
// room runtime) walks a room's Lua table into a tree and calls Diff,
// Compose, View.Filter and AppendDelta; a client (the Go SDK) feeds the
// bodies it receives to a Tracker. clients/ts/src/room.ts is the same
// decoder and applier in TypeScript, and both are held to the vectors
// TestWriteVectors writes (clients/ts/test/fixtures/statesync-vectors.json).
//
// A state is a tree: a map[string]any whose values are bool, int64,
// float64, string and map[string]any (int is accepted on the way in). The
// synced number rule of section 7.1 holds everywhere: an integral number
// of magnitude at most 2^53 is an int64, any other finite number a
// float64.
//
// The pieces, in the order data flows through them on the server:
//
//	Diff(old, new)         the Changes of one version (ops in path order,
//	                       each with what its path held before)
//	Compose(c1, c2, ...)   one Changes covering several versions
//	View.Filter(changes)   the ops a member with that view sees
//	AppendDelta/Snapshot   the frame bodies, split at op boundaries
//
// and on a client:
//
//	Decode(body)           one frame, every rule of 8.2 checked
//	Tracker.Receive(body)  section 8.3: parts, bases, gaps, END
//	Apply(tree, ops)       all of a version's ops or none
package statesync
