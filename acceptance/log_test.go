package acceptance

import (
	"io"
	"log/slog"
	"os"
)

// quietLogger keeps test output readable; SHIELD_TEST_LOG=1 shows the logs.
func quietLogger() *slog.Logger {
	if os.Getenv("SHIELD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
