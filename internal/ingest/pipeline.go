package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/chunk"
	"github.com/recall-mcp/recall/internal/convo"
	"github.com/recall-mcp/recall/internal/textindex"
)

// IsExport reports whether a file holds many conversations (a ChatGPT or
// Claude data export); each becomes its own source "<file>/<conversation id>".
// Sweeps stream an export, local and remote alike, and read any other file
// whole.
func IsExport(rel string) bool { return strings.EqualFold(path.Ext(rel), ".json") }

// MaxFileSize bounds a single-conversation file read into memory. Exports
// (.json) are streamed and have no such bound.
const MaxFileSize = 256 << 20

// TooLarge is the failure of a file of size bytes that a sweep would read
// whole and that is over MaxFileSize, or nil. A remote sweep
// (internal/remote) fails such a file alike.
func TooLarge(rel string, size int64) error {
	if IsExport(rel) || size <= MaxFileSize {
		return nil
	}
	return fmt.Errorf("file is %d bytes, over the %d byte limit for a single conversation", size, MaxFileSize)
}

// pipeline runs parse workers, an embedding stage and a single writer.
type pipeline struct {
	opt        Options
	zone       string // ZoneKey(opt.Zone)
	st         recall.Store
	w          Writer
	vault      string
	byFile     map[string][]string
	manifest   map[string]recall.SourceState
	res        *Result
	start      time.Time
	now        func() time.Time
	total      int
	bytesTotal int64

	mu         sync.Mutex // guards res counters and progress
	filesDone  int
	bytesDone  int64
	chunksDone int

	// embedded holds the vector keys this sweep has embedded and not yet
	// committed, so an identical passage under the same header in files
	// still in flight is embedded once; once committed, the store has the
	// vector. Only the
	// embedding stage adds to it, and commit removes from it.
	embMu    sync.Mutex
	embedded map[string]bool

	// down is the embedder's outage (the embedding stage and the writer's
	// revive both call it): after a call fails (its retries spent), texts
	// are left to repair without calling it until down.until, then one
	// call tries it again. Each failure doubles the wait, from
	// firstOutageWait to maxOutageWait; a success ends the outage. Without
	// it a sweep paid every file's retries against an embedder that was
	// down: 1.75 s a file, hours for a large vault, and minutes a file for
	// one that hangs.
	down struct {
		sync.Mutex
		until time.Time
		wait  time.Duration
	}

	// pieces holds a token for each export piece, other than a file's last,
	// on its way from a parse worker to the writer: however many workers
	// there are, a large export has few pieces in memory at a time.
	pieces chan struct{}
}

// parsed is what a worker hands on: a piece of one file (a whole file, or
// a bounded run of an export's conversations), or the file's error.
type parsed struct {
	f       file
	docs    []recall.Document
	final   bool     // the file's last piece (an error is always last)
	stale   []string // (last piece) export conversations no longer in the file
	changed bool     // some content of this piece differs from what is stored
	written int      // chunks of its sources whose text differs (all of them, in a full sweep)
	reread  int      // chunks of its sources read again (file.reread) whose content is as stored
	err     error
	vecs    []recall.Vector
	missing int               // vector keys left without a vector
	reused  []string          // vector keys whose vectors were found stored or on their way
	refused map[string]string // vector keys the model refused as too long, with its reasons (see keepRefusals)
	// cut: the sweep's end (its context) came while the piece was being
	// embedded, which may have left texts without the vectors a finished
	// embedding gives them. A cut piece is never written: its sources are
	// not finished, and stored they would look swept.
	cut bool
}

// inProgress is the mtime recorded on the first conversation of an export
// written in several pieces until its last piece commits: no file has it,
// so the export cannot look unchanged while some of its pieces are missing.
const inProgress = -1

// unsettled is the mtime recorded for a file read within RacyWindow of its
// last change (see Racy): no file has it, so the next sweep reads the
// file again, and records its mtime then.
const unsettled = -2

// RacyWindow is the coarsest mtime a file system in use keeps: FAT's two
// seconds (ext3, HFS+ and many network shares keep whole seconds).
const RacyWindow = 2 * time.Second

