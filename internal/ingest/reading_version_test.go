package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall/internal/chunk"
	"github.com/recall-mcp/recall/internal/convo"
	"github.com/recall-mcp/recall/internal/testvault"
)

var update = flag.Bool("update", false, "record the reading of the test fixtures in testdata/reading.txt (after bumping ReadingVersion)")

// readingRecord holds the ReadingVersion and the hash of what a sweep made
// of the fixtures (readingHash) when it was last recorded.
const readingRecord = "testdata/reading.txt"

// TestReadingVersion fails when what a sweep makes of a file (the parsers,
// the chunker, titles, dates and headers) changes while ReadingVersion
// stays: sweeps would keep the older reading of every file swept before,
// since they read a file again only for a newer version.
func TestReadingVersion(t *testing.T) {
	sum := readingHash(t)
	got := fmt.Sprintf("version %d\nsha256 %s\n", ReadingVersion, sum)
	b, err := os.ReadFile(readingRecord)
	if err != nil && !*update {
		t.Fatal(err)
	}
	var version int
	var recorded string
	if err == nil {
		if _, err := fmt.Sscanf(string(b), "version %d\nsha256 %s\n", &version, &recorded); err != nil {
			t.Fatalf("%s: %v", readingRecord, err)
		}
	}
	switch {
	case recorded == sum && version == ReadingVersion:
	case recorded != sum && version == ReadingVersion && recorded != "":
		t.Fatalf("what a sweep makes of the test fixtures changed (a parser's, the chunker's or the labels' output), but ReadingVersion is still %d: bump ReadingVersion (internal/ingest/sweep.go), so that sweeps read files swept before again, and update the recorded hash (go test ./internal/ingest -run TestReadingVersion -update)", ReadingVersion)
	case *update:
		if err := os.WriteFile(readingRecord, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	case recorded == sum:
		t.Fatalf("ReadingVersion is %d, but %s records %d for the same reading of the fixtures: bump it only with a change of reading, and record it with -update", ReadingVersion, readingRecord, version)
	default:
		t.Fatalf("ReadingVersion is %d and the reading changed: record it (go test ./internal/ingest -run TestReadingVersion -update)", ReadingVersion)
	}
}

// readingHash hashes what a sweep makes of the parsers' fixtures, of the
// example vault and of a generated vault with long turns, at the default
// chunk options and at small chunks (which the chunker must cut and
// overlap), and in two zones far from UTC: every source's id, title, date and content hash, and every
// chunk's text hash, header and mid-word mark. A file that fails adds
// nothing, as one that holds no conversation does: a sweep stores nothing
// of it at any reading (it keeps what an earlier reading stored, and
// reads the file again while its sources are older or of another size or
// mtime), so a file that fails and one that reads into nothing need no
// file read again, whichever becomes the other.
func readingHash(t *testing.T) string {
	t.Helper()
	gen := t.TempDir()
	if _, err := testvault.Generate(gen, 24, 6000, 7); err != nil {
		t.Fatal(err)
	}
	var files []file
	fixtures, err := filepath.Glob("../convo/testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range fixtures {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && !strings.HasSuffix(p, ".golden") {
			files = append(files, file{rel: filepath.Base(p), path: p})
		}
	}
	for _, root := range []string{"../../examples/vault", gen} {
		found, failed, _, err := walk(context.Background(), root)
		if err != nil || len(failed) > 0 {
			t.Fatalf("walk %s: %v %v", root, err, failed)
		}
		files = append(files, found...)
	}
	if len(files) < 60 {
		t.Fatalf("%d files to read; want the fixtures, the example vault and the generated one", len(files))
	}
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	h := sha256.New()
	for _, opt := range []Options{
		{}, {Chunk: chunk.Options{Size: 300}},
		// Dates of moments written in UTC depend on the zone.
		{Zone: time.FixedZone("UTC-10", -10*3600)}, {Zone: time.FixedZone("UTC+14", 14*3600)},
	} {
		p := &pipeline{opt: opt, vault: "/vault", now: func() time.Time { return now }}
		for _, f := range files {
			fmt.Fprintf(h, "file %s\n", f.rel)
			readInto(h, p, f)
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// readInto writes what p makes of f into h, nothing when it fails.
func readInto(h hash.Hash, p *pipeline, f file) {
	var made bytes.Buffer
	data, err := os.ReadFile(f.path)
	if err == nil {
		err = convo.Parse(f.rel, bytes.NewReader(data), p.opt.Zone, func(c convo.Conversation) error {
			doc, err := p.document(f, c)
			if err != nil || doc == nil {
				return err
			}
			s := doc.Source
			fmt.Fprintf(&made, "source %q %q %q %s\n", s.ID, s.Title, s.Date, s.ContentHash)
			for _, c := range doc.Chunks {
				fmt.Fprintf(&made, "chunk %s %q %v\n", c.Hash, c.Header, c.MidWord)
			}
			return nil
		})
	}
	if err == nil {
		h.Write(made.Bytes())
	}
}
