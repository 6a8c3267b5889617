package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/memory"
)

const soakClients = 50

// soakDuration is 5 seconds by default, 30 (the soak) with
// RECALL_SOAK=1 and 2 in -short mode.
func soakDuration() time.Duration {
	switch {
	case os.Getenv("RECALL_SOAK") == "1":
		return 30 * time.Second
	case testing.Short():
		return 2 * time.Second
	}
	return 5 * time.Second
}

// soakClient is one of the concurrent sessions and what it has seen acknowledged.
type soakClient struct {
	n     int
	token string
	query string            // six words found together in one archive source only, soak/<n>.md
	acked map[string]string // key -> the last value a save of it acknowledged
	acks  int
	ops   map[string]int
	took  map[string][]time.Duration
}

// TestSoak runs 50 Go SDK sessions at once for soakDuration against the
// server on loopback, mixing hybrid, lexical and semantic searches with
// memory saves and reads, across three tokens (two bound to owners). Every
// session's JSON-RPC ids run 1, 2, 3, ..., so identical ids are in flight
// together all the time. It checks: no call fails; every answer belongs to
// its own request (the query echoed, the client's own source on top, its own
// key saved); a read returns the last value the same client saved; and
// afterwards every acknowledged save reads back with its exact value.
func TestSoak(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Rate = rate.Inf })
	clients := make([]*soakClient, soakClients)
	tokens := []string{aliceTok, bobTok, plainTok}
	for i := range clients {
		// Words of its own, so that the client's source is the clear best
		// match by text and by meaning alike.
		var words []string
		for _, w := range []string{"amber", "birch", "cedar", "dune", "ember", "fjord"} {
			words = append(words, fmt.Sprintf("k%d%s", i, w))
		}
		c := &soakClient{n: i, token: tokens[i%len(tokens)], query: strings.Join(words, " "),
			acked: map[string]string{}, ops: map[string]int{}, took: map[string][]time.Duration{}}
		clients[i] = c
		f.archive(fmt.Sprintf("soak/%02d.md", i), fmt.Sprintf("Soak %d", i), "2025-01",
			fmt.Sprintf("A conversation about %s, and nothing else.", c.query),
			"A second chunk about lanterns, shared words and the weather.")
	}

	d := soakDuration()
	var (
		wg      sync.WaitGroup
		failed  atomic.Int64
		errMu   sync.Mutex
		errs    []string
		started = time.Now()
	)
	report := func(format string, args ...any) {
		if failed.Add(1) > 20 {
			return
		}
		errMu.Lock()
		errs = append(errs, fmt.Sprintf(format, args...))
		errMu.Unlock()
	}
	// Sessions open before the clock starts, so all 50 run together.
	sessions := make([]*mcp.ClientSession, len(clients))
	for i, c := range clients {
		cs, err := f.dial(c.token, f.hs.URL+"/mcp")
		if err != nil {
			t.Fatalf("client %d: connect: %v", i, err)
		}
		sessions[i] = cs
	}
	deadline := time.Now().Add(d)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sessions[i].Close()
			c.run(sessions[i], deadline, report)
		}()
	}
	wg.Wait()
	elapsed := time.Since(started)

	total := map[string]int{}
	took := map[string][]time.Duration{}
	for _, c := range clients {
		for op, n := range c.ops {
			total[op] += n
			took[op] = append(took[op], c.took[op]...)
		}
		if c.ops["search"]+c.ops["save"] == 0 {
			report("client %d completed no call: starved or wedged", c.n)
		}
	}
	calls := total["search"] + total["save"] + total["read"]
	t.Logf("%d clients, %s: %d calls (%.0f/s): %v", len(clients), d, calls, float64(calls)/elapsed.Seconds(), total)
	for _, op := range slices.Sorted(maps.Keys(took)) {
		ds := took[op]
		slices.Sort(ds)
		t.Logf("%s latency: p50 %v, p99 %v, max %v", op, ds[len(ds)/2], ds[len(ds)*99/100], ds[len(ds)-1])
	}

	// Every acknowledged save, read back through new sessions.
	var checked atomic.Int64
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := f.dial(c.token, f.hs.URL+"/mcp")
			if err != nil {
				report("client %d: connect to verify: %v", c.n, err)
				return
			}
			defer cs.Close()
			for _, key := range slices.Sorted(maps.Keys(c.acked)) {
				m, ok := soakCall[memory.Memory](cs, "read_memory", map[string]any{"key": key}, report)
				if ok && m.Value != c.acked[key] {
					report("lost write: %s reads %q, the last acknowledged save was %q", key, m.Value, c.acked[key])
				}
				checked.Add(1)
			}
		}()
	}
	wg.Wait()
	acks := 0
	for _, c := range clients {
		acks += c.acks
	}
	t.Logf("%d acknowledged saves: the last value of each of their %d keys read back", acks, checked.Load())
	if n := failed.Load(); n > 0 {
		t.Errorf("%d failures, the first ones:\n%s", n, strings.Join(errs, "\n"))
	}
}