// Racy reports whether a file whose mtime is mtime (unix nanoseconds), read
// from the moment read on, may change again without its mtime changing: a
// change within the same tick of the file system's clock keeps the mtime
// it had, and a change of the same size would then look unchanged to every
// later sweep, its text never read. Such a file is recorded as unsettled,
// and read again by the next sweep (once more, at worst, for nothing: what
// reads the same is kept as stored), as git treats "racily clean" files.
func Racy(mtime int64, read time.Time) bool {
	return mtime > read.Add(-RacyWindow).UnixNano()
}

// limits are the bounds of one write transaction and of one piece of an
// export. By default a piece is well under a transaction, so that the pieces
// in flight between the stages hold little however large the export; set
// limits bound both alike.
//
// A transaction's age is bounded at a second: a commit costs a few
// milliseconds besides its rows (under a millisecond for a small write on
// SQLite with synchronous=FULL, about 2 ms on PostgreSQL), which is nothing
// at one a second, while a second of the built-in model's embedding is
// some twenty chunks: what a kill -9 or a crash can lose. The bound binds
// only while the writer waits for work: when commits are what the sweep
// waits for (no embedder), a batch due goes on growing until the commit
// before it ends, as large as before.
func (o Options) limits() (tx, piece BatchLimits) {
	tx, piece = o.Batch, o.Batch
	if o.Batch.Docs <= 0 {
		tx.Docs, piece.Docs = 4096, 256
	}
	if o.Batch.Bytes <= 0 {
		tx.Bytes, piece.Bytes = 8<<20, 2<<20
	}
	if o.Batch.Age <= 0 {
		tx.Age = time.Second
	}
	return tx, piece
}

// stopGrace bounds what a sweep whose context ended still commits: the
// commit in flight, then what it had finished embedding (the batch being
// gathered, a second's work unless commits were what the sweep waited for,
// and at most two pieces of an export, each in a transaction of its own).
// That is milliseconds with an embedder, a few hundred for a full batch of
// 8 MiB on SQLite, seconds on PostgreSQL; what is left when it runs out is
// dropped, as an interruption always dropped it, and the next sweep reads
// those files again. A server waits as long for its sweep to stop.
const stopGrace = 5 * time.Second

