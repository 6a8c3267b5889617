package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

// genVault writes n conversations of varied length, some as one export.
func genVault(t *testing.T, dir string, n int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	words := strings.Fields("the garden kettle river morning sister winter letter code bridge quiet lamp orange train paper window coffee mountain story night")
	sentence := func() string {
		k := 6 + r.IntN(14)
		ws := make([]string, k)
		for i := range ws {
			ws[i] = words[r.IntN(len(words))]
		}
		return strings.ToUpper(ws[0][:1]) + strings.Join(ws, " ")[1:] + "."
	}
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "# Conversation %d\n\n", i)
		for turn := range 4 + r.IntN(30) {
			who := "User"
			if turn%2 == 1 {
				who = "Assistant"
			}
			fmt.Fprintf(&b, "**%s:**", who)
			for range 1 + r.IntN(12) {
				b.WriteString(" " + sentence())
			}
			b.WriteString("\n\n")
		}
		p := filepath.Join(dir, fmt.Sprintf("%04d/%02d/chat-%d.md", 2020+i%5, 1+i%12, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkStore verifies integrity and that every recorded source has all its
// chunks, and returns the store's export with timestamps stripped. loc is
// a SQLite path or a PostgreSQL URL.
func checkStore(t *testing.T, loc string) string {
	t.Helper()
	ctx := context.Background()
	db := openAny(t, loc)
	defer db.Close()
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Fatalf("integrity after crash: %v", err)
	}
	var lines []string
	err := db.Export(ctx, func(d recall.Document) error {
		if len(d.Chunks) != d.Source.ChunkCount || len(d.Chunks) == 0 {
			return fmt.Errorf("source %s records %d chunks but holds %d", d.Source.ID, d.Source.ChunkCount, len(d.Chunks))
		}
		for i, c := range d.Chunks {
			if c.Index != i {
				return fmt.Errorf("source %s: chunk %d has index %d", d.Source.ID, i, c.Index)
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s %d", d.Source.ID, d.Source.ContentHash, d.Source.ChunkCount)
		for _, c := range d.Chunks {
			b.WriteString(" " + c.Hash[:12])
		}
		lines = append(lines, b.String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestCrashDuringSweep kills real sweep processes with SIGKILL at random
// moments, then checks the database and that a re-run converges to what an
// uninterrupted sweep produces.
func TestCrashDuringSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs many sweeps")
	}
	bin := buildRecall(t, t.TempDir())
	vault := filepath.Join(t.TempDir(), "vault")
	genVault(t, vault, 400, 7)

	clean := filepath.Join(t.TempDir(), "clean.db")
	sweepWith(t, bin, nil, clean, vault)
	want := checkStore(t, clean)

	crashed := filepath.Join(t.TempDir(), "crashed.db")
	kills := crashSweeps(t, bin, nil, crashed, vault, 12, 400*time.Millisecond, func(round int) {
		if round == 5 {
			// Change the vault between crashes, as a user would.
			genVault(t, vault, 420, 8)
			sweepWith(t, bin, nil, clean, vault)
			want = checkStore(t, clean)
		}
	})
	t.Logf("killed %d sweeps", kills)
	sweepWith(t, bin, nil, crashed, vault)
	if got := checkStore(t, crashed); got != want {
		t.Fatalf("after crashes and a re-run the store differs from an uninterrupted sweep")
	}
}

// sweepWith runs the binary's sweep of vault into db, without a model, in
// the environment env (nil: this process's).
func sweepWith(t *testing.T, bin string, env []string, db, vault string) {
	t.Helper()
	c := exec.Command(bin, "--db", db, "--embedder", "none", "sweep", vault)
	c.Env = env
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("sweep into %s: %v\n%s", db, err, out)
	}
}

// crashSweeps runs `sweep --full` of vault into db rounds times, killing
// each with SIGKILL after a random moment of up to maxDelay, and checks the
// store after every kill (checkStore); after each round it calls between,
// when given. It returns how many sweeps were killed before they ended.
func crashSweeps(t *testing.T, bin string, env []string, db, vault string, rounds int, maxDelay time.Duration, between func(round int)) int {
	t.Helper()
	r := rand.New(rand.NewPCG(11, 12))
	kills := 0
	for round := range rounds {
		cmd := exec.Command(bin, "--db", db, "--embedder", "none", "sweep", "--full", vault)
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10*time.Millisecond + time.Duration(r.Int64N(int64(maxDelay))))
		if cmd.Process.Kill() == nil {
			kills++
		}
		cmd.Wait()
		checkStore(t, db) // integrity and completeness after every kill
		if between != nil {
			between(round)
		}
	}
	return kills
}
