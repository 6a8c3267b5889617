package search

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/recall-mcp/recall"
)

// The waits of a query embedder's outage (see breaker). They are shorter
// than a sweep's (5 s to 5 min, internal/ingest): a probe costs one search
// at most its embed budget (2 s in a server), while every search during a
// wait loses its semantic half, so an embedder that is back is noticed
// within a minute; at that cap an embedder that hangs holds up one search
// a minute.
const (
	firstOutageWait = 5 * time.Second
	maxOutageWait   = time.Minute
)

// breaker keeps searches from waiting on a query embedder that is down.
// Without it every hybrid search paid its embed budget (or the embedder's
// own time to fail) for as long as the outage lasted. After a query could
// not be embedded, searches go without calling the embedder until the
// wait has passed; then one search tries it (the probe) while the others
// still go without. A vector closes the breaker at once; a failed probe
// doubles the wait, from firstOutageWait up to maxOutageWait.
type breaker struct {
	mu      sync.Mutex
	emb     recall.Embedder // the embedder watched: another one starts afresh
	err     error           // why the last query could not be embedded (nil: closed)
	failed  time.Time       // when
	wait    time.Duration
	probing bool // a search is trying the embedder
}

// admit says whether a search may embed its query with emb now, and
// whether as the probe. When it may not, why says so for the client (it
// never names the embedder's address) and cause is the failure the
// embedder was left for, for the operator.
func (b *breaker) admit(emb recall.Embedder, now time.Time) (probe bool, why string, cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.emb != emb {
		// A switch of the read space brings another embedder: what the
		// last one did says nothing of it.
		b.emb, b.err, b.wait, b.probing = emb, nil, 0, false
	}
	switch {
	case b.err == nil:
		return false, "", nil
	case b.probing:
		return false, fmt.Sprintf("the query embedder failed %s ago and is being tried again", roughly(now.Sub(b.failed))), b.err
	case now.Before(b.failed.Add(b.wait)):
		return false, fmt.Sprintf("the query embedder failed %s ago and is tried again in %s", roughly(now.Sub(b.failed)), roughly(b.failed.Add(b.wait).Sub(now))), b.err
	}
	b.probing = true
	return true, "", nil
}

// report records how embedding a query with emb ended: err is nil for a
// usable vector. An embedding runs to its end while a caller still wants
// its outcome, or its deadline passed (queryEmbedding), so every outcome
// but errAbandoned is news of the embedder.
func (b *breaker) report(emb recall.Embedder, probe bool, err error, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.emb != emb {
		return // the read space switched meanwhile
	}
	if probe {
		b.probing = false
	}
	switch {
	case err == nil:
		b.err, b.wait = nil, 0
	case errors.Is(err, errAbandoned):
		// Every caller went away before the embedder answered: no news
		// of it (a probe's turn passes to the next search).
	case probe || b.err == nil:
		b.err, b.failed = err, now
		b.wait = min(max(2*b.wait, firstOutageWait), maxOutageWait)
	}
	// Otherwise a search that called the embedder before the outage began
	// failed: that is the same outage, not a probe's news.
}

// answered closes the breaker if it watches emb: its space's vectors were
// just made in this process, so the embedder answers again. A probe in
// flight still reports how it ended.
func (b *breaker) answered(emb recall.Embedder) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.emb == emb {
		b.err, b.wait = nil, 0
	}
}

// roughly is d to the second, as a note gives it.
func roughly(d time.Duration) string {
	if d < time.Second {
		return "less than a second"
	}
	return d.Round(time.Second).String()
}
