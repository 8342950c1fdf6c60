// Package kv is the store behind shield.kv (SPEC §11): NATS JetStream
// key-value buckets, one per entry of storage.buckets. It implements
// luavm.KV, which is all the VMs know of it.
//
// A Store reaches JetStream in one of two ways:
//
//   - embedded (no cluster): Start runs a nats-server inside the process
//     with JetStream on, listening on no port, keeping its files in
//     storage.data_dir, and connects to it in-process;
//   - given a connection (a cluster's, see Options.Conn and UseConn): it
//     uses that connection's NATS, which must have JetStream enabled, and
//     neither runs a server nor closes the connection. A cluster that
//     embeds its own NATS server applies ServerOptions to it, so that the
//     node runs one server, with its JetStream files in storage.data_dir.
//
// Either way Start creates each declared bucket, or updates its settings
// (max value size, TTL), before any VM's init runs, and Close, after every
// VM stopped, shuts down what Start made.
//
// Each key is one subject of the bucket's stream, holding one message:
// its revision is the message's stream sequence, so every write of a
// bucket gets a larger revision than any before. Delete purges the key's
// subject instead of writing a delete marker, so that a deleted key is in
// every way a key that was never written: create works again, update
// conflicts, keys leaves it out, and no marker is left to accumulate.
package kv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/metrics"
)

// Errors of a store that cannot serve; the VMs raise client_rpc.unavailable
// for them (and for any other error of NATS).
var (
	// ErrNotStarted is an operation before Start succeeded, or after Close.
	ErrNotStarted = errors.New("the store is not running")
	// ErrDisconnected is an operation while the connection to NATS is
	// down (a cluster's NATS being reconnected to): it fails at once
	// rather than waiting out the handler's budget.
	ErrDisconnected = errors.New("the store's NATS connection is down")
)

// headerRoom is what a write may carry besides its value: the
// expected-revision header of create and update. The stream's and the
// connection's size limits leave room for it, so that the one limit a
// script meets is max_value_bytes, checked by the VM.
const headerRoom = 512

// maxPayload is the largest message an embedded server takes: NATS's own
// ceiling for max_payload (its max_pending default).
const maxPayload = 64 << 20

// Options tune a Store.
type Options struct {
	Logger *slog.Logger // nil: slog.Default()
	// Conn, if set, is the connection to use instead of an embedded
	// server (UseConn sets it later). The store never closes it.
	Conn *nats.Conn
	// Metrics, if set, times every operation (shield_kv_op_seconds).
	Metrics *metrics.Metrics
}

// Store is shield.kv's store. Its operations are safe for concurrent use.
type Store struct {
	dataDir  string
	buckets  []config.Bucket
	max      map[string]int // bucket -> max_value_bytes; fixed at New
	log      *slog.Logger
	ops      *prometheus.HistogramVec // nil: not timed
	replicas int                      // storage.replicas

	mu        sync.Mutex // guards conn until Start
	conn      *nats.Conn
	live      atomic.Pointer[live] // set by Start, cleared by Close
	closeOnce sync.Once
}

// live is a started store: the connection, the buckets, and what the store
// runs itself.
type live struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	buckets map[string]*bucket
	srv     *server.Server // the embedded server; nil with a given conn
	lock    *dirLock       // storage.data_dir, while the embedded server uses it
	own     bool           // nc is the store's own, to close
}

// bucket is one declared bucket, bound.
type bucket struct {
	kv     jetstream.KeyValue
	stream jetstream.Stream
	subj   string // "$KV.<name>.": its keys' subject prefix
}

