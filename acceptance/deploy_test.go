package acceptance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// The operators' files of deploy/ (README, Operations).
const (
	dashboardFile = "../deploy/grafana/shield.json"
	alertsFile    = "../deploy/prometheus/alerts.yml"
)

// heapLimitDefault is lua.heap_limit_bytes' default, the constant the
// heap alert and the dashboard's limit line start from (no metric
// exports the configured value).
var heapLimitDefault = strconv.FormatInt(config.DefaultHeapLimitBytes, 10)

// deployScript serves the deploy test's traffic: a kv write and a
// handler that outlives its actor's handler_timeout.
const deployScript = `local M = {}
function M.put(ctx, client, req)
  return { rev = shield.kv.put("b", req.key, req.value) }
end
function M.sleep(ctx, client, req)
  shield.sleep(req.ms)
  return {}
end
return M
`

// deployYAML is a node with everything that registers metrics: a cluster
// (its own embedded NATS, which also keeps the kv bucket), storage, a room
// kind and a match queue (docs/rooms.md §13), and an admin address for
// /metrics.
const deployYAML = `node: {name: gw-deploy}
cluster: {embedded: "127.0.0.1:%d", heartbeat: 200ms, node_timeout: 1s}
network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: ops}
  admin: {address: "127.0.0.1:0"}
storage:
  data_dir: %q
  buckets:
    - {name: b, max_value_bytes: 1024}
actors:
  - name: ops
    script: %q
    handler_timeout: 300ms
    rpc:
      routes:
        - {id: 1, name: put, binding: put, requires_auth: false}
        - {id: 2, name: sleep, binding: sleep, requires_auth: false}
  - name: arena
    script: %q
    room: {}
match:
  queues: [{name: duel, room: arena}]
`

