package acceptance

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
)

// hostileRef is a ClientRef as a client would guess one.
type hostileRef struct {
	SessionID uint64 `json:"session_id"`
	Epoch     uint64 `json:"epoch"`
	PlayerID  string `json:"player_id,omitempty"`
	Gateway   string `json:"gateway"`
}

// TestGuessedRefsRefused (issue 19, SPEC §4): an unauthenticated client
// that makes a script push to a ClientRef of its choosing cannot reach
// another player's session by guessing its id: session ids are random
// below 2^53, so counting from 1, counting around its own id and random
// draws all miss, each refused as session_not_found, and the victim gets
// nothing. The red team reached another player in 80 tries when ids
// counted from 1.
func TestGuessedRefsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a gateway process")
	}
	h := startHostile(t, hostileSetup{}, procOptions{})
	victim := h.dial(t, client.Options{})
	var pushes []string
	var mu sync.Mutex
	victim.OnPush(hNote, func(body []byte) {
		mu.Lock()
		pushes = append(pushes, string(body))
		mu.Unlock()
	})
	var vref hostileRef
	call(t, victim, hLogin, map[string]string{"user": "victim"}, &vref)
	vref.Gateway = hostileNode

	attacker := h.dial(t, client.Options{})
	var own hostileRef
	call(t, attacker, hWhoami, nil, &own)
	if own.PlayerID != "" || own.Epoch != 1 {
		t.Fatalf("the attacker's session: %+v, want no player and epoch 1", own)
	}

	// 100 ids counted from 1, 100 around the attacker's own, 100 drawn
	// at random: 300 guesses, each with the victim's player and epoch.
	var guesses []uint64
	for i := uint64(1); i <= 100; i++ {
		guesses = append(guesses, i)
	}
	for d := uint64(1); d <= 50; d++ {
		guesses = append(guesses, own.SessionID+d, own.SessionID-d)
	}
	r := rand.New(rand.NewPCG(19, 80))
	for range 100 {
		guesses = append(guesses, r.Uint64N(1<<53))
	}
	refused := h.metric(t, `shield_egress_rejected_total{reason="session_not_found"}`)
	for _, id := range guesses {
		if id == vref.SessionID {
			t.Fatalf("guess %d is the victim's session id", id)
		}
		var got struct{ Result any }
		call(t, attacker, hForge, hostileRef{SessionID: id, Epoch: vref.Epoch, PlayerID: "victim", Gateway: hostileNode}, &got)
		if got.Result != string(codes.SessionNotFound) {
			t.Fatalf("a push to guessed session %d: %v, want %s", id, got.Result, codes.SessionNotFound)
		}
	}
	if got := h.metric(t, `shield_egress_rejected_total{reason="session_not_found"}`); got != refused+float64(len(guesses)) {
		t.Errorf("session_not_found counted %v, want %v", got, refused+float64(len(guesses)))
	}
	// The victim's real ref reaches it: that push is the first it gets,
	// so no guess got through before it (a session's frames are written
	// in order).
	var got struct{ Result any }
	call(t, attacker, hForge, vref, &got)
	if got.Result != true {
		t.Fatalf("the victim's real ref: %v", got.Result)
	}
	call(t, victim, hWhoami, nil, nil) // answered after the push it follows
	mu.Lock()
	defer mu.Unlock()
	if len(pushes) != 1 || pushes[0] != `{"forged":true}` {
		t.Fatalf("the victim got %q, want the one push to its real ref", pushes)
	}
}

// TestSessionIDsRandom (SPEC §4): session ids are random positive integers
// below 2^53 with at least 48 random bits, not a count: 200 sessions in a
// row get 200 distinct ids, none within 2^20 of the one before, and most
// above 2^48.
func TestSessionIDsRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a gateway process")
	}
	h := startHostile(t, hostileSetup{}, procOptions{})
	const n = 200
	seen := map[uint64]bool{}
	var prev uint64
	high := 0
	for i := range n {
		c := h.dial(t, client.Options{HeartbeatEvery: -1})
		var ref hostileRef
		call(t, c, hWhoami, nil, &ref)
		c.Close()
		id := ref.SessionID
		switch {
		case id == 0 || id >= 1<<53:
			t.Fatalf("session %d: id %d outside 1..2^53-1", i, id)
		case seen[id]:
			t.Fatalf("session %d: id %d again", i, id)
		case i > 0 && max(id, prev)-min(id, prev) < 1<<20:
			t.Fatalf("session %d: id %d within 2^20 of the one before (%d)", i, id, prev)
		}
		if id >= 1<<48 {
			high++
		}
		seen[id], prev = true, id
	}
	// A uniform 53-bit id is below 2^48 with chance 1/32: of 200, about
	// 6; more than 40 would be a 10^-20 accident.
	if high < n-40 {
		t.Errorf("only %d of %d ids above 2^48: fewer than 48 random bits", high, n)
	}
}
