// Command mcpload measures search latency over MCP from a separate process:
// it opens N client sessions with the official Go SDK over Streamable HTTP,
// fires search_archive from all of them for a while, and prints latency
// percentiles, errors and throughput as text and as one JSON object.
//
//	go run ./bench/mcpload -url http://127.0.0.1:8787/mcp -clients 20 -duration 30s
//
// The token comes from RECALL_TOKEN. Each request is a fresh query of two to
// four words drawn from a fixed vocabulary, so the server's query-embedding
// cache rarely helps; -queries N cycles through N queries instead.
//
// With -rate 0 (the default) every client sends its next request as soon as
// the previous answer arrives: the server's saturation throughput, where
// latency is clients / throughput. With -rate R each client sends R requests
// per second at random (Poisson) moments, as assistants do between turns;
// latency is then counted from the moment a request was due, so a server
// falling behind shows in the percentiles instead of slowing the clients.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type config struct {
	url      string
	token    string
	clients  int
	duration time.Duration
	warmup   time.Duration
	rate     float64
	mode     string
	limit    int
	queries  int
	seed     uint64
	wait     time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.url, "url", "http://127.0.0.1:8787/mcp", "the MCP endpoint")
	flag.IntVar(&c.clients, "clients", 20, "concurrent client sessions")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "how long to measure")
	flag.DurationVar(&c.warmup, "warmup", 3*time.Second, "how long to send before measuring")
	flag.Float64Var(&c.rate, "rate", 0, "requests per second per client, at random moments (0: back to back)")
	flag.StringVar(&c.mode, "mode", "hybrid", "search mode: hybrid, lexical or semantic; answers in another mode count as errors")
	flag.IntVar(&c.limit, "limit", 5, "results per search")
	flag.IntVar(&c.queries, "queries", 0, "cycle through this many distinct queries (0: a fresh query every request)")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of the query mix")
	flag.DurationVar(&c.wait, "wait-ready", 10*time.Minute, "wait this long for the server's vector index to be loaded")
	jsonOut := flag.String("json", "", "also write the JSON summary to this `file`")
	flag.Parse()
	c.token = os.Getenv("RECALL_TOKEN")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sum, err := run(ctx, c, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpload: %v\n", err)
		os.Exit(1)
	}
	sum.writeText(os.Stdout)
	b, _ := json.Marshal(sum)
	fmt.Println(string(b))
	if *jsonOut != "" {
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "mcpload: %v\n", err)
			os.Exit(1)
		}
	}
	if sum.Errors > 0 {
		os.Exit(1)
	}
}

// summary is what one run measured. Latencies are in milliseconds.
type summary struct {
	URL        string         `json:"url"`
	Clients    int            `json:"clients"`
	Mode       string         `json:"mode"`
	Rate       float64        `json:"rate_per_client"` // 0: back to back
	Seconds    float64        `json:"seconds"`
	Requests   int            `json:"requests"`
	Errors     int            `json:"errors"`
	Throughput float64        `json:"throughput_rps"`
	P50        float64        `json:"p50_ms"`
	P90        float64        `json:"p90_ms"`
	P99        float64        `json:"p99_ms"`
	Max        float64        `json:"max_ms"`
	Modes      map[string]int `json:"modes"` // answers by the mode the server used
	Results    float64        `json:"mean_results"`
	Chunks     int            `json:"server_chunks"`
	Vectors    int            `json:"server_vectors"`
	FirstError string         `json:"first_error,omitempty"`
}

func (s summary) writeText(w io.Writer) {
	pace := "back to back"
	if s.Rate > 0 {
		pace = fmt.Sprintf("%g req/s each", s.Rate)
	}
	fmt.Fprintf(w, "search_archive over MCP (Streamable HTTP) at %s\n", s.URL)
	fmt.Fprintf(w, "  server: %d chunks, %d vectors in the read space\n", s.Chunks, s.Vectors)
	fmt.Fprintf(w, "  %d clients, %s, mode %s, %.1f s measured\n", s.Clients, pace, s.Mode, s.Seconds)
	fmt.Fprintf(w, "  requests %d, errors %d, throughput %.1f/s, %.1f results per answer\n", s.Requests, s.Errors, s.Throughput, s.Results)
	fmt.Fprintf(w, "  latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", s.P50, s.P90, s.P99, s.Max)
	if s.FirstError != "" {
		fmt.Fprintf(w, "  first error: %s\n", s.FirstError)
	}
}

// bearer adds the token to every request of a session.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

