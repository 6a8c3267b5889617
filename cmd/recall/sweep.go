package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/chunk"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/store"
	"github.com/recall-mcp/recall/internal/store/postgres"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// sweepArgs checks what a local and a remote sweep are given alike: one
// vault, and --prune-empty only beside --prune, since it only lets --prune
// empty a vault (alone it did nothing, and the sweep exited 0 keeping the
// sources its user meant to remove).
func sweepArgs(pos []string, prune, pruneEmpty bool) error {
	if len(pos) != 1 {
		return usagef("sweep takes one vault directory (got %d arguments)", len(pos))
	}
	if pruneEmpty && !prune {
		return usagef("--prune-empty works only with --prune (it lets --prune remove every source of a vault that holds no files)")
	}
	return nil
}

func (m *Main) cmdSweep(ctx context.Context, args []string) error {
	if wantsRemote(args) {
		return m.sweepRemote(ctx, args)
	}
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	full := fs.Bool("full", false, "re-ingest every file, even unchanged ones")
	prune := fs.Bool("prune", false, "delete sources whose files are gone from the vault")
	pruneEmpty := fs.Bool("prune-empty", false, "with --prune, also when the vault holds no files at all (refused otherwise: an unmounted disk looks the same)")
	dry := fs.Bool("dry-run", false, "report what a sweep would do, reading the files that look changed; write nothing, not even to sweep.log")
	size := fs.Int("chunk-size", 2000, "chunk size limit in characters")
	overlap := fs.Int("overlap", 0, "characters of the previous chunk carried into the next (-1: none; 0: a tenth of --chunk-size, 200 for the default size)")
	logPath := fs.String("log", "", "failure log `file` (default: sweep.log next to the database)")
	asJSON := fs.Bool("json", false, "print one JSON summary object as the last line of stdout")
	noWait := fs.Bool("no-wait", false, fmt.Sprintf("if another process is sweeping the vault into this database, exit at once with status %d instead of waiting for it", exitBusy))
	// Listed for -h only: a sweep given --remote is a remote one (wantsRemote).
	fs.String("remote", "", "send the vault to the recall serve at `URL` through /ingest instead (its flags: sweep --remote URL -h)")
	pos, err := m.parse(fs, args, "sweep [flags] DIR")
	if err != nil {
		return err
	}
	if err := sweepArgs(pos, *prune, *pruneEmpty); err != nil {
		return err
	}
	vault := pos[0]
	// A vault that is not a folder is said at once, before the database
	// is made (a mistyped folder left an empty one behind) and the model
	// loaded (seconds).
	if _, err := ingest.VaultPath(vault); err != nil {
		return err
	}
	// The first interrupt ends ctx: the sweep commits what it had finished
	// embedding and returns; a second (Hurry) skips that.
	opts := ingest.Options{Full: *full, Prune: *prune, PruneEmpty: *pruneEmpty, DryRun: *dry, Chunk: chunk.Options{Size: *size, Overlap: *overlap}, Hurry: m.Hurry}
	if err := opts.Chunk.Validate(); err != nil {
		return usagef("%s", recall.ErrorMessage(err))
	}
	if opts.Zone, err = m.location(); err != nil {
		return err
	}

	var (
		st recall.Store
		w  ingest.Writer
	)
	if *dry {
		// A dry run neither embeds nor writes: no engine, no model.
		if st, err = m.dryRunStore(ctx); err != nil {
			return err
		}
		w = st
	} else {
		if err := m.checkModel(); err != nil {
			return err
		}
		if st, err = m.openStore(ctx); err != nil {
			return err
		}
		eng, emb, space, err := m.engine(ctx, st, noVectors)
		if err != nil {
			return err
		}
		w = eng
		opts.Embedder, opts.Space = emb, space
		if opts.Dim, err = spaceDim(ctx, st, space); err != nil {
			return err
		}
	}

	// A dry run lists its failures on stderr once it is done, unless given
	// a --log: sweep.log records sweeps that ran.
	var logw io.Writer
	var logName string
	var dryFailures bytes.Buffer
	if *dry && *logPath == "" {
		logw, logName = &dryFailures, "the lines above (stderr)"
	} else {
		logf, err := m.openSweepLog(*logPath)
		if err != nil {
			return err
		}
		defer logf.Close()
		logw, logName = logf, logf.Name()
	}
	var logMu sync.Mutex
	opts.Failures = lockedWriter{&logMu, logw}

	if m.IsTerminal() && !*asJSON {
		var last time.Time
		opts.Progress = func(p ingest.Progress) {
			if time.Since(last) < 200*time.Millisecond && p.FilesDone != p.FilesTotal {
				return
			}
			last = time.Now()
			fmt.Fprintf(m.Stderr, "\r\033[K%s", formatProgress(p))
		}
	}

	// Another sweep of the vault (a server's --vault, a cron job) does
	// this one's work: by default this one waits for it, then sweeps
	// what is left, usually nothing, so that a script's next step finds
	// the vault swept; --no-wait is for a cron job that would rather skip.
	if !*noWait {
		opts.Wait = func(busy error) {
			fmt.Fprintf(m.Stderr, "recall: %s: waiting for it to finish (--no-wait to exit instead)\n", recall.ErrorMessage(busy))
		}
	}
	opts.Rereading = func(files []string) {
		doing := "reading"
		if *dry {
			doing = "a sweep would read"
		}
		rereadNote(m.Stderr, doing, len(files))
	}
	opts.Redating = func(files []string) {
		doing := "reading"
		if *dry {
			doing = "a sweep would read"
		}
		redateNote(m.Stderr, doing, len(files), opts.Zone)
	}
	started := time.Now().UTC()
	res, err := ingest.Sweep(ctx, st, w, vault, opts)
	if errors.Is(err, store.ErrVaultBusy) {
		fmt.Fprintf(m.Stderr, "recall: %s: not sweeping (--no-wait)\n", recall.ErrorMessage(err))
		return exitError(exitBusy)
	}
	if errors.Is(err, ingest.ErrNotSwept) {
		return err // interrupted while it waited: nothing ran, to record or log
	}
	if !res.Started.IsZero() {
		started = res.Started.UTC()
	}
	if *prune && !*dry && res.FilesRemoved > 0 {
		pruned := res.FilesRemoved
		m.audit("cli sweep prune", started, &pruned, &err)
	}
	if opts.Progress != nil {
		fmt.Fprint(m.Stderr, "\r\033[K")
	}
	// Recorded as the sweep named it: the folder a link given for it leads to.
	abs, verr := ingest.VaultPath(vault)
	if verr != nil {
		abs, _ = filepath.Abs(vault)
	}
	if !*dry && (err == nil || res.Interrupted) {
		rec := res.Record(abs, started, time.Now().UTC(), err)
		if rerr := st.RecordSweep(context.WithoutCancel(ctx), rec); rerr != nil && err == nil {
			err = rerr
		}
	}
	if *dry {
		m.Stderr.Write(dryFailures.Bytes())
	} else {
		logMu.Lock()
		res.LogSummary(logw, time.Now(), abs, err)
		logMu.Unlock()
	}
	if *asJSON && (err == nil || res.Interrupted) {
		// An interrupted sweep still ends stdout with its summary: what it
		// committed stays, and a script reading the last line sees that.
		b, _ := json.Marshal(struct {
			ingest.Result
			Interrupted bool `json:"interrupted,omitempty"`
		}{res, res.Interrupted})
		fmt.Fprintln(m.Stdout, string(b))
	}
	if res.Interrupted && !*asJSON && !*dry && res.FilesSeen > 0 {
		// Not a bare "interrupted": what it kept, and that the next run
		// goes on from there rather than starting over.
		fmt.Fprintf(m.Stderr, "recall: sweep interrupted: %d of %s ingested and kept, %s; sweep again to go on from there\n",
			res.FilesChanged, plural(res.FilesSeen, "file", "files"), plural(res.ChunksWritten, "chunk", "chunks"))
		return exitError(exitInterrupted)
	}
	if err != nil {
		return err
	}
	if given := chunkFlags(fs); given != "" && !*full && res.FilesSkipped > 0 {
		// The store does not record the settings a file was chunked with,
		// so a sweep cannot tell whether the unchanged files need them.
		fmt.Fprintf(m.Stderr, "recall: %s %s only to new and changed files: the %s; run with --full to chunk every file again\n",
			given, agree(strings.Count(given, "--"), "applies", "apply"),
			plural(res.FilesSkipped, "unchanged file keeps its chunks", "unchanged files keep their chunks"))
	}
	if !*asJSON {
		verb := "ingested"
		if *dry {
			verb = "would ingest"
		}
		fmt.Fprintf(m.Stdout, "%s %d of %s (%d unchanged, %d failed), %s, %.1f MB in %.2fs\n",
			verb, res.FilesChanged, plural(res.FilesSeen, "file", "files"), res.FilesSkipped, res.FilesFailed,
			plural(res.ChunksWritten, "chunk", "chunks"), float64(res.Bytes)/1e6, res.Seconds)
		if res.FilesRemoved > 0 {
			them := agree(res.FilesRemoved, "it", "them")
			action := "run with --prune to remove " + them
			switch {
			case *prune && *dry:
				action = "--prune would remove " + them
			case *prune:
				action = "removed"
			}
			printRemoved(m.Stdout, res.Removed, action)
		}
		if res.SourcesKept > 0 {
			// Not removed: another writer stored them while this sweep ran.
			fmt.Fprintf(m.Stdout, "%s of files gone from the vault %s kept: stored again while the sweep ran (another sweep, an upload or an import):\n",
				plural(res.SourcesKept, "source", "sources"), agree(res.SourcesKept, "was", "were"))
			printFirst(m.Stdout, res.Kept, "")
		}
		if res.ConversationsRemoved > 0 {
			// A dry run removes nothing: it says what the sweep would.
			were := agree(res.ConversationsRemoved, "was", "were")
			if *dry {
				were = "would be"
			}
			fmt.Fprintf(m.Stdout, "%s %s removed with %s\n", plural(res.ConversationsRemoved,
				"conversation no longer in its export", "conversations no longer in their exports"),
				were, agree(res.ConversationsRemoved, "it", "them"))
		}
		if res.FilesRedated > 0 {
			one, many := "unchanged file was", "unchanged files were"
			if *dry {
				one, many = "unchanged file would be", "unchanged files would be"
			}
			fmt.Fprintf(m.Stdout, "%s read again to date %s conversations in this time zone\n",
				plural(res.FilesRedated, one, many), agree(res.FilesRedated, "its", "their"))
		}
		if res.ChunksReread > 0 {
			// Not among the chunks ingested: the store keeps them as they are.
			kept := agree(res.ChunksReread, "was", "were") + " kept as stored"
			if *dry {
				kept = "would be kept as stored"
			}
			fmt.Fprintf(m.Stdout, "%s of the files read again read as before and %s\n",
				plural(res.ChunksReread, "chunk", "chunks"), kept)
		}
		printLinks(m.Stdout, res.Links)
		if res.VectorsMissing > 0 {
			fmt.Fprintf(m.Stdout, "%s no vector yet (embedder failed): run `recall repair`\n",
				plural(res.VectorsMissing, "chunk text has", "chunk texts have"))
		}
		if res.FilesFailed > 0 {
			fmt.Fprintf(m.Stdout, "failures are listed in %s\n", logName)
		}
	}
	if res.FilesFailed > 0 {
		return exitError(exitFailure)
	}
	return nil
}

