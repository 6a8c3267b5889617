// Package ingest sweeps a vault of conversation files into a store:
// walk, skip what is unchanged, parse and chunk in parallel, embed in
// batches, and write through a single writer, one transaction per batch of
// whole sources, so a source is never recorded with part of its chunks, and
// a file is never recorded as swept (unchanged next time) until all of its
// sources are written.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/chunk"
	"github.com/recall-mcp/recall/internal/convo"
	"github.com/recall-mcp/recall/internal/store"
)

// ReadingVersion is the version of what a sweep makes of a file: the
// parsers (internal/convo), the chunker (internal/chunk) and the titles,
// dates and headers given here. Every source records the version it was
// made with, and a sweep reads a file again, though its size and mtime are
// unchanged, when a source of it records an older one, so that an upgrade's
// better reading reaches files swept before it (text that reads the same
// keeps its vectors: they are keyed by the text). Bump it with any change
// that alters what they make of some file; TestReadingVersion fails when
// their output on the test fixtures changes and it was not bumped.
const ReadingVersion = 2

// Writer is where a sweep writes: the store itself, or the search engine that
// keeps its in-memory vector index in step with the store.
type Writer interface {
	Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error)
	Delete(ctx context.Context, ids ...string) (int, recall.WriteResult, error)
}

// Options configure one sweep.
type Options struct {
	Full  bool // re-ingest every file, even unchanged ones
	Prune bool // delete sources whose files are gone
	// PruneEmpty lets Prune remove every source of a vault that holds no
	// file at all, which CheckPrune otherwise refuses.
	PruneEmpty bool
	// DryRun reports what the sweep would do and writes nothing: files that
	// look changed are still read and parsed, so that a file touched but
	// unchanged, empty or malformed counts as it would, but nothing is
	// indexed, embedded, written or pruned.
	DryRun bool
	Chunk  chunk.Options
	// Zone is the user's time zone: a conversation its file dates by a
	// moment written in UTC, as exports and logs do, is dated by that
	// moment's day there (convo.Parse). Nil: UTC. Such a source records
	// the zone (ZoneKey), and a sweep in another reads its file again, as
	// it is unchanged, to date it in this one.
	Zone *time.Location

	// Embedder and Space: when both are set, new chunk texts are embedded
	// into that vector space. A failing embedder leaves chunks stored
	// without vectors (searchable by text; repair fills them in later).
	// A Space without an Embedder leaves every new text to repair: its
	// source is pending and the text counts in VectorsMissing.
	Embedder recall.Embedder
	Space    string
	Dim      int // the space's dimension: vectors of another size are refused

	Workers  int              // parse/chunk goroutines; 0 means GOMAXPROCS
	Failures io.Writer        // one line per failed file (nil: discarded)
	Progress func(Progress)   // called from time to time (nil: quiet)
	Now      func() time.Time // clock for records (nil: time.Now)
	Batch    BatchLimits      // writer batching (zero: defaults)

	// Wait, when set, makes a sweep that finds another sweeping the same
	// vault into the store (recall.Store.LockVault) wait for it to finish,
	// after calling Wait with the store's error, which names the other;
	// it then sweeps what the other left. Without it, the sweep returns
	// that error (ECONFLICT) at once. A dry run writes nothing, so it
	// neither takes the lock nor waits for it.
	Wait func(busy error)

	// Rereading, when set, is called once, before the work begins, with
	// the unchanged files (their source ids) that the sweep reads again
	// because their sources were made by an older reading
	// (ReadingVersion), so that the caller can say why a sweep of an
	// unchanged vault reads it all. It is not called when there are none.
	Rereading func(files []string)

	// Redating, when set, is called once, before the work begins, with
	// the unchanged files (their source ids) that the sweep reads again
	// because their sources' dates were made in another zone than Zone,
	// or may have been (stored before the zone was recorded), so that
	// the caller can say so. It is not called when there are none.
	Redating func(files []string)

	// Hurry, closed (a second interrupt), makes a sweep whose context has
	// ended stop committing the sources it had finished (see Sweep) and
	// return at once. Nil: never.
	Hurry <-chan struct{}
}