func (p *pipeline) run(ctx context.Context, todo []file) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	workers := p.opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	jobs := make(chan file)
	p.pieces = make(chan struct{}, 2)
	parsedc := make(chan *parsed, workers)
	embedded := make(chan *parsed, 2)

	go func() {
		defer close(jobs)
		for _, f := range todo {
			select {
			case jobs <- f:
			case <-ctx.Done():
				return
			}
		}
	}()
	emit := func(pr *parsed) bool {
		select {
		case parsedc <- pr:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range jobs {
				if !p.parseFile(ctx, f, emit) {
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(parsedc) }()
	go func() {
		defer close(embedded)
		for pr := range parsedc {
			if pr.err == nil && !p.opt.DryRun {
				p.embed(ctx, pr)
				pr.cut = p.opt.Space != "" && ctx.Err() != nil
			}
			// Handed on even when the sweep is ending: the writer commits
			// what is finished, and drops what is cut (or, after a
			// failed commit, run drains it).
			embedded <- pr
		}
	}()
	err := p.write(ctx, embedded)
	if err != nil {
		cancel()
		for range embedded { // let the stages drain and exit
		}
		return err
	}
	return ctx.Err()
}

// parseFile reads, parses and chunks one file and hands it on through emit:
// a conversation file in one piece, an export in pieces of a bounded number
// of conversations and chunk bytes, so that memory does not grow with the
// export and each piece commits as soon as it is embedded. It reports false
// when emit could not hand a piece on (the sweep is ending).
//
// Exports are validated in a first streaming pass so that a broken export
// writes nothing: otherwise its valid conversations would be recorded with
// the file's mtime and the broken file skipped as unchanged on the next run.
func (p *pipeline) parseFile(ctx context.Context, f file, emit func(*parsed) bool) bool {
	fail := func(err error) bool { return emit(&parsed{f: f, final: true, err: err}) }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if Racy(f.mtime, time.Now()) {
		f.mtime = unsettled // what document and noConversation record
	}
	fh, err := os.Open(f.path)
	if err != nil {
		return fail(err)
	}
	defer fh.Close()

	var r io.ReadSeeker = fh
	lim := BatchLimits{Docs: math.MaxInt, Bytes: math.MaxInt}
	if !IsExport(f.rel) {
		if err := TooLarge(f.rel, f.size); err != nil {
			return fail(err)
		}
		data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
		if err != nil {
			return fail(err)
		}
		r = bytes.NewReader(data)
	} else {
		if err := convo.Parse(f.rel, fh, p.opt.Zone, func(convo.Conversation) error { return ctx.Err() }); err != nil {
			return fail(err)
		}
		if _, err := fh.Seek(0, io.SeekStart); err != nil {
			return fail(err)
		}
		_, lim = p.opt.limits()
	}

	seen := make(map[string]bool)
	pr, size := &parsed{f: f}, 0
	err = convo.Parse(f.rel, r, p.opt.Zone, func(c convo.Conversation) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		doc, err := p.document(f, c)
		if err != nil {
			return err
		}
		if doc == nil {
			return nil
		}
		if seen[doc.Source.ID] {
			// convo refuses ids that clean to one source id; were one to
			// pass, the store would refuse the batch, every other file in it
			// with this one, on every sweep.
			return recall.Errorf(recall.EINVALID, "two conversations have the one source id %q", doc.Source.ID)
		}
		seen[doc.Source.ID] = true
		old, ok := p.manifest[doc.Source.ID]
		differs := !ok || old.ContentHash != doc.Source.ContentHash
		switch {
		case differs || p.opt.Full:
			pr.written += len(doc.Chunks)
		case f.reread:
			// Read again for a newer reading or another zone, and read as
			// stored: the store keeps its rows and vectors.
			pr.reread += len(doc.Chunks)
		}
		if differs {
			pr.changed = true
			// The full-text index's terms of the new text, made here on a
			// parse worker rather than in the single writer. (An unchanged
			// conversation of an export keeps its rows: the writer never
			// needs them; nor does a dry run.)
			for i := range doc.Chunks {
				if !p.opt.DryRun {
					doc.Chunks[i].IndexText = textindex.IndexText(doc.Chunks[i].Text)
				}
			}
		}
		pr.docs = append(pr.docs, *doc)
		for _, c := range doc.Chunks {
			size += len(c.Text)
		}
		if len(pr.docs) >= lim.Docs || size >= lim.Bytes {
			select {
			case p.pieces <- struct{}{}: // the writer takes it back
			case <-ctx.Done():
				return ctx.Err()
			}
			if !emit(pr) {
				return context.Canceled
			}
			pr, size = &parsed{f: f}, 0
		}
		return nil
	})
	if err != nil {
		// A failure after some pieces went on (the export changed since
		// the first pass) leaves them committed, the file marked in
		// progress: the next sweep reads it again.
		return fail(err)
	}
	if len(seen) == 0 {
		pr.docs = append(pr.docs, p.noConversation(f))
		seen[f.rel] = true
		if old, ok := p.manifest[f.rel]; ok && old.Chunks > 0 {
			pr.changed = true // the conversation it was is gone
		}
	}
	for _, id := range p.byFile[f.rel] {
		if !seen[id] {
			pr.stale = append(pr.stale, id)
			pr.changed = true
		}
	}
	pr.final = true
	return emit(pr)
}

// noConversation is the record of a file that holds no conversation (an
// empty note, an export of "[]", a file of an export's that is none): a
// source without chunks, which the stores show nowhere but in the manifest
// (recall.SourceState.Chunks), so that the next sweep finds the file's
// size, mtime and reading recorded and skips it while it is unchanged. It
// has the file's id, so the file's first conversation replaces it, or for
// a file of several its stale record is deleted with it.
func (p *pipeline) noConversation(f file) recall.Document {
	return recall.Document{Source: recall.Source{
		ID:         f.rel,
		Kind:       recall.KindArchive,
		Vault:      p.vault,
		Size:       f.size,
		MTime:      f.mtime,
		Reading:    ReadingVersion,
		IndexState: recall.IndexOK,
	}}
}

// document turns a parsed conversation into a source with its chunks.
func (p *pipeline) document(f file, c convo.Conversation) (*recall.Document, error) {
	if len(c.Messages) == 0 {
		return nil, nil
	}
	id, err := SourceID(f.rel, c)
	if err != nil {
		return nil, err
	}
	title, date := label(f.rel, c, p.now())
	chunks := chunk.Split(c.Messages, p.opt.Chunk)
	if len(chunks) == 0 {
		return nil, nil
	}
	header := title
	if date != "" {
		header = strings.TrimSpace(title + " (" + date + ")")
	}
	for i := range chunks {
		chunks[i].Header = header
	}
	content := strings.Join(c.Messages, "\n\n")
	zone := ""
	if c.Zoned {
		zone = p.zone
	}
	return &recall.Document{
		Source: recall.Source{
			ID:          id,
			Kind:        recall.KindArchive,
			Vault:       p.vault,
			Title:       title,
			Date:        date,
			ContentHash: recall.TextHash(title + "\x00" + date + "\x00" + content),
			Size:        f.size,
			MTime:       f.mtime,
			ChunkCount:  len(chunks),
			Reading:     ReadingVersion,
			Zone:        zone,
			IndexState:  recall.IndexPending,
		},
		Chunks: chunks,
	}, nil
}

// SourceID is the source id of conversation c of the vault file rel: rel
// for a file that is one conversation, "<rel>/<conversation id>" for a
// conversation of an export (a slash in the id read as "_"). A remote
// sweep (internal/remote) names its sources with it too.
func SourceID(rel string, c convo.Conversation) (string, error) {
	if c.ID == "" {
		return rel, nil
	}
	return recall.CleanSourceID(rel + "/" + strings.ReplaceAll(c.ID, "/", "_"))
}

// Label is the title and date a sweep stores for conversation c of the
// vault file rel: its own title (cleaned, CleanTitle) and date; a file that
// is one conversation and has no title is titled by its name, and a
// conversation without a date is dated by the file's path (DateFromPath).
// A conversation of an export has no name of its own to fall back on: an id
// ("c-2", "2025") is no title, nor a date. A remote sweep labels what it
// sends with it, and /ingest labels a source its client sent no title or
// date for as the file source_file names, so a vault is stored alike
// whichever way it is swept.
func Label(rel string, c convo.Conversation) (title, date string) { return label(rel, c, time.Now()) }

func label(rel string, c convo.Conversation, now time.Time) (title, date string) {
	title = CleanTitle(c.Title)
	if title == "" && c.ID == "" {
		title = strings.TrimSuffix(path.Base(rel), path.Ext(rel))
	}
	date = c.Date
	if date == "" {
		date = dateFromPath(rel, now)
	}
	return title, date
}

var pathDate = regexp.MustCompile(`(?:^|/)((?:19|20)\d\d)(?:[/_-](0[1-9]|1[0-2]))?(?:[/_-](0[1-9]|[12]\d|3[01]))?(?:/|[_\-. ]|$)`)

// DateFromPath reads a date from a vault path such as "2025/07/title.md" or
// "2025-07-14 chat.md": "2025-07", "2025-07-14", or "" when there is none.
// A date that has not begun yet is none: a conversation cannot have taken
// place then, and the number is something else ("2048-game.md").
func DateFromPath(rel string) string { return dateFromPath(rel, time.Now()) }

// dateFromPath is DateFromPath on the day of now. A day's slack lets a file
// named in a time zone already on the next day keep its date.
func dateFromPath(rel string, now time.Time) string {
	m := pathDate.FindStringSubmatch(rel)
	if m == nil {
		return ""
	}
	d := m[1]
	if m[2] != "" {
		d += "-" + m[2]
		if m[3] != "" {
			d += "-" + m[3]
		}
	}
	if lo, _, ok := recall.DateRange(d); !ok || lo > now.AddDate(0, 0, 1).Format(time.DateOnly) {
		return ""
	}
	return d
}

// batch is what one write transaction commits: whole files, or one piece
// of an export.
type batch struct {
	docs    []recall.Document
	vecs    []recall.Vector
	stale   []string
	files   []tally // files this batch completes
	pieces  int
	size    int
	reused  []string          // see parsed.reused and revive
	refused map[string]string // see parsed.refused
	names   []string          // the files it holds pieces of, each once, as the sweep names them
}

// what names the files batch b stores, for an error: "notes/a.md", or
// "notes/a.md and 3 other files".
func (b *batch) what() string {
	switch len(b.names) {
	case 0:
		return "the sweep's changes"
	case 1:
		return b.names[0]
	case 2:
		return b.names[0] + " and 1 other file"
	}
	return fmt.Sprintf("%s and %d other files", b.names[0], len(b.names)-1)
}

// tally is what a file adds to the result once its last piece commits.
type tally struct {
	size    int64
	full    bool // read again though unchanged (--full, or file.reread): counted as changed
	chunks  int  // see parsed.written
	reread  int  // see parsed.reread
	missing int
	changed bool
	// first is the export's conversation written with the inProgress mtime
	// by its first piece; the last piece writes it again with the file's.
	first *recall.Document
}

func (t *tally) add(pr *parsed) {
	t.chunks += pr.written
	t.reread += pr.reread
	t.missing += pr.missing
	t.changed = t.changed || pr.changed
}

// write is the single writer: it batches whole files into transactions,
// and commits each piece of an export that comes in several on its own, so
// that what was embedded survives an interruption. It gathers the next
// batch while the previous one commits, so the parse workers keep going
// during a commit instead of waiting for it; at most two batches are held
// at a time. A batch commits once it reaches the size limits, or once it
// has gathered for the age limit and the commit before it is done.
//
// Commits run on a context of their own, which keeps ctx's values (the
// sweep lock's mark: every commit still checks that the lock is held) but
// not its end. When ctx ends, the commit in flight goes on, and the writer
// goes on taking what the embedding stage hands on until it closes,
// dropping the pieces cut short and committing the rest by the same rules,
// until stopGrace runs out or Options.Hurry closes: then the commit in
// flight is cancelled and nothing more begins.
func (p *pipeline) write(ctx context.Context, in <-chan *parsed) error {
	lim, _ := p.opt.limits()
	cctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
		case <-cctx.Done():
			return
		}
		t := time.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-p.opt.Hurry: // nil: never
		case <-cctx.Done():
		}
		stop()
	}()

	full := make(chan *batch)
	failed := make(chan struct{}) // closed when a commit fails: the sweep ends
	commitErr := make(chan error, 1)
	go func() {
		var err error
		for b := range full {
			if err != nil {
				continue
			}
			if ctx.Err() != nil && p.hurried() {
				stop() // checked here too, so that nothing begins to commit after Hurry
			}
			if err = cctx.Err(); err == nil {
				err = p.commit(cctx, b)
			}
			if err != nil {
				close(failed)
			}
		}
		commitErr <- err
	}()
	send := func(b *batch) bool {
		if b.pieces == 0 {
			return true
		}
		select {
		case full <- b:
			return true
		case <-failed:
			return false
		}
	}

	partial := make(map[string]*tally) // exports some of whose pieces went on
	b := &batch{}
	var due <-chan time.Time // fires once b has gathered for lim.Age
	ready := false           // b is due: it commits as soon as the commit before it is done