// rereadNote says once why a sweep reads (or sends) unchanged files: the
// recall that last swept them read files differently (ingest.ReadingVersion).
func rereadNote(w io.Writer, doing string, files int) {
	fmt.Fprintf(w, "recall: this recall reads some files differently from the one that last swept this vault: %s %s again (text that reads the same keeps its vectors)\n",
		doing, plural(files, "unchanged file", "unchanged files"))
}

// redateNote says once why a sweep reads unchanged files: their
// conversations were dated in another time zone than zone, or before
// sweeps recorded the zone (ingest.Options.Redating).
func redateNote(w io.Writer, doing string, files int, zone *time.Location) {
	name := zone.String()
	if name == "Local" {
		name = "the system's, " + time.Now().In(zone).Format("MST")
	}
	fmt.Fprintf(w, "recall: some files' conversations were dated in another time zone than this one (%s), or before recall recorded it: %s %s again to date them in it (a conversation whose day changes is embedded again)\n",
		name, doing, plural(files, "unchanged file", "unchanged files"))
}

// chunkFlags names the chunking flags given on a sweep's command line
// ("--chunk-size", "--chunk-size and --overlap"), "" for none.
func chunkFlags(fs *flag.FlagSet) string {
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "chunk-size" || f.Name == "overlap" {
			given = append(given, "--"+f.Name)
		}
	})
	return strings.Join(given, " and ")
}