func connect(ctx context.Context, c config, httpClient *http.Client) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: c.url, HTTPClient: httpClient, MaxRetries: -1, DisableStandaloneSSE: true}
	client := mcp.NewClient(&mcp.Implementation{Name: "recall-mcpload", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return client.Connect(cctx, tr, nil)
}

// stats is the part of get_archive_stats this tool reads.
type stats struct {
	Chunks int `json:"chunks"`
	Index  struct {
		State   string `json:"state"`
		Vectors int    `json:"vectors"`
	} `json:"index"`
}

// waitReady polls get_archive_stats until the vector index is loaded:
// before that, hybrid searches fall back to full text.
func waitReady(ctx context.Context, cs *mcp.ClientSession, mode string, limit time.Duration, log io.Writer) (stats, error) {
	deadline := time.Now().Add(limit)
	for said := false; ; said = true {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_archive_stats", Arguments: map[string]any{}})
		if err != nil {
			return stats{}, fmt.Errorf("get_archive_stats: %w", err)
		}
		var st stats
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &st); err != nil || res.IsError {
			return stats{}, fmt.Errorf("get_archive_stats: %s", b)
		}
		if mode == "lexical" || st.Index.State == "ready" {
			return st, nil
		}
		if st.Index.State == "failed" || time.Now().After(deadline) {
			return st, fmt.Errorf("the vector index is %q", st.Index.State)
		}
		if !said {
			fmt.Fprintf(log, "mcpload: waiting for the vector index to load (%d vectors so far)\n", st.Index.Vectors)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

type sample struct {
	took    time.Duration
	mode    string
	results int
	err     error
}

func run(ctx context.Context, c config, log io.Writer) (summary, error) {
	if c.clients < 1 || c.duration <= 0 {
		return summary{}, errors.New("need -clients >= 1 and -duration > 0")
	}
	// One connection per session, as separate assistants would have.
	newHTTP := func() *http.Client {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 4
		return &http.Client{Transport: bearer{token: c.token, base: tr}, Timeout: 60 * time.Second}
	}
	first, err := connect(ctx, c, newHTTP())
	if err != nil {
		return summary{}, fmt.Errorf("connect: %w", err)
	}
	st, err := waitReady(ctx, first, c.mode, c.wait, log)
	first.Close()
	if err != nil {
		return summary{}, err
	}
	sessions := make([]*mcp.ClientSession, c.clients)
	for i := range sessions {
		if sessions[i], err = connect(ctx, c, newHTTP()); err != nil {
			return summary{}, fmt.Errorf("connect client %d: %w", i, err)
		}
		defer sessions[i].Close()
	}

	start := time.Now()
	measureFrom := start.Add(c.warmup)
	end := measureFrom.Add(c.duration)
	var (
		mu      sync.Mutex
		samples []sample
		wg      sync.WaitGroup
	)
	for i, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := clientRand(c, i)
			var mine []sample
			due := time.Now()
			for n := 0; ; n++ {
				if c.rate > 0 {
					due = due.Add(time.Duration(r.ExpFloat64() / c.rate * float64(time.Second)))
					if wait := time.Until(due); wait > 0 {
						select {
						case <-ctx.Done():
						case <-time.After(wait):
						}
					}
				} else {
					due = time.Now()
				}
				if ctx.Err() != nil || due.After(end) {
					break
				}
				q := query(c, i, n, r)
				s := searchOnce(ctx, cs, c, q)
				s.took = time.Since(due)
				if !due.Before(measureFrom) {
					mine = append(mine, s)
				}
			}
			mu.Lock()
			samples = append(samples, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return summary{}, err
	}
	return summarize(c, st, samples), nil
}

func searchOnce(ctx context.Context, cs *mcp.ClientSession, c config, q string) sample {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_archive",
		Arguments: map[string]any{"query": q, "mode": c.mode, "limit": c.limit}})
	if err != nil {
		return sample{err: err}
	}
	if res.IsError {
		var text []string
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return sample{err: fmt.Errorf("tool error: %s", strings.Join(text, " "))}
	}
	var out struct {
		Mode    string            `json:"mode"`
		Note    string            `json:"note"`
		Results []json.RawMessage `json:"results"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		return sample{err: fmt.Errorf("structured output: %w", err)}
	}
	s := sample{mode: out.Mode, results: len(out.Results)}
	if out.Mode != c.mode {
		s.err = fmt.Errorf("asked for %s, served %s (%s)", c.mode, out.Mode, out.Note)
	}
	return s
}

func summarize(c config, st stats, samples []sample) summary {
	s := summary{URL: c.url, Clients: c.clients, Mode: c.mode, Rate: c.rate, Seconds: c.duration.Seconds(),
		Requests: len(samples), Modes: map[string]int{}, Chunks: st.Chunks, Vectors: st.Index.Vectors}
	var ms []float64
	results := 0
	for _, x := range samples {
		ms = append(ms, float64(x.took)/float64(time.Millisecond))
		if x.err != nil {
			s.Errors++
			if s.FirstError == "" {
				s.FirstError = x.err.Error()
			}
			continue
		}
		s.Modes[x.mode]++
		results += x.results
	}
	slices.Sort(ms)
	s.Throughput = float64(len(samples)) / c.duration.Seconds()
	s.P50, s.P90, s.P99 = percentile(ms, 50), percentile(ms, 90), percentile(ms, 99)
	if len(ms) > 0 {
		s.Max = ms[len(ms)-1]
	}
	if ok := len(samples) - s.Errors; ok > 0 {
		s.Results = float64(results) / float64(ok)
	}
	return s
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// vocabulary is what queries are made of: everyday chat topics, most of
// them words the generated benchmark vaults (internal/testvault) use.
var vocabulary = strings.Fields(`garden kettle river morning sister winter letter code bridge quiet lamp orange
train paper window coffee mountain story night doctor project deadline budget recipe flour starter marathon knee
physio laptop database backup python rust compiler borrow lifetime thread memory server deploy kubernetes invoice
client meeting holiday flight hotel museum painting guitar piano concert book chapter novel poem therapy anxiety
friend partner wedding birthday cake dinner lunch breakfast tea mint basil tomato balcony weather rain snow sunshine
beach lake forest hike camping tent bicycle car engine insurance mortgage apartment rent landlord neighbour dog cat
puppy kitten vet walk park school teacher homework exam university thesis research experiment data graph model
training loss accuracy time people year work day first new good`)

func clientRand(c config, i int) *rand.Rand { return rand.New(rand.NewPCG(c.seed, uint64(i))) }

// query returns client i's n-th query: with -queries, one of a fixed mix;
// otherwise a fresh random one.
func query(c config, i, n int, r *rand.Rand) string {
	if c.queries > 0 {
		k := (i*7919 + n) % c.queries
		r = rand.New(rand.NewPCG(c.seed, uint64(k)+1<<32))
	}
	words := make([]string, 2+r.IntN(3))
	for j := range words {
		words[j] = vocabulary[r.IntN(len(vocabulary))]
	}
	return strings.Join(words, " ")
}
