package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/jsonkind"
	"github.com/recall-mcp/recall/internal/lockfile"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/server"
	"github.com/recall-mcp/recall/internal/store"
	"github.com/recall-mcp/recall/internal/store/postgres"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

func (m *Main) cmdStats(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("stats", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := m.parseNone(fs, args, "stats [--json]", ""); err != nil {
		return err
	}
	st, err := m.openReading(ctx)
	if err != nil {
		return err
	}
	s, err := st.Stats(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(m.Stdout).Encode(s)
	}
	w := m.Stdout
	path, _ := m.dbPath()
	fmt.Fprintf(w, "database:   %s (%.1f MB)\n", dbDisplay(path), float64(s.DBBytes)/1e6)
	kinds := make([]string, 0, len(s.Sources))
	for k := range s.Sources {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	fmt.Fprint(w, "sources:   ")
	if len(kinds) == 0 {
		fmt.Fprint(w, " none")
	}
	for _, k := range kinds {
		fmt.Fprintf(w, " %s %d", k, s.Sources[recall.Kind(k)])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "chunks:     %d (%.1f MB of text, %.2f%% begin mid-word)\n", s.Chunks, float64(s.Bytes)/1e6, 100*s.MidWordShare)
	if len(s.IndexStates) > 0 {
		fmt.Fprintf(w, "memory index: ok %d, pending %d, skipped %d\n", s.IndexStates[recall.IndexOK], s.IndexStates[recall.IndexPending], s.IndexStates[recall.IndexSkipped])
	}
	if len(s.Spaces) == 0 {
		fmt.Fprintln(w, "vectors:    no vector space (lexical search only)")
	}
	for _, sp := range s.Spaces {
		read := ""
		if sp.Read {
			read = " (read)"
		}
		tooLong := ""
		if sp.TooLong > 0 {
			// JSON keeps the name too_long; the count also holds texts a
			// service or a proxy refused as too large (413, Workers AI's
			// 3006), which no window of the model explains.
			tooLong = fmt.Sprintf(" (%d refused for %s size by the model or its service)", sp.TooLong, agree(sp.TooLong, "its", "their"))
		}
		fmt.Fprintf(w, "space %s%s: %s/%s %d-dim, %s, %d missing%s, coverage %.1f%%\n",
			sp.Name, read, sp.Provider, sp.Model, sp.Dim, plural(sp.Vectors, "vector", "vectors"), sp.Missing, tooLong, 100*sp.Coverage)
	}
	if ls := s.LastSweep; ls != nil {
		fmt.Fprintf(w, "last sweep: %s, %s (%s ago): %d seen, %d changed, %d failed, %d gone\n",
			ls.Finished.UTC().Format(time.RFC3339), ls.Outcome, time.Since(ls.Finished).Round(time.Second),
			ls.FilesSeen, ls.FilesChanged, ls.FilesFailed, ls.FilesRemoved)
	} else {
		fmt.Fprintln(w, "last sweep: never")
	}
	return nil
}

// cmdCheck checks the whole store: on SQLite, PRAGMA integrity_check,
// the full-text index's own check and the store's invariants; on
// PostgreSQL, the invariants (the server checks its own pages). Other
// one-off commands check only the pages they read (openReading).
func (m *Main) cmdCheck(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object, also when the check fails")
	if err := m.parseNone(fs, args, "check [--json]", ""); err != nil {
		return err
	}
	start := time.Now()
	note := ""
	err := func() error {
		st, err := m.openAsIs(ctx)
		if err != nil {
			return err
		}
		if schema := olderSchema(st); schema != "" {
			checked := "SQLite's check only; recall's own invariants are checked once a command that writes has upgraded it"
			if _, pg := st.(*postgres.DB); pg {
				checked = "recall's invariants, which that version keeps too; the next command that writes upgrades it"
			}
			note = "schema " + schema + ", as an older recall wrote it, left so: " + checked
			if upgradeInterrupted(st) {
				note = "schema " + schema + ": the last upgrade was interrupted (a first open or an upgrade stopped part-way), " +
					"and the next command that writes completes it; checked: " + checked
			}
		}
		c, ok := st.(interface{ IntegrityCheck(context.Context) error })
		if !ok {
			return fmt.Errorf("this store cannot be checked")
		}
		return c.IntegrityCheck(ctx)
	}()
	// This command lists the damage, even what Open found: its advice is
	// not to run it.
	err = sqlite.DamageListed(err)
	secs := time.Since(start).Seconds()
	if *asJSON {
		out := struct {
			OK      bool    `json:"ok"`
			Seconds float64 `json:"seconds"`
			Error   string  `json:"error,omitempty"`
			Note    string  `json:"note,omitempty"`
		}{err == nil, secs, "", note}
		if err != nil {
			out.Error = err.Error()
		}
		if jerr := json.NewEncoder(m.Stdout).Encode(out); jerr != nil && err == nil {
			return jerr
		}
		return err
	}
	if err != nil {
		return err
	}
	path, _ := m.dbPath()
	fmt.Fprintf(m.Stdout, "ok: %s checked in %.1f s\n", dbDisplay(path), secs)
	if note != "" {
		fmt.Fprintf(m.Stdout, "note: %s\n", note)
	}
	return nil
}

// exportLine is one source in an export file, or its last line, which
// says how many sources came before it (End): a file cut off between two
// sources (an interrupted `recall export > file`, a partial copy) is told
// from a complete one.
type exportLine struct {
	recall.Source
	Chunks []exportChunk `json:"chunks"`
	End    *exportEnd    `json:"end,omitempty"`
}

type exportEnd struct {
	Sources int `json:"sources"`
}

type exportChunk struct {
	Index   int    `json:"index"`
	Text    string `json:"text"`
	Header  string `json:"header,omitempty"`
	MidWord bool   `json:"mid_word,omitempty"`
}

func (m *Main) cmdExport(ctx context.Context, args []string) (err error) {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	out := fs.String("out", "", "write to `FILE` instead of stdout")
	if err := m.parseNone(fs, args, "export [--out FILE]", "use --out FILE to write to a file"); err != nil {
		return err
	}
	n := 0
	defer m.audit("cli export", time.Now(), &n, &err)
	// The whole file is checked first (export reads all of it anyway): a
	// damaged store is refused before anything is written.
	st, err := m.openExisting(ctx)
	if err != nil {
		return err
	}
	var w io.Writer = m.Stdout
	var f *os.File
	tmp, target := "", *out // a complete export is renamed from tmp to target
	// writeErr is an error of writing the export. One of writing to --out
	// names that file, not the temporary file beside it.
	writeErr := func(err error) error { return err }
	if *out != "" {
		var release func()
		if f, tmp, target, release, err = exportFile(*out); err != nil {
			return err
		}
		if release != nil {
			defer release()
		}
		if tmp != "" {
			defer func() {
				if err != nil {
					os.Remove(tmp)
				}
			}()
		}
		defer f.Close()
		w = f
		writeErr = func(err error) error { return outError(*out, target, err) }
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	err = st.Export(ctx, func(d recall.Document) error {
		line := exportLine{Source: d.Source, Chunks: make([]exportChunk, len(d.Chunks))}
		for i, c := range d.Chunks {
			line.Chunks[i] = exportChunk{Index: c.Index, Text: c.Text, Header: c.Header, MidWord: c.MidWord}
		}
		n++
		if err := enc.Encode(line); err != nil {
			return writeErr(err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := enc.Encode(struct {
		End exportEnd `json:"end"`
	}{exportEnd{Sources: n}}); err != nil {
		return writeErr(err)
	}
	if err := bw.Flush(); err != nil {
		return writeErr(err)
	}
	if f != nil {
		if tmp != "" {
			if err := f.Sync(); err != nil {
				return writeErr(err)
			}
		}
		if err := f.Close(); err != nil {
			return writeErr(err)
		}
		if tmp != "" {
			if err := os.Rename(tmp, target); err != nil {
				return writeErr(err)
			}
		}
		fmt.Fprintf(m.Stderr, "exported %s to %s\n", plural(n, "source", "sources"), *out)
	}
	return nil
}

// outError is an error of writing export --out FILE (out, which may be
// a symbolic link to target) in the user's terms: it names out, not the
// temporary file written beside target, and says what is wrong.
func outError(out, target string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("export: cannot write %s: the directory %s does not exist (create it first)", out, filepath.Dir(target))
	}
	return fmt.Errorf("export: cannot write %s: %w", out, err)
}

// exportFile opens what export --out writes to. A new or regular file is
// written as a temporary file beside it (beside the file a symbolic link
// names), 0600 as memories are their owner's, and renamed over it once
// complete (tmp and target), so a failed export leaves the previous one
// as it was. The temporary file's lock, which release lets go (nil when
// there is none), tells the next export into that folder that an export
// killed while it wrote left the file, to be removed (lockfile.CreateTemp).
// A device or pipe is written directly, and so is a file whose directory
// does not let a temporary file be made beside it.
func exportFile(out string) (f *os.File, tmp, target string, release func(), err error) {
	target = out
	if lfi, err := os.Lstat(out); err == nil && lfi.Mode()&os.ModeSymlink != 0 {
		if r, err := filepath.EvalSymlinks(out); err == nil {
			target = r
		} else if r, err := os.Readlink(out); err == nil { // to a file not made yet
			if !filepath.IsAbs(r) {
				r = filepath.Join(filepath.Dir(out), r)
			}
			target = r
		}
	}
	fi, statErr := os.Stat(target)
	if statErr == nil && !fi.Mode().IsRegular() {
		if f, err = os.OpenFile(target, os.O_WRONLY, 0); err != nil {
			return nil, "", "", nil, outError(out, target, err)
		}
		return f, "", target, nil, nil
	}
	lockfile.RemoveAbandoned(filepath.Dir(target), ".tmp")
	// Exports of recall before 2026-12-03 wrote under the same names
	// without a lock: theirs are removed once a day old, when they begin
	// as an export does, or are empty and were to be this export's file.
	lockfile.RemoveUnlocked(filepath.Dir(target), filepath.Base(target), ".tmp", lockfile.LegacyAge, func(head []byte) bool {
		return bytes.HasPrefix(head, []byte(`{"source":`)) || bytes.HasPrefix(head, []byte(`{"end":`))
	})
	f, release, err = lockfile.CreateTemp(filepath.Dir(target), filepath.Base(target), ".tmp")
	if err == nil {
		return f, f.Name(), target, release, nil
	}
	if statErr != nil || !errors.Is(err, fs.ErrPermission) {
		return nil, "", "", nil, outError(out, target, err)
	}
	f, err = os.OpenFile(target, os.O_WRONLY|os.O_TRUNC, 0)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, "", "", nil, outError(out, target, err)
	}
	return f, "", target, nil, nil
}

func (m *Main) cmdImport(ctx context.Context, args []string) (err error) {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	noEnd := fs.Bool("no-end", false, "accept an export without its end line (one recall made before 2026-12-01)")
	keepNewer := fs.Bool("keep-newer", false, "leave a source alone where the database's copy was written later than the file's, or holds the same")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	pos, err := m.parse(fs, args, "import [--keep-newer] [--no-end] [--json] FILE   (- for stdin)")
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("import takes one export file")
	}
	sum := importSummary{KeepNewer: *keepNewer, Skipped: []skippedSource{}}
	defer m.audit("cli import", time.Now(), &sum.Imported, &err)
	// The file is read twice: checked whole first, so that a bad record
	// anywhere leaves the database as it was; then written.
	f, done, err := openImport(pos[0], m.Stdin)
	if err != nil {
		return err
	}
	defer done()
	// PostgreSQL refuses more than what every store refuses (NUL
	// characters, which SQLite keeps): check what the target will take.
	validate := store.ValidateDocument
	if loc, err := m.dbPath(); err == nil && isPostgres(loc) {
		validate = postgres.ValidateDocument
	}
	seen := map[string]int{}
	err = readExport(f, *noEnd, func(line int, d recall.Document) error {
		if err := validate(&d); err != nil {
			return fmt.Errorf("import: line %d (%s): %w; nothing was imported", line, d.Source.ID, err)
		}
		// Memories and diary days live in namespaces of their own, archive
		// files outside them (as recall writes them): a record whose kind
		// and id disagree would clash with the database only while written.
		if k := recall.IDKind(d.Source.ID); k != d.Source.Kind {
			return recall.Errorf(recall.EINVALID, "import: line %d (%s) is of kind %s, but its id names a source of kind %s; nothing was imported", line, d.Source.ID, d.Source.Kind, k)
		}
		if err := memory.CheckStored(d.Source); err != nil {
			return recall.WrapError(recall.EINVALID, err, "import: line %d (%s): %s; nothing was imported", line, d.Source.ID, recall.ErrorMessage(err))
		}
		if prev, dup := seen[d.Source.ID]; dup {
			return recall.Errorf(recall.EINVALID, "import: lines %d and %d are both source %q; nothing was imported", prev, line, d.Source.ID)
		}
		seen[d.Source.ID] = line
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := m.checkModel(); err != nil {
		return err
	}
	st, err := m.openStore(ctx)
	if err != nil {
		return err
	}
	eng, _, _, err := m.engine(ctx, st, noVectors)
	if err != nil {
		return err
	}
	var batch []recall.Document
	size := 0
	wctx, decided := ctx, map[string]importDecision{}
	if *keepNewer {
		// Decided in the write's transaction, so that a copy another
		// process writes meanwhile is compared, not overwritten.
		wctx = recall.WithWriteGuard(ctx, func(stored *recall.Source, d *recall.Document) bool {
			dec := keepNewerDecision(stored, &d.Source)
			decided[d.Source.ID] = dec
			return dec.skip == ""
		})
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		clear(decided)
		if _, err := eng.Write(wctx, batch, nil); err != nil {
			return err
		}
		for _, d := range batch {
			sum.add(d.Source, decided[d.Source.ID])
		}
		batch, size = batch[:0], 0
		return nil
	}
	read, err := readSpace(ctx, st)
	if err != nil {
		return err
	}
	err = readExport(f, true, func(_ int, d recall.Document) error {
		// Vectors are not exported, so the state a source had says nothing
		// of this database. With a read space it is written pending and
		// the store settles it (ok where every text already has a vector
		// there, else pending for repair); without one a memory or diary
		// day is skipped, as a save without an embedder would leave it,
		// and an archive file ok, as a sweep without one does.
		switch {
		case d.Source.IndexState == "":
		case read != nil:
			d.Source.IndexState = recall.IndexPending
		case d.Source.Kind == recall.KindArchive:
			d.Source.IndexState = recall.IndexOK
		default:
			d.Source.IndexState = recall.IndexSkipped
		}
		batch = append(batch, d)
		for _, c := range d.Chunks {
			size += len(c.Text)
		}
		if len(batch) >= 256 || size >= 16<<20 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		if *keepNewer {
			return fmt.Errorf("import stopped after %s (%d kept as newer, %d unchanged): %w", plural(sum.Imported, "source", "sources"), sum.SkippedNewer, sum.Unchanged, err)
		}
		return fmt.Errorf("import stopped after %s: %w", plural(sum.Imported, "source", "sources"), err)
	}
	if *asJSON {
		return json.NewEncoder(m.Stdout).Encode(sum)
	}
	sum.print(m.Stderr)
	return nil
}

// openImport opens the file import reads, from its start, and done closes
// it. Import reads it twice, so standard input ("-") and a file that
// cannot be read twice (a pipe: /dev/stdin, <(…)) are copied to a
// temporary file first, which done removes. Where an open file can lose
// its name (not on Windows) it loses it at once, so that an import killed
// (kill -9) leaves no copy of the whole export behind: it did, in the
// temporary folder, for good.
func openImport(name string, stdin io.Reader) (f *os.File, done func(), err error) {
	in, what := stdin, "standard input"
	if name != "-" {
		what = name
		if f, err = os.Open(name); err != nil {
			return nil, nil, readError("export file", name, err)
		}
		fi, err := f.Stat()
		switch {
		case err != nil:
			f.Close()
			return nil, nil, err
		case fi.Mode().IsRegular():
			return f, func() { f.Close() }, nil
		case fi.IsDir():
			f.Close()
			return nil, nil, recall.Errorf(recall.EINVALID, "the export file %s is a folder: give the file `recall export` wrote", name)
		}
		defer f.Close()
		in = f
	}
	tmp, err := os.CreateTemp("", "recall-import-*.jsonl")
	if err == nil {
		if runtime.GOOS != "windows" {
			os.Remove(tmp.Name())
		}
		done = func() {
			tmp.Close()
			os.Remove(tmp.Name())
		}
		if _, err = io.Copy(tmp, in); err == nil {
			_, err = tmp.Seek(0, io.SeekStart)
		}
		if err != nil {
			done()
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("import: cannot keep %s in a temporary file to read it twice: %w", what, err)
	}
	return tmp, done, nil
}

// importDecision is what import --keep-newer made of a record of the file:
// written (skip empty), or left as the database holds it, and why.
type importDecision struct {
	skip   string    // "", skipNewer or skipSame
	stored time.Time // with skipNewer, when the stored copy was written
}

const (
	skipNewer = "newer"
	skipSame  = "same"
)

// keepNewerDecision compares the stored copy of a source (nil when the
// database holds none) with the file's. Newer is by UpdatedAt, for every
// kind: the time the copy was last written into a database (a memory
// saved, a diary entry appended, a conversation swept with new content),
// which export and import carry unchanged, so a restored copy keeps its
// age. An archive's MTime would not do: it is its vault file's, shared by
// every conversation of an export, 0 for one sent to /ingest, and -1 while
// a sweep has written only part of an export. A copy whose content hash
// and shown attributes are the file's is the same whatever its age:
// nothing to write (chunks cut to another size stay as this database cut
// them). A tie in time goes to the file, as a plain import does, and a file
// record without a time is older than any stored copy.
//
// A diary day is kept whole rather than merged with the file's: a day
// records no removals, so a union of entries would bring back those a
// newer `diary write --replace` took away; could grow the day past its
// limit; and could not tell two identical entries of one second from one.
// Days are appended to, so a backup's day is the start of the stored one,
// which is what keeping it gives anyway.
func keepNewerDecision(stored, file *recall.Source) importDecision {
	switch {
	case stored == nil:
		return importDecision{}
	case stored.ContentHash != "" && stored.ContentHash == file.ContentHash && stored.Kind == file.Kind &&
		stored.Title == file.Title && stored.Date == file.Date && stored.Category == file.Category:
		return importDecision{skip: skipSame}
	case stored.UpdatedAt.After(file.UpdatedAt):
		return importDecision{skip: skipNewer, stored: stored.UpdatedAt}
	}
	return importDecision{}
}

// importSummary is what an import reports.
type importSummary struct {
	Imported     int             `json:"imported"`      // sources written
	SkippedNewer int             `json:"skipped_newer"` // left alone: the stored copy is newer (--keep-newer)
	Unchanged    int             `json:"unchanged"`     // left alone: the stored copy holds the same (--keep-newer)
	KeepNewer    bool            `json:"keep_newer"`
	Skipped      []skippedSource `json:"skipped"` // the sources counted in SkippedNewer
}

// skippedSource is a source import --keep-newer left as the database
// holds it because its stored copy was written after the file's.
type skippedSource struct {
	Source string      `json:"source"`
	Kind   recall.Kind `json:"kind"`
	Stored time.Time   `json:"stored_updated_at"`
	File   time.Time   `json:"file_updated_at"`
}

func (s *importSummary) add(src recall.Source, dec importDecision) {
	switch dec.skip {
	case skipNewer:
		s.SkippedNewer++
		s.Skipped = append(s.Skipped, skippedSource{Source: src.ID, Kind: src.Kind, Stored: dec.stored, File: src.UpdatedAt})
	case skipSame:
		s.Unchanged++
	default:
		s.Imported++
	}
}

func (s *importSummary) print(w io.Writer) {
	hint := " (vectors are not exported: run `recall repair` to embed them)"
	if s.Imported == 0 {
		hint = ""
	}
	imported := plural(s.Imported, "source", "sources")
	if !s.KeepNewer {
		fmt.Fprintf(w, "imported %s%s\n", imported, hint)
		return
	}
	fmt.Fprintf(w, "imported %s, kept %d whose stored copy is newer, %d unchanged%s\n",
		imported, s.SkippedNewer, s.Unchanged, hint)
	if len(s.Skipped) == 0 {
		return
	}
	fmt.Fprintln(w, "kept as the database holds them (written there after the file's copy):")
	lines := make([]string, len(s.Skipped))
	for i, k := range s.Skipped {
		lines[i] = fmt.Sprintf("%s (%s; stored %s, file %s)", k.Source, k.Kind, when(k.Stored), when(k.File))
	}
	printFirst(w, lines, " (--json lists them all)")
}

// when is a time as the import summary shows it.
func when(t time.Time) string {
	if t.IsZero() {
		return "undated"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// readExport calls fn with each record of an export file as a document,
// with the number of its line.
func readExport(r io.Reader, noEnd bool, fn func(line int, d recall.Document) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	records, end := 0, 0 // end is the end line's number, once read
	for n := 1; ; n++ {
		b, err := br.ReadSlice('\n')
		// A chat app's export is one JSON array, often hundreds of
		// megabytes on one line: told from its first bytes.
		if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '[' {
			what := "a JSON array, not an object"
			if n == 1 {
				what = "a JSON array: a chat app's export, such as ChatGPT's conversations.json? `recall sweep` reads those"
			}
			return notExportLine(n, what)
		}
		if err == bufio.ErrBufferFull {
			b = append([]byte(nil), b...) // ReadSlice reuses its buffer
			for err == bufio.ErrBufferFull {
				var more []byte
				more, err = br.ReadSlice('\n')
				b = append(b, more...)
			}
		}
		if err != nil && err != io.EOF {
			return err
		}
		switch {
		case len(bytes.TrimSpace(b)) == 0:
		case end != 0:
			return recall.Errorf(recall.EINVALID, "import: the export goes on after its end line (line %d); nothing was imported", end)
		default:
			d, endLine, lerr := decodeExportLine(n, b)
			switch {
			case lerr != nil:
				return lerr
			case endLine != nil:
				if endLine.Sources != records {
					return recall.Errorf(recall.EINVALID, "import: the export's end line counts %s, but %d came before it; nothing was imported", plural(endLine.Sources, "source", "sources"), records)
				}
				end = n
			default:
				records++
				if err := fn(n, d); err != nil {
					return err
				}
			}
		}
		if err == io.EOF {
			break
		}
	}
	if end == 0 && !noEnd {
		return recall.Errorf(recall.EINVALID, "import: the export ends after %s without its end line: it was cut off, or made by recall before 2026-12-01 (import that with --no-end); nothing was imported", plural(records, "source", "sources"))
	}
	return nil
}

// importLine is an exportLine as import reads it: its chunks and times
// are decoded one by one, so that an error names the value at fault.
type importLine struct {
	recall.Source
	Chunks    []json.RawMessage `json:"chunks"`
	End       *exportEnd        `json:"end"`
	CreatedAt json.RawMessage   `json:"created_at"`
	UpdatedAt json.RawMessage   `json:"updated_at"`
}

// decodeExportLine decodes line n of an export: a source as a document,
// or the end line (end).
func decodeExportLine(n int, b []byte) (d recall.Document, end *exportEnd, err error) {
	var l importLine
	if err := json.Unmarshal(b, &l); err != nil {
		return d, nil, lineError(n, "", err)
	}
	if l.End != nil {
		return d, l.End, nil
	}
	if l.ID == "" {
		return d, nil, notExportLine(n, `it names no "source"`)
	}
	for _, t := range []struct {
		name string
		raw  json.RawMessage
		to   *time.Time
	}{{"created_at", l.CreatedAt, &l.Source.CreatedAt}, {"updated_at", l.UpdatedAt, &l.Source.UpdatedAt}} {
		if t.raw != nil && json.Unmarshal(t.raw, t.to) != nil {
			return d, nil, recall.Errorf(recall.EINVALID, "import: line %d: %s must be a time such as \"2026-01-02T15:04:05Z\"; nothing was imported", n, t.name)
		}
	}
	d = recall.Document{Source: l.Source, Chunks: make([]recall.Chunk, len(l.Chunks))}
	for i, raw := range l.Chunks {
		var c exportChunk
		if err := json.Unmarshal(raw, &c); err != nil {
			return d, nil, lineError(n, fmt.Sprintf("chunks[%d]", i), err)
		}
		d.Chunks[i] = recall.Chunk{Index: c.Index, Text: c.Text, Header: c.Header, MidWord: c.MidWord, Hash: recall.TextHash(c.Text)}
	}
	d.Source.ChunkCount = len(d.Chunks)
	return d, nil, nil
}

func notExportLine(n int, why string) error {
	return recall.Errorf(recall.EINVALID, "import: line %d is not a recall export line (%s); nothing was imported", n, why)
}

// lineError says what is wrong with line n of an export in the file's
// terms rather than encoding/json's, which names Go types; at is the
// value of the line err came from ("" for the line itself).
func lineError(n int, at string, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return notExportLine(n, fmt.Sprintf("not JSON: %v, at byte %d", syntax, syntax.Offset))
	case errors.As(err, &typ):
		// encoding/json puts the embedded Source's Go name in the path.
		field := strings.TrimPrefix(typ.Field, "Source.")
		switch {
		case at != "" && field != "":
			field = at + "." + field
		case at != "":
			field = at
		case field == "":
			return notExportLine(n, fmt.Sprintf("a JSON %s, not an object", typ.Value))
		}
		return recall.Errorf(recall.EINVALID, "import: line %d: %s must be %s, not %s; nothing was imported", n, field, jsonkind.Want(typ.Type), jsonGot(typ.Value))
	}
	return recall.WrapError(recall.EINVALID, err, "import: line %d is not a valid export line; nothing was imported", n)
}

// jsonGot names a JSON value as encoding/json describes it ("number 1.5").
func jsonGot(v string) string {
	switch v {
	case "array", "object":
		return "an " + v
	case "bool":
		return "true or false"
	case "string", "number":
		return "a " + v
	}
	return strings.TrimPrefix(v, "number ")
}

// audit appends the audit line of a command that exports, imports or
// deletes, when the audit setting (RECALL_AUDIT, or audit in the config
// file) names a log: the same log `recall serve` writes its requests to.
// It runs deferred, with the count and error the command ended with.
func (m *Main) audit(route string, start time.Time, results *int, err *error) {
	path := m.setting("", "audit", "")
	if path == "" {
		return
	}
	f, ferr := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if ferr != nil {
		fmt.Fprintf(m.Stderr, "recall: audit log: %v\n", ferr)
		return
	}
	defer f.Close()
	who := "local"
	if u := m.Getenv("USER"); u != "" {
		who = "local:" + u
	} else if u, err := user.Current(); err == nil {
		who = "local:" + u.Username
	}
	server.LocalEvent(f, who, route, start, *results, *err)
}
