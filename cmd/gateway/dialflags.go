package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/shieldrpc/shield/client"
)

// dialFlags are the transport flags of the commands that dial a gateway
// (call; bench with -addr): which transport, and the client's TLS.
type dialFlags struct {
	ws       *bool
	path     *string
	origin   *string
	tls      *bool
	ca       *string
	cert     *string
	key      *string
	insecure *bool
}

func addDialFlags(fs *flag.FlagSet) *dialFlags {
	return &dialFlags{
		ws:       fs.Bool("ws", false, "dial a ws listener: a WebSocket upgrade at -path, one frame per message"),
		path:     fs.String("path", "/ws", "the ws listener's upgrade `PATH`"),
		origin:   fs.String("origin", "", "with -ws, send this Origin header, as a browser would"),
		tls:      fs.Bool("tls", false, "use TLS (with -ws: wss://)"),
		ca:       fs.String("ca", "", "with -tls, trust the CA certificates in `FILE` (PEM) instead of the system's"),
		cert:     fs.String("cert", "", "with -tls, present this client certificate `FILE` (PEM) to a mutual-TLS listener"),
		key:      fs.String("key", "", "the key `FILE` (PEM) of -cert"),
		insecure: fs.Bool("insecure", false, "with -tls, do not verify the gateway's certificate (testing only)"),
	}
}

// apply sets o's transport and TLS from the flags.
func (d *dialFlags) apply(o *client.Options) error {
	if *d.ws {
		o.Transport, o.Path, o.Origin = "ws", *d.path, *d.origin
	}
	cfg, err := d.tlsConfig()
	o.TLS = cfg
	return err
}

// tlsConfig is the client's TLS config, nil without -tls.
func (d *dialFlags) tlsConfig() (*tls.Config, error) {
	if !*d.tls {
		if *d.ca != "" || *d.cert != "" || *d.insecure {
			return nil, errors.New("-ca, -cert and -insecure need -tls")
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: *d.insecure}
	if *d.ca != "" {
		pem, err := os.ReadFile(*d.ca)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-ca %s: no PEM certificate in it", *d.ca)
		}
	}
	if (*d.cert == "") != (*d.key == "") {
		return nil, errors.New("-cert and -key go together")
	}
	if *d.cert != "" {
		pair, err := tls.LoadX509KeyPair(*d.cert, *d.key)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
