package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %g, want %g", c.in, got, c.want)
		}
	}
}

func TestReadChunks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chunks.jsonl")
	if err := os.WriteFile(path, []byte("\"first\\nchunk\"\n\"second\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readChunks(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "first\nchunk" || got[1] != "second" {
		t.Fatalf("readChunks = %q", got)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readChunks(empty); err == nil {
		t.Error("readChunks of an empty file succeeded")
	}
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ref.json")
	if err := os.WriteFile(path, []byte("[[1,0],[0,1]]"), 0o600); err != nil {
		t.Fatal(err)
	}
	worst, err := lowestCosine([][]float32{{2, 0}, {1, 1}}, path)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 / math.Sqrt2; math.Abs(worst-want) > 1e-9 {
		t.Errorf("lowest cosine = %g, want %g", worst, want)
	}
	if _, err := lowestCosine([][]float32{{1, 0}}, path); err == nil {
		t.Error("a count mismatch was not reported")
	}
	if _, err := lowestCosine([][]float32{{1, 0, 0}, {0, 1, 0}}, path); err == nil {
		t.Error("a dimension mismatch was not reported")
	}
}
