package ingress

import "time"

// Bucket is a session's token bucket over the frames it sends
// (session.rate_limit), plus the record of which recent seconds it was
// over the limit: a session over it for FloodSeconds seconds in a row is
// closed. Only the session's read loop uses it.
type Bucket struct {
	rate, burst float64
	tokens      float64
	last        time.Time

	overSecond int64 // the last unix second with a frame over the limit
	streak     int   // consecutive seconds over the limit, ending at overSecond
}

// FloodSeconds is how many seconds in a row over the limit close a session.
const FloodSeconds = 10

// NewBucket returns a full bucket; perSecond 0 means no limit (nil).
func NewBucket(perSecond, burst int) *Bucket {
	if perSecond <= 0 {
		return nil
	}
	if burst < 1 {
		burst = 1
	}
	return &Bucket{rate: float64(perSecond), burst: float64(burst), tokens: float64(burst)}
}

// Take takes a token for a frame arriving at now. It reports whether the
// frame is within the limit, and whether the session has now been over it
// for FloodSeconds seconds in a row. A nil Bucket allows everything.
func (b *Bucket) Take(now time.Time) (ok, flood bool) {
	if b == nil {
		return true, false
	}
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, false
	}
	sec := now.Unix()
	switch sec {
	case b.overSecond:
	case b.overSecond + 1:
		b.streak++
		b.overSecond = sec
	default:
		b.streak = 1
		b.overSecond = sec
	}
	return false, b.streak >= FloodSeconds
}
