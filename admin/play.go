package admin

import (
	"encoding/json"
	"net"
	"net/http"

	"github.com/shieldrpc/shield/examples/web"
)

// Play describes the ws listener the browser client plays on.
type Play struct {
	Listener string            // its name, for the page's status line
	Envelope string            // delimiter (text messages) or idlen (binary)
	Path     string            // the upgrade path
	TLS      bool              // wss://
	Addr     net.Addr          // the bound address
	Routes   map[string]uint32 // route name -> id: idlen frames carry ids
}

// playConfig is /play/config.json: where the page connects and how it
// frames. url is absolute, so a ?ws= parameter on the page can replace it.
type playConfig struct {
	URL      string            `json:"url"`
	Listener string            `json:"listener"`
	Envelope string            `json:"envelope"`
	Routes   map[string]uint32 `json:"routes"`
}

// ServePlay serves the example game's browser client (examples/web) at
// /play/, and at /play/config.json the WebSocket URL of p, built per
// request: the listener's own host, or, when it listens on every address,
// the host the browser reached this server by, with the listener's port.
// The admin address is the operators', so the page is a demo and a test
// tool, not where players come from.
func (s *Server) ServePlay(p Play) {
	s.play.Store(p.Listener)
	s.mux.Handle("GET /play", http.RedirectHandler("/play/", http.StatusFound))
	s.mux.Handle("GET /play/", http.StripPrefix("/play/", http.FileServerFS(web.Files)))
	s.mux.HandleFunc("GET /play/config.json", func(w http.ResponseWriter, r *http.Request) {
		host, port, err := net.SplitHostPort(p.Addr.String())
		if err != nil {
			http.Error(w, "no listener address", http.StatusInternalServerError)
			return
		}
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			if h, _, err := net.SplitHostPort(r.Host); err == nil {
				host = h
			} else {
				host = r.Host
			}
		}
		scheme := "ws"
		if p.TLS {
			scheme = "wss"
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(playConfig{
			URL:      scheme + "://" + net.JoinHostPort(host, port) + p.Path,
			Listener: p.Listener,
			Envelope: p.Envelope,
			Routes:   p.Routes,
		})
	})
}

// Play names the listener /play/ plays on, or "" when it is not served.
func (s *Server) Play() string {
	name, _ := s.play.Load().(string)
	return name
}