// BatchLimits bound one write transaction, and one piece of an export: a
// large export goes through parsing, embedding and the writer in pieces, each
// committed on its own, so that memory does not grow with it and an
// interrupted sweep keeps what it embedded. Zero means 4096 sources, 8 MB
// and 1 s of gathering per transaction, 256 conversations and 2 MB per
// piece.
type BatchLimits struct {
	Docs  int // sources per transaction or piece
	Bytes int // chunk text bytes per transaction or piece
	// Age bounds how long a transaction gathers sources before it commits
	// however few it holds (when the writer is free; else it goes on
	// gathering until the commit before it ends), so that a sweep whose
	// embedder is slow never holds more than that much finished work
	// uncommitted. Pieces commit as soon as they are embedded.
	Age time.Duration
}

// Progress is a snapshot of a running sweep.
type Progress struct {
	FilesTotal, FilesDone int
	Chunks                int
	Bytes, BytesTotal     int64
	Elapsed               time.Duration
}

// Result is the summary of a sweep; its JSON form is the `--json` line.
type Result struct {
	FilesSeen      int     `json:"files_seen"`
	FilesChanged   int     `json:"files_changed"`
	FilesSkipped   int     `json:"files_skipped"`
	FilesFailed    int     `json:"files_failed"`
	FilesRemoved   int     `json:"files_removed"`
	ChunksWritten  int     `json:"chunks_written"`
	Bytes          int64   `json:"bytes"`
	Seconds        float64 `json:"seconds"`
	VectorsMissing int     `json:"vectors_missing,omitempty"`
	// ConversationsRemoved counts conversations that a changed export no
	// longer holds, removed with it: an export is its account's current
	// state, as a vault file is its conversation's.
	ConversationsRemoved int `json:"conversations_removed,omitempty"`
	// FilesRedated counts the unchanged files read again to date their
	// conversations in Options.Zone (see Options.Redating): they count
	// among FilesChanged, or FilesFailed, too.
	FilesRedated int `json:"files_redated,omitempty"`
	// ChunksReread counts the chunks of files read again though unchanged
	// (a newer reading, another zone: Options.Rereading and Redating) that
	// read as stored, which the store keeps as they are: they are not
	// ChunksWritten, which counts chunks whose content changed (and every
	// chunk of a Full sweep, which asks for it).
	ChunksReread int      `json:"chunks_reread,omitempty"`
	Removed      []string `json:"-"` // vault-relative paths of files gone since the last sweep
	// Kept are the sources of files gone that the sweep did not remove
	// (with Prune; or records of files that held no conversation) since
	// another writer stored them again after the sweep read the store (a
	// sweep of another process, an /ingest upload, an import): that write
	// is newer than the sweep's finding. SourcesKept counts them.
	Kept        []string `json:"-"`
	SourcesKept int      `json:"sources_kept,omitempty"`
	// Links are the vault-relative paths of the symbolic links the sweep
	// did not follow that lead to a folder or are named as a file it reads
	// (an export linked into the vault): what it left out, said, since
	// the link's owner expects it read.
	Links       []string `json:"-"`
	Interrupted bool     `json:"-"`
	// Started is when the sweep began its work, after any wait for
	// another sweep of the vault (zero when it never began).
	Started time.Time `json:"-"`
}

// ErrNotSwept is wrapped by Sweep's error when it stopped before it began
// (interrupted while it waited for another sweep of the vault): there is
// no sweep to record or log.
var ErrNotSwept = errors.New("the sweep did not begin")

// Outcome names how a sweep that returned err ended, as sweep records and
// logs say it: ok, failures (some files failed), interrupted or error.
func (r Result) Outcome(err error) string {
	switch {
	case r.Interrupted:
		return "interrupted"
	case err != nil:
		return "error"
	case r.FilesFailed > 0:
		return "failures"
	}
	return "ok"
}

// Record is the sweep record of a sweep of vault (its absolute path) that
// ran from started to finished and returned err.
func (r Result) Record(vault string, started, finished time.Time, err error) recall.SweepRecord {
	return recall.SweepRecord{Vault: vault, Started: started, Finished: finished,
		FilesSeen: r.FilesSeen, FilesChanged: r.FilesChanged, FilesSkipped: r.FilesSkipped,
		FilesFailed: r.FilesFailed, FilesRemoved: r.FilesRemoved, ChunksWritten: r.ChunksWritten,
		Bytes: r.Bytes, VectorsMissing: r.VectorsMissing, Outcome: r.Outcome(err)}
}

