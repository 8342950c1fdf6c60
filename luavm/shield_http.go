package luavm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/tracing"
)

// HTTPClient is what shield.http.request calls through (SPEC §11): the
// allow list of lua.http and one pooled net/http client shared by every VM
// of a runtime. Its transport is the runtime's: Close, when the runtime
// stops, drops its idle connections.
type HTTPClient struct {
	allow   map[string]bool // "host:port", the host lowercased
	timeout time.Duration   // lua.http.timeout
	maxBody int64           // lua.http.max_response_bytes
	client  *http.Client
	tr      *http.Transport
}

// Pooling: the backends a game calls (an auth service, a payment
// provider) are few, and each is called often, so keep a handful of warm
// connections to each and cap how many a burst may open.
const (
	httpIdlePerHost  = 16
	httpIdleTotal    = 64
	httpConnsPerHost = 64
	httpIdleTimeout  = 90 * time.Second
	httpDialTimeout  = 10 * time.Second // further capped by the request's deadline
	httpHeaderBytes  = 64 << 10         // of a response's header block
)

// NewHTTPClient builds the client of lua.http. The config's zero values
// take its defaults.
func NewHTTPClient(cfg config.HTTP) *HTTPClient {
	c := &HTTPClient{allow: map[string]bool{}, timeout: cfg.Timeout, maxBody: cfg.MaxResponseBytes}
	if c.timeout <= 0 {
		c.timeout = config.DefaultHTTPTimeout
	}
	if c.maxBody <= 0 {
		c.maxBody = config.DefaultHTTPMaxResponseBytes
	}
	for _, hp := range cfg.Allow {
		if host, port, err := net.SplitHostPort(hp); err == nil {
			c.allow[net.JoinHostPort(strings.ToLower(host), port)] = true
		}
	}
	c.tr = &http.Transport{
		// No proxy from the environment: the allow list names the hosts
		// a VM reaches, and a proxy would be another host reached.
		Proxy:                  nil,
		DialContext:            (&net.Dialer{Timeout: httpDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           httpIdleTotal,
		MaxIdleConnsPerHost:    httpIdlePerHost,
		MaxConnsPerHost:        httpConnsPerHost,
		IdleConnTimeout:        httpIdleTimeout,
		TLSHandshakeTimeout:    httpDialTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: httpHeaderBytes,
	}
	c.client = &http.Client{
		Transport: c.tr,
		// SPEC §11: a redirect is returned as the response it is; a
		// followed one could leave the allow list.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c
}

// Start does nothing: the client dials on demand. It makes HTTPClient a
// runtime resource, as the kv store is.
func (c *HTTPClient) Start(context.Context) error { return nil }

// Close drops the idle pooled connections. The VMs' requests in flight
// were cancelled before it, when their VMs closed.
func (c *HTTPClient) Close() error {
	c.tr.CloseIdleConnections()
	return nil
}

// allowed reports whether a VM may call hostport ("host:port", the host
// lowercased).
func (c *HTTPClient) allowed(hostport string) bool { return c != nil && c.allow[hostport] }

// httpRequestName names shield.http.request in its messages.
const httpRequestName = "shield.http.request"

// httpRequestKeys are the fields of shield.http.request's table.
var httpRequestKeys = map[string]bool{"method": true, "url": true, "headers": true, "body": true}

// shield.http.request{method=, url=, headers=, body=} -> {status=,
// headers=, body=}. Everything a script can get wrong is checked here,
// before anything is sent; the request then runs as an op (ops.go).
func (vm *VM) luaHTTPRequest(L *lua.LState) int {
	const name = httpRequestName
	t := vm.running(L, name)
	opts := L.CheckTable(1)
	opts.ForEach(func(k, _ lua.LValue) {
		if s, ok := k.(lua.LString); !ok || !httpRequestKeys[string(s)] {
			misuse(L, "%s: unknown field %s (fields: method, url, headers, body)", name, lua.LVAsString(L.ToStringMeta(k)))
		}
	})
	method := "GET"
	switch m := opts.RawGetString("method").(type) {
	case lua.LString:
		method = string(m)
	case *lua.LNilType:
	default:
		misuse(L, "%s: method must be a string", name)
	}
	raw, ok := opts.RawGetString("url").(lua.LString)
	if !ok {
		misuse(L, "%s: url (a string) is required", name)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		misuse(L, "%s: url: %v", name, err)
	}
	hostport, err := targetOf(u)
	if err != nil {
		misuse(L, "%s: url: %v", name, err)
	}
	var body io.Reader
	switch b := opts.RawGetString("body").(type) {
	case lua.LString:
		body = strings.NewReader(string(b))
	case *lua.LNilType:
	default:
		misuse(L, "%s: body must be a string", name)
	}
	req, err := http.NewRequest(method, string(raw), body)
	if err != nil {
		misuse(L, "%s: %v", name, err)
	}
	if hs := opts.RawGetString("headers"); hs != lua.LNil {
		tbl, ok := hs.(*lua.LTable)
		if !ok {
			misuse(L, "%s: headers must be a table of name = string", name)
		}
		setHeaders(L, req, tbl)
	}
	// SPEC §11: refused before anything is sent, with the host:port named.
	c := vm.spec.HTTP
	if !c.allowed(hostport) {
		return vm.fail(L, codes.Unavailable, "%s: %s is not in lua.http.allow", name, hostport)
	}
	timeout := c.timeout
	deadline := time.Now().Add(timeout)
	if t.deadline.Before(deadline) {
		deadline = t.deadline // the handler's budget is the tighter bound
	}
	limit := min(c.maxBody, vm.spec.MaxStringBytes) // the body becomes a Lua string
	return vm.startOp(L, t, name, tracing.String("server.address", hostport), deadline, func(ctx context.Context) opOutcome {
		return c.do(ctx, req.WithContext(ctx), hostport, timeout, limit)
	})
}

// targetOf is the "host:port" a URL reaches: its port, or the scheme's.
func targetOf(u *url.URL) (string, error) {
	var port string
	switch strings.ToLower(u.Scheme) {
	case "http":
		port = "80"
	case "https":
		port = "443"
	default:
		return "", fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", errors.New("no host")
	}
	if p := u.Port(); p != "" {
		port = p
	}
	return net.JoinHostPort(host, port), nil
}

// setHeaders copies headers = {name = value} into req, refusing what
// net/http would only refuse once the request is on its way.
func setHeaders(L *lua.LState, req *http.Request, tbl *lua.LTable) {
	tbl.ForEach(func(k, v lua.LValue) {
		name, ok := k.(lua.LString)
		if !ok || !validHeaderName(string(name)) {
			misuse(L, "%s: headers: %q is not a header name", httpRequestName, lua.LVAsString(L.ToStringMeta(k)))
		}
		var value string
		switch v := v.(type) {
		case lua.LString:
			value = string(v)
		case lua.LNumber:
			value = v.String()
		default:
			misuse(L, "%s: headers: the value of %s must be a string", httpRequestName, name)
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			misuse(L, "%s: headers: the value of %s holds a line break or NUL", httpRequestName, name)
		}
		key := textproto.CanonicalMIMEHeaderKey(string(name))
		if key == "Host" {
			req.Host = value
			return
		}
		req.Header.Set(key, value)
	})
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// do sends req and reads its answer: any status is returned; a failure to
// connect (or to get an answer) is unavailable, the deadline is timeout,
// and a body over limit is resource_exhausted.
func (c *HTTPClient) do(ctx context.Context, req *http.Request, hostport string, timeout time.Duration, limit int64) opOutcome {
	const name = httpRequestName
	late := func() opOutcome {
		return failed(codes.Timeout, "%s: %s %s: no answer within %v (lua.http.timeout, or the handler's budget)", name, req.Method, hostport, timeout)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return late()
		}
		// The *url.Error around it repeats the URL, whose query may hold a
		// secret: name the host:port only.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return failed(codes.Unavailable, "%s: %s: %v", name, hostport, err)
	}
	defer resp.Body.Close()
	tooLarge := func() opOutcome {
		return failed(codes.ResourceExhausted, "%s: %s: the response body is over lua.http.max_response_bytes (%d)", name, hostport, limit)
	}
	if resp.ContentLength > limit {
		return tooLarge()
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	switch {
	case ctx.Err() != nil:
		return late()
	case err != nil:
		return failed(codes.Unavailable, "%s: %s: reading the response: %v", name, hostport, err)
	case int64(len(body)) > limit:
		return tooLarge()
	}
	status := resp.StatusCode
	headers := make(map[string]string, len(resp.Header))
	for k, vs := range resp.Header {
		headers[k] = strings.Join(vs, ", ") // net/http canonicalized k
	}
	return func(vm *VM) []lua.LValue {
		L := vm.l
		h := L.CreateTable(0, len(headers))
		for k, v := range headers {
			h.RawSetString(k, lua.LString(v))
		}
		out := L.CreateTable(0, 3)
		out.RawSetString("status", lua.LNumber(status))
		out.RawSetString("headers", h)
		out.RawSetString("body", lua.LString(body))
		return []lua.LValue{lua.LTrue, out}
	}
}

// installHTTP adds shield.http to the shield table.
func (vm *VM) installHTTP(sh *lua.LTable, check *lua.LFunction) {
	h := vm.l.NewTable()
	h.RawSetString("request", vm.suspending(check, vm.luaHTTPRequest))
	sh.RawSetString("http", h)
}