// New returns the store of cfg (its DataDir already resolved against the
// config's folder). Nothing runs until Start.
func New(cfg config.Storage, opts Options) *Store {
	s := &Store{dataDir: cfg.DataDir, buckets: cfg.Buckets, max: map[string]int{}, log: opts.Logger, conn: opts.Conn,
		replicas: max(cfg.Replicas, 1)}
	if opts.Metrics != nil {
		s.ops = opts.Metrics.EnableKV().Ops
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("component", "kv")
	for _, b := range cfg.Buckets {
		s.max[b.Name] = b.MaxValueBytes
	}
	return s
}

// UseConn makes the store use nc (a cluster's connection) instead of an
// embedded server. It must be called before Start.
func (s *Store) UseConn(nc *nats.Conn) {
	s.mu.Lock()
	s.conn = nc
	s.mu.Unlock()
}

// Start connects (running the embedded server first, when no connection
// was given) and creates or updates every bucket. ctx bounds it.
func (s *Store) Start(ctx context.Context) (err error) {
	s.mu.Lock()
	nc := s.conn
	s.mu.Unlock()
	l := &live{buckets: map[string]*bucket{}}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if nc == nil {
		if l.lock, err = lockDir(s.dataDir); err != nil {
			return err
		}
		if l.srv, err = startServer(ctx, config.Storage{DataDir: s.dataDir, Buckets: s.buckets}, s.log); err != nil {
			return err
		}
		if nc, err = nats.Connect("", nats.InProcessServer(l.srv), nats.Name("shield-kv")); err != nil {
			return fmt.Errorf("storage: connecting to the embedded NATS server: %w", err)
		}
		l.own = true
	}
	l.nc = nc
	if !l.own {
		// The cluster's connection may not be up yet (a node started
		// before its NATS): the buckets need it, and so does the VMs'
		// init after this, so the start waits for it, within ctx.
		if err := waitConnected(ctx, nc, s.log); err != nil {
			return err
		}
	}
	for _, b := range s.buckets {
		if limit := nc.MaxPayload(); int64(b.MaxValueBytes+headerRoom) > limit {
			return fmt.Errorf("storage: bucket %q: max_value_bytes %d is more than NATS carries (max_payload %d, less %d for headers)",
				b.Name, b.MaxValueBytes, limit, headerRoom)
		}
	}
	if l.js, err = jetstream.New(nc); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	for _, b := range s.buckets {
		kb, err := openBucketRetrying(ctx, l.js, b, s.replicas, s.log)
		if err != nil {
			return err
		}
		l.buckets[b.Name] = kb
	}
	s.live.Store(l)
	s.log.Info("storage ready", "buckets", len(s.buckets), "embedded", l.srv != nil, "data_dir", s.dataDirIf(l))
	return nil
}

func (s *Store) dataDirIf(l *live) string {
	if l.srv == nil {
		return ""
	}
	return s.dataDir
}

// openBucket creates the bucket of b, or updates its settings, and binds
// its stream.
// bucketTry bounds one attempt to create or update a bucket: JetStream
// can leave a request unanswered (two nodes creating one replicated
// bucket at once while its servers elect a leader), and one unanswered
// try must not hold the start until its end.
const bucketTry = 10 * time.Second

// waitConnected waits until nc is connected, logging once that it waits.
func waitConnected(ctx context.Context, nc *nats.Conn, log *slog.Logger) error {
	if nc.IsConnected() {
		return nil
	}
	log.Warn("storage: waiting for the cluster's NATS connection before opening the buckets")
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !nc.IsConnected() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("storage: NATS not reachable: %w", ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// openBucketRetrying is openBucket, each try bounded by bucketTry and
// tried again, within ctx, when it did not finish.
func openBucketRetrying(ctx context.Context, js jetstream.JetStream, b config.Bucket, replicas int, log *slog.Logger) (*bucket, error) {
	for {
		try, cancel := context.WithTimeout(ctx, bucketTry)
		kb, err := openBucket(try, js, b, replicas)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return kb, err
		}
		log.Warn("storage: a bucket's creation got no answer in time; trying again", "bucket", b.Name, "after", bucketTry.String())
	}
}

func openBucket(ctx context.Context, js jetstream.JetStream, b config.Bucket, replicas int) (*bucket, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:       b.Name,
		Replicas:     replicas,
		History:      1,
		TTL:          b.TTL,
		MaxValueSize: int32(min(b.MaxValueBytes+headerRoom, 1<<31-1)),
		Storage:      jetstream.FileStorage,
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return nil, fmt.Errorf("storage: bucket %q: the NATS server does not have JetStream enabled", b.Name)
		}
		return nil, fmt.Errorf("storage: bucket %q: %w", b.Name, err)
	}
	stream, err := js.Stream(ctx, "KV_"+b.Name)
	if err != nil {
		return nil, fmt.Errorf("storage: bucket %q: %w", b.Name, err)
	}
	return &bucket{kv: kv, stream: stream, subj: "$KV." + b.Name + "."}, nil
}

// Close shuts down what Start made: the in-process connection and the
// embedded server, whose files are then complete on disk. A given
// connection is left open. Close is safe to call more than once, and
// before or without Start.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if l := s.live.Swap(nil); l != nil {
			l.close()
		}
	})
	return nil
}

// close undoes a live store, or as much of one as Start made.
func (l *live) close() {
	if l.own && l.nc != nil {
		l.nc.Close()
	}
	if l.srv != nil {
		l.srv.Shutdown()
		l.srv.WaitForShutdown()
	}
	if l.lock != nil {
		l.lock.unlock()
	}
}

