package admin

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/shieldrpc/shield/codes"
)

// MaxSessions is the largest limit GET /admin/sessions takes (SPEC §12).
const MaxSessions = 10000

// API is what /admin/* acts on: the node's gateway and services. Package
// bootstrap implements it; every method may be called from several
// requests at once.
type API interface {
	// Sessions returns the live sessions (only playerID's, when it is
	// not empty), ordered by session_id, at most limit.
	Sessions(playerID string, limit int) []Session
	// Kick kicks a player's session or the session with an id (with the
	// session.kicked notice whose message is reason) and returns how many
	// it kicked.
	Kick(k KickRequest) int
	// Drain drains a player's session or the session with an id
	// (docs/protocol.md §6) and returns how many it began to drain: 0
	// when there is none, or it is closed or draining already.
	Drain(d DrainRequest) int
	// Call runs a method as shield.call would, with a 5 s budget: the
	// method's results, one JSON value each, or its error.
	Call(ctx context.Context, c CallRequest) ([]json.RawMessage, *codes.Error)
	// Reload reloads the node (SPEC §12): nil when it succeeded, else its
	// errors.
	Reload(ctx context.Context) []string
	// Rooms returns this node's live rooms (only kind's, when it is not
	// empty), ordered by id, at most MaxRooms (docs/rooms.md §13).
	Rooms(kind string) []Room
}

// MaxRooms is the most rooms GET /admin/rooms lists.
const MaxRooms = 10000

// Room is one entry of GET /admin/rooms.
type Room struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Members   int    `json:"members"`  // suspended included
	Reserved  int    `json:"reserved"` // seats held for a bind
	Tick      uint64 `json:"tick"`
	CreatedAt string `json:"created_at"` // RFC 3339
}

// Session is one entry of GET /admin/sessions.
type Session struct {
	SessionID   uint64  `json:"session_id"`
	PlayerID    *string `json:"player_id"` // null before bind
	Target      string  `json:"target"`    // service/instance
	Epoch       uint64  `json:"epoch"`
	Listener    string  `json:"listener"`
	RemoteAddr  string  `json:"remote_addr"`
	ConnectedAt string  `json:"connected_at"` // RFC 3339
	Suspended   bool    `json:"suspended"`
}

// KickRequest is POST /admin/kick's body: a player_id or a session_id,
// not both.
type KickRequest struct {
	PlayerID  *string `json:"player_id"`
	SessionID *uint64 `json:"session_id"`
	Reason    string  `json:"reason"`
}

// DrainRequest is POST /admin/drain's body: a player_id or a session_id,
// not both; grace_ms (default session.shutdown_grace) and retry_after_ms
// (default grace_ms), each from 0 to MaxDrainMS.
type DrainRequest struct {
	PlayerID     *string `json:"player_id"`
	SessionID    *uint64 `json:"session_id"`
	GraceMS      *int64  `json:"grace_ms"`
	RetryAfterMS *int64  `json:"retry_after_ms"`
}

// MaxDrainMS bounds a drain's grace_ms and retry_after_ms: an hour.
const MaxDrainMS = 3_600_000

// CallRequest is POST /admin/call's body. Key is a string or a number
// (as shield.call's key); empty when absent.
type CallRequest struct {
	Service string            `json:"service"`
	Key     json.RawMessage   `json:"key"`
	Method  string            `json:"method"`
	Args    []json.RawMessage `json:"args"`
}

// ShardKey is the call's key as shield.call would see it, and whether
// there is one.
func (c *CallRequest) ShardKey() (string, bool) {
	k := bytes.TrimSpace(c.Key)
	if len(k) == 0 || string(k) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(k, &s) == nil {
		return s, true
	}
	return string(k), true // a number, as Lua's tostring writes it
}