// LogSummary writes the summary line that sweep.log ends each sweep of
// vault with, dated now, for a sweep that returned err.
func (r Result) LogSummary(w io.Writer, now time.Time, vault string, err error) {
	fmt.Fprintf(w, "%s\tsummary\tvault=%s outcome=%s seen=%d changed=%d skipped=%d failed=%d removed=%d chunks=%d vectors_missing=%d seconds=%.2f",
		now.UTC().Format(time.RFC3339), vault, r.Outcome(err), r.FilesSeen, r.FilesChanged, r.FilesSkipped,
		r.FilesFailed, r.FilesRemoved, r.ChunksWritten, r.VectorsMissing, r.Seconds)
	// The counts most sweeps leave at zero are added after the fixed ones,
	// and only when not zero, as the --json line leaves them out.
	for _, c := range []struct {
		key string
		n   int
	}{{"redated", r.FilesRedated}, {"reread", r.ChunksReread}, {"conversations_removed", r.ConversationsRemoved}, {"kept", r.SourcesKept}} {
		if c.n > 0 {
			fmt.Fprintf(w, " %s=%d", c.key, c.n)
		}
	}
	fmt.Fprintln(w)
}

// file is one vault file the walk found.
type file struct {
	rel   string // source id of the file (vault-relative, cleaned)
	path  string
	size  int64
	mtime int64
	// reread: unchanged, but read again, as --full reads every file, since
	// an older reading made its sources (ReadingVersion), or their dates
	// were made in another zone (Options.Zone).
	reread bool
}

