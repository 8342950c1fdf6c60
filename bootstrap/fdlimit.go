package bootstrap

import (
	"log/slog"
	"syscall"
)

// fdReserve is how many file descriptors max_sessions leaves for
// everything else: the admin server, the VMs' files, outgoing connections,
// and new logins while the gateway is full (SPEC §9).
const fdReserve = 256

// fitFileLimit raises the process's open-file limit to its hard limit
// (Go does this at start on Linux; doing it again costs nothing and holds
// where it does not), and lowers maxSessions, with a warning, when it
// does not fit under that limit with the reserve: a gateway that runs out
// of descriptors cannot accept, cannot answer /healthz, and counts nothing
// as refused. It returns the max_sessions to use.
func fitFileLimit(maxSessions int, log *slog.Logger) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("cannot read the open-file limit; max_sessions unchecked", "error", err)
		return maxSessions
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			lim = raised
		} else {
			log.Warn("cannot raise the open-file limit to its hard limit", "soft", lim.Cur, "hard", lim.Max, "error", err)
		}
	}
	if lim.Cur >= uint64(maxSessions)+fdReserve {
		return maxSessions
	}
	fit := 1
	if lim.Cur > fdReserve+1 {
		fit = int(lim.Cur - fdReserve)
	}
	log.Warn("session.max_sessions lowered to fit the open-file limit", "max_sessions", maxSessions,
		"lowered_to", fit, "open_file_limit", lim.Cur, "reserve", fdReserve)
	return fit
}
