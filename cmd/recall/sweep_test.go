package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The overlap follows the chunk size unless given: a smaller --chunk-size
// alone is accepted, and the default sweep still carries 200 characters
// over, as with --overlap 200 (the search-quality figures depend on it).
func TestSweepChunkOverlapDefault(t *testing.T) {
	env := testEnv(t)
	if out, errs, code := run(t, env, "sweep", "--chunk-size", "300", sampleVault); code != 0 {
		t.Fatalf("--chunk-size 300: exit %d %s %s", code, out, errs)
	}

	dumps := make([]string, 2)
	for i, args := range [][]string{{"sweep", sampleVault}, {"sweep", "--overlap", "200", sampleVault}} {
		env := testEnv(t)
		if _, errs, code := run(t, env, args...); code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
		dump := filepath.Join(t.TempDir(), "dump.jsonl")
		if _, errs, code := run(t, env, "export", "--out", dump); code != 0 {
			t.Fatal(errs)
		}
		b, err := os.ReadFile(dump)
		if err != nil {
			t.Fatal(err)
		}
		dumps[i] = stripTimes(string(b))
	}
	if dumps[0] != dumps[1] {
		t.Errorf("the default sweep's chunks differ from --overlap 200's")
	}
}