// openSweepLog opens the failure log a sweep appends to: path, or
// sweep.log next to the database.
func (m *Main) openSweepLog(path string) (*os.File, error) {
	if path == "" {
		dir, err := m.stateDir()
		if err != nil {
			return nil, err
		}
		path = filepath.Join(dir, "sweep.log")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, sweepLogError(path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, sweepLogError(path, err)
	}
	return f, nil
}

// sweepLogError says that the failure log at path cannot be written, naming
// it once ("open sweep log: open sweep.log: permission denied" said the
// step, then the system call) and how to put it elsewhere.
func sweepLogError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("cannot write the sweep's failure log %s: %w (--log FILE puts it elsewhere)", path, err)
}

// dryRunStore opens the database for a dry run, which leaves no trace:
// read-only, or, when there is none yet, an empty one in a temporary folder
// removed at exit, against which every file is new, as it would be.
func (m *Main) dryRunStore(ctx context.Context) (recall.Store, error) {
	path, err := m.dbPath()
	if err != nil {
		return nil, err
	}
	if isPostgres(path) {
		db, err := postgres.Open(ctx, path, postgres.Options{ReadOnly: true})
		switch {
		case err == nil:
			m.closers = append(m.closers, db.Close)
			return db, nil
		case !recall.IsNotFound(err): // a database recall has not set up goes on as "none yet"
			return nil, err
		}
	} else if _, err := os.Stat(path); err == nil {
		db, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
		if err != nil {
			return nil, err
		}
		m.closers = append(m.closers, db.Close)
		return db, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "recall-dry-run-")
	if err != nil {
		return nil, err
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "recall.db"), sqlite.Options{})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	m.closers = append(m.closers, func() error {
		err := db.Close()
		os.RemoveAll(dir)
		return err
	})
	return db, nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func formatProgress(p ingest.Progress) string {
	secs := p.Elapsed.Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(p.Bytes) / 1e6 / secs
	}
	eta := "-"
	if rate > 0 && p.BytesTotal > p.Bytes {
		eta = (time.Duration(float64(p.BytesTotal-p.Bytes)/1e6/rate) * time.Second).Round(time.Second).String()
	}
	return fmt.Sprintf("files %d/%d  chunks %d  %.1f MB/s  ETA %s", p.FilesDone, p.FilesTotal, p.Chunks, rate, eta)
}

