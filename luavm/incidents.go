package luavm

import (
	"time"
)

// A handler that raises costs its client a few bytes and the operator a
// traceback in the log: a client that makes a handler raise on purpose
// could fill the disk. So each VM writes at most incidentBurst incident
// lines at once and incidentsPerSecond after that; the rest are counted
// (Spec.Suppressed) but not written. Each incident that is written is one
// line, with its id, which the client's error message carries too.
const (
	incidentsPerSecond = 10
	incidentBurst      = 100
)

// incidentLimiter is a token bucket over a VM's incident lines. Only the
// actor's goroutine uses it.
type incidentLimiter struct {
	tokens float64
	last   time.Time
}

// allow reports whether an incident line may be written at now.
func (l *incidentLimiter) allow(now time.Time) bool {
	if l.last.IsZero() {
		l.tokens = incidentBurst
	} else {
		l.tokens = min(incidentBurst, l.tokens+now.Sub(l.last).Seconds()*incidentsPerSecond)
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// playerAttr is a player_id for a log line: null before bind (SPEC §4).
func playerAttr(p string) any {
	if p == "" {
		return nil
	}
	return p
}
