package ingress

import (
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// Check runs the descriptor checks of SPEC §5, in the table's order, on a
// frame for route r (nil: not in the descriptor) from a session that is
// authenticated (bound to a player) or not. It returns "" when the frame
// may go on to the session's limits and its target.
func Check(r *descriptor.EdgeRoute, authenticated bool) codes.Code {
	switch {
	case r == nil:
		return codes.RouteNotFound
	case !r.Direction.FromClient():
		return codes.DirectionRejected
	case r.RequiresAuth && !authenticated:
		return codes.NotAuthenticated
	case r.Action == config.Drop:
		return codes.Dropped
	}
	return ""
}
