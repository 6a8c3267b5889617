package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/quality"
)

func (m *Main) cmdEval(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	m.fusionFlag(fs)
	queries := fs.String("queries", "", "query set `FILE.jsonl` ({\"query\", \"expect\": [{\"source\", \"contains\"}], \"category\": N} per line; N an integer)")
	mode := fs.String("mode", "", "search `MODE`: hybrid, lexical or semantic (default hybrid when vectors exist, else lexical)")
	k := fs.Int("k", 10, "results fetched per query (at most 20); R@1, R@5 and R@10 are reported up to it")
	perSource := fs.Int("per-source", recall.DefaultPerSource, "at most this many results from one source")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	out := fs.String("out", "", "write each query's outcome as JSONL to `FILE` (default: the database's path + .eval-results.jsonl; eval-results.jsonl in the data directory for PostgreSQL)")
	if err := m.parseNone(fs, args, "eval --queries FILE.jsonl [--k 10] [--mode M] [--fusion F] [--per-source N] [--out FILE] [--json]", "use --queries FILE.jsonl"); err != nil {
		return err
	}
	if *queries == "" {
		return usagef("eval needs --queries FILE.jsonl")
	}
	if err := m.checkSearchFlags("--k", *k, *perSource, *mode, recall.Filter{}); err != nil {
		return err
	}
	qs, err := readQueries(*queries)
	if err != nil {
		return err
	}
	if err := m.checkModel(); err != nil {
		return err
	}
	st, err := m.openReading(ctx)
	if err != nil {
		return err
	}
	eng, _, _, err := m.engine(ctx, st, indexVectors)
	if err != nil {
		return err
	}
	outPath := *out
	if outPath == "" {
		dbp, err := m.dbPath()
		if err != nil {
			return err
		}
		outPath = dbp + ".eval-results.jsonl"
		if isPostgres(dbp) {
			dir, err := m.stateDir()
			if err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			outPath = filepath.Join(dir, "eval-results.jsonl")
		}
	}
	// 0600 as everything recall writes: the results list memory keys and
	// source names. A results file an earlier version made 0644 is narrowed.
	of, err := os.OpenFile(outPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer of.Close()
	if fi, err := of.Stat(); err == nil && fi.Mode().IsRegular() {
		if err := of.Chmod(0o600); err != nil {
			return err
		}
	}
	enc := json.NewEncoder(of)
	var outs []quality.Outcome
	usedMode := *mode
	for _, q := range qs {
		resp, err := eng.Search(ctx, recall.SearchRequest{Query: q.Query, Mode: *mode, Limit: *k, PerSource: *perSource})
		if err != nil {
			return fmt.Errorf("query %q: %w", q.Query, err)
		}
		usedMode = resp.Mode
		o := quality.Score(q, resp.Results, *k)
		outs = append(outs, o)
		if err := enc.Encode(o); err != nil {
			return err
		}
	}
	rep := quality.Aggregate(usedMode, outs)
	if *asJSON {
		return json.NewEncoder(m.Stdout).Encode(rep)
	}
	rep.Write(m.Stdout)
	fmt.Fprintf(m.Stderr, "per-query outcomes: %s\n", outPath)
	return nil
}

// readQueries reads eval's query set. A file that cannot be read is said
// as the queries file, once: "read /tmp: is a directory" did not say
// which file that was, nor "open F: no such file or directory" what for.
func readQueries(path string) ([]quality.Query, error) {
	f, err := openQueries(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	qs, err := quality.Load(f)
	if err != nil {
		return nil, readError("queries file", path, err)
	}
	return qs, nil
}

// openQueries opens the queries file of eval and search --queries, saying
// what is wrong with it as that file.
func openQueries(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, readError("queries file", path, err)
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("the queries file %s is a folder: --queries takes a FILE.jsonl", path)
	}
	return f, nil
}

// readError is err of reading a file the user named (what it is to the
// command: "queries file", "export file"), said as that file, without the
// system call's chain: "open F: no such file or directory" said neither
// what F was for nor, after "read", which file it was. An error that names
// a line of the file already is kept as it is.
func readError(what, path string, err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("cannot read the %s %s: %w", what, path, pe.Err)
}
