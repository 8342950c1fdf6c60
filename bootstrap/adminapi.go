package bootstrap

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/shieldrpc/shield/admin"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/session"
)

// adminCallBudget is POST /admin/call's budget (SPEC §12).
const adminCallBudget = 5 * time.Second

// reloadTimeout bounds a reload's wait for the swapped VMs' reload_save,
// reload_load or init; each runs under its own budget well within it.
const reloadTimeout = time.Minute

// adminAPI is the admin.API of a Server: its gateway's sessions, its
// services' methods and its reload.
type adminAPI struct{ s *Server }

var _ admin.API = adminAPI{}

// Rooms lists the runtime's live rooms (docs/rooms.md §13).
func (a adminAPI) Rooms(kind string) []admin.Room {
	list := a.s.Runtime.RoomList(kind, admin.MaxRooms)
	out := make([]admin.Room, len(list))
	for i, r := range list {
		out[i] = admin.Room{ID: r.ID, Kind: r.Kind, Members: r.Members, Reserved: r.Reserved, Tick: r.Tick,
			CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339)}
	}
	return out
}

func (a adminAPI) Sessions(playerID string, limit int) []admin.Session {
	var list []*session.Session
	if playerID != "" {
		if s := a.s.Gateway.Sessions().Player(playerID); s != nil {
			list = append(list, s)
		}
	} else {
		list = a.s.Gateway.Sessions().All()
		slices.SortFunc(list, func(x, y *session.Session) int {
			switch {
			case x.ID < y.ID:
				return -1
			case x.ID > y.ID:
				return 1
			}
			return 0
		})
	}
	out := make([]admin.Session, 0, min(limit, len(list)))
	for _, s := range list[:min(limit, len(list))] {
		b := s.Binding()
		e := admin.Session{SessionID: s.ID, Target: b.Target.Service + "/" + strconv.Itoa(b.Target.Instance),
			Epoch: b.Epoch, Listener: s.Profile.Listener, RemoteAddr: s.RemoteAddr,
			ConnectedAt: s.ConnectedAt.UTC().Format(time.RFC3339), Suspended: s.Suspended()}
		if b.PlayerID != "" {
			e.PlayerID = &b.PlayerID
		}
		out = append(out, e)
	}
	return out
}

func (a adminAPI) Kick(k admin.KickRequest) int {
	var s *session.Session
	if k.PlayerID != nil {
		s = a.s.Gateway.Sessions().Player(*k.PlayerID)
	} else {
		s = a.s.Gateway.Sessions().Get(*k.SessionID)
	}
	if s == nil {
		return 0
	}
	reason := k.Reason
	if reason == "" {
		reason = "kicked by an operator"
	}
	if a.s.Gateway.Kick(s.Ref(), reason) != nil {
		return 0 // it closed meanwhile
	}
	return 1
}

func (a adminAPI) Drain(d admin.DrainRequest) int {
	var s *session.Session
	if d.PlayerID != nil {
		s = a.s.Gateway.Sessions().Player(*d.PlayerID)
	} else {
		s = a.s.Gateway.Sessions().Get(*d.SessionID)
	}
	if s == nil {
		return 0
	}
	grace := a.s.shutdown
	if d.GraceMS != nil {
		grace = time.Duration(*d.GraceMS) * time.Millisecond
	}
	retry := grace
	if d.RetryAfterMS != nil {
		retry = time.Duration(*d.RetryAfterMS) * time.Millisecond
	}
	if !a.s.Gateway.DrainSession(s, grace, retry) {
		return 0
	}
	return 1
}

func (a adminAPI) Call(ctx context.Context, c admin.CallRequest) ([]json.RawMessage, *codes.Error) {
	to := luavm.Address{Service: c.Service}
	to.Key, to.HasKey = c.ShardKey()
	args := make([][]byte, len(c.Args))
	for i, v := range c.Args {
		args[i] = v
	}
	vals, err := a.s.Runtime.Call(ctx, to, c.Method, args, adminCallBudget)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(vals))
	for i, v := range vals {
		out[i] = v
	}
	return out, nil
}

func (a adminAPI) Reload(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, reloadTimeout)
	defer cancel()
	if err := a.s.Reload(ctx); err != nil {
		return ReloadErrors(err)
	}
	return nil
}