// ServeAPI serves /admin/* (SPEC §12) behind token. Every request is
// checked in the SPEC's order: 404 for every /admin/ path when token is
// empty and for an unknown path, 401 without the bearer token or with
// another, 405 for a wrong method, 400 for a body or a limit that is not
// what the endpoint takes; then the endpoint answers JSON with 200.
func (s *Server) ServeAPI(token string, api API) {
	endpoints := map[string]struct {
		method string
		serve  func(w http.ResponseWriter, r *http.Request)
	}{
		"/admin/sessions": {http.MethodGet, func(w http.ResponseWriter, r *http.Request) { serveSessions(w, r, api) }},
		"/admin/kick":     {http.MethodPost, func(w http.ResponseWriter, r *http.Request) { serveKick(w, r, api) }},
		"/admin/drain":    {http.MethodPost, func(w http.ResponseWriter, r *http.Request) { serveDrain(w, r, api) }},
		"/admin/call":     {http.MethodPost, func(w http.ResponseWriter, r *http.Request) { serveCall(w, r, api) }},
		"/admin/reload":   {http.MethodPost, func(w http.ResponseWriter, r *http.Request) { serveReload(w, r, api) }},
		"/admin/rooms": {http.MethodGet, func(w http.ResponseWriter, r *http.Request) {
			list := api.Rooms(r.URL.Query().Get("kind"))
			if list == nil {
				list = []Room{}
			}
			writeJSON(w, map[string]any{"rooms": list})
		}},
	}
	s.mux.HandleFunc("/admin/", func(w http.ResponseWriter, r *http.Request) {
		ep, known := endpoints[r.URL.Path]
		switch {
		case token == "" || !known:
			http.NotFound(w, r)
		case !authorized(r, token):
			w.Header().Set("WWW-Authenticate", `Bearer realm="shield admin"`)
			writeError(w, http.StatusUnauthorized, "a valid Authorization: Bearer <admin.token> is needed")
		case r.Method != ep.method:
			w.Header().Set("Allow", ep.method)
			writeError(w, http.StatusMethodNotAllowed, r.URL.Path+" takes "+ep.method)
		default:
			ep.serve(w, r)
		}
	})
}

// authorized checks the bearer token in constant time (the scheme's case
// does not matter, RFC 7235).
func authorized(r *http.Request, token string) bool {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

func serveSessions(w http.ResponseWriter, r *http.Request, api API) {
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxSessions {
			writeError(w, http.StatusBadRequest, "limit is an integer from 0 to 10000")
			return
		}
		limit = n
	}
	list := api.Sessions(q.Get("player_id"), limit)
	if list == nil {
		list = []Session{}
	}
	writeJSON(w, map[string]any{"sessions": list})
}

func serveKick(w http.ResponseWriter, r *http.Request, api API) {
	var k KickRequest
	if !decode(w, r, &k) {
		return
	}
	if (k.PlayerID == nil) == (k.SessionID == nil) {
		writeError(w, http.StatusBadRequest, `the body names a "player_id" or a "session_id", not both`)
		return
	}
	writeJSON(w, map[string]int{"kicked": api.Kick(k)})
}

func serveDrain(w http.ResponseWriter, r *http.Request, api API) {
	var d DrainRequest
	if !decode(w, r, &d) {
		return
	}
	if (d.PlayerID == nil) == (d.SessionID == nil) {
		writeError(w, http.StatusBadRequest, `the body names a "player_id" or a "session_id", not both`)
		return
	}
	for _, v := range []struct {
		key string
		ms  *int64
	}{{"grace_ms", d.GraceMS}, {"retry_after_ms", d.RetryAfterMS}} {
		if v.ms != nil && (*v.ms < 0 || *v.ms > MaxDrainMS) {
			writeError(w, http.StatusBadRequest, v.key+" is an integer from 0 to 3600000")
			return
		}
	}
	writeJSON(w, map[string]int{"drained": api.Drain(d)})
}

func serveCall(w http.ResponseWriter, r *http.Request, api API) {
	var c CallRequest
	if !decode(w, r, &c) {
		return
	}
	if c.Service == "" || c.Method == "" {
		writeError(w, http.StatusBadRequest, `the body needs "service" and "method"`)
		return
	}
	results, err := api.Call(r.Context(), c)
	if err != nil {
		writeJSON(w, map[string]string{"code": string(err.Code), "message": err.Message})
		return
	}
	if results == nil {
		results = []json.RawMessage{}
	}
	writeJSON(w, map[string]any{"result": results})
}

func serveReload(w http.ResponseWriter, r *http.Request, api API) {
	if errs := api.Reload(r.Context()); errs != nil {
		writeJSON(w, map[string]any{"ok": false, "errors": errs})
		return
	}
	writeJSON(w, map[string]bool{"ok": true})
}

// maxBody bounds an /admin/ request body: the API's bodies are small.
const maxBody = 1 << 20

// decode reads r's body as one JSON object into v, or answers 400.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "the body is not the JSON asked for: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "the body is not the JSON asked for: more than one value")
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
