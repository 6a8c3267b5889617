package embed

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
)

// refusalStore keeps refusals by space and key as a store does (a key
// recorded before keeps its first reason), and fails its reads or writes
// when told to.
type refusalStore struct {
	byKey             map[string]map[string]string // space -> key -> reason
	reads, writes     int
	readErr, writeErr error
}

func (s *refusalStore) Refusals(_ context.Context, space string, keys []string) (map[string]string, error) {
	s.reads++
	if s.readErr != nil {
		return nil, s.readErr
	}
	out := map[string]string{}
	for _, k := range keys {
		if why, ok := s.byKey[space][k]; ok {
			out[k] = why
		}
	}
	return out, nil
}

func (s *refusalStore) RecordRefusals(_ context.Context, space string, reasons map[string]string) error {
	s.writes++
	if s.writeErr != nil {
		return s.writeErr
	}
	if s.byKey[space] == nil {
		s.byKey[space] = map[string]string{}
	}
	for k, why := range reasons {
		if _, ok := s.byKey[space][k]; !ok {
			s.byKey[space][k] = why
		}
	}
	return nil
}

// The shared step around an embedder call: a text the space's model
// refused before is not sent (a refusal of another space's model does not
// count), the texts the model refuses now are recorded with its words and
// passed the next time, and the others are neither.
func TestRefusalsPassKnownAndRecordNew(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	sent := map[string]bool{}
	srv := embedtest.NewServer(t, 8, func(text string) bool {
		mu.Lock()
		defer mu.Unlock()
		sent[text] = true
		return strings.Contains(text, "zzlong")
	})
	emb, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Model: "m", Dim: 8, Prefixes: &Prefixes{}, Limits: Limits{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	st := &refusalStore{byKey: map[string]map[string]string{
		"s":     {"old": "refused before"},
		"other": {"new": "another model's refusal"},
	}}
	texts := map[string]string{"a": "bread", "old": "zzlong old crumbs", "new": "zzlong new crumbs", "b": "rye"}
	keys := []string{"a", "old", "new", "b"}
	r := Refusals{Store: st, Space: "s"}

	send, known, err := r.Pass(ctx, keys)
	if err != nil || !slices.Equal(send, []string{"a", "new", "b"}) {
		t.Fatalf("Pass: send %v, %v; want a, new, b (old was refused before)", send, err)
	}
	if why := known["old"]; len(known) != 1 || why == nil || why.Code != recall.ETOOLARGE || why.Message != "refused before" {
		t.Fatalf("Pass: known %v; want old with its recorded reason, code %s", known, recall.ETOOLARGE)
	}
	in := make([]ChunkText, len(send))
	for i, k := range send {
		in[i] = ChunkText{Text: texts[k]}
	}
	vecs, refused, err := Partial(EmbedChunks(ctx, emb, 8, in))
	if err != nil || len(refused) != 1 || refused[1] == nil || vecs[0] == nil || vecs[2] == nil {
		t.Fatalf("embed: %d vectors, refused %v, %v; want new refused, the others embedded", len(vecs), refused, err)
	}
	if sent[texts["old"]] {
		t.Error("the text refused before was sent")
	}
	if err := r.Record(ctx, send, refused); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(st.byKey["s"])); !slices.Equal(got, []string{"new", "old"}) {
		t.Fatalf("recorded %v; want new added to old, a and b not", got)
	}
	if why := st.byKey["s"]["new"]; why != refused[1].Message || !strings.Contains(why, "maximum context length") {
		t.Errorf("new recorded as %q; want the provider's words %q", why, refused[1].Message)
	}
	if send, _, err := r.Pass(ctx, keys); err != nil || !slices.Equal(send, []string{"a", "b"}) {
		t.Errorf("Pass after Record: send %v, %v; want a, b", send, err)
	}

	// A call that refused nothing writes nothing; no keys read nothing.
	reads, writes := st.reads, st.writes
	if err := r.Record(ctx, []string{"a"}, nil); err != nil || st.writes != writes {
		t.Errorf("Record of no refusals: %v, %d writes; want none", err, st.writes-writes)
	}
	if send, known, err := r.Pass(ctx, nil); err != nil || len(send) != 0 || len(known) != 0 || st.reads != reads {
		t.Errorf("Pass of no keys: %v %v %v, %d reads; want none", send, known, err, st.reads-reads)
	}
}

// A store that cannot read its refusals says so and leaves every text to
// send (a caller that sends them costs one call each, loses no vector);
// one that cannot record them says so.
func TestRefusalsReportStoreErrors(t *testing.T) {
	ctx := context.Background()
	down := errors.New("store down")
	st := &refusalStore{byKey: map[string]map[string]string{"s": {"old": "refused before"}}, readErr: down, writeErr: down}
	r := Refusals{Store: st, Space: "s"}
	keys := []string{"a", "old"}
	send, known, err := r.Pass(ctx, keys)
	if !errors.Is(err, down) || !slices.Equal(send, keys) || len(known) != 0 {
		t.Errorf("Pass: send %v, known %v, %v; want every key to send and the store's error", send, known, err)
	}
	refused := map[int]*recall.Error{0: recall.Errorf(recall.ETOOLARGE, "too long")}
	if err := r.Record(ctx, keys, refused); !errors.Is(err, down) {
		t.Errorf("Record: %v; want the store's error", err)
	}
}
