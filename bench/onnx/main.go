// Command onnx measures the built-in encoder's throughput on the chunks that
// chunks.py writes, the same way ort_bench.py measures ONNX Runtime's: batches
// of 32 chunks, each truncated to the window (256 tokens for
// all-MiniLM-L6-v2, 512 for bge-small-en-v1.5), pooled as the model directory
// says (mean, or CLS for BGE) and normalised. run.sh runs both and prints the
// ratio.
//
//	go run ./bench/onnx -model DIR -chunks chunks.jsonl [-window 256] [-runs 5] [-check ort.json]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/encoder"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "onnx bench:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("model", "", "model directory (config.json, model.safetensors, tokenizer.json)")
	chunksPath := flag.String("chunks", "", "chunks file from chunks.py (one JSON string per line)")
	batch := flag.Int("batch", 32, "chunks per Embed call")
	window := flag.Int("window", 256, "tokens per chunk; longer chunks are truncated, as ort_bench.py does")
	runs := flag.Int("runs", 5, "timed passes over all chunks, after one warm-up pass")
	check := flag.String("check", "", "JSON embeddings from ort_bench.py --out: report the lowest cosine similarity to them")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the timed passes here")
	flag.Parse()
	if *dir == "" || *chunksPath == "" {
		flag.Usage()
		return fmt.Errorf("-model and -chunks are required")
	}
	chunks, err := readChunks(*chunksPath)
	if err != nil {
		return err
	}
	m, err := encoder.Load(*dir, encoder.Options{MaxTokens: *window, Windows: encoder.WindowsFirst, BatchTokens: *batch * *window})
	if err != nil {
		return err
	}
	ctx := context.Background()
	embedAll := func() ([][]float32, error) {
		var out [][]float32
		for i := 0; i < len(chunks); i += *batch {
			vecs, err := m.Embed(ctx, recall.InputDocument, chunks[i:min(len(chunks), i+*batch)])
			if err != nil {
				return nil, err
			}
			out = append(out, vecs...)
		}
		return out, nil
	}
	vecs, err := embedAll() // warm-up: buffers grow to size once
	if err != nil {
		return err
	}
	if *check != "" {
		worst, err := lowestCosine(vecs, *check)
		if err != nil {
			return err
		}
		fmt.Printf("builtin vs onnxruntime: lowest cosine similarity over %d chunks %.6f\n", len(vecs), worst)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var rates []float64
	cpu0 := processCPU()
	for range *runs {
		t0 := time.Now()
		if _, err := embedAll(); err != nil {
			return err
		}
		rates = append(rates, float64(len(chunks))/time.Since(t0).Seconds())
	}
	if cpu := processCPU() - cpu0; cpu > 0 {
		// Throughput per CPU-second barely moves with background load, so it
		// is the figure to compare code changes by on a busy machine.
		fmt.Printf("builtin: %.2f chunks per CPU-second\n", float64(len(chunks)**runs)/cpu.Seconds())
	}
	strs := make([]string, len(rates))
	for i, r := range rates {
		strs[i] = fmt.Sprintf("%.2f", r)
	}
	fmt.Printf("builtin (%s, %s): %.2f chunks/s (median of %d; %d chunks of %d chars, batch %d, window %d, %d threads; runs: %s)\n",
		m.Info().Model, runtime.GOARCH, median(rates), len(rates), len(chunks), len([]rune(chunks[0])), *batch, *window,
		runtime.GOMAXPROCS(0), strings.Join(strs, ", "))
	return nil
}

func readChunks(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var chunks []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s string
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		chunks = append(chunks, s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(chunks) == 0 {
		return nil, fmt.Errorf("%s: no chunks", path)
	}
	return chunks, nil
}

// lowestCosine says how close the builtin vectors are to ONNX Runtime's, so
// a throughput figure is never quoted for a pipeline that embeds different
// tokens.
func lowestCosine(vecs [][]float32, path string) (float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var ref [][]float32
	if err := json.Unmarshal(data, &ref); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if len(ref) != len(vecs) {
		return 0, fmt.Errorf("%s has %d vectors, want %d", path, len(ref), len(vecs))
	}
	worst := math.Inf(1)
	for i := range vecs {
		if len(ref[i]) != len(vecs[i]) {
			return 0, fmt.Errorf("%s: vector %d has %d dimensions, want %d", path, i, len(ref[i]), len(vecs[i]))
		}
		var dot, na, nb float64
		for j := range vecs[i] {
			dot += float64(vecs[i][j]) * float64(ref[i][j])
			na += float64(vecs[i][j]) * float64(vecs[i][j])
			nb += float64(ref[i][j]) * float64(ref[i][j])
		}
		worst = min(worst, dot/math.Sqrt(na*nb))
	}
	return worst, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
