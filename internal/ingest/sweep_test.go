package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/store/sqlite"
	"github.com/recall-mcp/recall/internal/testvault"
)

func openStore(t *testing.T) *sqlite.DB {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "recall.db"))
}

// openAt opens the database at path, closed when the test ends.
func openAt(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// write writes text to the vault file rel under root, with a settled mtime
// (testvault.Settled: a file read within RacyWindow of its change is read
// again by the next sweep, TestSameSizeEditInTheSweepsSecond).
func write(t *testing.T, root, rel, text string) {
	t.Helper()
	if err := testvault.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), text, testvault.Settled()); err != nil {
		t.Fatal(err)
	}
}

func sweep(t *testing.T, st *sqlite.DB, root string, opt Options) (Result, string) {
	t.Helper()
	var log bytes.Buffer
	opt.Failures = &log
	res, err := Sweep(context.Background(), st, st, root, opt)
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	return res, log.String()
}

// sourceIDs lists the conversations swept from root: its sources but the
// records of files that hold none (noConversation).
func sourceIDs(t *testing.T, st *sqlite.DB, root string) []string {
	t.Helper()
	abs, _ := filepath.Abs(root)
	m, err := st.Manifest(context.Background(), recall.KindArchive, abs)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id, s := range m {
		if s.Chunks > 0 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

const convA = "# Alpha\n\n**User:** How do I repot a fern?\n\n**Assistant:** Gently, in spring, one size up.\n"
const convB = "User: what is a monad\n\nAssistant: a monoid in the category of endofunctors.\n"

const export = `[{"uuid":"u-1","name":"First","created_at":"2025-01-02T10:00:00Z","chat_messages":[
 {"sender":"human","text":"hello there"},{"sender":"assistant","text":"general kenobi"}]},
 {"uuid":"u-2","name":"Second","created_at":"2025-01-03T10:00:00Z","chat_messages":[
 {"sender":"human","text":"what is the capital of peru"},{"sender":"assistant","text":"Lima."}]}]`

func TestSweepLifecycle(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	write(t, root, "2025/07/a.md", convA)
	write(t, root, "b.txt", convB)
	write(t, root, "exports/claude.json", export)
	write(t, root, "broken.json", `[{"uuid": "x", "chat_messages": [`)
	write(t, root, ".obsidian/ignored.md", convA)
	write(t, root, "image.png", "\x89PNG")

	res, log := sweep(t, st, root, Options{})
	if res.FilesSeen != 4 || res.FilesChanged != 3 || res.FilesFailed != 1 || res.FilesSkipped != 0 {
		t.Fatalf("first sweep: %+v", res)
	}
	if !strings.Contains(log, "broken.json") {
		t.Errorf("failure log does not name the broken file: %q", log)
	}
	want := []string{"2025/07/a.md", "b.txt", "exports/claude.json/u-1", "exports/claude.json/u-2"}
	if got := sourceIDs(t, st, root); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("sources = %v, want %v", got, want)
	}
	src, err := st.Source(context.Background(), "2025/07/a.md")
	if err != nil {
		t.Fatal(err)
	}
	if src.Date != "2025-07" || src.Title != "Alpha" {
		t.Errorf("a.md: date %q title %q", src.Date, src.Title)
	}

	// Nothing changed: everything but the broken file is skipped, and the
	// broken file is tried again (it was never recorded).
	res, _ = sweep(t, st, root, Options{})
	if res.FilesChanged != 0 || res.FilesSkipped != 3 || res.FilesFailed != 1 || res.ChunksWritten != 0 {
		t.Fatalf("unchanged re-sweep: %+v", res)
	}

	// An edit is caught; a touch with identical content re-reads but writes nothing new.
	write(t, root, "b.txt", convB+"\nUser: and a functor?\n")
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(root, "2025/07/a.md"), future, future)
	res, _ = sweep(t, st, root, Options{})
	if res.FilesChanged != 1 || res.FilesSkipped != 2 || res.FilesFailed != 1 {
		t.Fatalf("after edit+touch: %+v", res)
	}
	res, _ = sweep(t, st, root, Options{})
	if res.FilesChanged != 0 || res.FilesSkipped != 3 {
		t.Fatalf("touched file is not settled: %+v", res)
	}

	// One conversation in the export changes and one disappears.
	write(t, root, "exports/claude.json", strings.Replace(export, "general kenobi", "GENERAL KENOBI", 1)[:strings.Index(export, `,
 {"uuid":"u-2"`)]+"]")
	res, _ = sweep(t, st, root, Options{})
	if res.FilesChanged != 1 {
		t.Fatalf("export edit: %+v", res)
	}
	want = []string{"2025/07/a.md", "b.txt", "exports/claude.json/u-1"}
	if got := sourceIDs(t, st, root); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after export edit: sources = %v", got)
	}

	// Rename = delete + add; deleted files are reported, pruned only with --prune.
	os.Rename(filepath.Join(root, "b.txt"), filepath.Join(root, "c.txt"))
	res, _ = sweep(t, st, root, Options{})
	if res.FilesRemoved != 1 || res.Removed[0] != "b.txt" || res.FilesChanged != 1 {
		t.Fatalf("rename: %+v", res)
	}
	if ids := sourceIDs(t, st, root); len(ids) != 4 {
		t.Fatalf("without --prune the old source stays: %v", ids)
	}
	res, _ = sweep(t, st, root, Options{Prune: true, DryRun: true})
	if res.FilesRemoved != 1 || len(sourceIDs(t, st, root)) != 4 {
		t.Fatalf("dry-run prune changed something: %+v", res)
	}
	res, _ = sweep(t, st, root, Options{Prune: true})
	want = []string{"2025/07/a.md", "c.txt", "exports/claude.json/u-1"}
	if got := sourceIDs(t, st, root); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after prune: %v", got)
	}

	// --full re-ingests every readable file.
	res, _ = sweep(t, st, root, Options{Full: true})
	if res.FilesChanged != 3 || res.FilesSkipped != 0 {
		t.Fatalf("--full: %+v", res)
	}
}

