package lua

import "sync/atomic"

// Interrupter is a context an LState can be given (SetContext) that also
// keeps a flag, set when its Done channel is closed and for as long as it
// stays so. The VM's main loop then checks the flag before each
// instruction, a plain load, instead of a select on Done, which cost
// more than many instructions themselves (Shield patch 5, PATCHES.md).
type Interrupter interface {
	Interrupted() *atomic.Bool
}
