package embed

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

func TestNormalize(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name string
		in   []float32
		ok   bool
		want []float32
	}{
		{"3-4-5", []float32{3, 4}, true, []float32{0.6, 0.8}},
		{"already unit", []float32{0, -1, 0}, true, []float32{0, -1, 0}},
		{"huge components", []float32{3e38, 3e38}, true, []float32{float32(math.Sqrt2 / 2), float32(math.Sqrt2 / 2)}},
		{"tiny components", []float32{1e-30, 0}, true, []float32{1, 0}},
		{"empty", []float32{}, false, []float32{}},
		{"all zero", []float32{0, 0, 0}, false, []float32{0, 0, 0}},
		{"NaN", []float32{1, nan}, false, nil},
		{"Inf", []float32{inf, 1}, false, []float32{inf, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := append([]float32(nil), tt.in...)
			if got := Normalize(v); got != tt.ok {
				t.Fatalf("Normalize(%v) = %v, want %v", tt.in, got, tt.ok)
			}
			if tt.want == nil {
				return
			}
			for i := range tt.want {
				if math.Abs(float64(v[i]-tt.want[i])) > 1e-6 {
					t.Fatalf("Normalize(%v) gave %v, want %v", tt.in, v, tt.want)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	tests := []struct {
		name string
		vecs [][]float32
		n    int
		dim  int
		code string // "" means valid
	}{
		{"valid", [][]float32{{1, 0}, {0, 1}}, 2, 2, ""},
		{"valid learning dim", [][]float32{{1, 2, 3}}, 1, 0, ""},
		{"nothing for nothing", nil, 0, 4, ""},
		{"fewer vectors than texts", [][]float32{{1, 0}}, 2, 2, recall.EUNAVAILABLE},
		{"more vectors than texts", [][]float32{{1, 0}, {0, 1}}, 1, 2, recall.EUNAVAILABLE},
		{"wrong dimension", [][]float32{{1, 0, 0}}, 1, 2, recall.ECONFLICT},
		{"mixed dimensions", [][]float32{{1, 0}, {1, 0, 0}}, 2, 0, recall.ECONFLICT},
		{"empty vector", [][]float32{{}}, 1, 0, recall.EUNAVAILABLE},
		{"nil vector", [][]float32{nil}, 1, 2, recall.EUNAVAILABLE},
		{"NaN", [][]float32{{1, nan}}, 1, 2, recall.EUNAVAILABLE},
		{"Inf", [][]float32{{inf, 1}}, 1, 2, recall.EUNAVAILABLE},
		{"all zero", [][]float32{{1, 0}, {0, 0}}, 2, 2, recall.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.vecs, tt.n, tt.dim)
			if got := recall.ErrorCode(err); got != tt.code {
				t.Fatalf("Validate: code %q, want %q (%v)", got, tt.code, err)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"hello", 0, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo wörld", 5, "héllo"},
		{"日本語のテキスト", 3, "日本語"},
		{"👋🏽 hi", 1, "👋"},
	}
	for _, tt := range tests {
		if got := truncate(tt.in, tt.max); got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestKnownPrefixes(t *testing.T) {
	nomic := Prefixes{Query: "search_query: ", Document: "search_document: "}
	tests := []struct {
		model string
		want  Prefixes
	}{
		{"nomic-embed-text", nomic},
		{"nomic-embed-text:v1.5", nomic},
		{"nomic-ai/nomic-embed-text-v1.5", nomic},
		{"text-embedding-nomic-embed-text-v1.5", nomic},
		{"NOMIC-EMBED-TEXT:latest", nomic},
		{"bge-m3", Prefixes{}},
		{"@cf/baai/bge-m3", Prefixes{}},
		{"text-embedding-3-small", Prefixes{}},
		{"@cf/baai/bge-base-en-v1.5", Prefixes{Query: retrievalInstruction}},
		{"snowflake-arctic-embed2", Prefixes{Query: "query: "}},
		{"snowflake-arctic-embed:335m", Prefixes{Query: retrievalInstruction}},
		{"intfloat/multilingual-e5-large", Prefixes{Query: "query: ", Document: "passage: "}},
		{"embeddinggemma", Prefixes{Query: "task: search result | query: ", Document: "title: none | text: "}},
		{"some-unknown-model", Prefixes{}},
	}
	for _, tt := range tests {
		if got := KnownPrefixes(tt.model); got != tt.want {
			t.Errorf("KnownPrefixes(%q) = %+v, want %+v", tt.model, got, tt.want)
		}
	}
	if got := KnownPrefixes("qwen3-embedding:0.6b").Query; got == "" || got[len(got)-6:] != "Query:" {
		t.Errorf("qwen3-embedding query prefix = %q, want Qwen's instruction ending in Query:", got)
	}
}

func TestKnownMaxTokens(t *testing.T) {
	tests := []struct {
		model string
		want  int
	}{
		{"bge-m3", 8192},
		{"@cf/baai/bge-m3", 8192},
		{"mxbai-embed-large:latest", 512},
		{"snowflake-arctic-embed2", 8192},
		{"snowflake-arctic-embed", 512},
		{"text-embedding-3-large", 8191},
		{"mystery", 0},
	}
	for _, tt := range tests {
		if got := KnownMaxTokens(tt.model); got != tt.want {
			t.Errorf("KnownMaxTokens(%q) = %d, want %d", tt.model, got, tt.want)
		}
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name     string
		inputs   []string
		maxBatch int
		maxChars int
		want     []span
	}{
		{"one batch", []string{"a", "b"}, 4, 100, []span{{0, 2}}},
		{"by count", []string{"a", "b", "c", "d", "e"}, 2, 100, []span{{0, 2}, {2, 4}, {4, 5}}},
		{"by characters", []string{"aaaa", "bbbb", "cccc"}, 10, 8, []span{{0, 2}, {2, 3}}},
		{"characters not bytes", []string{"éééé", "éééé"}, 10, 8, []span{{0, 2}}},
		{"oversized text alone", []string{"a", "bbbbbbbbbbbb", "c"}, 10, 5, []span{{0, 1}, {1, 2}, {2, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &engine{limits: Limits{MaxBatch: tt.maxBatch, MaxBatchChars: tt.maxChars}}
			if got := e.split(tt.inputs); !slices.Equal(got, tt.want) {
				t.Fatalf("split = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{" 10 ", 10 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"99999999999999", 86400 * time.Second},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"soon", 0},
		{"1.5", 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.header != "" {
			h.Set("Retry-After", tt.header)
		}
		if got := retryAfter(h, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tt.header, got, tt.want)
		}
	}
}

func TestBackoffFullJitter(t *testing.T) {
	e := &engine{limits: Limits{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}}
	for attempt, ceiling := range map[int]time.Duration{
		1:  100 * time.Millisecond,
		2:  200 * time.Millisecond,
		4:  800 * time.Millisecond,
		5:  time.Second,
		40: time.Second,
	} {
		var top time.Duration
		for range 200 {
			d := e.backoff(attempt)
			if d < 0 || d >= ceiling {
				t.Fatalf("backoff(%d) = %s, want within [0, %s)", attempt, d, ceiling)
			}
			top = max(top, d)
		}
		// Full jitter spreads waits over the whole range, not near zero only.
		if top < ceiling/2 {
			t.Errorf("backoff(%d): largest of 200 draws %s, want some above %s", attempt, top, ceiling/2)
		}
	}
}

// A base delay of several seconds shifted far must not wrap around past
// the ceiling into no wait at all.
func TestBackoffLargeBaseDelay(t *testing.T) {
	e := &engine{limits: Limits{BaseDelay: 5 * time.Second, MaxDelay: 20 * time.Second}}
	for _, attempt := range []int{1, 3, 32, 33, 63, 64, 1000} {
		var top time.Duration
		for range 200 {
			top = max(top, e.backoff(attempt))
		}
		if top <= 0 || top >= 20*time.Second {
			t.Errorf("backoff(%d): largest of 200 draws %s, want within (0, 20s)", attempt, top)
		}
	}
}

func TestVectorJSON(t *testing.T) {
	tests := []struct {
		in   string
		want []float32 // nil: must fail
	}{
		{`[1, -2.5e-3 ,3E2]`, []float32{1, -0.0025, 300}},
		{` [ 0.5 ] `, []float32{0.5}},
		{`[]`, []float32{}},
		{`null`, []float32{}},
		{`[1,null]`, nil},
		{`[1,"NaN"]`, nil},
		{`[1,"2,3"]`, nil},
		{`[true]`, nil},
		{`[[1,2]]`, nil},
		{`[3.5e38]`, nil},
		{`{"a":1}`, nil},
		{`"1,2"`, nil},
	}
	for _, tt := range tests {
		var v vector
		err := json.Unmarshal([]byte(tt.in), &v)
		switch {
		case tt.want == nil && err == nil:
			t.Errorf("%s decoded to %v, want an error", tt.in, v)
		case tt.want != nil && err != nil:
			t.Errorf("%s: %v", tt.in, err)
		case tt.want != nil && (v == nil || !slices.Equal(v, tt.want)):
			t.Errorf("%s decoded to %#v, want %v", tt.in, v, tt.want)
		}
	}
}