func TestSweepDryRunWritesNothing(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	write(t, root, "a.md", convA)
	res, _ := sweep(t, st, root, Options{DryRun: true})
	if res.FilesChanged != 1 || len(sourceIDs(t, st, root)) != 0 {
		t.Fatalf("dry run: %+v, sources %v", res, sourceIDs(t, st, root))
	}
}

// A dry run reports what the sweep after it does, without writing: a file
// touched with the same content is unchanged, a malformed one failed, an
// empty one has nothing to ingest.
func TestSweepDryRunPredictsSweep(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	write(t, root, "touched.md", convA)
	write(t, root, "edited.md", convA+"\nfirst")
	write(t, root, "gone.md", convB)
	write(t, root, "exports/claude.json", export)
	sweep(t, st, root, Options{})

	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(root, "touched.md"), old, old)
	write(t, root, "edited.md", convA+"\nsecond")
	os.Remove(filepath.Join(root, "gone.md"))
	write(t, root, "exports/claude.json", strings.Replace(export, "Lima.", "Lima, on the coast.", 1))
	write(t, root, "new.md", convB)
	write(t, root, "empty.md", "")
	write(t, root, "bad.json", `[{"uuid": "x", "chat_messages": [`)
	before := content(t, st)

	dry, dryLog := sweep(t, st, root, Options{DryRun: true, Prune: true})
	if got := content(t, st); got != before {
		t.Fatalf("the dry run changed the store:\n%s\nwas\n%s", got, before)
	}
	real, log := sweep(t, st, root, Options{Prune: true})
	dry.Seconds, real.Seconds = 0, 0
	dry.Started, real.Started = time.Time{}, time.Time{}
	if fmt.Sprint(dry) != fmt.Sprint(real) || undated(dryLog) != undated(log) {
		t.Errorf("dry run %+v %q\nsweep   %+v %q", dry, dryLog, real, log)
	}
	if real.FilesChanged != 3 || real.FilesSkipped != 2 || real.FilesFailed != 1 || real.FilesRemoved != 1 {
		t.Errorf("sweep: %+v", real)
	}
}

