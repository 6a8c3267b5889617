package encoder

import (
	"bufio"
	"context"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

var update = flag.Bool("update", false, "rewrite generated testdata")

// chunksFile holds 32 English chunks of 2000 characters, the unit of the
// throughput figure; it is a file so that other implementations (ONNX
// Runtime in Python) can embed exactly the same text.
var chunksFile = filepath.Join("testdata", "chunks2000.txt")

const benchWords = `the of and to in is was for that on with as by at from this it be are or an have
not which but were has had been their they its one all also more after other some first new two when
there time into most only over such can would about these many where between then may up out people
years during under while state world system data model search memory index text query vector store
file folder conversation message assistant user answer question result score rank window token batch
night sweep chunk source date owner category migration database table column schema backup restore
server client request response error timeout retry limit cache thread process worker queue signal
project meeting decision plan review change release version branch commit build test benchmark speed
engineer team manager customer product feature design document summary report budget quarter revenue
cost price market growth risk security access password secret audit log metric alert incident outage
fix bug patch issue ticket support deadline schedule week month spring summer autumn winter morning
evening because although however therefore instead meanwhile nevertheless otherwise quickly slowly
carefully clearly simply recently finally usually often never always sometimes already again`

// writeChunks regenerates the chunks: sentences of common words, trimmed at
// a word boundary to at most 2000 characters.
func writeChunks(t testing.TB) {
	words := strings.Fields(benchWords)
	rng := rand.New(rand.NewPCG(2000, 32))
	var out strings.Builder
	for i := 0; i < 32; i++ {
		var chunk strings.Builder
		for chunk.Len() < 2000 {
			n := 6 + rng.IntN(16)
			for j := 0; j < n; j++ {
				w := words[rng.IntN(len(words))]
				if j == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				}
				chunk.WriteString(w)
				switch {
				case j == n-1:
					chunk.WriteString([]string{". ", "? ", "! ", ". "}[rng.IntN(4)])
				case rng.IntN(9) == 0:
					chunk.WriteString(", ")
				default:
					chunk.WriteString(" ")
				}
			}
		}
		s := chunk.String()[:2000]
		out.WriteString(s)
		out.WriteString("\n")
	}
	if err := os.WriteFile(chunksFile, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readChunks(t testing.TB) []string {
	t.Helper()
	f, err := os.Open(chunksFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var chunks []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		chunks = append(chunks, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return chunks
}

func TestBenchChunks(t *testing.T) {
	if *update {
		writeChunks(t)
	}
	chunks := readChunks(t)
	if len(chunks) != 32 {
		t.Fatalf("%d chunks, want 32", len(chunks))
	}
	for i, c := range chunks {
		if len(c) != 2000 {
			t.Fatalf("chunk %d has %d characters, want 2000", i, len(c))
		}
	}
}

// BenchmarkEmbed2000 embeds batches of 32 English chunks of 2000 characters
// with all-MiniLM-L6-v2 (about 400 tokens each: two windows), on all cores.
func BenchmarkEmbed2000(b *testing.B) {
	dir := findModel(b, realModels[0])
	m, err := Load(dir, Options{Name: "all-MiniLM-L6-v2"})
	if err != nil {
		b.Fatal(err)
	}
	benchmarkEmbed(b, m, readChunks(b))
}

// BenchmarkEmbed2000Truncated is the same with one window per chunk, the
// work ONNX Runtime does when it truncates to 256 tokens.
func BenchmarkEmbed2000Truncated(b *testing.B) {
	dir := findModel(b, realModels[0])
	m, err := Load(dir, Options{Name: "all-MiniLM-L6-v2", Windows: WindowsFirst})
	if err != nil {
		b.Fatal(err)
	}
	benchmarkEmbed(b, m, readChunks(b))
}

// BenchmarkEmbedTiny measures the overhead around the kernels on a model
// small enough that the kernels do not dominate.
func BenchmarkEmbedTiny(b *testing.B) {
	m, _ := loadTiny(b, defaultTiny(), Options{})
	benchmarkEmbed(b, m, readChunks(b)[:8])
}

func benchmarkEmbed(b *testing.B, m *Model, chunks []string) {
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		if _, err := m.Embed(ctx, recall.InputDocument, chunks); err != nil {
			b.Fatal(err)
		}
	}
	done := float64(len(chunks) * b.N)
	b.ReportMetric(done/b.Elapsed().Seconds(), "chunks/s")
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(done/cpu.Seconds(), "chunks/cpu-s")
	}
}

// BenchmarkEmbedQuery is the latency of one short query, what a search waits for.
func BenchmarkEmbedQuery(b *testing.B) {
	dir := findModel(b, realModels[0])
	m, err := Load(dir, Options{Name: "all-MiniLM-L6-v2"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	query := []string{"what did we decide about the sqlite migration last spring?"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Embed(ctx, recall.InputQuery, query); err != nil {
			b.Fatal(err)
		}
	}
}
