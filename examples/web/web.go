// Package web embeds the browser client of the example game so that the
// gateway's admin server can serve it at /play/ wherever the binary runs:
// index.html, game.js, and shield.js, the @shieldrpc/client package
// (clients/ts) bundled by `npm run build:demo` there and committed, so
// that neither building nor serving the gateway needs npm.
package web

import "embed"

// Files holds index.html, game.js and shield.js at its root.
//
//go:embed index.html game.js shield.js
var Files embed.FS