gather:
	for {
		var offer chan<- *batch
		if ready {
			offer = full
		}
		select {
		case pr, ok := <-in:
			if !ok {
				break gather
			}
			if !p.gather(b, pr, partial) {
				continue
			}
			// A piece that is not a file's last commits at once: the first
			// conversation it marks is written again by the last piece, which
			// must not share its transaction.
			if !pr.final || len(b.docs) >= lim.Docs || b.size >= lim.Bytes {
				if !send(b) {
					break gather
				}
				b, due, ready = &batch{}, nil, false
			} else if due == nil {
				due = time.After(lim.Age)
			}
		case offer <- b:
			b, due, ready = &batch{}, nil, false
		case <-due:
			ready = true
		case <-failed:
			break gather
		}
	}
	send(b)
	close(full)
	err := <-commitErr
	if err != nil && cctx.Err() != nil {
		return ctx.Err() // the grace ran out: what is left is dropped, as an interruption drops it
	}
	return err
}

// hurried reports whether Options.Hurry is closed.
func (p *pipeline) hurried() bool {
	select {
	case <-p.opt.Hurry:
		return true
	default:
		return false
	}
}

// gather adds what the embedding stage handed on to batch b and reports
// whether it added anything: a file that failed is counted and logged, and
// a piece cut short by the sweep's end is dropped.
func (p *pipeline) gather(b *batch, pr *parsed, partial map[string]*tally) bool {
	if !pr.final {
		<-p.pieces
	}
	if pr.cut {
		return false
	}
	p.progress(pr)
	if pr.err != nil {
		delete(partial, pr.f.rel)
		if errors.Is(pr.err, context.Canceled) {
			return false
		}
		p.mu.Lock()
		p.res.FilesFailed++
		p.mu.Unlock()
		logFailure(p.opt.Failures, pr.f.rel, pr.err)
		return false
	}
	t := partial[pr.f.rel]
	if t == nil {
		t = &tally{size: pr.f.size, full: p.opt.Full || pr.f.reread}
	}
	t.add(pr)
	docs := pr.docs
	switch {
	case !pr.final && t.first == nil:
		partial[pr.f.rel] = t
		first := docs[0]
		first.Chunks = slices.Clone(first.Chunks)
		for i := range first.Chunks {
			first.Chunks[i].IndexText = "" // its rows are written by then
		}
		t.first = &first
		docs[0].Source.MTime = inProgress
	case pr.final && t.first != nil:
		delete(partial, pr.f.rel)
		docs = append(docs, *t.first)
	}
	if pr.final {
		b.files = append(b.files, *t)
	}
	b.pieces++
	if n := len(b.names); n == 0 || b.names[n-1] != pr.f.rel { // a file's pieces come together
		b.names = append(b.names, pr.f.rel)
	}
	b.docs = append(b.docs, docs...)
	b.vecs = append(b.vecs, pr.vecs...)
	b.reused = append(b.reused, pr.reused...)
	b.addRefused(pr.refused)
	b.stale = append(b.stale, pr.stale...)
	for _, d := range pr.docs {
		for _, c := range d.Chunks {
			b.size += len(c.Text)
		}
	}
	return true
}