// Sweep ingests the vault at root into w, reading the previous state from st.
//
// A sweep whose ctx ends stops parsing and embedding and returns an error
// wrapping context.Canceled (Result.Interrupted), but first commits, in at
// most 5 s (stopGrace) or until Options.Hurry, what it had finished: the
// commit in flight and every source already parsed, chunked and embedded. A source
// whose embedding the interruption cut short is not written, so a file is
// recorded as swept only as a whole sweep would record it, and the next
// sweep reads it again.
func Sweep(ctx context.Context, st recall.Store, w Writer, root string, opt Options) (Result, error) {
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	if err := opt.Chunk.Validate(); err != nil {
		return Result{}, err
	}
	abs, err := VaultPath(root)
	if err != nil {
		return Result{}, err
	}

	// One sweep of a vault at a time: two would each parse, embed and
	// write the same changes. The lock is keyed by the path sources record.
	// Every write is made under it (recall.WithVaultLock): one that finds
	// the lock lost (its PostgreSQL session ended) fails, and the sweep
	// stops there, since another may be sweeping the vault by then.
	if !opt.DryRun {
		ctx = recall.WithVaultLock(ctx, abs)
		unlock, err := st.LockVault(ctx, abs, opt.Wait)
		if err != nil {
			if errors.Is(err, store.ErrVaultBusy) {
				return Result{}, err
			}
			return Result{}, fmt.Errorf("%w: %w", ErrNotSwept, err)
		}
		defer unlock()
		start = now() // the time and figures are this sweep's, not the wait's
	}

	files, walkFailures, links, err := walk(ctx, abs)
	if err != nil {
		return Result{Interrupted: errors.Is(err, context.Canceled)}, err
	}
	manifest, err := st.Manifest(ctx, recall.KindArchive, abs)
	if err != nil {
		return Result{}, fmt.Errorf("read manifest: %w", err)
	}

	res := Result{Started: start, Links: links}
	res.FilesSeen = len(files) + len(walkFailures)
	res.FilesFailed = len(walkFailures)
	for _, f := range walkFailures {
		logFailure(opt.Failures, f.Name, f.Err)
	}

	present := make(map[string]bool, len(files))
	for _, f := range files {
		present[f.rel] = true
	}
	unread := make(map[string]bool, len(walkFailures))
	for _, f := range walkFailures {
		unread[f.ID] = true
	}
	byFile, gone := group(manifest, present, unread)
	// The records of files that held no conversation (noConversation) are
	// no conversations gone: they go with their files, said nowhere, with
	// or without Prune. (Kept, they would be harmless, but would pile up.)
	var goneEmpty []string
	gone = slices.DeleteFunc(gone, func(id string) bool {
		if manifest[id].Chunks > 0 {
			return false
		}
		goneEmpty = append(goneEmpty, id)
		return true
	})

	foreign, err := foreignFiles(ctx, st, abs)
	if err != nil {
		return Result{}, err
	}
	var todo []file
	var bytesTotal int64
	var reread, redated []string
	zone := ZoneKey(opt.Zone)
	for _, f := range files {
		if !opt.Full && unchanged(f, byFile[f.rel], manifest) {
			switch {
			case readBefore(byFile[f.rel], manifest):
				reread = append(reread, f.rel)
			case redate(byFile[f.rel], manifest, zone):
				redated = append(redated, f.rel)
			default:
				res.FilesSkipped++
				continue
			}
			f.reread = true
		}
		if from, ok := foreign[f.rel]; ok {
			res.FilesFailed++
			logFailure(opt.Failures, f.rel, recall.Errorf(recall.ECONFLICT,
				"%s is already in the database from the vault %s, and a source id is its path in its vault: sweep each vault into a database of its own (--db), or keep one vault's files under a folder the other lacks", f.rel, from))
			continue
		}
		todo = append(todo, f)
		bytesTotal += f.size
	}
	for _, id := range gone {
		res.Removed = append(res.Removed, goneFile(id))
	}
	res.Removed = dedupe(res.Removed)
	res.FilesRemoved = len(res.Removed)

	if opt.Prune { // a dry run refuses as the sweep would
		if err := CheckPrune(abs, res.FilesSeen, res.FilesRemoved, opt.PruneEmpty); err != nil {
			return res, err
		}
	}
	if len(reread) > 0 && opt.Rereading != nil {
		opt.Rereading(reread)
	}
	res.FilesRedated = len(redated)
	if len(redated) > 0 && opt.Redating != nil {
		opt.Redating(redated)
	}
	p := &pipeline{opt: opt, zone: zone, st: st, w: w, vault: abs, byFile: byFile, manifest: manifest,
		res: &res, start: start, now: now, total: len(todo), bytesTotal: bytesTotal}
	err = p.run(ctx, todo)

	// The sources found gone are removed only as the manifest read them:
	// one another writer stored under the id since (another process's
	// sweep, an /ingest upload, an import) is its, and is kept. The check
	// is made in the removal's transaction (recall.WithDeleteGuard).
	kept := map[string]bool{}
	dctx := recall.WithDeleteGuard(ctx, func(stored *recall.Source) bool {
		st, ok := manifest[stored.ID]
		same := ok && stored.Kind == recall.KindArchive && stored.Vault == abs && st.SameVersion(stored)
		kept[stored.ID] = !same // set again if the transaction begins again
		return same
	})
	if err == nil && opt.Prune && !opt.DryRun && len(gone) > 0 {
		if _, _, derr := w.Delete(dctx, gone...); derr != nil {
			err = fmt.Errorf("removing the sources of %s gone from the vault: %w", plural(res.FilesRemoved, "file", "files"), derr)
		}
	}
	if err == nil && !opt.DryRun && len(goneEmpty) > 0 {
		if _, _, derr := w.Delete(dctx, goneEmpty...); derr != nil {
			err = fmt.Errorf("forgetting the files gone from the vault that held no conversation: %w", derr)
		}
	}
	if err == nil {
		for id, k := range kept {
			if k {
				res.Kept = append(res.Kept, id)
			}
		}
		sort.Strings(res.Kept)
		res.SourcesKept = len(res.Kept)
	}
	res.Seconds = now().Sub(start).Seconds()
	if errors.Is(err, context.Canceled) {
		res.Interrupted = true
	}
	return res, err
}