// TestDeployFiles: deploy/grafana/shield.json and
// deploy/prometheus/alerts.yml parse and are complete (a title and a
// target per panel; expr, for, severity and summary per alert), and every
// metric either names, with every label it selects or groups by, is one
// a real gateway exports on its /metrics.
func TestDeployFiles(t *testing.T) {
	var exprs []promExpr
	exprs = append(exprs, dashboardExprs(t, dashboardFile)...)
	exprs = append(exprs, alertExprs(t, alertsFile)...)

	// A gateway whose config registers every metric: the cluster's only
	// with a cluster key, the mailbox and control-lane gauges per actor.
	dir := t.TempDir()
	script := filepath.Join(dir, "ops.lua")
	if err := os.WriteFile(script, []byte(deployScript), 0o644); err != nil {
		t.Fatal(err)
	}
	kind := filepath.Join(dir, "arena.lua")
	if err := os.WriteFile(kind, []byte("return {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(deployYAML, freeLoopbackPort(t), filepath.Join(dir, "store"), script, kind)
	s := wiretest.Start(t, "deploy.yaml", cfg, nil)

	// Traffic, so that the vecs the files name have series: a vec with
	// no child is not in the exposition at all. An answered request makes
	// shield_requests_total and shield_handler_seconds; a timeout makes
	// shield_requests_total{code="client_rpc.timeout"}; an unknown route
	// makes shield_edge_dropped_total; a frame over max_frame_bytes makes
	// shield_protocol_errors_total and shield_limits_hit_total.
	c := dialGame(t, s.Addr("game"))
	call(t, c, 1, map[string]any{"key": "k", "value": map[string]int{"n": 1}}, nil)
	mustFail(t, c, 2, map[string]int{"ms": 5000}, codes.Timeout)
	if err := c.Notify(999, map[string]int{}); err != nil { // route_not_found: dropped unanswered
		t.Fatal(err)
	}
	tooLarge(t, s.Addr("game"))
	wiretest.Eventually(t, "the edge drop and the protocol error counted", func() bool {
		return s.Dropped("route_not_found") >= 1 && s.ProtocolErrors("too_large") >= 1
	})

	exposed := scrapeFamilies(t, "http://"+s.Srv.Admin.Addr()+"/metrics")
	registered := describedFamilies(s.Srv.Metrics.Registry)

	used := map[string]bool{}
	describedOnly := map[string]bool{} // vecs with no series yet, known from Describe
	for _, e := range exprs {
		names := metricNames(e.expr)
		if len(names) == 0 && !e.mayBeConstant {
			t.Errorf("%s: names no metric: %q", e.where, e.expr)
		}
		labels := map[string]bool{"job": true, "instance": true} // the scrape's target labels
		for _, name := range names {
			f, ok := family(name, exposed, registered)
			if !ok {
				t.Errorf("%s: %s is not a metric the gateway exports (expr %q)", e.where, name, e.expr)
				continue
			}
			used[f.name] = true
			if _, ok := exposed[f.name]; !ok {
				describedOnly[f.name] = true
			}
			for l := range f.labels {
				labels[l] = true
			}
		}
		for _, l := range labelNames(e.expr) {
			if !labels[l] {
				t.Errorf("%s: label %q is not one of %v, the labels of its metrics (expr %q)", e.where, l, sortedKeys(labels), e.expr)
			}
		}
	}
	t.Logf("the deploy files use %d metrics: %s", len(used), strings.Join(sortedKeys(used), ", "))
	t.Logf("of which vecs with no series yet, found in the registry's Describe: %s", strings.Join(sortedKeys(describedOnly), ", "))
	if t.Failed() {
		t.Logf("/metrics families: %s", strings.Join(sortedKeys(exposed), ", "))
	}
}

// promExpr is one PromQL expression of the deploy files and where it is.
type promExpr struct {
	where, expr string
	// mayBeConstant: a panel's target that names no metric (the heap
	// limit line, vector($heap_limit_bytes)); its panel must name one.
	mayBeConstant bool
}

// dashboardExprs parses the Grafana dashboard, checks its shape, and
// returns every PromQL expression in it: each panel target's expr and
// each query variable's query.
func dashboardExprs(t *testing.T, path string) []promExpr {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	type panel struct {
		ID         int         `json:"id"`
		Type       string      `json:"type"`
		Title      string      `json:"title"`
		Datasource *datasource `json:"datasource"`
		Targets    []struct {
			RefID      string      `json:"refId"`
			Expr       string      `json:"expr"`
			Datasource *datasource `json:"datasource"`
		} `json:"targets"`
	}
	var d struct {
		UID           string  `json:"uid"`
		Title         string  `json:"title"`
		SchemaVersion int     `json:"schemaVersion"`
		Panels        []panel `json:"panels"`
		Templating    struct {
			List []struct {
				Name       string          `json:"name"`
				Type       string          `json:"type"`
				Query      json.RawMessage `json:"query"`
				Datasource *datasource     `json:"datasource"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if d.SchemaVersion != 39 || d.UID == "" || d.Title == "" {
		t.Errorf("%s: schemaVersion %d, uid %q, title %q; want 39 and both set", path, d.SchemaVersion, d.UID, d.Title)
	}
	// Every query goes to the ${datasource} variable, a Prometheus one.
	promDS := func(ds *datasource) bool { return ds != nil && ds.Type == "prometheus" && ds.UID == "${datasource}" }
	var exprs []promExpr
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		switch v.Type {
		case "datasource":
			var q string
			if json.Unmarshal(v.Query, &q) != nil || q != "prometheus" || v.Name != "datasource" {
				t.Errorf("%s: datasource variable %q queries %s; want datasource, prometheus", path, v.Name, v.Query)
			}
		case "textbox":
			// The heap panel's limit line: no metric exports
			// lua.heap_limit_bytes, so the variable starts at its default.
			var q string
			if v.Name == "heap_limit_bytes" && (json.Unmarshal(v.Query, &q) != nil || q != heapLimitDefault) {
				t.Errorf("%s: variable heap_limit_bytes is %s, want lua.heap_limit_bytes' default %s", path, v.Query, heapLimitDefault)
			}
		case "query":
			var q struct {
				Query string `json:"query"`
			}
			if json.Unmarshal(v.Query, &q) != nil || q.Query == "" || !promDS(v.Datasource) {
				t.Errorf("%s: variable %q: query %s on %+v", path, v.Name, v.Query, v.Datasource)
			}
			exprs = append(exprs, promExpr{where: "dashboard variable " + v.Name, expr: q.Query})
		}
	}
	if !vars["datasource"] {
		t.Errorf("%s: no datasource variable", path)
	}
	if len(d.Panels) == 0 {
		t.Errorf("%s: no panels", path)
	}
	ids := map[int]bool{}
	for i, p := range d.Panels {
		where := fmt.Sprintf("dashboard panel %d %q", i, p.Title)
		if p.Title == "" {
			t.Errorf("%s: no title", where)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no target", where)
		}
		if ids[p.ID] {
			t.Errorf("%s: id %d twice", where, p.ID)
		}
		ids[p.ID] = true
		if !promDS(p.Datasource) {
			t.Errorf("%s: datasource %+v, want prometheus ${datasource}", where, p.Datasource)
		}
		named := false
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || !promDS(tg.Datasource) {
				t.Errorf("%s: target %q: expr %q, datasource %+v", where, tg.RefID, tg.Expr, tg.Datasource)
			}
			for _, v := range regexp.MustCompile(`\$\{?(\w+)`).FindAllStringSubmatch(tg.Expr, -1) {
				if !vars[v[1]] && !strings.HasPrefix(v[1], "__") { // $__rate_interval, $__range: Grafana's own
					t.Errorf("%s: target %q uses $%s, no variable of the dashboard", where, tg.RefID, v[1])
				}
			}
			named = named || len(metricNames(tg.Expr)) > 0
			exprs = append(exprs, promExpr{where: where + " target " + tg.RefID, expr: tg.Expr, mayBeConstant: true})
		}
		if !named {
			t.Errorf("%s: no target names a metric", where)
		}
	}
	return exprs
}

// alertExprs parses the Prometheus rules file (unknown keys are an
// error: a misspelt key would be ignored by a lax reader), checks every
// alert's fields, and returns their exprs.
func alertExprs(t *testing.T, path string) []promExpr {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(rules.Groups) == 0 {
		t.Fatalf("%s: no groups", path)
	}
	var exprs []promExpr
	seen := map[string]bool{}
	for _, g := range rules.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("%s: group %q: a name and rules, please", path, g.Name)
		}
		for _, r := range g.Rules {
			where := fmt.Sprintf("alert %q (group %s)", r.Alert, g.Name)
			if r.Alert == "" || seen[r.Alert] {
				t.Errorf("%s: no name, or a name used twice", where)
			}
			seen[r.Alert] = true
			if strings.TrimSpace(r.Expr) == "" {
				t.Errorf("%s: no expr", where)
			}
			// Prometheus durations: these files use only units
			// time.ParseDuration reads too (no d, w, y).
			if _, err := time.ParseDuration(r.For); err != nil {
				t.Errorf("%s: for %q: %v", where, r.For, err)
			}
			if sev := r.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, sev) {
				t.Errorf("%s: severity %q, want critical, warning or info", where, sev)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: a summary and a description, please", where)
			}
			if strings.Contains(r.Expr, "go_gc_heap_live_bytes") && !strings.Contains(r.Expr, heapLimitDefault) {
				t.Errorf("%s: compares the heap with no %s, lua.heap_limit_bytes' default", where, heapLimitDefault)
			}
			exprs = append(exprs, promExpr{where: where, expr: r.Expr})
		}
	}
	return exprs
}

// metricFamily is a family's name, type ("" when known only from the
// registry's Describe) and label names.
type metricFamily struct {
	name, typ string
	labels    map[string]bool
}

// The identifiers of an expression that are metric names: those with the
// prefix of the gateway's own metrics (shield_) or of the Go and process
// collectors it registers (go_, process_). Quoted strings (label values,
// such as code="client_rpc.timeout") are removed first, so that a value
// is never taken for a name; PromQL's functions, keywords and label names
// have none of these prefixes. A name of any other prefix is caught
// when it has a selector (up{job="shield"}), not when bare.
var (
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	metricName = regexp.MustCompile(`\b(?:shield|go|process)_[A-Za-z0-9_]*`)
	selector   = regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*)\s*\{`)
	// A selector's label matchers, and a by/without clause's labels.
	matchers  = regexp.MustCompile(`\{([^{}]*)\}`)
	matcher   = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)`)
	grouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring)\s*\(([^()]*)\)`)
	labelName = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

func metricNames(expr string) []string {
	e := quoted.ReplaceAllString(expr, `""`)
	names := metricName.FindAllString(e, -1)
	for _, m := range selector.FindAllStringSubmatch(e, -1) {
		names = append(names, m[1]) // any other name with a selector, such as up{job="x"}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// labelNames are the labels an expression selects on or groups by.
func labelNames(expr string) []string {
	e := quoted.ReplaceAllString(expr, `""`)
	var ls []string
	for _, m := range matchers.FindAllStringSubmatch(e, -1) {
		for _, l := range matcher.FindAllStringSubmatch(m[1], -1) {
			ls = append(ls, l[1])
		}
	}
	for _, g := range grouping.FindAllStringSubmatch(e, -1) {
		ls = append(ls, labelName.FindAllString(g[1], -1)...)
	}
	slices.Sort(ls)
	return slices.Compact(ls)
}

// family finds the family a referenced name belongs to. In the
// exposition first: a name itself, or a histogram's (or summary's)
// series name, name_bucket (which adds the label le), name_sum or
// name_count. A family absent from the exposition is accepted only when
// the registry describes it with variable labels: a vec with no child yet
// (shield_vm_restarts_total before any VM panicked, a limit that never
// bit), which the exposition leaves out. A family without variable
// labels is always in the exposition, so its absence is an error; and
// a series suffix is accepted only on a histogram or summary seen in the
// exposition.
func family(name string, exposed map[string]metricFamily, registered map[string]metricFamily) (metricFamily, bool) {
	if f, ok := exposed[name]; ok {
		return f, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if f, ok := exposed[base]; ok && (f.typ == "histogram" || (f.typ == "summary" && suffix != "_bucket")) {
			if suffix == "_bucket" {
				f.labels = withLabel(f.labels, "le")
			}
			return f, true
		}
	}
	if f, ok := registered[name]; ok && f.typ == "vec" {
		return f, true
	}
	return metricFamily{}, false
}

func withLabel(m map[string]bool, extra string) map[string]bool {
	out := map[string]bool{extra: true}
	for k := range m {
		out[k] = true
	}
	return out
}

// scrapeFamilies GETs a /metrics in the text format and returns its families
// from the # TYPE lines, with the label names their series carry.
func scrapeFamilies(t *testing.T, url string) map[string]metricFamily {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	fams := map[string]metricFamily{}
	// Series names map to their family: a histogram's name_bucket,
	// name_sum and name_count to name.
	seriesOf := map[string]string{}
	series := regexp.MustCompile(`^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? `)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			fams[name] = metricFamily{name: name, typ: typ, labels: map[string]bool{}}
			seriesOf[name] = name
			if typ == "histogram" || typ == "summary" {
				for _, s := range []string{"_bucket", "_sum", "_count", "_created"} {
					seriesOf[name+s] = name
				}
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := series.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("/metrics: a line that is no sample: %q", line)
		}
		f, ok := fams[seriesOf[m[1]]]
		if !ok {
			t.Fatalf("/metrics: sample %q before its # TYPE", line)
		}
		for _, l := range matcher.FindAllStringSubmatch(quoted.ReplaceAllString(m[2], `""`), -1) {
			if l[1] != "le" && l[1] != "quantile" {
				f.labels[l[1]] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(fams) == 0 {
		t.Fatal("/metrics: no families")
	}
	return fams
}

// describedFamilies reads the registry's Describe: every family
// registered, exposed or not, with its label names. Desc keeps its name
// and labels private; its String is the only way to them
// (Desc{fqName: "…", help: "…", unit: "…", constLabels: {k="v",…},
// variableLabels: {a,b}}). typ is "vec" for a family with variable
// labels.
func describedFamilies(reg *prometheus.Registry) map[string]metricFamily {
	ch := make(chan *prometheus.Desc)
	go func() {
		reg.Describe(ch)
		close(ch)
	}()
	fq := regexp.MustCompile(`fqName: "([^"]*)"`)
	constLabels := regexp.MustCompile(`constLabels: \{([^}]*)\}`)
	varLabels := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	fams := map[string]metricFamily{}
	for d := range ch {
		s := d.String()
		m := fq.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		f, ok := fams[m[1]]
		if !ok {
			f = metricFamily{name: m[1], labels: map[string]bool{}}
		}
		if c := constLabels.FindStringSubmatch(s); c != nil {
			for _, l := range matcher.FindAllStringSubmatch(c[1], -1) {
				f.labels[l[1]] = true
			}
		}
		if v := varLabels.FindStringSubmatch(s); v != nil && v[1] != "" {
			f.typ = "vec"
			for _, l := range strings.Split(v[1], ",") {
				l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")")
				f.labels[l] = true
			}
		}
		fams[m[1]] = f
	}
	return fams
}

// tooLarge sends a frame whose length is over max_frame_bytes: the
// gateway closes the connection (too_large) when it reads the length.
func tooLarge(t *testing.T, addr string) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte{0x7f, 0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.Copy(io.Discard, nc) // until the gateway closes it
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
