package acceptance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// chromium is a headless Chromium driven over the DevTools protocol, on a
// WebSocket dialled with coder/websocket: no other dependency. It runs in
// a process group of its own, killed at cleanup with everything it spawned.

// chromiumPath is Debian's chromium, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

type chromium struct {
	t    testing.TB
	cmd  *exec.Cmd
	ws   *websocket.Conn
	done chan struct{} // closed when the read loop ends

	mu      sync.Mutex // guards nextID, pending and events
	nextID  int64
	pending map[int64]chan cdpMessage
	events  []string // console messages and exceptions, for a failure's report
}

// cdpMessage is a reply (ID set) or an event (Method set).
type cdpMessage struct {
	ID        int64           `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// startChromium starts the browser and connects to it, or skips the test
// where Chromium is not installed.
func startChromium(t testing.TB) *chromium {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no %s (CI installs Debian's chromium): %v", chromiumPath, err)
	}
	profile := t.TempDir()
	cmd := exec.Command(chromiumPath, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--no-default-browser-check", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-extensions", "--disable-default-apps",
		"--disable-background-timer-throttling", "--disable-renderer-backgrounding",
		"--disable-backgrounding-occluded-windows", "--password-store=basic", "--use-mock-keychain",
		// Loopback only: no name resolves, so nothing leaves the machine.
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--no-proxy-server",
		"--user-data-dir="+profile, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
		"about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := &limitedWriter{n: 64 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	b := &chromium{t: t, cmd: cmd, pending: map[int64]chan cdpMessage{}, done: make(chan struct{})}
	t.Cleanup(func() {
		if b.ws != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			b.call(ctx, "", "Browser.close", nil)
			cancel()
			b.ws.CloseNow()
			<-b.done
		}
		// The whole group: the browser, its zygote, renderers and GPU
		// process. Only processes of the group this test started.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("chromium (pid %d) did not exit", cmd.Process.Pid)
		}
		// Its children die of the same signal a moment later.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if syscall.Kill(-cmd.Process.Pid, 0) != nil {
				break
			}
		}
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", stderr.String())
		}
	})

	// DevToolsActivePort holds the port, then the browser target's path.
	var port, path string
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort"))
		if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); err == nil && len(lines) == 2 {
			port, path = lines[0], lines[1]
			break
		}
		select {
		case <-exited:
			t.Fatalf("chromium exited: %s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromium wrote no DevToolsActivePort within 30 s: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := strconv.Atoi(port); err != nil {
		t.Fatalf("DevToolsActivePort port %q", port)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://127.0.0.1:"+port+path, nil)
	if err != nil {
		t.Fatalf("connect to chromium: %v", err)
	}
	ws.SetReadLimit(64 << 20) // screenshots
	b.ws = ws
	go b.readLoop()
	return b
}

func (b *chromium) readLoop() {
	defer close(b.done)
	for {
		_, data, err := b.ws.Read(context.Background())
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.pending[m.ID]; ok {
				ch <- m
				delete(b.pending, m.ID)
			}
		} else if m.Method == "Runtime.consoleAPICalled" || m.Method == "Runtime.exceptionThrown" {
			b.events = append(b.events, fmt.Sprintf("%s %.300s", m.Method, m.Params))
		}
		b.mu.Unlock()
	}
}

// call sends one command (to a page when sessionID is set) and waits for
// its reply within ctx.
func (b *chromium) call(ctx context.Context, sessionID, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMessage, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	data, _ := json.Marshal(msg)
	if err := b.ws.Write(ctx, websocket.MessageText, data); err != nil {
		return nil, err
	}
	select {
	case m, ok := <-ch:
		switch {
		case !ok:
			return nil, errors.New("chromium: connection closed")
		case m.Error != nil:
			return nil, fmt.Errorf("chromium: %s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return nil, fmt.Errorf("chromium: %s: %w", method, ctx.Err())
	}
}

// open loads url in a page of a fresh browser context (its own cookies
// and storage: another browser session) and returns the page's session.
func (b *chromium) open(ctx context.Context, url string) string {
	b.t.Helper()
	var bc struct {
		ID string `json:"browserContextId"`
	}
	b.must(ctx, "", "Target.createBrowserContext", map[string]any{}, &bc)
	var target struct {
		ID string `json:"targetId"`
	}
	b.must(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": bc.ID}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	b.must(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.ID, "flatten": true}, &att)
	b.must(ctx, att.SessionID, "Runtime.enable", nil, nil)
	b.must(ctx, att.SessionID, "Page.enable", nil, nil)
	b.must(ctx, att.SessionID, "Page.navigate", map[string]any{"url": url}, nil)
	return att.SessionID
}

func (b *chromium) must(ctx context.Context, session, method string, params, out any) {
	b.t.Helper()
	res, err := b.call(ctx, session, method, params)
	if err != nil {
		b.t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			b.t.Fatalf("%s: %v in %s", method, err, res)
		}
	}
}

// await evaluates a JavaScript promise expression in a page until it
// settles, retrying while the page is still loading (no such value yet,
// or the context replaced by the navigation), and returns its value.
func (b *chromium) await(ctx context.Context, session, expr string) (string, error) {
	for {
		res, err := b.call(ctx, session, "Runtime.evaluate", map[string]any{
			"expression": expr, "awaitPromise": true, "returnByValue": true})
		var r struct {
			Result struct {
				Value any `json:"value"`
			} `json:"result"`
			Exception *struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		if err == nil {
			if err = json.Unmarshal(res, &r); err == nil && r.Exception == nil {
				s, _ := r.Result.Value.(string)
				return s, nil
			}
			if r.Exception != nil {
				err = fmt.Errorf("%s %s", r.Exception.Text, r.Exception.Exception.Description)
			}
		}
		if !strings.Contains(err.Error(), "not loaded yet") && !strings.Contains(err.Error(), "context") {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// click presses and releases the left mouse button over the middle of the
// element with id in a page, once it is shown, enabled and on top there:
// as a user would, so that a hidden, disabled or covered button never
// gets the click.
func (b *chromium) click(ctx context.Context, session, id string) error {
	// A user clicks in the tab in front.
	if _, err := b.call(ctx, session, "Page.bringToFront", nil); err != nil {
		return err
	}
	got, err := b.await(ctx, session, fmt.Sprintf(`new Promise((resolve, reject) => {
		const t0 = Date.now();
		(function wait() {
			const el = document.getElementById(%[1]q);
			const r = el && el.getBoundingClientRect(), x = r && r.x + r.width / 2, y = r && r.y + r.height / 2;
			if (el && !el.disabled && !el.hidden && document.elementFromPoint(x, y) === el) resolve(JSON.stringify({x, y}));
			else if (Date.now() - t0 > 20000) reject(new Error("no clickable #" + %[1]q));
			else setTimeout(wait, 50);
		})();
	})`, id))
	if err != nil {
		return err
	}
	var at struct{ X, Y float64 }
	if err := json.Unmarshal([]byte(got), &at); err != nil {
		return fmt.Errorf("#%s at %q: %v", id, got, err)
	}
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		if _, err := b.call(ctx, session, "Input.dispatchMouseEvent", map[string]any{
			"type": typ, "x": at.X, "y": at.Y, "button": "left", "clickCount": 1}); err != nil {
			return err
		}
	}
	return nil
}

// screenshot saves a PNG of a page.
func (b *chromium) screenshot(ctx context.Context, session, file string) error {
	res, err := b.call(ctx, session, "Page.captureScreenshot", map[string]any{"format": "png"})
	if err != nil {
		return err
	}
	var shot struct {
		Data []byte `json:"data"` // base64 in JSON: []byte decodes it
	}
	if err := json.Unmarshal(res, &shot); err != nil {
		return err
	}
	return os.WriteFile(file, shot.Data, 0o644)
}

func (b *chromium) console() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.events, "\n")
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	mu sync.Mutex // guards w
	w  strings.Builder
	n  int
}

func (l *limitedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
