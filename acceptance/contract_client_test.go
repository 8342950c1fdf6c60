package acceptance

import (
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
)

// TestClientOnStatus (SPEC §3, issue 11): the Go client hands status
// frames to OnStatus and goes on: the resume token after a bind (which it
// also keeps as ResumeToken) and the drain heads-up with its grace_ms.
func TestClientOnStatus(t *testing.T) {
	c := startContract(t, resumeSession+"\n  shutdown_grace: 3s")
	statuses := make(chan client.Status, 8)
	cl := c.client(t, "idlen", client.Options{})
	cl.OnStatus(func(st client.Status) { statuses <- st })
	var r ref
	call(t, cl, cLogin, map[string]string{"user": "stan"}, &r)
	next := func() client.Status {
		t.Helper()
		select {
		case st := <-statuses:
			return st
		case <-time.After(patience):
			t.Fatal("no status frame")
		}
		return client.Status{}
	}
	tok := next()
	if tok.Code != string(codes.SessionResumeToken) || tok.Token == "" || cl.ResumeToken() != tok.Token {
		t.Fatalf("after the bind: %+v (ResumeToken %q)", tok, cl.ResumeToken())
	}
	stopped := make(chan error, 1)
	go func() { stopped <- c.Stop() }()
	if st := next(); st.Code != string(codes.GatewayDrainStarted) || st.GraceMS != 3000 {
		t.Fatalf("at the drain: %+v, want gateway.drain_started with grace_ms 3000", st)
	}
	// The session goes on after a status frame.
	call(t, cl, cWho, nil, nil)
	cl.Close()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
