package ingress

import "time"

// Bucket is a session's token bucket over the frames it sends
// (session.rate_limit), plus the record of which recent seconds it was
// over the limit: a session over it for FloodSeconds seconds in a row is
// closed. Only the session's read loop uses it.
//
// The seconds of a streak are counted from its first frame over the
// limit, not on the wall clock's second boundaries: with wall-clock
// seconds, a streak that began at the end of one second would count that
// sliver as a whole second, and a session could be closed after barely
// FloodSeconds-2 seconds over the limit.
type Bucket struct {
	rate, burst float64
	tokens      float64
	last        time.Time

	streakStart time.Time // the first frame over the limit of the current streak; zero: none
	overSecond  int64     // the streak's last second (0-based, from streakStart) with a frame over the limit
}

// FloodSeconds is how many seconds in a row over the limit close a session.
const FloodSeconds = 10

// HeartbeatsPerSecond is how many heartbeats a session gets echoed a
// second, and its burst (SPEC §5): heartbeats take no rate-limit token,
// but a flood of them is bounded all the same.
const HeartbeatsPerSecond = 10

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
// in each of the last FloodSeconds whole seconds (SPEC §5: "each of the
// last ten seconds had a frame over it"). A nil Bucket allows everything.
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
	return false, b.over(now)
}

// Wait is how long after the last Take the bucket holds a whole token
// again: the retry hint of a frame it refused. A nil Bucket never waits.
func (b *Bucket) Wait() time.Duration {
	if b == nil || b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}

// over records a frame over the limit at now and reports a flood: seconds
// 0 to FloodSeconds-1 of the streak each had such a frame, and this one
// is past them.
func (b *Bucket) over(now time.Time) bool {
	sec := int64(now.Sub(b.streakStart) / time.Second)
	switch {
	case b.streakStart.IsZero():
		b.streakStart, b.overSecond = now, 0
	case sec == b.overSecond:
	case sec == b.overSecond+1:
		b.overSecond = sec
	default:
		// A second without a frame over the limit ends the streak; this
		// frame starts the next one.
		b.streakStart, b.overSecond = now, 0
	}
	return b.overSecond >= FloodSeconds
}