// CheckPrune refuses a prune that would remove every file swept from a
// vault in which the walk found nothing at all, failed or not: a disk not
// mounted, or a mistyped folder, looks exactly like that, and the sources
// (and their vectors, hours of embedding on a large archive) would go. A
// vault emptied on purpose is pruned with allowEmpty (--prune-empty).
func CheckPrune(vault string, seen, removed int, allowEmpty bool) error {
	if seen > 0 || removed == 0 || allowEmpty {
		return nil
	}
	return recall.Errorf(recall.EINVALID, "%s holds no files now, but %s swept from it before: is it a disk not mounted, or the wrong folder? Nothing was swept or removed; if you emptied it on purpose, run again with --prune-empty", vault, plural(removed, "file was", "files were"))
}

// plural is n and the form of a noun phrase that agrees with it.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// MaxTitle bounds a source's title, in characters.
const MaxTitle = 1000

// CleanTitle is a conversation's title as sweeps store it: control
// characters (a tab in an export's conversation name, a terminal escape)
// become spaces, since a title is shown on one line, and a title is cut at
// MaxTitle characters (a heading can be a whole paragraph). A remote sweep
// sends titles cleaned alike and /ingest cleans what it is sent, so a
// source has one title whichever way it came; /ingest once refused such
// titles, and their files failed on every run.
func CleanTitle(title string) string {
	n := 0
	for i := range title {
		if n == MaxTitle {
			title = title[:i]
			break
		}
		n++
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, title)
}

// VaultPath is the path of the vault at root as sweeps name it: absolute,
// with every symbolic link on the way resolved. A vault given as a link is
// the folder it points to (the walk does not follow links and would find
// nothing in the link itself), and one folder reached through a linked
// parent (/tmp and /private/tmp on macOS, a linked home) is one vault: one
// sweep lock, one owner of its sources, where two names made two sweeps
// run at once and each take the sources over from the other. A remote
// sweep (internal/remote) names its vault alike, so both walk the same
// files and a link shares the real folder's manifest.
func VaultPath(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("vault %s: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Said plainly: "lstat /no: no such file or directory" named a
		// parent of the folder given, not the folder.
		return "", recall.Errorf(recall.EINVALID, "vault %s does not exist: give the folder that holds your conversations", root)
	case err != nil:
		return "", recall.WrapError(recall.EINVALID, err, "cannot read vault %s", root)
	case !fi.IsDir():
		return "", recall.Errorf(recall.EINVALID, "vault %s is a file, not a folder: give the folder that holds it (%s)", root, filepath.Dir(root))
	}
	return abs, nil
}

// foreignFiles maps the vault files whose sources another vault already
// stored, and still holds, to that vault. Source ids are vault-relative
// paths, so the same path in two vaults would be one source, each sweep
// overwriting the other's; such a file is refused instead. The sweep takes
// over the sources of a vault that no longer exists (moved or renamed), of
// the same directory reached by another path (a symbolic link), of files
// the other vault no longer has, and of /ingest (vault ""): the same files
// sent from elsewhere. With one vault, as usual, this is one index lookup.
func foreignFiles(ctx context.Context, st recall.Store, vault string) (map[string]string, error) {
	vaults, err := st.Vaults(ctx, recall.KindArchive)
	if err != nil {
		return nil, fmt.Errorf("read vaults: %w", err)
	}
	here, err := os.Stat(vault)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, v := range vaults {
		if v == vault || v == "" {
			continue
		}
		if fi, err := os.Stat(v); err != nil || !fi.IsDir() || os.SameFile(fi, here) {
			continue
		}
		m, err := st.Manifest(ctx, recall.KindArchive, v)
		if err != nil {
			return nil, fmt.Errorf("read manifest: %w", err)
		}
		for id, s := range m {
			if s.Chunks == 0 {
				continue // a file there holds no conversation: no source to overwrite
			}
			rel := goneFile(id)
			if _, ok := out[rel]; ok {
				continue
			}
			if _, err := os.Lstat(filepath.Join(v, filepath.FromSlash(rel))); err == nil {
				out[rel] = v
			}
		}
	}
	return out, nil
}

// WalkFailure is a file or folder the walk could not list or read, or a
// file whose path makes no source id or the id of another file.
type WalkFailure struct {
	Name string // the path as found, for the failure log
	ID   string // its source id, or "" when the path makes none
	Err  error
}

// VaultFile is a supported file the walk found.
type VaultFile struct {
	ID    string // its source id
	Path  string
	Size  int64
	MTime int64 // unix nanoseconds
}

