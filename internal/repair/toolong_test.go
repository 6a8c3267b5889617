package repair_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/repair"
)

// A text the provider refuses as too long for the model is passed at once,
// the texts batched with it embedded, and counted apart with the
// provider's words; a caller that keeps Refusals (the server's background
// repair) never sends it again, while a run without them (recall repair)
// tries it once more.
func TestRepairRemembersTextsTooLongForTheModel(t *testing.T) {
	texts := []string{"zzlong passage"}
	for i := range 40 {
		texts = append(texts, fmt.Sprintf("text %d", i))
	}
	srv := embedtest.NewServer(t, 4, func(s string) bool { return strings.Contains(s, "zzlong") })
	emb, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: srv.URL, Model: "m", Dim: 4, Limits: embed.Limits{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	st, eng := seed(t, recall.VectorSpace{Name: "s", Provider: "openai", Model: "m", Dim: 4, Normalized: true}, texts)
	ctx := context.Background()
	known := &repair.Refusals{}
	p, err := repair.Run(ctx, st, eng, "s", emb, repair.Options{Refusals: known})
	if err != nil || !p.Done || p.Embedded != 40 || p.Refused != 1 || p.TooLong != 1 || p.Missing != 1 ||
		!strings.Contains(p.TooLongReason, "too long for the model") || known.Len() != 1 {
		t.Fatalf("first run: %+v, %v, %d remembered; want 40 embedded, the long text refused as too long", p, err, known.Len())
	}
	// 16 texts, then halves to the long one (8+8, 4+4, 2+2, 1+1), then 16
	// and 9: no probe, no text sent alone but the long one.
	if n := srv.Requests(); n != 11 {
		t.Errorf("first run made %d requests, want 11", n)
	}
	before := srv.Requests()
	p, err = repair.Run(ctx, st, eng, "s", emb, repair.Options{Refusals: known})
	if err != nil || !p.Done || p.Embedded != 0 || p.TooLong != 1 || p.Missing != 1 || p.TooLongReason == "" {
		t.Fatalf("second run: %+v, %v", p, err)
	}
	if n := srv.Requests() - before; n != 0 {
		t.Errorf("the second run sent the refused text again (%d requests)", n)
	}
	before = srv.Requests()
	if p, err = repair.Run(ctx, st, eng, "s", emb, repair.Options{}); err != nil || p.TooLong != 1 || srv.Requests()-before != 1 {
		t.Errorf("a run without Refusals: %+v, %v, %d requests; want the text tried once more", p, err, srv.Requests()-before)
	}
}
