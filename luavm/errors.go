package luavm

import (
	"errors"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// loadMessage turns a gopher-lua load or run error into one line that starts
// with the script's "file:line:", dropping the Go-side noise (the parser's
// column and padding, the traceback).
func loadMessage(err error, script string) string {
	var api *lua.ApiError
	if !errors.As(err, &api) {
		return err.Error()
	}
	var perr *parse.Error
	if errors.As(api.Cause, &perr) {
		if perr.Pos.Line == parse.EOF {
			return fmt.Sprintf("%s: syntax error at end of file: %s", perr.Pos.Source, strings.TrimSpace(perr.Message))
		}
		return fmt.Sprintf("%s:%d: %s near '%s'", perr.Pos.Source, perr.Pos.Line, strings.TrimSpace(perr.Message), perr.Token)
	}
	var cerr *lua.CompileError
	if errors.As(api.Cause, &cerr) {
		return fmt.Sprintf("%s:%d: %s", script, cerr.Line, cerr.Message)
	}
	if api.Object != nil {
		return strings.TrimSpace(api.Object.String())
	}
	return strings.TrimSpace(err.Error())
}