// Walk lists the supported files of the vault at root (a VaultPath) as a
// sweep does, for a remote sweep (internal/remote), which must send what
// a local sweep would store and fail what it fails. A source id at or
// under a failure's (UnderAny) is of a file the walk cannot tell is gone.
func Walk(ctx context.Context, root string) (_ []VaultFile, _ []WalkFailure, links []string, _ error) {
	files, failed, links, err := walk(ctx, root)
	if err != nil {
		return nil, nil, nil, err
	}
	out := make([]VaultFile, len(files))
	for i, f := range files {
		out[i] = VaultFile{ID: f.rel, Path: f.path, Size: f.size, MTime: f.mtime}
	}
	return out, failed, links, nil
}

// walkDir is filepath.WalkDir; tests replace it to make a folder fail to
// be read, which running as root (as CI does) cannot do with permissions.
var walkDir = filepath.WalkDir

// walk lists the supported files under root with one lstat each. Hidden
// files and folders (.git, .obsidian) are skipped; symbolic links are not
// followed, so nothing outside the vault is ever read: those that lead to
// a folder or are named as a supported file are listed in links.
func walk(ctx context.Context, root string) (files []file, failed []WalkFailure, links []string, err error) {
	err = walkDir(root, func(path string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		rel, rerr := filepath.Rel(root, path)
		if rerr != nil {
			return rerr
		}
		if err != nil {
			if path == root {
				return err
			}
			id, _ := recall.CleanSourceID(rel)
			failed = append(failed, WalkFailure{filepath.ToSlash(rel), id, err})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		name := d.Name()
		if path != root && strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if convo.Supported(name) {
				links = append(links, filepath.ToSlash(rel))
			} else if info, serr := os.Stat(path); serr == nil && info.IsDir() {
				links = append(links, filepath.ToSlash(rel)+"/")
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() || !convo.Supported(name) {
			return nil
		}
		id, ierr := recall.CleanSourceID(rel)
		if ierr != nil {
			// Its name is what is wrong, and only renaming it helps.
			ierr = recall.Errorf(recall.ErrorCode(ierr), "its name cannot be stored (%s): rename the file", recall.ErrorMessage(ierr))
			failed = append(failed, WalkFailure{filepath.ToSlash(rel), "", ierr})
			return nil
		}
		info, ierr := d.Info()
		if ierr != nil {
			failed = append(failed, WalkFailure{id, id, ierr})
			return nil
		}
		files = append(files, file{rel: id, path: path, size: info.Size(), mtime: info.ModTime().UnixNano()})
		return nil
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("walk %s: %w", root, err)
	}
	files, collided := collisions(root, files)
	return files, append(failed, collided...), links, nil
}

// collisions takes out of files those that share a source id with another
// file (see Collisions).
func collisions(root string, files []file) ([]file, []WalkFailure) {
	ids, names := make([]string, len(files)), make([]string, len(files))
	for i, f := range files {
		ids[i], names[i] = f.rel, found(root, f.path)
	}
	errs := Collisions(ids, names)
	var failed []WalkFailure
	kept := files[:0]
	for i, f := range files {
		if errs[i] == nil {
			kept = append(kept, f)
			continue
		}
		failed = append(failed, WalkFailure{names[i], f.rel, errs[i]})
	}
	return kept, failed
}

// Collisions finds the files that share a source id with another file: a
// file literally named `a\b.md` beside a/b.md, or café.md in both its NFC
// and NFD spellings, which most file systems keep apart. ids[i] is the
// source id of the file the walk found at names[i]; errs[i] is nil unless
// that file collides. Sweeping them would write one source twice in a
// transaction (refused, failing the whole sweep) and choosing one would
// index whichever the walk met first, so every one of them is a failure
// naming the others, until all but one are renamed; the source keeps what
// an earlier sweep stored meanwhile. A remote sweep (internal/remote)
// fails them alike.
func Collisions(ids, names []string) (errs []error) {
	byID := make(map[string][]string, len(ids))
	for i, id := range ids {
		byID[id] = append(byID[id], names[i])
	}
	errs = make([]error, len(ids))
	for i, id := range ids {
		if others := byID[id]; len(others) > 1 {
			errs[i] = recall.Errorf(recall.ECONFLICT,
				"the files %+q are all the source id %q (their names differ only in slashes or Unicode normalisation): rename all but one", others, id)
		}
	}
	return errs
}

// found is path as the walk found it under root, with forward slashes.
func found(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}

// group assigns every stored source to the vault file it came from: a file
// that is one conversation has the file's id; a conversation inside an
// export has the id "<export>/<conversation id>". Sources whose file is gone
// are returned in gone. A source at or under a path in unread (a folder
// that could not be listed, a file that could not be stat'ed) is neither:
// the walk could not tell whether its file is still there, and taking it
// for gone would let --prune delete a whole folder's sources because of a
// permission or a flaky disk.
func group(m map[string]recall.SourceState, present, unread map[string]bool) (byFile map[string][]string, gone []string) {
	byFile = make(map[string][]string)
	for id := range m {
		switch {
		case present[id]:
			byFile[id] = append(byFile[id], id)
		case present[Parent(id)]:
			byFile[Parent(id)] = append(byFile[Parent(id)], id)
		case !UnderAny(id, unread):
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	return byFile, gone
}

// UnderAny reports whether id is one of paths or lies under one of them.
func UnderAny(id string, paths map[string]bool) bool {
	if len(paths) == 0 {
		return false
	}
	for p := id; p != ""; p = Parent(p) {
		if paths[p] {
			return true
		}
	}
	return false
}

// Parent is the folder (or export) a source id lies in, "" at the top.
func Parent(id string) string {
	if i := strings.LastIndexByte(id, '/'); i > 0 {
		return id[:i]
	}
	return ""
}

// goneFile names the file a vanished source came from: the source itself
// when its name is a supported file, else its export.
func goneFile(id string) string {
	if convo.Supported(id) || Parent(id) == "" {
		return id
	}
	return Parent(id)
}

// unchanged reports whether every source of a file records the file's
// current size and mtime. An export interrupted between its pieces has one
// source with the inProgress mtime, so it is read again.
func unchanged(f file, ids []string, m map[string]recall.SourceState) bool {
	if len(ids) == 0 {
		return false
	}
	for _, id := range ids {
		if s := m[id]; s.Size != f.size || s.MTime != f.mtime {
			return false
		}
	}
	return true
}

// readBefore reports whether a source of a file was made by an older
// reading than this sweep's (ReadingVersion), as every source swept before
// the version was recorded was. A newer one is left as it is: a sweep by an
// older binary does not undo an upgrade's reading, nor the next upgrade's
// sweep its own.
func readBefore(ids []string, m map[string]recall.SourceState) bool {
	for _, id := range ids {
		if m[id].Reading < ReadingVersion {
			return true
		}
	}
	return false
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func logFailure(w io.Writer, rel string, err error) { LogFailure(w, rel, FailureReason(rel, err)) }

// FailureReason is why the file (or folder) rel failed, as the failure log
// gives it after rel: a permission refused says what to do, and the name
// the line already gives is not repeated, neither as the error's own path
// ("open /home/ann/vault/a.md: ...") nor as a parser's prefix ("a.md: ...").
func FailureReason(rel string, err error) string {
	if errors.Is(err, fs.ErrPermission) {
		return "permission denied: recall cannot read it (give the user recall runs as read access to it, or move it out of the vault)"
	}
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Op + ": " + pe.Err.Error()
	}
	return strings.TrimPrefix(err.Error(), rel+": ")
}

// LogFailure writes one line of a failure log (sweep.log, of a local or a
// remote sweep): the time, "failed", what failed (a file) and why. A name
// is quoted when it holds a control character or is not UTF-8: a line
// break in it would write a second line, one that reads as another record,
// and the log is UTF-8 text. A nil w discards the line.
func LogFailure(w io.Writer, what, reason string) {
	if w == nil {
		return
	}
	if !utf8.ValidString(what) || strings.IndexFunc(what, unicode.IsControl) >= 0 {
		what = strconv.Quote(what)
	}
	fmt.Fprintf(w, "%s\tfailed\t%s\t%s\n", time.Now().UTC().Format(time.RFC3339), what, oneLine(reason))
}

// oneLine is s on one line of UTF-8 text, as the failure log holds it: an
// error may quote a file name as it is.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}