// undated is a failure log without the time that starts each line.
func undated(log string) string {
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		_, lines[i], _ = strings.Cut(l, "\t")
	}
	return strings.Join(lines, "\n")
}

func TestSweepEmbedsAndSurvivesEmbedderFailure(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	emb := embedtest.New(16)
	sp, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "test", Provider: emb.Info().Provider, Model: emb.Info().Model, Dim: 16, Normalized: true})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write(t, root, "a.md", convA)
	write(t, root, "dup.md", convA) // identical text: embedded once
	res, _ := sweep(t, st, root, Options{Embedder: emb, Space: sp.Name})
	if res.VectorsMissing != 0 || emb.Texts() != 1 {
		t.Fatalf("embedding: %+v, texts embedded %d", res, emb.Texts())
	}
	emb.FailOn(0, embedtest.FaultError)
	write(t, root, "b.md", convB)
	res, log := sweep(t, st, root, Options{Embedder: emb, Space: sp.Name})
	if res.FilesChanged != 1 || res.VectorsMissing == 0 || !strings.Contains(log, "embedder") {
		t.Fatalf("failing embedder: %+v log %q", res, log)
	}
	// The chunks are stored and searchable by text all the same.
	cands, err := st.Lexical(ctx, recall.LexicalQuery{Text: "monad", Limit: 5})
	if err != nil || len(cands) == 0 {
		t.Fatalf("lexical after embed failure: %v %v", cands, err)
	}
	stats, _ := st.Stats(ctx)
	if stats.Spaces[0].Missing == 0 {
		t.Fatalf("stats do not show the missing vectors: %+v", stats.Spaces)
	}
}

// An embedder that is down is not asked again for every file: after a
// failed call the sweep leaves texts to repair without calling it for a
// while (the clock here never moves, so for the whole sweep), and every
// file is stored all the same. Once the wait is over, one call tries it
// again, and a success ends the outage.
func TestSweepWaitsOutAnEmbedderOutage(t *testing.T) {
	st := openStore(t)
	emb, space := embedSpace(t, st)
	root := t.TempDir()
	for i := range 40 {
		write(t, root, fmt.Sprintf("f%02d.md", i), fmt.Sprintf("**User:** question %d about bread\n\n**Assistant:** answer %d about rye", i, i))
	}
	emb.FailOn(0, embedtest.FaultError)
	stopped := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	res, log := sweep(t, st, root, Options{Embedder: emb, Space: space, Now: func() time.Time { return stopped }})
	if emb.Calls() != 1 || res.FilesChanged != 40 || res.VectorsMissing != 40 || !strings.Contains(log, "tried again in 5s") {
		t.Errorf("an embedder down for the whole sweep: %d calls, %+v, log %q; want 1 call and 40 files stored pending", emb.Calls(), res, log)
	}

	back := embedtest.New(16)
	back.FailOn(1, embedtest.FaultError) // down for its first call only
	var ticks atomic.Int64               // the parse workers read the clock too
	ticking := func() time.Time { return stopped.Add(time.Duration(ticks.Add(1)) * time.Minute) }
	for i := range 40 {
		write(t, root, fmt.Sprintf("f%02d.md", i), fmt.Sprintf("**User:** question %d about oats\n\n**Assistant:** answer %d about barley", i, i))
	}
	res, _ = sweep(t, st, root, Options{Embedder: back, Space: space, Now: ticking})
	if res.FilesChanged != 40 || res.VectorsMissing == 0 || res.VectorsMissing >= 10 {
		t.Errorf("an embedder back after its first call: %+v; want only the first file's texts left to repair", res)
	}
}

