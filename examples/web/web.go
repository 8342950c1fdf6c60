// Package web embeds the browser client of the example game (index.html
// and game.js, plain files with no build step) so that the gateway's admin
// server can serve it at /play/ wherever the binary runs.
package web

import "embed"

// Files holds index.html and game.js at its root.
//
//go:embed index.html game.js
var Files embed.FS
