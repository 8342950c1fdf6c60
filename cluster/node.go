// Package cluster runs Shield on several processes (SPEC §10): gateways
// and service nodes that share the work through NATS, behind the same
// interfaces the one-process wiring uses. A Node is a gateway.Services
// (frames and session messages reach instances hosted here directly, the
// others over NATS), an egress.Sink (answers, pushes, binds and kicks
// reach this node's gateway directly, another gateway over NATS) and the
// runtime's service.Remote (calls and their results between nodes). The
// gateway and the services do not know where the other side runs;
// bootstrap chooses. Without a cluster key nothing here runs.
package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	pb "github.com/shieldrpc/shield/cluster/clusterpb"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/gateway"
	"github.com/shieldrpc/shield/metrics"
	"github.com/shieldrpc/shield/service"
)

// Options are a Node's dependencies.
type Options struct {
	Config  *config.Config // with a Cluster
	Table   *descriptor.Table
	Runtime *service.Runtime // compiled with this node's instances only
	Metrics *metrics.Metrics // nil: a private set
	Logger  *slog.Logger     // nil: slog.Default()
	// OnFatal runs when the node finds it was declared dead by the others
	// (SPEC §10: it exits at once with status 1), or is refused after a
	// start that went on without NATS. nil: log and os.Exit(1).
	OnFatal func(error)
	// Embedded, if set, edits the options of the NATS server the node
	// embeds (cluster.embedded) before it starts: bootstrap turns on
	// JetStream there for shield.kv (SPEC §11: in a cluster, the kv store
	// is the cluster's NATS).
	Embedded func(*server.Options)
}

// slack is how long past a budget the node waits for an answer before it
// gives the answer itself: the callee answers timeout at the budget, and
// its answer needs time to cross.
const slack = time.Second

// bindWait bounds a bind at another gateway (a bind carries no budget).
const bindWait = 30 * time.Second

// Node is this process's membership of a cluster.
type Node struct {
	cfg  *config.Config
	cl   *config.Cluster
	name string
	subj subjects
	rt   *service.Runtime
	gw   *gateway.Gateway // nil: no listeners (a service node); set by AttachGateway
	// roomKinds are the room kinds this node hosts, and roomMax their
	// max_rooms, for its heartbeat (rooms.go).
	roomKinds []string
	roomMax   map[string]int
	// replies are the answers onReply holds for the gateway, on the
	// replies subscription's goroutine only (remote.go).
	replies []*egress.Response
	// batch is onResponseBatch's scratch, on the same goroutine.
	batch struct {
		ids       []uint64
		responses [][]byte
		rs        []egress.Response
	}
	edge    atomic.Pointer[descriptor.Edge] // the route table's edge projection; swapped by SetTable
	m       *metrics.Metrics
	cm      *metrics.Cluster
	log     *slog.Logger
	onFatal func(error)
	// embedded edits the embedded NATS server's options (Options.Embedded).
	embedded func(*server.Options)
	self     *peer                    // this node as its presence messages describe it
	budgets  map[string]time.Duration // handler_timeout by service

	srv *server.Server // the embedded NATS server; nil with cluster.nats
	nc  *nats.Conn

	connected   atomic.Bool
	connectedAt atomic.Int64  // unix nanoseconds of the latest (re)connect
	joined      atomic.Bool   // the start-up checks passed
	lateJoin    atomic.Bool   // the checks of a node that started without NATS have begun
	serving     atomic.Bool   // subscribed and announced
	serveWanted atomic.Bool   // Serve ran before the start-up checks passed: serve once they have
	links       atomic.Uint64 // how many times the NATS connection has come up (Presence.links)
	leaving     atomic.Bool
	dead        atomic.Bool // declared dead, or dropped out (Abandon): nothing more is sent

	pend   *pendingTable
	peers  *peerTable
	owners *owners

	subsMu    sync.Mutex // guards serveSubs
	serveSubs []*nats.Subscription

	stop      chan struct{}
	stopOnce  sync.Once
	loops     sync.WaitGroup
	fatalOnce sync.Once
}

var (
	_ gateway.Services = (*Node)(nil)
	_ egress.Sink      = (*Node)(nil)
	_ service.Remote   = (*Node)(nil)
)

