package admin

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestPlayConfigURL: config.json names the listener's own host, or, for a
// listener on every address, the host the browser reached the admin server
// by; wss:// under TLS. Without ServePlay there is no /play/.
func TestPlayConfigURL(t *testing.T) {
	s, err := New("127.0.0.1:0", prometheus.NewRegistry(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	get := func(path, host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+s.Addr()+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/play/", "x"); code != http.StatusNotFound || s.Play() != "" {
		t.Fatalf("/play/ before ServePlay: %d", code)
	}
	s.ServePlay(Play{Listener: "web", Envelope: "idlen", Path: "/game", TLS: true,
		Addr: &net.TCPAddr{IP: net.IPv4zero, Port: 7443}, Routes: map[string]uint32{"login": 1}})
	for host, want := range map[string]string{
		"game.example:9100": "wss://game.example:7443/game",
		"game.example":      "wss://game.example:7443/game",
		"[::1]:9100":        "wss://[::1]:7443/game",
	} {
		code, body := get("/play/config.json", host)
		var cfg playConfig
		if err := json.Unmarshal([]byte(body), &cfg); code != 200 || err != nil || cfg.URL != want || cfg.Routes["login"] != 1 {
			t.Errorf("host %s: %d %s, want url %s", host, code, body, want)
		}
	}
	if code, body := get("/play/", "x"); code != 200 || !strings.Contains(body, "game.js") || s.Play() != "web" {
		t.Fatalf("/play/: %d", code)
	}
}