// bucket returns a started store's bucket, or why there is none.
func (s *Store) bucket(name string) (*bucket, error) {
	l := s.live.Load()
	if l == nil {
		return nil, ErrNotStarted
	}
	if l.nc.Status() != nats.CONNECTED {
		return nil, ErrDisconnected
	}
	b, ok := l.buckets[name]
	if !ok {
		// The VM checks buckets first; this is a caller outside it.
		return nil, fmt.Errorf("no bucket %q in storage.buckets", name)
	}
	return b, nil
}

// MaxValueBytes is a declared bucket's max_value_bytes.
func (s *Store) MaxValueBytes(bucket string) (int, bool) {
	n, ok := s.max[bucket]
	return n, ok
}

// timed observes an operation on a declared bucket that began at start
// (an undeclared name is an error, not a series of its own).
func (s *Store) timed(bucket, op string, start time.Time) {
	if s.ops == nil {
		return
	}
	if _, ok := s.max[bucket]; ok {
		s.ops.WithLabelValues(bucket, op).Observe(time.Since(start).Seconds())
	}
}

// checkKey guards the store's own callers; the VM checks keys first, with
// the same rule.
func checkKey(key string) error {
	if !luavm.ValidKey(key) {
		return fmt.Errorf("invalid key %q", key)
	}
	return nil
}

// Get returns key's value and revision, or revision 0 when it is absent.
func (s *Store) Get(ctx context.Context, bucket, key string) ([]byte, uint64, error) {
	defer s.timed(bucket, "get", time.Now())
	b, err := s.bucket(bucket)
	if err == nil {
		err = checkKey(key)
	}
	if err != nil {
		return nil, 0, err
	}
	e, err := b.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	return e.Value(), e.Revision(), nil
}

// Put stores value under key and returns its revision.
func (s *Store) Put(ctx context.Context, bucket, key string, value []byte) (uint64, error) {
	defer s.timed(bucket, "put", time.Now())
	b, err := s.bucket(bucket)
	if err == nil {
		err = checkKey(key)
	}
	if err != nil {
		return 0, err
	}
	return b.kv.Put(ctx, key, value)
}

// Create stores value under key if the key is absent, and returns its
// revision, or 0 when the key exists.
func (s *Store) Create(ctx context.Context, bucket, key string, value []byte) (uint64, error) {
	defer s.timed(bucket, "create", time.Now())
	b, err := s.bucket(bucket)
	if err == nil {
		err = checkKey(key)
	}
	if err != nil {
		return 0, err
	}
	rev, err := b.kv.Create(ctx, key, value)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, nil
	}
	return rev, err
}

// Update stores value under key if its revision is revision, and returns
// the new revision, or 0 when the key is absent or at another revision.
// The check and the write are one JetStream publish (expected last
// sequence of the key's subject), so no other write can come between.
func (s *Store) Update(ctx context.Context, bucket, key string, value []byte, revision uint64) (uint64, error) {
	defer s.timed(bucket, "update", time.Now())
	b, err := s.bucket(bucket)
	if err == nil {
		err = checkKey(key)
	}
	if err != nil {
		return 0, err
	}
	if revision == 0 {
		return 0, nil // 0 would mean "absent" to JetStream: never a match
	}
	rev, err := b.kv.Update(ctx, key, value, revision)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return 0, nil
	}
	return rev, err
}

// Delete removes key by purging its subject: no delete marker is left.
func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	defer s.timed(bucket, "delete", time.Now())
	b, err := s.bucket(bucket)
	if err == nil {
		err = checkKey(key)
	}
	if err != nil {
		return err
	}
	return b.stream.Purge(ctx, jetstream.WithPurgeSubject(b.subj+key))
}

// Keys returns the keys that start with prefix, sorted, at most limit of
// them. The stream's per-subject state lists every live key in one
// request (paged by the client for large buckets); when prefix holds a
// '.', the part before its last one narrows the subjects asked for.
func (s *Store) Keys(ctx context.Context, bucket, prefix string, limit int) ([]string, error) {
	defer s.timed(bucket, "keys", time.Now())
	b, err := s.bucket(bucket)
	if err != nil {
		return nil, err
	}
	filter := b.subj + ">"
	if i := strings.LastIndexByte(prefix, '.'); i > 0 && luavm.ValidKey(prefix[:i]) {
		filter = b.subj + prefix[:i] + ".>"
	}
	info, err := b.stream.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		if key, ok := strings.CutPrefix(subj, b.subj); ok && strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	if len(keys) > limit {
		keys = keys[:limit]
	}
	return keys, nil
}

var _ luavm.KV = (*Store)(nil)