func TestSweepCancelKeepsCommittedWork(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	for i := range 50 {
		write(t, root, filepath.Join("d", strings.Repeat("x", i%7+1)+string(rune('a'+i%26))+".md"), convA+strings.Repeat("more words here. ", i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Sweep(ctx, st, st, root, Options{})
	if err == nil || !res.Interrupted {
		t.Fatalf("canceled sweep: res %+v err %v", res, err)
	}
	// The next run converges.
	res, _ = sweep(t, st, root, Options{})
	again, _ := sweep(t, st, root, Options{})
	if again.FilesChanged != 0 || again.FilesSkipped != res.FilesSeen {
		t.Fatalf("did not converge: %+v then %+v", res, again)
	}
}

func TestDateFromPath(t *testing.T) {
	cases := map[string]string{
		"2025/07/title.md":         "2025-07",
		"2025/07/14/title.md":      "2025-07-14",
		"notes/2024-02-29 chat.md": "2024-02-29",
		"archive/2023_11_chat.md":  "2023-11",
		"x/1999.md":                "1999",
		"2025/13/x.md":             "2025",
		"random/file.md":           "",
		"v20250714/x.md":           "",
		"2048-game.md":             "", // not a date before 2048
		"2027-05 plan.md":          "",
		"2026-11-30 chat.md":       "2026-11-30",
		"2026-12-01 chat.md":       "2026-12-01", // already that day somewhere
		"2026-12-02 chat.md":       "",
		"2026/12/x.md":             "2026-12",
		"2026/x.md":                "2026",
		"2027/x.md":                "",
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range cases {
		if got := dateFromPath(in, now); got != want {
			t.Errorf("dateFromPath(%q, %s) = %q, want %q", in, now.Format(time.DateOnly), got, want)
		}
	}
	if got := DateFromPath("2048-game.md"); got != "" && time.Now().Year() < 2048 {
		t.Errorf("DateFromPath(2048-game.md) = %q", got)
	}
}

// Two vaults with a file at the same path would share one source, each
// sweep overwriting the other's: the second vault's file is refused with a
// clear error and the first keeps its text. A vault that was moved (its old
// root is gone) takes its sources over.
func TestSweepTwoVaultsSamePath(t *testing.T) {
	st := openStore(t)
	a, b := t.TempDir(), t.TempDir()
	write(t, a, "same.md", "**User:** aardvarks dig burrows\n\n**Assistant:** they do")
	write(t, b, "same.md", "**User:** zebras run fast\n\n**Assistant:** they do")
	write(t, b, "other.md", "**User:** an unrelated note\n\n**Assistant:** fine")
	sweep(t, st, a, Options{})
	res, log := sweep(t, st, b, Options{})
	if res.FilesFailed != 1 || res.FilesChanged != 1 || !strings.Contains(log, "same.md is already in the database from the vault "+a) {
		t.Fatalf("second vault: %+v, log %q", res, log)
	}
	for range 2 { // and again: nothing flips
		if res, _ := sweep(t, st, a, Options{}); res.FilesSkipped != 1 || res.FilesChanged != 0 {
			t.Fatalf("first vault after the second: %+v", res)
		}
	}
	src, err := st.Source(context.Background(), "same.md")
	if err != nil {
		t.Fatal(err)
	}
	if src.Vault != a {
		t.Fatalf("same.md now belongs to %s", src.Vault)
	}

	// The same vault reached through a symbolic link is the same vault.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	if res, log := sweep(t, st, link, Options{}); res.FilesFailed != 0 {
		t.Fatalf("vault through a link: %+v %q", res, log)
	}
	// A file the other vault no longer has (not yet pruned) is taken over.
	write(t, b, "gone.md", "**User:** a note that moves\n\n**Assistant:** ok")
	write(t, a, "gone.md", "**User:** a note that moves\n\n**Assistant:** ok")
	sweep(t, st, a, Options{})
	if err := os.Remove(filepath.Join(a, "gone.md")); err != nil {
		t.Fatal(err)
	}
	if res, log := sweep(t, st, b, Options{}); strings.Contains(log, "gone.md") {
		t.Fatalf("a file vault a no longer has was refused: %+v %q", res, log)
	}

	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(a, moved); err != nil {
		t.Fatal(err)
	}
	if res, log := sweep(t, st, moved, Options{}); res.FilesFailed != 0 || res.FilesChanged != 1 {
		t.Fatalf("moved vault: %+v %q", res, log)
	}
	if src, _ := st.Source(context.Background(), "same.md"); src.Vault != moved {
		t.Fatalf("the moved vault did not take its source over: %s", src.Vault)
	}
}

// slowWriter commits slowly, so that the embedding stage works on later
// files while earlier ones are still to commit.
type slowWriter struct{ *sqlite.DB }

func (w slowWriter) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	time.Sleep(100 * time.Millisecond)
	return w.DB.Write(ctx, docs, vecs, remove...)
}

// A text moving from one file to another in one sweep keeps its vector:
// the embedding stage finds it stored (under the old file), then the old
// file's commit removes its last chunk and the vector with it; the new
// file's chunk must not then be written without one.
func TestSweepMovedTextKeepsVector(t *testing.T) {
	st := openStore(t)
	emb, space := embedSpace(t, st)
	root := t.TempDir()
	write(t, root, "a.md", convA)
	sweep(t, st, root, Options{Embedder: emb, Space: space, Dim: 16})
	write(t, root, "a.md", convB)
	write(t, root, "b.md", convA)
	res, err := Sweep(context.Background(), st, slowWriter{st}, root,
		Options{Embedder: emb, Space: space, Dim: 16, Batch: BatchLimits{Docs: 1}, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := st.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(stats.Spaces) != 1 || stats.Spaces[0].Missing != 0 || res.VectorsMissing != 0 {
		t.Fatalf("a chunk lost its vector: %+v, result %+v", stats.Spaces, res)
	}
}

// TestSweepSymlinkedVault: a vault given as a symbolic link to a folder is
// swept as that folder (the walk itself does not follow links).
func TestSweepSymlinkedVault(t *testing.T) {
	st := openStore(t)
	real := t.TempDir()
	write(t, real, "a.md", convA)
	link := filepath.Join(t.TempDir(), "vault")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	res, log := sweep(t, st, link, Options{})
	if res.FilesSeen != 1 || res.FilesChanged != 1 || log != "" {
		t.Errorf("sweep of a linked vault: %+v %s", res, log)
	}
}

// TestSweepThroughALinkedParent: one folder reached through a linked
// parent is one vault: the sweep by the other name finds its files stored
// (nothing changed), and both names take one sweep lock.
func TestSweepThroughALinkedParent(t *testing.T) {
	st := openStore(t)
	base := t.TempDir()
	real := filepath.Join(base, "real")
	write(t, filepath.Join(real, "vault"), "a.md", convA)
	if err := os.Symlink(real, filepath.Join(base, "link")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	viaLink := filepath.Join(base, "link", "vault")
	a, errA := VaultPath(filepath.Join(real, "vault"))
	b, errB := VaultPath(viaLink)
	if errA != nil || errB != nil || a != b {
		t.Fatalf("one folder, two vault paths: %s (%v), %s (%v)", a, errA, b, errB)
	}
	sweep(t, st, filepath.Join(real, "vault"), Options{})
	if res, log := sweep(t, st, viaLink, Options{}); res.FilesChanged != 0 || res.FilesSkipped != 1 || log != "" {
		t.Errorf("the same vault swept through a linked parent: %+v %s", res, log)
	}
}

// TestSweepSpaceWithoutEmbedder: a sweep given a space and no embedder (a
// server's, whose repair embeds) stores chunks without vectors, marks their
// sources pending and counts the texts missing; the repair's vectors then
// settle them.
func TestSweepSpaceWithoutEmbedder(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	sp, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "test", Provider: "test", Model: "m", Dim: 16, Normalized: true})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write(t, root, "a.md", convA)
	write(t, root, "dup.md", convA)
	res, log := sweep(t, st, root, Options{Space: sp.Name})
	if res.FilesChanged != 2 || res.VectorsMissing == 0 || log != "" {
		t.Fatalf("sweep: %+v %q", res, log)
	}
	src, err := st.Source(ctx, "a.md")
	if err != nil || src.IndexState != recall.IndexPending {
		t.Fatalf("source after the sweep: %v %q; want pending", err, src.IndexState)
	}
	pending, err := st.MissingVectors(ctx, sp.Name, 0, 10)
	if err != nil || len(pending) != 1 {
		t.Fatalf("missing vectors: %v %v", pending, err)
	}
	if err := st.PutVectors(ctx, []recall.Vector{{Space: sp.Name, Key: pending[0].Key, Vec: embedtest.Vector(pending[0].Text, 16)}}); err != nil {
		t.Fatal(err)
	}
	if src, _ := st.Source(ctx, "dup.md"); src.IndexState != recall.IndexOK {
		t.Errorf("source after its vector arrived: %q; want ok", src.IndexState)
	}
}

// TestSweepListsLinksItDoesNotFollow: symbolic links inside the vault are
// not followed, and those a user would expect read (one named as a file
// the sweep reads, one to a folder, one that leads nowhere but is named
// so) are listed for the summary to say so; a link to another kind of
// file, and a hidden one, are not.
func TestSweepListsLinksItDoesNotFollow(t *testing.T) {
	st := openStore(t)
	vault, outside := t.TempDir(), t.TempDir()
	write(t, outside, "a.md", convA)
	write(t, outside, "photo.png", "png")
	for link, target := range map[string]string{
		"a.md":           filepath.Join(outside, "a.md"),
		"sub/dir":        outside,
		"gone.json":      filepath.Join(outside, "missing.json"),
		"photo.png":      filepath.Join(outside, "photo.png"),
		".hidden.md":     filepath.Join(outside, "a.md"),
		"sub/loop/self":  ".",
		"sub/loop/x.txt": "x.txt", // a link to itself
	} {
		path := filepath.Join(vault, filepath.FromSlash(link))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Skip("no symbolic links here:", err)
		}
	}
	res, log := sweep(t, st, vault, Options{})
	want := []string{"a.md", "gone.json", "sub/dir/", "sub/loop/self/", "sub/loop/x.txt"}
	if res.FilesSeen != 0 || log != "" || !slices.Equal(res.Links, want) {
		t.Errorf("links %q (result %+v, log %q); want %q and no file read", res.Links, res, log, want)
	}
}

// A session log swept while it is written ends in a line cut short: the
// sweep reads the lines before it (no failure), and once the line is
// finished the file's size and mtime have changed, so the next sweep reads
// it again, the finished line with it.
func TestSweepHalfWrittenLog(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	const (
		ask    = `{"type":"user","message":{"role":"user","content":"why does the rye loaf crack?"},"sessionId":"s","timestamp":"2025-10-14T09:00:00Z"}` + "\n"
		answer = `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Steam escapes through the crust: score it first."}]},"sessionId":"s","timestamp":"2025-10-14T09:00:05Z"}` + "\n"
	)
	text := func() string {
		cs, err := st.Chunks(context.Background(), "session.jsonl", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, c := range cs {
			b.WriteString(c.Text)
		}
		return b.String()
	}
	write(t, root, "session.jsonl", ask+answer[:len(answer)/2])
	res, log := sweep(t, st, root, Options{})
	if res.FilesChanged != 1 || res.FilesFailed != 0 || log != "" {
		t.Fatalf("sweep mid-line: %+v %q; want the file read, not failed", res, log)
	}
	if got := text(); !strings.Contains(got, "rye loaf crack") || strings.Contains(got, "Steam") {
		t.Fatalf("read mid-line: %q; want the first turn alone", got)
	}
	write(t, root, "session.jsonl", ask+answer)
	if res, log = sweep(t, st, root, Options{}); res.FilesChanged != 1 || res.FilesFailed != 0 || log != "" {
		t.Fatalf("sweep after the line was finished: %+v %q; want the file read again", res, log)
	}
	if got := text(); !strings.Contains(got, "rye loaf crack") || !strings.Contains(got, "Steam escapes through the crust") {
		t.Errorf("read after the line was finished: %q; want both turns", got)
	}
	if res, _ = sweep(t, st, root, Options{}); res.FilesSkipped != 1 || res.FilesChanged != 0 {
		t.Errorf("the sweep after: %+v; want the file skipped", res)
	}
}

// A file changed again, to the same size, within the tick of the file
// system's clock in which a sweep read it keeps its mtime (a whole second on
// ext3, HFS+ and many shares, two on FAT): it looked unchanged to every
// later sweep, and the edit was never read. A file read within RacyWindow
// of its mtime is read again by the next sweep, and skipped once its mtime
// is settled. The tick that has not passed is an mtime ahead of the clock
// (a share's clock ahead of this machine's is the same case): the file is
// read by every sweep until the clock passes it.
func TestSameSizeEditInTheSweepsSecond(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	p := filepath.Join(root, "note.md")
	tick := time.Now().Add(time.Hour).Truncate(time.Second)
	edit := func(text string, mtime time.Time) {
		t.Helper()
		if err := testvault.WriteFile(p, text, mtime); err != nil {
			t.Fatal(err)
		}
	}
	stored := func() string {
		t.Helper()
		cs, err := st.Chunks(context.Background(), "note.md", 0, 10)
		if err != nil || len(cs) != 1 {
			t.Fatalf("chunks of note.md: %v %v", cs, err)
		}
		return cs[0].Text
	}
	edit("**User:** the kettle is on the left shelf", tick)
	sweep(t, st, root, Options{})
	edit("**User:** the kettle is on the high shelf", tick) // the same size
	if res, _ := sweep(t, st, root, Options{}); res.FilesChanged != 1 || !strings.Contains(stored(), "high shelf") {
		t.Fatalf("the sweep after a same-size edit in the tick of the last read: %+v, stored %q; want the edit read", res, stored())
	}
	edit("**User:** the kettle is on the high shelf", testvault.Settled())
	sweep(t, st, root, Options{})
	if res, _ := sweep(t, st, root, Options{}); res.FilesSkipped != 1 || res.Bytes != 0 {
		t.Errorf("a settled file: %+v; want it skipped, not read", res)
	}
}

// sweep.log's summary line names the counts a sweep leaves at zero only
// when they are not: a sweep that kept sources another writer stored, or
// read files again for a new zone, says so there as on its --json line.
func TestLogSummaryNamesWhatIsNotZero(t *testing.T) {
	now := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	var plain, busy bytes.Buffer
	Result{FilesSeen: 3, FilesChanged: 1, ChunksWritten: 2}.LogSummary(&plain, now, "/v", nil)
	want := "2026-12-03T17:00:00Z\tsummary\tvault=/v outcome=ok seen=3 changed=1 skipped=0 failed=0 removed=0 chunks=2 vectors_missing=0 seconds=0.00\n"
	if plain.String() != want {
		t.Errorf("plain summary:\n%q\nwant\n%q", plain.String(), want)
	}
	Result{FilesSeen: 3, FilesRedated: 2, ChunksReread: 5, ConversationsRemoved: 1, SourcesKept: 4}.LogSummary(&busy, now, "/v", nil)
	if !strings.HasSuffix(busy.String(), " seconds=0.00 redated=2 reread=5 conversations_removed=1 kept=4\n") {
		t.Errorf("summary of a sweep that re-dated, re-read, removed conversations and kept sources: %q", busy.String())
	}
}
