package luavm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/tracing"
)

// KV is the store behind shield.kv (SPEC §11): key-value buckets, each
// declared in storage.buckets. Package kv implements it on NATS JetStream;
// luavm knows only this interface. Its methods are called from op
// goroutines (ops.go), many at once, never from the actor's; bucket names
// and keys reach them already checked, values as compact JSON.
//
// Outcomes that the script handles are results, not errors: revision 0
// from Get is an absent key, from Create a key that exists, from Update a
// conflict. Any error means the store failed: the VM raises
// client_rpc.timeout when ctx's deadline passed, client_rpc.unavailable
// otherwise.
type KV interface {
	// MaxValueBytes is a declared bucket's max_value_bytes, and false for
	// a bucket that is not declared. It does not block.
	MaxValueBytes(bucket string) (int, bool)
	// Get returns a key's value and revision; revision 0 when absent.
	Get(ctx context.Context, bucket, key string) (value []byte, revision uint64, err error)
	// Put stores value and returns its revision.
	Put(ctx context.Context, bucket, key string, value []byte) (uint64, error)
	// Create stores value if the key is absent: its revision, or 0.
	Create(ctx context.Context, bucket, key string, value []byte) (uint64, error)
	// Update stores value if the key's revision is revision: the new
	// revision, or 0 (absent, or another revision).
	Update(ctx context.Context, bucket, key string, value []byte, revision uint64) (uint64, error)
	// Delete removes a key; an absent key is no error.
	Delete(ctx context.Context, bucket, key string) error
	// Keys returns the keys that start with prefix ("": all), sorted, at
	// most limit of them (the first in that order).
	Keys(ctx context.Context, bucket, prefix string, limit int) ([]string, error)
}

// MaxKeys is how many keys shield.kv.keys returns at most (SPEC §11).
const MaxKeys = 10000

// MaxKeyLength is the longest key (SPEC §11).
const MaxKeyLength = 255

