package search_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/search"
)

// A read past the engine's budget is an error that says so, even when the
// read returned without one (what it gathered may be partial); a read
// whose caller left returns its own error; a read within the budget
// returns its result. Each read waits on a channel or on its context,
// never on a clock.
func TestBoundedReads(t *testing.T) {
	st := newStore(t)
	eng := search.New(st, search.Options{Budget: 50 * time.Millisecond})
	err := eng.Bounded(context.Background(), "listing things", func(ctx context.Context) error {
		<-ctx.Done()
		return nil // as a read that stopped early and returned what it had
	})
	if recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.Contains(recall.ErrorMessage(err), "listing things took longer than the 50ms a read may take") {
		t.Errorf("a read past the budget: %v (%s); want an unavailable error saying so", err, recall.ErrorCode(err))
	}

	ctx, cancel := context.WithCancel(context.Background())
	gone := errors.New("the caller left")
	err = eng.Bounded(ctx, "listing things", func(ctx context.Context) error {
		cancel()
		<-ctx.Done()
		return gone
	})
	if err != gone {
		t.Errorf("a read whose caller left: %v; want the read's error", err)
	}

	eng = search.New(st, search.Options{Budget: time.Hour})
	if err := eng.Bounded(context.Background(), "listing things", func(context.Context) error { return nil }); err != nil {
		t.Errorf("a read within the budget: %v", err)
	}
}
