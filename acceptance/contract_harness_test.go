package acceptance

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// The contract tests run testdata/contract.lua as two services: lobby
// (every listener's entry service) and hall (where login binds), behind a
// gateway of their own whose session block each test chooses, with one
// listener per envelope, named after it.

// Routes of the contract services.
const (
	cLogin  = 401 // lobby: login {user, to}
	cWhoami = 402 // lobby: whoami (no auth)
	cMarkL  = 403 // lobby: mark (no auth)
	cSpinL  = 404 // lobby: spin (no auth)
	cWho    = 411 // hall: whoami
	cMark   = 412 // hall: mark
	cSpin   = 413 // hall: spin {ms, then_user}
	cSleep  = 414 // hall: sleep {ms}
	cBig    = 415 // hall: big {n}
	cPushMe = 416 // hall: pushme {n, count, ref}
	cKick   = 417 // hall: kick {ref, reason}
	cNote   = 420 // hall: s2c note
)

// contractGateway is the node name of the contract tests' gateway.
const contractGateway = "gw-contract"

func contractConfig(t testing.TB, session string) string {
	t.Helper()
	script, err := filepath.Abs("testdata/contract.lua")
	if err != nil {
		t.Fatal(err)
	}
	var listeners strings.Builder
	for _, e := range envelopes {
		fmt.Fprintf(&listeners, "    - {name: %s, address: \"127.0.0.1:0\", entry_service: lobby, protocol: {envelope: %s}}\n", e, e)
	}
	if session == "" {
		session = "  idle_timeout: 60s"
	}
	return fmt.Sprintf(`node: {name: %s}
network:
  listeners:
%s
session:
%s
actors:
  - name: lobby
    script: %[4]s
    rpc:
      routes:
        - {id: %d, name: login, binding: login, requires_auth: false}
        - {id: %d, name: whoami_lobby, binding: whoami, requires_auth: false}
        - {id: %d, name: mark_lobby, binding: mark, requires_auth: false}
        - {id: %d, name: spin_lobby, binding: spin, requires_auth: false}
  - name: hall
    script: %[4]s
    rpc:
      routes:
        - {id: %[9]d, name: whoami, binding: whoami}
        - {id: %[10]d, name: mark, binding: mark}
        - {id: %[11]d, name: spin, binding: spin}
        - {id: %[12]d, name: sleep, binding: sleep}
        - {id: %[13]d, name: big, binding: big}
        - {id: %[14]d, name: pushme, binding: pushme}
        - {id: %[15]d, name: kick, binding: kick}
        - {id: %[16]d, name: note, binding: note, direction: s2c}
`, contractGateway, listeners.String(), session, script,
		cLogin, cWhoami, cMarkL, cSpinL, cWho, cMark, cSpin, cSleep, cBig, cPushMe, cKick, cNote)
}

// contract is a running gateway with the contract services.
type contract struct {
	*wiretest.Server
}

// startContract starts the contract gateway; session holds the session
// block's keys, each indented two spaces ("" for the defaults).
func startContract(t testing.TB, session string) *contract {
	t.Helper()
	return &contract{wiretest.Start(t, "contract.yaml", contractConfig(t, session), nil)}
}

// raw dials a listener for a transcript, closed at cleanup.
func (c *contract) raw(t testing.TB, listener string) *transcript {
	t.Helper()
	return wiretest.Dial(t, listener, c.Addr(listener), listener)
}

// client dials a listener with the Go client, closed at cleanup.
func (c *contract) client(t testing.TB, listener string, o client.Options) *client.Client {
	t.Helper()
	o.Envelope = listener
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cl, err := client.Dial(ctx, c.Addr(listener), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// req is a request frame with a JSON body.
func req(route uint32, id uint64, body any) envelope.Frame {
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return envelope.Frame{Kind: envelope.Request, RouteID: route, RequestID: id, Body: b}
}

// notify is a notify frame with a JSON body.
func notify(route uint32, body any) envelope.Frame {
	f := req(route, 0, body)
	f.Kind = envelope.Notify
	return f
}

// decodeRef reads a login's answer.
func decodeRef(t testing.TB, f envelope.Frame) ref {
	t.Helper()
	var r ref
	if err := json.Unmarshal(f.Body, &r); err != nil {
		t.Fatalf("login answer %q: %v", f.Body, err)
	}
	return r
}