// ValidKey reports whether key is a shield.kv key (SPEC §11): 1 to 255
// characters of A-Z a-z 0-9 _ - = . /, not starting or ending with '.',
// without "..". Package kv checks keys with it too.
func ValidKey(key string) bool {
	if key == "" || len(key) > MaxKeyLength || key[0] == '.' || key[len(key)-1] == '.' || strings.Contains(key, "..") {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-=./", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// installKV adds shield.kv to the shield table: every function suspends
// its task only, as an op.
func (vm *VM) installKV(sh *lua.LTable, check *lua.LFunction) {
	t := vm.l.NewTable()
	for name, fn := range map[string]lua.LGFunction{
		"get": vm.luaKVGet, "put": vm.luaKVPut, "create": vm.luaKVCreate,
		"update": vm.luaKVUpdate, "delete": vm.luaKVDelete, "keys": vm.luaKVKeys,
	} {
		t.RawSetString(name, vm.suspending(check, fn))
	}
	sh.RawSetString("kv", t)
}

// kvCall is one shield.kv call, checked: what every function needs first.
type kvCall struct {
	name   string // "shield.kv.get", for messages
	t      *task
	store  KV
	bucket string
	max    int // the bucket's max_value_bytes
}

// kvBegin checks what every shield.kv function takes first: a running
// task, a store (without storage, SPEC §11: unavailable), and a declared
// bucket (else a plain error naming it).
func (vm *VM) kvBegin(L *lua.LState, fn string) *kvCall {
	c := &kvCall{name: "shield.kv." + fn}
	c.t = vm.running(L, c.name)
	c.store = vm.spec.KV
	if c.store == nil {
		vm.raise(L, codes.Unavailable, "%s: no storage is configured (add a storage block with its buckets)", c.name)
	}
	c.bucket = L.CheckString(1)
	max, ok := c.store.MaxValueBytes(c.bucket)
	if !ok {
		misuse(L, "%s: bucket %s is not in storage.buckets", c.name, quoteShort(c.bucket))
	}
	c.max = max
	return c
}

// key checks argument n as a key, raising a plain error that names it.
func (c *kvCall) key(L *lua.LState, n int) string {
	key := L.CheckString(n)
	if !ValidKey(key) {
		misuse(L, "%s: key %s is not a valid key (1 to 255 of A-Z a-z 0-9 _ - = . /, not starting or ending with '.', no '..')",
			c.name, quoteShort(key))
	}
	return key
}

// value encodes argument n as the compact JSON a bucket stores: nil is
// misuse (delete removes a key), a value that cannot be JSON a plain
// error, and one longer than the bucket's max_value_bytes (or than
// lua.max_string_bytes, while encoding) resource_exhausted.
func (vm *VM) kvValue(L *lua.LState, c *kvCall, n int) []byte {
	v := L.Get(n)
	if v == lua.LNil {
		misuse(L, "%s: the value is nil: use shield.kv.delete to remove a key", c.name)
	}
	b, err := EncodeValue(L, v)
	switch {
	case errors.Is(err, codec.ErrTooLarge):
		vm.raise(L, codes.ResourceExhausted, "%s: %v", c.name, err)
	case err != nil:
		misuse(L, "%s: the value cannot be stored: %v", c.name, err)
	case len(b) > c.max:
		vm.raise(L, codes.ResourceExhausted, "%s: the value is %d bytes of JSON, over the max_value_bytes of bucket %s (%d)", c.name, len(b), c.bucket, c.max)
	}
	return b
}

// run starts the call's op under the task's budget: a kv call has no
// deadline of its own (SPEC §11: no answer within the handler's budget is
// client_rpc.timeout).
func (vm *VM) kvRun(L *lua.LState, c *kvCall, run func(ctx context.Context) (opOutcome, error)) int {
	return vm.startOp(L, c.t, c.name, tracing.String("shield.bucket", c.bucket), c.t.deadline, func(ctx context.Context) opOutcome {
		out, err := run(ctx)
		if err == nil {
			return out
		}
		if ctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
			return failed(codes.Timeout, "%s: bucket %s: no answer within the handler's budget", c.name, c.bucket)
		}
		return failed(codes.Unavailable, "%s: bucket %s: %v", c.name, c.bucket, err)
	})
}

// revisionOr returns revision rev, or nil and reason when rev is 0.
func revisionOr(rev uint64, reason string) opOutcome {
	if rev == 0 {
		return returned(lua.LNil, lua.LString(reason))
	}
	return returned(idValue(rev))
}

// shield.kv.get(bucket, key) -> value, revision | nil.
func (vm *VM) luaKVGet(L *lua.LState) int {
	c := vm.kvBegin(L, "get")
	key := c.key(L, 2)
	return vm.kvRun(L, c, func(ctx context.Context) (opOutcome, error) {
		val, rev, err := c.store.Get(ctx, c.bucket, key)
		if err != nil || rev == 0 {
			return returned(lua.LNil), err
		}
		return func(vm *VM) []lua.LValue {
			v, err := DecodeValue(vm.l, val)
			if err != nil || v == lua.LNil {
				// Written by something other than shield.kv.
				return misused("%s: bucket %s key %s holds a value that is not JSON", c.name, c.bucket, key)(vm)
			}
			return []lua.LValue{lua.LTrue, v, idValue(rev)}
		}, nil
	})
}

// shield.kv.put(bucket, key, value) -> revision.
func (vm *VM) luaKVPut(L *lua.LState) int {
	c := vm.kvBegin(L, "put")
	key := c.key(L, 2)
	val := vm.kvValue(L, c, 3)
	return vm.kvRun(L, c, func(ctx context.Context) (opOutcome, error) {
		rev, err := c.store.Put(ctx, c.bucket, key, val)
		return returned(idValue(rev)), err
	})
}

// shield.kv.create(bucket, key, value) -> revision | nil, "exists".
func (vm *VM) luaKVCreate(L *lua.LState) int {
	c := vm.kvBegin(L, "create")
	key := c.key(L, 2)
	val := vm.kvValue(L, c, 3)
	return vm.kvRun(L, c, func(ctx context.Context) (opOutcome, error) {
		rev, err := c.store.Create(ctx, c.bucket, key, val)
		return revisionOr(rev, "exists"), err
	})
}

// shield.kv.update(bucket, key, value, revision) -> revision | nil,
// "conflict".
func (vm *VM) luaKVUpdate(L *lua.LState) int {
	c := vm.kvBegin(L, "update")
	key := c.key(L, 2)
	val := vm.kvValue(L, c, 3)
	rev, ok := idFrom(L.Get(4))
	if !ok || rev == 0 {
		misuse(L, "%s: the revision must be a positive integer, as get, put, create and update return", c.name)
	}
	return vm.kvRun(L, c, func(ctx context.Context) (opOutcome, error) {
		next, err := c.store.Update(ctx, c.bucket, key, val, rev)
		return revisionOr(next, "conflict"), err
	})
}

// shield.kv.delete(bucket, key) -> true, whether or not the key was there.
func (vm *VM) luaKVDelete(L *lua.LState) int {
	c := vm.kvBegin(L, "delete")
	key := c.key(L, 2)
	return vm.kvRun(L, c, func(ctx context.Context) (opOutcome, error) {
		return returned(lua.LTrue), c.store.Delete(ctx, c.bucket, key)
	})
}

// shield.kv.keys(bucket, prefix) -> the sorted keys that start with
// prefix (nil or "": all), at most MaxKeys of them, as an array.
func (vm *VM) luaKVKeys(L *lua.LState) int {
	c := vm.kvBegin(L, "keys")
	var prefix string
	switch p := L.Get(2).(type) {
	case lua.LString:
		prefix = string(p)
	case *lua.LNilType:
	default:
		misuse(L, "%s: the prefix must be a string or nil", c.name)
	}
	return vm.kvRun(L, c, func(ctx context.Context) (opOutcome, error) {
		keys, err := c.store.Keys(ctx, c.bucket, prefix, MaxKeys)
		if err != nil {
			return nil, err
		}
		return func(vm *VM) []lua.LValue {
			t := vm.l.CreateTable(len(keys), 0)
			for _, k := range keys {
				t.Append(lua.LString(k))
			}
			_ = codec.MarkArray(vm.l, t) // a fresh table: no metatable to conflict with
			return []lua.LValue{lua.LTrue, t}
		}, nil
	})
}

// quoteShort quotes s for a message, at most its first 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q...", s[:64])
	}
	return fmt.Sprintf("%q", s)
}
