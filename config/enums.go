package config

// Direction says who may send a route's frames. Both spellings of each value
// in SPEC §2 parse to the same Direction.
type Direction uint8

// The directions of a route.
const (
	C2S  Direction = iota + 1 // client to server: a request or notify handled by a binding
	S2C                       // server to client: a push through shield.client_rpc.<binding>
	Bidi                      // both: the binding is a handler and a helper
)

var directionNames = map[string]Direction{
	"c2s": C2S, "client_to_server": C2S,
	"s2c": S2C, "server_to_client": S2C,
	"bidi": Bidi, "bidirectional": Bidi,
}

// String returns the short spelling: c2s, s2c or bidi.
func (d Direction) String() string {
	switch d {
	case C2S:
		return "c2s"
	case S2C:
		return "s2c"
	case Bidi:
		return "bidi"
	default:
		return "invalid"
	}
}

// FromClient reports whether a client may send frames on the route.
func (d Direction) FromClient() bool { return d == C2S || d == Bidi }

// ToClient reports whether a service may push on the route.
func (d Direction) ToClient() bool { return d == S2C || d == Bidi }

// Action is what the target VM does with a route's body, or whether the
// gateway drops the frame at the edge.
type Action uint8

// The actions of a route.
const (
	DecodeLocal Action = iota + 1 // decode with the profile codec in the target VM
	ForwardRaw                    // hand the handler the raw body as a string
	Drop                          // the gateway drops and counts the frame
)

var actionNames = map[string]Action{"decode_local": DecodeLocal, "forward_raw": ForwardRaw, "drop": Drop}

// String returns the config spelling of the action.
func (a Action) String() string {
	switch a {
	case DecodeLocal:
		return "decode_local"
	case ForwardRaw:
		return "forward_raw"
	case Drop:
		return "drop"
	default:
		return "invalid"
	}
}

// The enumerated string values of other keys. They stay strings (the
// config's own spelling) because the packages that use them switch on them
// once, at start.
var (
	transports      = []string{"tcp", "ws"}
	envelopes       = []string{"idlen", "typelen", "lenprefix", "delimiter"}
	bodies          = []string{"json", "raw", "protobuf"}
	logFormats      = []string{"json", "text"}
	logLevels       = []string{"debug", "info", "warn", "error"}
	duplicateLogins = []string{"kick_old", "reject_new"}
)