// New joins the cluster: it starts the embedded NATS server if the config
// has one, connects, and runs SPEC §10's start-up checks against the live
// nodes (a name or an instance taken, another route table), returning the
// refusal, which names the other node. It does not serve yet: Serve
// announces the node once the services have started. When NATS cannot be
// reached within node_timeout, New returns a node that keeps trying; the
// checks then run when it connects, and a refusal then is fatal.
func New(ctx context.Context, o Options) (*Node, error) {
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	cfg := o.Config
	instances := map[string]int{}
	for _, a := range cfg.Actors {
		instances[a.Name] = a.Instances
	}
	n := &Node{cfg: cfg, cl: cfg.Cluster, name: cfg.Node.Name, subj: newSubjects(cfg.Cluster.Prefix, instances),
		rt: o.Runtime, m: o.Metrics, cm: o.Metrics.EnableCluster(), log: o.Logger.With("node", cfg.Node.Name),
		onFatal: o.OnFatal, embedded: o.Embedded, budgets: map[string]time.Duration{}, pend: newPendingTable(), peers: newPeerTable(),
		owners: newOwners(), stop: make(chan struct{}), roomMax: map[string]int{}}
	n.self = &peer{name: n.name, inc: incarnation(), gateway: len(cfg.Network.Listeners) > 0, hash: TableHash(cfg, o.Table),
		started: time.Now().UnixNano()}
	for i := range cfg.Actors {
		a := &cfg.Actors[i]
		n.budgets[a.Name] = a.HandlerTimeout
		if a.Room != nil {
			// A room kind is hosted by many nodes at once: no instance
			// of its own, its rooms are reached by their ids.
			if len(cfg.HostedInstances(a.Name)) > 0 {
				n.roomKinds = append(n.roomKinds, a.Name)
				n.roomMax[a.Name] = a.Room.MaxRooms
			}
			continue
		}
		for _, inst := range cfg.HostedInstances(a.Name) {
			n.self.instances = append(n.self.instances, egress.ActorID{Service: a.Name, Instance: inst})
		}
	}
	for _, q := range cfg.Match.Queues {
		if cfg.HostsQueue(q.Name) {
			n.self.instances = append(n.self.instances, service.QueueActor(q.Name))
		}
	}
	n.edge.Store(o.Table.Edge())
	n.cm.Nodes.Set(1)
	n.lateJoin.Store(true) // New runs the checks itself, unless NATS is not there yet
	if err := n.connect(); err != nil {
		n.Close()
		return nil, err
	}
	// The first connection is awaited for node_timeout at most: a node
	// that cannot reach NATS starts unready and keeps trying (SPEC §10).
	wait, cancel := context.WithTimeout(ctx, n.cl.NodeTimeout)
	defer cancel()
	for !n.connected.Load() {
		select {
		case <-wait.Done():
			n.log.Warn("cluster: NATS not reachable yet; starting unready and retrying", "nats", n.natsURL())
			n.lateJoin.Store(false)
			if n.connected.Load() {
				n.joinLater() // it connected just now
			}
			return n, nil
		case <-time.After(10 * time.Millisecond): // polling the connect callback, bounded by wait
		}
	}
	if err := n.join(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// incarnation is a random name for this process's membership.
func incarnation() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TableHash is the hash two nodes compare at start (SPEC §10): the merged
// route table, every field that decides a frame's fate at the edge or in a
// VM, and every actor's instances.
func TableHash(cfg *config.Config, t *descriptor.Table) string {
	h := sha256.New()
	for _, r := range t.Routes() {
		fmt.Fprintf(h, "route %d %q %q %s %q %t %s %q %q\n", r.ID, r.Name, r.Binding, r.Direction, r.Owner,
			r.RequiresAuth, r.Action, r.RequestCodec, r.RequestSchema)
	}
	for _, a := range cfg.Actors {
		fmt.Fprintf(h, "actor %q %d\n", a.Name, a.Instances)
		if a.Room != nil {
			fmt.Fprintf(h, "room kind %q\n", a.Name) // docs/rooms.md §11.2
		}
	}
	for _, q := range cfg.Match.Queues {
		fmt.Fprintf(h, "queue %q %q\n", q.Name, q.Room)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Name is the node's name.
func (n *Node) Name() string { return n.name }

// Incarnation is this process's random membership name: a node that
// restarts under the same name is another member.
func (n *Node) Incarnation() string { return n.self.inc }

// AttachGateway makes gw this node's gateway: refs naming this node reach
// it directly, and its subject is served. Call it before Serve.
func (n *Node) AttachGateway(gw *gateway.Gateway) { n.gw = gw }

// natsURL is what the node dials: the embedded server, or cluster.nats.
func (n *Node) natsURL() string {
	if n.cl.Embedded != "" {
		return "nats://" + n.cl.Embedded
	}
	return n.cl.NATS
}

// SetTable makes t the route table this node checks pushes against and
// names batched frames' routes by (a reload, SPEC §12).
func (n *Node) SetTable(t *descriptor.Table) { n.edge.Store(t.Edge()) }

// Conn is the node's NATS connection, which the kv store shares (SPEC
// §11): one connection per node. It is set once New returned.
func (n *Node) Conn() *nats.Conn { return n.nc }

// connect starts the embedded server, if any, and the NATS connection,
// which reconnects for ever and buffers nothing while it is down: what
// needs another node meanwhile is answered unavailable at once.
func (n *Node) connect() error {
	if n.cl.Embedded != "" {
		host, portText, err := net.SplitHostPort(n.cl.Embedded)
		if err != nil {
			return fmt.Errorf("cluster.embedded: %w", err)
		}
		port, _ := strconv.Atoi(portText)
		opts := &server.Options{ServerName: n.name, Host: host, Port: port, NoLog: true, NoSigs: true}
		if n.embedded != nil {
			n.embedded(opts)
		}
		srv, err := server.NewServer(opts)
		if err != nil {
			return fmt.Errorf("cluster.embedded: %w", err)
		}
		go srv.Start()
		if !srv.ReadyForConnections(10 * time.Second) {
			srv.Shutdown()
			return fmt.Errorf("cluster.embedded: the NATS server on %s did not start (is the address taken?)", n.cl.Embedded)
		}
		n.srv = srv
		n.log.Info("cluster: embedded NATS server listening", "address", srv.ClientURL())
	}
	opts := []nats.Option{
		nats.Name("shield " + n.name),
		nats.NoEcho(), // nothing a node sends is for itself: its own instances and gateway are reached directly
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond),
		nats.ReconnectJitter(50*time.Millisecond, 50*time.Millisecond),
		nats.ReconnectBufSize(-1),
		nats.PingInterval(max(n.cl.Heartbeat, time.Second)),
		nats.MaxPingsOutstanding(2),
		nats.ConnectHandler(func(*nats.Conn) { n.onConnect(false) }),
		nats.ReconnectHandler(func(*nats.Conn) { n.onConnect(true) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { n.onDisconnect(err) }),
		nats.LameDuckModeHandler(func(nc *nats.Conn) {
			// The server goes away soon and asks its clients to move:
			// nats.go reconnects to another of cluster.nats's servers
			// when it closes; what is in flight then is answered
			// unavailable (onDisconnect), nothing is lost.
			n.cm.NATSEvents.WithLabelValues("lame_duck").Inc()
			n.log.Warn("cluster: the NATS server is entering lame-duck mode; this node moves to another when it closes",
				"nats", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			n.log.Warn("cluster: NATS error", "subject", subject, "error", err)
		}),
	}
	if n.srv != nil {
		// The embedded server is in this process: its connection is an
		// in-memory pipe, not a loopback socket, which saves each message
		// a write and a read system call and a poller wake-up on this
		// node (BENCHMARKS.md "The cluster's hop"). Other nodes still
		// reach the server on cluster.embedded.
		opts = append(opts, nats.InProcessServer(n.srv))
	}
	nc, err := nats.Connect(n.natsURL(), opts...)
	if err != nil {
		return fmt.Errorf("cluster: nats %s: %w", n.natsURL(), err)
	}
	n.nc = nc
	if _, err := n.subscribe(n.subj.presence(), n.onPresence); err != nil {
		return err
	}
	if _, err := n.subscribe(n.subj.replies(n.name), n.onReply); err != nil {
		return err
	}
	if nc.IsConnected() {
		n.onConnect(false)
	}
	n.loops.Add(1)
	go n.loop()
	return nil
}

// subscribe subscribes h to subject with no pending limit: every handler
// only decodes and enqueues, and a message NATS dropped for a slow
// consumer would be an answer lost.
func (n *Node) subscribe(subject string, h nats.MsgHandler) (*nats.Subscription, error) {
	sub, err := n.nc.Subscribe(subject, h)
	if err != nil {
		return nil, fmt.Errorf("cluster: subscribe %s: %w", subject, err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	return sub, nil
}

// onConnect runs when the connection is (again) up: every peer is counted
// as heard from now, and the node announces itself (or, while joining,
// its claim) so that the others know it is back.
func (n *Node) onConnect(again bool) {
	if n.connected.Swap(true) {
		return
	}
	n.cm.NATSConnected.Set(1)
	n.links.Add(1)
	now := time.Now()
	n.connectedAt.Store(now.UnixNano())
	n.peers.touchAll(now)
	if again {
		n.cm.NATSEvents.WithLabelValues("reconnected").Inc()
		n.log.Info("cluster: NATS connection restored", "nats", n.nc.ConnectedUrlRedacted())
	}
	switch {
	case !n.joined.Load():
		n.joinLater() // the checks first: it serves once they pass
	case n.serving.Load():
		n.announce(pb.Presence_HEARTBEAT)
		n.announce(pb.Presence_PROBE)
	}
}

// joinLater runs the start-up checks of a node that started without NATS,
// once, when it connects: a refusal then is fatal (SPEC §10: the node is
// not ready yet, and exits with status 1).
func (n *Node) joinLater() {
	if !n.lateJoin.CompareAndSwap(false, true) {
		return
	}
	n.loops.Add(1)
	go func() {
		defer n.loops.Done()
		err := n.join(context.Background())
		if err == nil && n.serveWanted.CompareAndSwap(true, false) {
			err = n.serve()
		}
		if err != nil {
			select {
			case <-n.stop:
			default:
				n.fatal(err)
			}
		}
	}()
}

// onDisconnect runs when the connection drops: what is in flight to other
// nodes will get no answer over it, so each gets unavailable now (exactly
// one answer; a reply that still comes is dropped), and until the
// connection is back every new one gets it at once.
func (n *Node) onDisconnect(err error) {
	if !n.connected.Swap(false) {
		return
	}
	n.cm.NATSConnected.Set(0)
	n.cm.NATSEvents.WithLabelValues("disconnected").Inc()
	if n.dead.Load() {
		return
	}
	n.log.Warn("cluster: NATS connection lost; answering what needs another node with unavailable until it is back", "error", err)
	for _, p := range n.pend.takeIf(func(*pending) bool { return true }) {
		n.settle(p, unavailable("the cluster's NATS connection was lost"))
	}
}

// join runs the start-up checks (SPEC §10): the node asks every live
// node to announce itself, says it is joining, listens for one heartbeat
// (so it has heard from every live node), then compares.
func (n *Node) join(ctx context.Context) error {
	n.announce(pb.Presence_JOINING)
	n.announce(pb.Presence_PROBE)
	t := time.NewTimer(n.cl.Heartbeat)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.stop:
		return errors.New("cluster: stopped while joining")
	}
	if err := n.peers.conflict(n.self); err != nil {
		return err
	}
	n.joined.Store(true)
	return nil
}

// Serve subscribes to this node's instances and, with a gateway, to the
// gateway's subject, and announces the node: from now on the others reach
// it. A node whose start-up checks have not run yet (it started before its
// NATS was reachable) does that once they pass; until then its instances
// take nothing from other nodes and its gateway answers every client frame
// client_rpc.unavailable (gateway.Hold), so a node the checks refuse never
// serves (SPEC §10).
func (n *Node) Serve() error {
	if !n.joined.Load() {
		if n.gw != nil {
			n.gw.Hold(true)
		}
		n.serveWanted.Store(true)
		n.log.Warn("cluster: not serving until NATS is reachable and the start-up checks have passed")
		if !n.joined.Load() || !n.serveWanted.CompareAndSwap(true, false) {
			return nil // the late join serves
		}
	}
	return n.serve()
}

func (n *Node) serve() error {
	var subs []*nats.Subscription
	for _, a := range n.self.instances {
		sub, err := n.subscribe(n.subj.instance(a), n.onInstance(a))
		if err != nil {
			return err
		}
		subs = append(subs, sub)
	}
	if n.gw != nil {
		sub, err := n.subscribe(n.subj.gateway(n.name), n.onGateway)
		if err != nil {
			return err
		}
		subs = append(subs, sub)
	}
	if len(n.roomKinds) > 0 {
		for subject, h := range map[string]nats.MsgHandler{n.subj.roomsOf(n.name): n.onRoom, n.subj.creates(n.name): n.onCreate} {
			sub, err := n.subscribe(subject, h)
			if err != nil {
				return err
			}
			subs = append(subs, sub)
		}
	}
	n.subsMu.Lock()
	n.serveSubs = subs
	n.subsMu.Unlock()
	if n.connected.Load() {
		// The subscriptions reach the server before the announcement
		// does: a node that hears of this one finds it subscribed.
		_ = n.nc.Flush()
	}
	n.serving.Store(true)
	n.announce(pb.Presence_HEARTBEAT)
	if n.gw != nil {
		n.gw.Hold(false)
	}
	n.log.Info("cluster: node serving", "incarnation", n.self.inc, "gateway", n.self.gateway, "instances", instanceNames(n.self.instances))
	return nil
}

// Ready is SPEC §10's readiness: connected, started (its checks passed and
// its instances announced), not leaving, and one heartbeat since it
// (re)connected, so it has heard from every live node.
func (n *Node) Ready() bool {
	if !n.connected.Load() || !n.joined.Load() || !n.serving.Load() || n.leaving.Load() || n.dead.Load() {
		return false
	}
	return time.Since(time.Unix(0, n.connectedAt.Load())) >= n.cl.Heartbeat
}

// Drain tells every node at once that this one is draining (its runtime's
// Drain has begun): placement passes it over from the next create on,
// rather than from its next heartbeat (docs/rooms.md §3.2).
func (n *Node) Drain() {
	if n == nil || !n.serving.Load() {
		return
	}
	n.announce(pb.Presence_HEARTBEAT)
}

// Leave is the end of this node's drain (SPEC §10): it stops taking
// messages for its instances and gateway and tells every node it is gone,
// so that they act at once rather than after node_timeout.
func (n *Node) Leave() {
	if n == nil || n.leaving.Swap(true) || n.dead.Load() {
		return
	}
	n.subsMu.Lock()
	subs := n.serveSubs
	n.serveSubs = nil
	n.subsMu.Unlock()
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
	n.serving.Store(false)
	n.publishPresence(&pb.Presence{Kind: pb.Presence_LEAVE, Node: n.name, Incarnation: n.self.inc})
	if n.connected.Load() {
		_ = n.nc.FlushTimeout(time.Second)
	}
	n.log.Info("cluster: node left the cluster", "incarnation", n.self.inc)
}

// Abandon drops out of the cluster the way a killed process does: no
// leave, no more heartbeats, the NATS connection closed. The others
// declare the node dead after node_timeout. It is for tests (in-process
// nodes cannot be sent SIGKILL); Close still has to run.
func (n *Node) Abandon() {
	n.dead.Store(true)
	n.serving.Store(false)
	if n.nc != nil {
		n.nc.Close()
	}
}

// Close ends the node: whatever is still in flight to other nodes gets
// unavailable, the connection closes, and the embedded server, if any,
// stops. Leave first for a graceful stop.
func (n *Node) Close() {
	if n == nil {
		return
	}
	n.stopOnce.Do(func() {
		close(n.stop)
		for _, p := range n.pend.close() {
			n.settle(p, unavailable("node %s is stopping", n.name))
		}
		if n.nc != nil {
			n.dead.Store(true)
			n.nc.Close()
		}
		n.loops.Wait()
		if n.srv != nil {
			n.srv.Shutdown()
			n.srv.WaitForShutdown()
		}
	})
}

// fatal ends the process (SPEC §10: a node declared dead exits at once
// with status 1; it cannot know what the others did meanwhile).
func (n *Node) fatal(err error) {
	n.fatalOnce.Do(func() {
		n.dead.Store(true)
		n.serving.Store(false)
		n.log.Error("cluster: fatal", "error", err)
		if n.onFatal != nil {
			n.onFatal(err)
			return
		}
		os.Exit(1)
	})
}

func instanceNames(as []egress.ActorID) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = instanceName(a)
	}
	return out
}

// instanceName is an instance as the logs and errors name it: service/i,
// or "match/<queue>" for a match queue.
func instanceName(a egress.ActorID) string {
	if a.Service == service.QueueService {
		return "match/" + a.Room
	}
	return a.Service + "/" + strconv.Itoa(a.Instance)
}
