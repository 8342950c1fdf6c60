package codec

// Bits for the keys a legacy wrapper may have.
const (
	hasPayload = 1 << iota
	hasRoute
	hasRouteID
)

// UnwrapLegacy implements SPEC section 3's tolerance for clients that keep
// sending the legacy wrapper inside a header-route envelope: when body is a
// JSON object whose keys are "payload", at least one of "route" and
// "route_id", and nothing else, it returns the payload value's bytes (a
// subslice of body, capacity-limited so an append cannot overwrite the rest)
// and true. The route fields are ignored, whatever their types.
//
// Anything else, including invalid JSON and a key given twice (which could
// not be unwrapped without choosing between the values), returns body itself
// and false, so callers can write `body, _ = codec.UnwrapLegacy(body)`. The
// whole body is validated before it is unwrapped, so an invalid wrapper is
// reported by the decoder on the full body. A body whose first key is not a
// wrapper key is refused at that key, so ordinary bodies cost little.
func UnwrapLegacy(body []byte) ([]byte, bool) {
	s := scanner{data: body}
	s.skipWS()
	if !s.next('{') {
		return body, false
	}
	s.off++
	s.skipWS()

	var (
		seen             int
		payStart, payEnd int
		buf, text        []byte // buf only grows for escaped keys
		err              error
	)
	for {
		if text, buf, err = s.keyText(buf); err != nil {
			return body, false // also the empty object: no payload
		}
		var bit int
		switch string(text) {
		case "payload":
			bit = hasPayload
		case "route":
			bit = hasRoute
		case "route_id":
			bit = hasRouteID
		default:
			return body, false
		}
		if seen&bit != 0 {
			return body, false
		}
		seen |= bit
		start := s.off
		if buf, err = s.skipValue(1, buf); err != nil {
			return body, false
		}
		if bit == hasPayload {
			payStart, payEnd = start, s.off
		}
		s.skipWS()
		if s.next(',') {
			s.off++
			s.skipWS()
			continue
		}
		if !s.next('}') {
			return body, false
		}
		s.off++
		break
	}
	s.skipWS()
	if s.off != len(body) || seen&hasPayload == 0 || seen&(hasRoute|hasRouteID) == 0 {
		return body, false
	}
	return body[payStart:payEnd:payEnd], true
}
