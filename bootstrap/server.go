package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shieldrpc/shield/admin"
	"github.com/shieldrpc/shield/cluster"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/gateway"
	"github.com/shieldrpc/shield/metrics"
	"github.com/shieldrpc/shield/service"
)

// Server is a running node: the services, the gateway in front of them,
// and the admin server beside them.
type Server struct {
	Report   *Report
	Runtime  *service.Runtime
	Gateway  *gateway.Gateway
	Metrics  *metrics.Metrics
	Admin    *admin.Server // nil without network.admin
	Cluster  *cluster.Node // nil without a cluster key (cluster.go)
	log      *slog.Logger
	shutdown time.Duration
	reloader reloader // see reload.go
}

// Start compiles the config at path, starts every service (each VM's init
// runs before anything accepts), then binds and serves every listener.
// ctx bounds the start only.
func Start(ctx context.Context, path string, opts Options) (*Server, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	m := metrics.New()
	opts.Metrics = m
	rep, err := Compile(path, opts)
	if err != nil {
		return nil, err
	}
	rt := rep.Runtime
	m.WatchMailboxes(rt.Services(), rt.MailboxDepth)
	m.WatchControlLanes(rt.Services(), rt.ControlDepth)
	m.WatchRooms(rt.RoomKinds(), rt.RoomGauges)
	loaded := *rep.Config // as written: what a reload compares against
	rep.Config.Session.MaxSessions = fitFileLimit(rep.Config.Session.MaxSessions, log)
	node, err := joinCluster(ctx, rep, m, log, opts)
	if err != nil {
		rep.Close()
		return nil, err
	}
	gw, err := gateway.New(gateway.Options{Config: rep.Config, Table: rep.Table, Services: services(node, rep), Metrics: m, Logger: log,
		Tracer: rep.world.tr})
	if err != nil {
		rep.Close()
		node.Close()
		return nil, err
	}
	rt.SetSink(sink(node, gw, len(rep.Config.Network.Listeners)))
	s := &Server{Report: rep, Runtime: rt, Gateway: gw, Metrics: m, Cluster: node, log: log, shutdown: rep.Config.Session.ShutdownGrace,
		reloader: reloader{path: path, opts: opts, cfg: &loaded, table: rep.Table}}
	// The admin server comes first so that /healthz answers, and /readyz
	// says "not ready", while the VMs' init runs.
	if a := rep.Config.Network.Admin; a != nil {
		if s.Admin, err = admin.New(a.Address, m.Registry, a.PProf); err != nil {
			rep.Close()
			s.closeCluster()
			return nil, fmt.Errorf("admin: %w", err)
		}
		if node != nil {
			s.Admin.SetReadyCheck(node.Ready)
		}
		s.Admin.ServeAPI(a.Token, adminAPI{s})
	}
	if err := rt.Start(ctx); err != nil {
		s.closeAdmin()
		s.closeCluster()
		return nil, fmt.Errorf("start: %w", err)
	}
	if node != nil {
		if err := node.Serve(); err != nil {
			s.closeAdmin()
			s.closeCluster()
			return nil, errors.Join(err, rt.Stop(ctx))
		}
	}
	if err := gw.Listen(); err != nil {
		s.closeAdmin()
		node.Leave()
		err = errors.Join(err, rt.Stop(ctx))
		s.closeCluster()
		return nil, err
	}
	gw.Serve()
	if s.Admin != nil {
		if p, ok := playTarget(rep, gw); ok && rep.Config.Network.Admin.Play {
			s.Admin.ServePlay(p)
		}
		s.Admin.SetReady(true)
	}
	return s, nil
}

// playTarget picks the ws listener the browser client at /play/ plays on
// (with network.admin.play: true, SPEC §9):
// the first with the json body and an envelope the page speaks, delimiter
// preferred (text messages are the simplest for JavaScript), else idlen.
// Without one there is no /play/.
func playTarget(rep *Report, gw *gateway.Gateway) (admin.Play, bool) {
	var pick *config.Listener
	for _, env := range []string{"delimiter", "idlen"} {
		for i := range rep.Config.Network.Listeners {
			l := &rep.Config.Network.Listeners[i]
			if pick == nil && l.Transport == "ws" && l.Protocol.Envelope == env && l.Protocol.Body == "json" {
				pick = l
			}
		}
	}
	if pick == nil {
		return admin.Play{}, false
	}
	routes := map[string]uint32{}
	for _, r := range rep.Table.Routes() {
		if r.Name != "" {
			routes[r.Name] = r.ID
		}
	}
	return admin.Play{Listener: pick.Name, Envelope: pick.Protocol.Envelope, Path: pick.Path, TLS: pick.TLS != nil,
		Addr: gw.Addr(pick.Name), Routes: routes}, true
}

func (s *Server) closeAdmin() {
	if s.Admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Admin.Close(ctx)
	}
}

// Stop drains (SPEC §9): readiness goes false, the listeners stop
// accepting, every live session gets the gateway.drain_started status and
// every VM's draining hook runs; live sessions are served until they have
// left and no run is in flight, or the config's shutdown_grace ends (or
// ctx, whichever is first); then the rest get the gateway.draining notice
// and are closed, every Disconnected is delivered, and every VM's stop
// runs before the services end.
func (s *Server) Stop(ctx context.Context) error {
	if s.Admin != nil {
		s.Admin.SetReady(false)
	}
	grace, cancel := context.WithTimeout(ctx, s.shutdown)
	defer cancel()
	s.Gateway.StopAccepting()
	s.Runtime.Drain() // no room made, no ticket taken from now on
	if s.Cluster != nil {
		s.Cluster.Drain()
	}
	hooked := make(chan error, 1)
	go func() { hooked <- s.Runtime.Hook(grace, "draining") }()
	draining := true
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for draining || !s.Gateway.Idle() || s.Runtime.Busy() > 0 {
		select {
		case err := <-hooked:
			draining = false
			if err != nil {
				s.log.Warn("draining hook failed", "error", err)
			}
		case <-grace.Done():
			break wait
		case <-tick.C:
		}
	}
	s.Gateway.CloseAll()
	s.leaveCluster(grace)
	// Disconnected messages are on the control lanes now; stop is queued
	// behind them, so every client_disconnected runs before stop.
	stopCtx, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	err := s.Runtime.Stop(stopCtx)
	s.closeCluster()
	s.closeAdmin()
	return err
}
