package server

import (
	"bufio"
	"fmt"
	"github.com/recall-mcp/recall"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A tiny Prometheus text-format (version 0.0.4) writer: counters and
// histograms keyed by label values, plus gauges computed at scrape time.
// The server needs a dozen series; the client library would bring a
// registry, protobuf and process collectors for them.

// latencyBuckets are upper bounds in seconds, from cache hits to the
// search time budget.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

type counterVec struct {
	mu     sync.Mutex
	name   string
	help   string
	labels []string
	vals   map[string]float64 // by encoded label values
}

func newCounterVec(name, help string, labels ...string) *counterVec {
	return &counterVec{name: name, help: help, labels: labels, vals: map[string]float64{}}
}

func (c *counterVec) add(v float64, lvs ...string) {
	k := labelKey(lvs)
	c.mu.Lock()
	c.vals[k] += v
	c.mu.Unlock()
}

func (c *counterVec) write(w io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", c.name, c.help, c.name)
	for _, k := range sortedKeys(c.vals) {
		fmt.Fprintf(w, "%s%s %s\n", c.name, labelText(c.labels, k, ""), num(c.vals[k]))
	}
}

type histogramVec struct {
	mu     sync.Mutex
	name   string
	help   string
	labels []string
	series map[string]*histogram
}

type histogram struct {
	counts []uint64 // per bucket, not cumulative
	sum    float64
	n      uint64
}

func newHistogramVec(name, help string, labels ...string) *histogramVec {
	return &histogramVec{name: name, help: help, labels: labels, series: map[string]*histogram{}}
}

func (h *histogramVec) observe(d time.Duration, lvs ...string) {
	v := d.Seconds()
	k := labelKey(lvs)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.series[k]
	if s == nil {
		s = &histogram{counts: make([]uint64, len(latencyBuckets))}
		h.series[k] = s
	}
	if i := sort.SearchFloat64s(latencyBuckets, v); i < len(latencyBuckets) {
		s.counts[i]++
	}
	s.sum += v
	s.n++
}

func (h *histogramVec) write(w io.Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", h.name, h.help, h.name)
	keys := make([]string, 0, len(h.series))
	for k := range h.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := h.series[k]
		var cum uint64
		for i, ub := range latencyBuckets {
			cum += s.counts[i]
			fmt.Fprintf(w, "%s_bucket%s %d\n", h.name, labelText(h.labels, k, num(ub)), cum)
		}
		fmt.Fprintf(w, "%s_bucket%s %d\n", h.name, labelText(h.labels, k, "+Inf"), s.n)
		fmt.Fprintf(w, "%s_sum%s %s\n", h.name, labelText(h.labels, k, ""), num(s.sum))
		fmt.Fprintf(w, "%s_count%s %d\n", h.name, labelText(h.labels, k, ""), s.n)
	}
}

// gauge is one sample of a gauge family computed at scrape time.
type gauge struct {
	labels [][2]string
	value  float64
}

func writeGauge(w io.Writer, name, help string, samples ...gauge) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	for _, g := range samples {
		var b strings.Builder
		if len(g.labels) > 0 {
			b.WriteByte('{')
			for i, l := range g.labels {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%s=\"%s\"", l[0], escapeLabel(l[1]))
			}
			b.WriteByte('}')
		}
		fmt.Fprintf(w, "%s%s %s\n", name, b.String(), num(g.value))
	}
}

// Label values are joined with a byte that label values never contain
// (they are route patterns, tool names, kinds and status codes).
const labelSep = "\x1f"

func labelKey(lvs []string) string { return strings.Join(lvs, labelSep) }

func labelText(names []string, key, le string) string {
	if len(names) == 0 && le == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	vals := strings.Split(key, labelSep)
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		v := ""
		if i < len(vals) {
			v = vals[i]
		}
		fmt.Fprintf(&b, "%s=\"%s\"", n, escapeLabel(v))
	}
	if le != "" {
		if len(names) > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "le=\"%s\"", le)
	}
	b.WriteByte('}')
	return b.String()
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s)
}