// plural is n with the singular or plural noun.
func plural(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, agree(n, one, many))
}

// agree is the word (a verb, a pronoun) that agrees with a count of n.
func agree(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// printLinks lists the symbolic links a sweep did not follow, so that
// nothing outside the vault is read; said, since whoever linked an export
// into the vault expects it read.
func printLinks(w io.Writer, links []string) {
	if len(links) == 0 {
		return
	}
	fmt.Fprintf(w, "%s not followed (a sweep reads only what is inside the vault: copy in what %s to, or sweep a linked folder as a vault of its own):\n",
		plural(len(links), "symbolic link in the vault was", "symbolic links in the vault were"), agree(len(links), "it leads", "they lead"))
	printFirst(w, links, "")
}

// printRemoved lists the files a sweep found gone from the vault, the
// first 20 of them, and what became of their sources.
func printRemoved(w io.Writer, removed []string, action string) {
	fmt.Fprintf(w, "%s gone from the vault (%s):\n", plural(len(removed), "file is", "files are"), action)
	printFirst(w, removed, "")
}

// printFirst prints the first 20 lines, indented, and how many more there
// are (with more, what lists them all).
func printFirst(w io.Writer, lines []string, more string) {
	for i, l := range lines {
		if i == 20 {
			fmt.Fprintf(w, "  ... and %d more%s\n", len(lines)-20, more)
			break
		}
		fmt.Fprintf(w, "  %s\n", l)
	}
}
