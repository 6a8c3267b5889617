package embedtest

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
)

func cosine(a, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot // both are unit vectors
}

func TestVectorIsDeterministicUnitAndNonZero(t *testing.T) {
	for _, text := range []string{"the cat sat on the mat", "", "?!…", "数字 123", "a"} {
		v := Vector(text, 64)
		if len(v) != 64 {
			t.Fatalf("Vector(%q) has %d dimensions", text, len(v))
		}
		if err := embed.Validate([][]float32{v}, 1, 64); err != nil {
			t.Fatalf("Vector(%q): %v", text, err)
		}
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		if math.Abs(norm-1) > 1e-5 {
			t.Errorf("Vector(%q) has squared norm %f, want 1", text, norm)
		}
		if !slices.Equal(v, Vector(text, 64)) {
			t.Errorf("Vector(%q) differs between calls", text)
		}
	}
}

func TestVectorPinned(t *testing.T) {
	// Pinned so that other packages' golden files stay valid: a change to
	// the hashing must be deliberate. "hello" hashes to dimension 11 with a
	// minus sign, "world" to dimension 3 with a plus sign.
	r := float32(1 / math.Sqrt(5))
	tests := []struct {
		text string
		dim  int
		want map[int]float32 // the non-zero components
	}{
		{"hello world", 16, map[int]float32{3: float32(1 / math.Sqrt2), 11: -float32(1 / math.Sqrt2)}},
		{"Hello, hello WORLD", 16, map[int]float32{3: r, 11: -2 * r}},
		// In 8 dimensions both words land on dimension 3 and cancel out:
		// the fallback keeps the vector valid.
		{"hello world", 8, map[int]float32{0: 1}},
	}
	for _, tt := range tests {
		v := Vector(tt.text, tt.dim)
		for i, x := range v {
			if math.Abs(float64(x-tt.want[i])) > 1e-6 {
				t.Errorf("Vector(%q, %d) = %v, want non-zero components %v", tt.text, tt.dim, v, tt.want)
				break
			}
		}
	}
}

func TestSharedWordsAreSimilar(t *testing.T) {
	base := Vector("we talked about the garden and the tomatoes", 64)
	close := Vector("the tomatoes in the garden", 64)
	far := Vector("quarterly invoice reconciliation spreadsheet", 64)
	if c, f := cosine(base, close), cosine(base, far); c <= f || c < 0.5 {
		t.Errorf("similarity with shared words %.3f, without %.3f: want the first clearly higher", c, f)
	}
}

func TestWordsAreUnicodeAware(t *testing.T) {
	tests := []struct{ a, b string }{
		{"ÜBER Straße", "über straße"},
		{"caf\u00e9", "cafe\u0301"}, // composed and decomposed é
		{"Hello, World!", "hello world"},
		{"ΟΔΥΣΣΕΥΣ", "οδυσσευσ"},
	}
	for _, tt := range tests {
		if !slices.Equal(Vector(tt.a, 64), Vector(tt.b, 64)) {
			t.Errorf("%q and %q should embed alike (words %q vs %q)", tt.a, tt.b, Words(tt.a), Words(tt.b))
		}
	}
	if w := Words("naïve café—déjà vu, 東京タワー 2024"); !slices.Equal(w, []string{"naïve", "café", "déjà", "vu", "東京タワー", "2024"}) {
		t.Errorf("Words = %q", w)
	}
}

func TestEmbedderCountsAndDescribes(t *testing.T) {
	e := New(0)
	if info := e.Info(); info.Dim != DefaultDim || !info.Normalized || info.Provider != "embedtest" {
		t.Errorf("Info = %+v", info)
	}
	ctx := context.Background()
	got, err := e.Embed(ctx, recall.InputDocument, []string{"one", "two"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[1], Vector("two", DefaultDim)) {
		t.Errorf("Embed disagrees with Vector")
	}
	if _, err := e.Embed(ctx, recall.InputQuery, []string{"three"}); err != nil {
		t.Fatal(err)
	}
	if e.Calls() != 2 || e.Texts() != 3 || e.Queries() != 1 {
		t.Errorf("counted %d calls, %d texts, %d queries; want 2, 3, 1", e.Calls(), e.Texts(), e.Queries())
	}
}

func TestFaults(t *testing.T) {
	e := New(8)
	e.FailOn(2, FaultError)
	e.FailOn(3, FaultNaN)
	e.FailOn(4, FaultWrongDim)
	ctx := context.Background()
	want := []string{"", recall.EUNAVAILABLE, recall.EUNAVAILABLE, recall.ECONFLICT, ""}
	for call, code := range want {
		vecs, err := e.Embed(ctx, recall.InputDocument, []string{"x", "y"})
		if err == nil {
			err = embed.Validate(vecs, 2, 8) // NaN and wrong dimensions show here
		}
		if got := recall.ErrorCode(err); got != code {
			t.Errorf("call %d: code %q, want %q (%v)", call+1, got, code, err)
		}
	}
	e.FailOn(0, FaultError)
	if _, err := e.Embed(ctx, recall.InputQuery, []string{"x"}); err == nil {
		t.Error("FailOn(0) did not make every later call fail")
	}
	e.FailOn(0, 0)
	if _, err := e.Embed(ctx, recall.InputQuery, []string{"x"}); err != nil {
		t.Errorf("clearing the fault: %v", err)
	}
}

func TestDelayHonoursCancellation(t *testing.T) {
	e := New(8)
	e.Delay = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.Embed(ctx, recall.InputQuery, []string{"x"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}

func BenchmarkVector(b *testing.B) {
	text := "we talked about the garden, the tomatoes and what to plant next spring"
	for b.Loop() {
		Vector(text, DefaultDim)
	}
}