var soakModes = []string{recall.ModeHybrid, recall.ModeLexical, recall.ModeSemantic}

// run loops until deadline: 60% searches, 30% saves, 10% reads of a key
// this client saved.
func (c *soakClient) run(cs *mcp.ClientSession, deadline time.Time, report func(string, ...any)) {
	r := rand.New(rand.NewPCG(uint64(c.n), 7))
	seq := 0
	for time.Now().Before(deadline) {
		start := time.Now()
		switch p := r.IntN(10); {
		case p < 6:
			c.ops["search"]++
			mode := soakModes[r.IntN(len(soakModes))]
			out, ok := soakCall[recall.SearchResponse](cs, "search_archive", map[string]any{"query": c.query, "mode": mode}, report)
			c.took["search"] = append(c.took["search"], time.Since(start))
			if !ok {
				continue
			}
			own := fmt.Sprintf("soak/%02d.md", c.n)
			if out.Query != c.query || len(out.Results) == 0 || out.Results[0].Source != own {
				report("client %d (%s) got another answer: query %q, results %v", c.n, mode, out.Query, sources(out.Results))
				continue
			}
			// Semantic neighbours may be anything; full text may not.
			for _, h := range out.Results {
				if mode == recall.ModeLexical && h.Source != own {
					report("client %d (%s) got another client's passage: %s %q", c.n, mode, h.Source, h.Text)
				}
			}
		case p < 9:
			c.ops["save"]++
			seq++
			// Half the saves rewrite one of a few keys (a lost update
			// shows as an older value), half make a new key (a lost
			// insert shows as a missing one).
			key := fmt.Sprintf("note_soak_%d_%d", c.n, seq%8)
			if seq%2 == 1 {
				key = fmt.Sprintf("note_soak_%d_new%d", c.n, seq)
			}
			value := fmt.Sprintf("client %d wrote %s for the %dth time (%x)", c.n, key, seq, r.Uint64())
			out, ok := soakCall[memory.SaveResult](cs, "save_memory", map[string]any{"key": key, "value": value}, report)
			c.took["save"] = append(c.took["save"], time.Since(start))
			if !ok {
				continue
			}
			if out.Key != key {
				report("client %d saved %s, the answer names %s", c.n, key, out.Key)
				continue
			}
			c.acked[key] = value
			c.acks++
		default:
			key := fmt.Sprintf("note_soak_%d_%d", c.n, r.IntN(8))
			want, saved := c.acked[key]
			if !saved {
				continue
			}
			c.ops["read"]++
			m, ok := soakCall[memory.Memory](cs, "read_memory", map[string]any{"key": key}, report)
			c.took["read"] = append(c.took["read"], time.Since(start))
			if ok && m.Value != want {
				report("client %d read %s = %q, its last save was %q", c.n, key, m.Value, want)
			}
		}
	}
}

func soakCall[T any](cs *mcp.ClientSession, tool string, args map[string]any, report func(string, ...any)) (T, bool) {
	var out T
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		report("%s %v: %v", tool, args, err)
		return out, false
	}
	if res.IsError {
		report("%s %v: tool error: %s", tool, args, resultText(res))
		return out, false
	}
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		report("%s: decode %s: %v", tool, b, err)
		return out, false
	}
	return out, true
}

func sources(hits []recall.Hit) []string {
	var s []string
	for _, h := range hits {
		s = append(s, h.Source)
	}
	return s
}