func num(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// metrics are the server's own series; store-derived gauges are added at
// scrape time.
type metrics struct {
	requests    *counterVec   // route, code
	latency     *histogramVec // route
	tools       *counterVec   // tool, outcome
	toolLatency *histogramVec // tool
	ingested    *counterVec   // status
	repaired    *counterVec   // (none): texts embedded by background and admin repair
}

func newMetrics() *metrics {
	return &metrics{
		requests:    newCounterVec("recall_http_requests_total", "HTTP requests by route and status code.", "route", "code"),
		latency:     newHistogramVec("recall_http_request_duration_seconds", "HTTP request latency by route.", "route"),
		tools:       newCounterVec("recall_tool_calls_total", "MCP tool calls by tool and outcome (ok or an error code).", "tool", "outcome"),
		toolLatency: newHistogramVec("recall_tool_duration_seconds", "MCP tool call latency by tool.", "tool"),
		ingested:    newCounterVec("recall_ingest_sources_total", "Sources posted to /ingest by outcome.", "status"),
		repaired:    newCounterVec("recall_repair_embedded_total", "Chunk texts embedded by repair since start-up."),
	}
}

func (m *metrics) write(w io.Writer) {
	m.requests.write(w)
	m.latency.write(w)
	m.tools.write(w)
	m.toolLatency.write(w)
	m.ingested.write(w)
	m.repaired.write(w)
}

// bufferedWriter is what the scrape handler writes through.
func bufferedWriter(w io.Writer) *bufio.Writer { return bufio.NewWriterSize(w, 16<<10) }

// statsTTL bounds how often a scrape recounts the store.
const statsTTL = 15 * time.Second

type statsCache struct {
	mu  sync.Mutex
	at  time.Time
	val StatsOutput
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if id := identityFrom(r.Context()); id != nil && id.bound && !id.admin {
		s.writeError(w, r, recall.Errorf(recall.EFORBIDDEN, "a token bound to an owner cannot read /metrics, "+
			"which counts every owner's memories: scrape with the admin token or a token bound to no owner"))
		return
	}
	st, err := s.cachedStats(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufferedWriter(w)
	defer bw.Flush()
	s.metrics.write(bw)

	var sources []gauge
	for _, k := range sortedKeys(st.Sources) {
		sources = append(sources, gauge{[][2]string{{"kind", k}}, float64(st.Sources[k])})
	}
	writeGauge(bw, "recall_sources", "Sources stored, by kind.", sources...)
	writeGauge(bw, "recall_chunks", "Chunks stored.", gauge{value: float64(st.Chunks)})
	writeGauge(bw, "recall_db_bytes", "Database size on disk in bytes.", gauge{value: float64(st.DBBytes)})
	var cov, vecs, missing []gauge
	for _, sp := range st.Spaces {
		l := [][2]string{{"space", sp.Name}}
		cov = append(cov, gauge{l, sp.Coverage})
		vecs = append(vecs, gauge{l, float64(sp.Vectors)})
		missing = append(missing, gauge{l, float64(sp.Missing)})
	}
	writeGauge(bw, "recall_vector_coverage_ratio", "Share of distinct chunk texts (each under its header) with a vector, by space.", cov...)
	writeGauge(bw, "recall_vectors", "Distinct chunk texts with a vector, by space.", vecs...)
	writeGauge(bw, "recall_vectors_missing", "Distinct chunk texts without a vector, by space.", missing...)
	var states []gauge
	for _, k := range sortedKeys(st.IndexStates) {
		states = append(states, gauge{[][2]string{{"state", k}}, float64(st.IndexStates[k])})
	}
	writeGauge(bw, "recall_memory_index_states", "Memories and diary days by index state.", states...)
	if ls := st.LastSweep; ls != nil {
		if t, err := time.Parse(time.RFC3339, ls.Finished); err == nil {
			writeGauge(bw, "recall_last_sweep_timestamp_seconds", "When the last sweep finished.", gauge{value: float64(t.Unix())})
		}
		writeGauge(bw, "recall_last_sweep_files", "Files of the last sweep, by what became of them.",
			gauge{[][2]string{{"state", "seen"}}, float64(ls.FilesSeen)},
			gauge{[][2]string{{"state", "changed"}}, float64(ls.FilesChanged)},
			gauge{[][2]string{{"state", "failed"}}, float64(ls.FilesFailed)},
			gauge{[][2]string{{"state", "removed"}}, float64(ls.FilesRemoved)})
	}

	idx := s.bg.index()
	writeGauge(bw, "recall_index_ready", "1 once the vector index is loaded.", gauge{value: b2f(idx.State == "ready")})
	writeGauge(bw, "recall_index_vectors", "Entries in the in-memory vector index: one per paragraph group of each chunk with a vector, so usually more than recall_vectors.", gauge{value: float64(idx.Vectors)})
	rep := s.bg.repairState()
	writeGauge(bw, "recall_repair_running", "1 while a repair page is being embedded.", gauge{value: b2f(rep.State == "running")})
	writeGauge(bw, "recall_repair_missing", "Chunk texts without a vector after the last repair page.", gauge{value: float64(rep.Missing)})
	n, bytes := s.stage.size()
	writeGauge(bw, "recall_ingest_staged_sources", "Sources waiting in /ingest staging for more chunks.", gauge{value: float64(n)})
	writeGauge(bw, "recall_ingest_staged_bytes", "Chunk text bytes waiting in /ingest staging.", gauge{value: float64(bytes)})
	writeGauge(bw, "recall_mcp_sessions", "Open MCP sessions.", gauge{value: float64(s.sessionCount())})
	writeGauge(bw, "recall_bad_token_clients", "Client addresses tracked for wrong tokens.", gauge{value: float64(s.bad.size())})
	if ri := reqInfoFrom(r.Context()); ri != nil {
		ri.set(func(ri *reqInfo) { ri.results, ri.counted = 1, true })
	}
}

func (s *Server) cachedStats(r *http.Request) (StatsOutput, error) {
	c := &s.statsCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && s.opt.Now().Sub(c.at) < statsTTL {
		return c.val, nil
	}
	v, err := s.stats(r.Context(), callerFrom(r))
	if err != nil {
		return StatsOutput{}, err
	}
	c.val, c.at = v, s.opt.Now()
	return v, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
