package encoder

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/recall-mcp/recall"
)

// bge-small-en-v1.5 reaches the tests by another road than the PyPI models:
// Maven Central's langchain4j jar ships its ONNX export, which
// scripts/bge_from_onnx.py converts to safetensors, and the golden vectors
// are that same export run by onnxruntime (scripts/golden_bge.py). Passing
// therefore proves the converter and the encoder together.

var bgeONNX = realModel{
	name: "bge-small-en-v1.5",
	env:  "RECALL_TEST_BGE_DIR",
	hint: "run scripts/install-test-models.sh (it needs mvn and the onnx pip package) or set RECALL_TEST_BGE_DIR to the directory scripts/bge_from_onnx.py wrote",
}

var bgeGolden = filepath.Join("testdata", "bge-small-en-v1.5-onnx.json")

// bgeInstallDir is where scripts/install-test-models.sh converts the model
// by default, so that a plain `go test` finds it after one install.
var bgeInstallDir = filepath.Join("..", "..", "..", ".cache", "test-models", "bge-small-en-v1.5")

func findBGE(t testing.TB) string {
	t.Helper()
	if os.Getenv(bgeONNX.env) == "" {
		if _, err := os.Stat(filepath.Join(bgeInstallDir, "model.safetensors")); err == nil {
			return bgeInstallDir
		}
	}
	return findModel(t, bgeONNX)
}

func TestGoldenBGE(t *testing.T) {
	checkGolden(t, findBGE(t), bgeGolden)
}

// TestGoldenBGEMisMapped gives tensors the wrong role, as a converter that
// matched the export's anonymous MatMul weights by order or forgot to
// transpose one would, and checks that the golden comparison fails: the
// conversion is proven by TestGoldenBGE only if such mistakes cannot pass it.
func TestGoldenBGEMisMapped(t *testing.T) {
	src := findBGE(t)
	data, err := os.ReadFile(bgeGolden)
	if err != nil {
		t.Fatal(err)
	}
	var g goldenEmbeddings
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	var docs, queries []string
	var wantDocs, wantQueries [][]float64
	for _, c := range g.Cases {
		if c.Windows > 1 {
			continue // short texts are enough, and quick
		}
		if c.Kind == "query" {
			queries, wantQueries = append(queries, c.Text), append(wantQueries, c.First)
		} else {
			docs, wantDocs = append(docs, c.Text), append(wantDocs, c.First)
		}
	}

	// One copy, each mistake applied and then undone: both edits are their
	// own inverse and leave the header as it is.
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dir, e.Name()))
		}
	}
	pool := filepath.Join(dir, "1_Pooling")
	if err := os.Mkdir(pool, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(src, "1_Pooling", "config.json"), filepath.Join(pool, "config.json"))
	weights := filepath.Join(dir, "model.safetensors")

	for _, c := range []struct {
		name string
		edit func(t *testing.T, path string)
	}{
		// Each row loads the whole model (seconds under -race): two
		// mistakes, one of each kind, are enough to show the check bites;
		// TestGoldenBGE is the row where nothing is wrong.
		{"query and key of layer 0 swapped", swapTensors("encoder.layer.0.attention.self.query.weight", "encoder.layer.0.attention.self.key.weight")},
		{"attention output of layer 11 not transposed", transposeTensor("encoder.layer.11.attention.output.dense.weight")},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.edit(t, weights)
			defer c.edit(t, weights)
			m, err := Load(dir, Options{Name: g.Model})
			if err != nil {
				t.Fatal(err)
			}
			worst := 1.0
			for _, run := range []struct {
				kind  recall.InputKind
				texts []string
				want  [][]float64
			}{{recall.InputDocument, docs, wantDocs}, {recall.InputQuery, queries, wantQueries}} {
				vecs, err := m.Embed(context.Background(), run.kind, run.texts)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range vecs {
					worst = min(worst, cosine(v, run.want[i]))
				}
			}
			if worst >= 0.999 {
				t.Errorf("lowest cosine to the reference %.6f over %d texts: the golden check would not notice", worst, len(docs)+len(queries))
			}
			t.Logf("lowest cosine %.6f over %d texts", worst, len(docs)+len(queries))
		})
	}
}

// safetensorsSpans reads where each tensor's bytes are in a safetensors file.
func safetensorsSpans(t *testing.T, f *os.File) map[string]safetensorsSpan {
	t.Helper()
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
		t.Fatal(err)
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(f, header); err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		t.Fatal(err)
	}
	spans := map[string]safetensorsSpan{}
	for name, v := range raw {
		if name == "__metadata__" {
			continue
		}
		var s struct {
			Shape   []int    `json:"shape"`
			Offsets [2]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &s); err != nil {
			t.Fatal(err)
		}
		spans[name] = safetensorsSpan{shape: s.Shape, off: 8 + int64(n) + s.Offsets[0], size: s.Offsets[1] - s.Offsets[0]}
	}
	return spans
}

type safetensorsSpan struct {
	shape     []int
	off, size int64
}

// editTensors hands fn the named tensors' bytes and writes back what it
// leaves in them.
func editTensors(t *testing.T, path string, names []string, fn func(spans []safetensorsSpan, bufs [][]byte)) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all := safetensorsSpans(t, f)
	spans := make([]safetensorsSpan, len(names))
	bufs := make([][]byte, len(names))
	for i, name := range names {
		s, ok := all[name]
		if !ok {
			t.Fatalf("%s has no tensor %s", path, name)
		}
		spans[i], bufs[i] = s, make([]byte, s.size)
		if _, err := f.ReadAt(bufs[i], s.off); err != nil {
			t.Fatal(err)
		}
	}
	fn(spans, bufs)
	for i, s := range spans {
		if _, err := f.WriteAt(bufs[i], s.off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func swapTensors(a, b string) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		editTensors(t, path, []string{a, b}, func(spans []safetensorsSpan, bufs [][]byte) {
			if spans[0].size != spans[1].size {
				t.Fatalf("%s and %s differ in size", a, b)
			}
			bufs[0], bufs[1] = bufs[1], bufs[0]
		})
	}
}

func transposeTensor(name string) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		editTensors(t, path, []string{name}, func(spans []safetensorsSpan, bufs [][]byte) {
			shape := spans[0].shape
			if len(shape) != 2 || shape[0] != shape[1] {
				t.Fatalf("%s has shape %v; only a square matrix transposes in place", name, shape)
			}
			n, src := shape[0], bufs[0]
			dst := make([]byte, len(src))
			for r := 0; r < n; r++ {
				for c := 0; c < n; c++ {
					copy(dst[4*(c*n+r):4*(c*n+r)+4], src[4*(r*n+c):4*(r*n+c)+4])
				}
			}
			bufs[0] = dst
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