// commit writes one batch in one transaction and counts the files it
// completes; a dry run only counts them.
func (p *pipeline) commit(ctx context.Context, b *batch) error {
	if !p.opt.DryRun {
		if err := p.store(ctx, b); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range b.stale {
		if p.manifest[id].Chunks > 0 { // not the record of a file that held none
			p.res.ConversationsRemoved++
		}
	}
	for _, t := range b.files {
		// A file that had no conversation and still has none (an empty
		// note, an export "[]") is not a change, though it is read: its
		// first sweep, or one after it changed, records it (noConversation).
		if t.changed || t.full {
			p.res.FilesChanged++
			p.res.ChunksWritten += t.chunks
			p.res.ChunksReread += t.reread
		} else {
			p.res.FilesSkipped++
		}
		p.res.Bytes += t.size
		p.res.VectorsMissing += t.missing
	}
	return nil
}

// store writes batch b, and removes the conversations its exports no
// longer hold, in one transaction: the one that records those exports as
// swept. Removed in a transaction of their own after it, a crash between
// the two left them stored, and searchable, for good when the export's
// sources then looked unchanged to the next sweep (a --full sweep of an
// export rewritten at the same size and mtime).
func (p *pipeline) store(ctx context.Context, b *batch) error {
	p.revive(ctx, b)
	if len(b.docs) > 0 || len(b.vecs) > 0 || len(b.stale) > 0 {
		if _, err := p.w.Write(ctx, b.docs, b.vecs, b.stale...); err != nil {
			// Said in the user's terms: what could not be stored, then why
			// ("write: the database file may not be written" named only
			// the step).
			return fmt.Errorf("storing %s: %w", b.what(), err)
		}
	}
	p.forget(b.vecs)
	p.keepRefusals(ctx, b)
	return nil
}

func (p *pipeline) progress(pr *parsed) {
	if p.opt.Progress == nil {
		return
	}
	p.mu.Lock()
	if pr.final {
		p.filesDone++
		p.bytesDone += pr.f.size
	}
	for _, d := range pr.docs {
		p.chunksDone += len(d.Chunks)
	}
	pg := Progress{
		FilesTotal: p.total,
		FilesDone:  p.filesDone,
		Chunks:     p.chunksDone,
		Bytes:      p.bytesDone,
		BytesTotal: p.bytesTotal,
		Elapsed:    p.now().Sub(p.start),
	}
	p.mu.Unlock()
	p.opt.Progress(pg)
}
