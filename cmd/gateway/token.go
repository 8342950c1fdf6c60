package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/shieldrpc/shield/config"
)

// tokenUser is the player_id alphabet of the example game's tokens
// (configs/services/auth.lua): the token's fields are separated by dots.
var tokenUser = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// tokenCmd mints a login token for the example game's auth service:
// "<player_id>.<expires>.<hex HMAC-SHA256 of the first two under
// settings.token_secret>". It reads the secret from the config, so that
// local play needs no other tool; a real game's account service mints
// the same tokens with its own copy of the secret.
func tokenCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("c", defaultConfig, "configuration `FILE`")
	actor := fs.String("actor", "auth", "the `ACTOR` whose settings.token_secret signs")
	user := fs.String("user", "", "the `PLAYER_ID` to log in as (letters, digits, _ and -)")
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the token is valid")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !tokenUser.MatchString(*user) {
		fmt.Fprintf(stderr, "gateway token: -user %q: 1 to 64 letters, digits, _ and -\n", *user)
		return 2
	}
	cfg, err := config.Load(*file)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	a := cfg.Actor(*actor)
	if a == nil {
		fmt.Fprintf(stderr, "gateway token: %s: no actor %q\n", *file, *actor)
		return 1
	}
	secret, ok := a.Settings["token_secret"].(string)
	if !ok || secret == "" {
		fmt.Fprintf(stderr, "gateway token: %s: actor %q has no settings.token_secret\n", *file, *actor)
		return 1
	}
	fmt.Fprintln(stdout, mintToken(secret, *user, time.Now().Add(*ttl)))
	return 0
}

// mintToken is the token auth.lua checks.
func mintToken(secret, user string, expires time.Time) string {
	claim := user + "." + strconv.FormatInt(expires.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(claim))
	return claim + "." + hex.EncodeToString(mac.Sum(nil))
}
