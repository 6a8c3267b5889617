package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/chunk"
	"github.com/recall-mcp/recall/internal/convo"
	"github.com/recall-mcp/recall/internal/ingest"
)

// Options configure a remote sweep.
type Options struct {
	URL      string // server base URL, e.g. http://host:8787
	Token    string // bearer token ("" for a server with none configured)
	Manifest string // path of the local manifest file
	Chunk    chunk.Options
	Zone     *time.Location // the user's time zone for dating conversations (ingest.Options.Zone)
	Full     bool           // send every file, even those the manifest records
	// Prune removes from the server the sources of files the manifest
	// records that are gone from the vault; without it they are only
	// counted (FilesRemoved), as a local sweep keeps their sources.
	Prune bool
	// PruneEmpty lets Prune remove every file of a vault that holds none,
	// which ingest.CheckPrune otherwise refuses.
	PruneEmpty bool

	BatchChunks int           // chunks per request (0: 256)
	BatchBytes  int           // request body bytes (0: 2 MiB; at most MaxBody less a margin)
	Retries     int           // attempts per batch beyond the first (0: 3; -1: none)
	MaxWait     time.Duration // longest pause between attempts (0: 30s)
	HTTPClient  *http.Client  // nil: a client with a 2 minute timeout
	Failures    io.Writer     // one line per failed file or batch (nil: discarded)
	// Rereading, when set, is called once before any file is sent with the
	// number of unchanged files sent again because an older reading sent
	// them (see fileEntry.Reading).
	Rereading func(files int)
	// Redating, when set, is called once before any file is sent with the
	// number of unchanged files read again because their conversations
	// may have been dated in another zone than Zone (see fileEntry.Zone):
	// those whose dates depend on the zone are sent again.
	Redating func(files int)
}

// Result summarises a remote sweep.
type Result struct {
	// The keys of a local sweep's summary (ingest.Result), so scripts read both alike.
	FilesSeen     int     `json:"files_seen"`
	FilesChanged  int     `json:"files_changed"`  // sent, confirmed by the server and recorded in the manifest
	FilesSkipped  int     `json:"files_skipped"`  // recorded with the same content: not sent
	FilesFailed   int     `json:"files_failed"`   // left out of the manifest: sent again next run
	FilesRemoved  int     `json:"files_removed"`  // recorded but no longer in the vault (the server keeps them unless Prune)
	ChunksWritten int     `json:"chunks_written"` // of the sources the server reported written
	Bytes         int64   `json:"bytes"`          // of the files sent
	Seconds       float64 `json:"seconds"`
	// ConversationsRemoved counts conversations that a changed export no
	// longer holds, removed from the server with it, as a local sweep
	// removes them.
	ConversationsRemoved int `json:"conversations_removed,omitempty"`
	// FilesRedated counts the unchanged files sent again to date their
	// conversations in Options.Zone, as ingest.Result's: they count among
	// FilesChanged, or FilesFailed, too.
	FilesRedated int      `json:"files_redated,omitempty"`
	Removed      []string `json:"-"` // the files gone from the vault, sorted
	Links        []string `json:"-"` // symbolic links not followed, as ingest.Result's
	// Remote only.
	Sources        int `json:"sources"`
	Batches        int `json:"batches"`
	BatchesFailed  int `json:"batches_failed"`
	SourcesRemoved int `json:"sources_removed"` // sources the server removed, of gone files and of conversations gone from exports
	// SourcesKept counts the sources of those the server did not remove:
	// it swept them from a folder of its own, or they were stored there
	// again since (Removal.Kept).
	SourcesKept int `json:"sources_kept,omitempty"`
}

// manifest records the files the server has confirmed, by content hash.
type manifest struct {
	Version int                  `json:"version"`
	Server  string               `json:"server"`
	Chunk   chunk.Options        `json:"chunk"`
	Files   map[string]fileEntry `json:"files"`
}

type fileEntry struct {
	Hash  string `json:"hash"` // sha256 of the file's bytes
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime"` // unix nanoseconds: an unchanged size and mtime skip the hashing
	// Sources are the source ids the server confirmed for the file, when
	// they are other than the file's own id alone (an export's
	// conversations), so that those a changed export no longer holds, and
	// those of a file gone, can be removed. An entry written before they
	// were recorded has none and is taken for the file's own id.
	Sources []string `json:"sources,omitempty"`
	// Listed is set on the entry of every file that may hold several
	// conversations (convo.Several): its Sources are recorded. Such an
	// entry without it was written by an older client, which recorded no
	// conversations: at the file's next change the server is asked which
	// sources it holds for the file (SourcesPath), so that conversations
	// the file lost before are removed too.
	Listed bool `json:"listed,omitempty"`
	// Reading is the reading version (ingest.ReadingVersion) the file was
	// sent with: a file sent by an older reading is sent again, though
	// unchanged, as a local sweep reads it again. 0 for an entry written
	// before it was recorded.
	Reading int `json:"reading,omitempty"`
	// Zone is the zone the file's conversations were dated in when the
	// day of a moment written in UTC dated one of them (ingest.ZoneKey of
	// Options.Zone), or "" when none of their dates depends on the zone:
	// a run in another zone reads the file again, though unchanged, and
	// sends it when its dates depend on the zone, so that the server's
	// dates are this zone's, as a local sweep dates again. Nil for an
	// entry written before zones were recorded: the file is read again
	// once, and sent when some date of it depends on the zone.
	Zone *string `json:"zone,omitempty"`
}

// redate reports whether the file of the entry is read again to date it
// in the zone of key: its dates were made in another, or may have been.
func (e fileEntry) redate(key string) bool {
	return e.Zone == nil || (*e.Zone != "" && *e.Zone != key)
}

// sources are the source ids the entry records for the file rel.
func (e fileEntry) sources(rel string) []string {
	if e.Sources == nil {
		return []string{rel}
	}
	return e.Sources
}

// unlisted reports whether the entry of the file rel may leave out
// conversations the server holds for it (see Listed).
func (e fileEntry) unlisted(rel string) bool {
	return e.Sources == nil && !e.Listed && convo.Several(rel)
}

const manifestVersion = 1

func loadManifest(p, server string, co chunk.Options) (*manifest, error) {
	fresh := &manifest{Version: manifestVersion, Server: server, Chunk: co, Files: map[string]fileEntry{}}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fresh, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, recall.WrapError(recall.EINVALID, err, "manifest %s is damaged: delete it to send the whole vault again", p)
	}
	// Another server or other chunking: what it records says nothing about
	// what this server holds.
	if m.Version != manifestVersion || m.Server != server || m.Chunk != co || m.Files == nil {
		return fresh, nil
	}
	return &m, nil
}

// save writes the manifest atomically: a crash leaves the old one or the new one.
func (m *manifest) save(p string) error {
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// dropPartialSaves removes the temporary files of saves of the manifest at
// p that a run killed while saving left behind (save's defer never ran).
// The caller holds the manifest's lock, so none is being written.
func dropPartialSaves(p string) {
	dir, base := filepath.Split(p)
	ents, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return
	}
	for _, e := range ents {
		mid, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok {
			continue
		}
		if mid, ok = strings.CutSuffix(mid, ".tmp"); !ok || mid == "" || strings.Trim(mid, "0123456789") != "" || !e.Type().IsRegular() {
			continue
		}
		os.Remove(filepath.Join(dir, e.Name()))
	}
}

// pending is a file whose chunks are on their way.
type pending struct {
	rel     string
	entry   fileEntry
	waiting map[string]bool // source ids not yet reported complete
	stale   []string        // sources recorded for the file that it no longer gives: removed once it is complete
	// list: the manifest did not record the file's conversations, so the
	// server is asked for the sources it holds for the file once the file
	// is complete (ask); those the file no longer gives are stale too.
	list     bool
	failed   bool
	finished bool
}

// sweeper carries one run's state.
type sweeper struct {
	opt      Options
	man      *manifest
	res      Result
	batch    []IngestChunk
	size     int
	bySource map[string]*pending // source id -> its file
	inBatch  []*pending          // files with chunks in the current batch
	all      []*pending
	// unreachable counts the batches in a row that failed because the
	// server could not be reached at all.
	unreachable int
	// zone is ingest.ZoneKey(opt.Zone); noZone: the server refused the
	// chunks' zone field (it is older than it), so they go without it.
	zone   string
	noZone bool
	// changed: the manifest holds entries not yet saved; saved and
	// saveCost are when it was last saved and what that took (see keep).
	changed  bool
	saved    time.Time
	saveCost time.Duration
}

// keepEvery is the least time between two saves of the manifest during a
// run (keep).
const keepEvery = time.Second

// keep saves the manifest during a run when it has changed, once a
// keepEvery at most, or 20 times what the last save took (a manifest of a
// large vault is megabytes of JSON): the run's end saves it however the run
// ended, but a run that never gets there (kill -9, a crash, the machine
// going down) read, hashed and sent every file the server had confirmed
// again on its next run, a whole first upload. So a run killed loses about
// a second of confirmations, as a local sweep loses about a second of
// commits.
func (s *sweeper) keep() error {
	if !s.changed || time.Since(s.saved) < max(keepEvery, 20*s.saveCost) {
		return nil
	}
	start := time.Now()
	if err := s.man.save(s.opt.Manifest); err != nil {
		return fmt.Errorf("save manifest: %w", err)
	}
	s.saved, s.saveCost, s.changed = time.Now(), time.Since(start), false
	return nil
}

// maxUnreachable is how many batches in a row may fail to reach the
// server before the run stops: a server that is down, or a wrong port,
// once cost every batch its retries, an hour for a large vault.
const maxUnreachable = 3

// Sweep sends the new and changed conversation files under root to the
// server. A file is recorded in the manifest only when every chunk of every
// conversation in it was accepted and the server reported each of its
// sources complete; anything else is logged and sent again next run.
func Sweep(ctx context.Context, root string, opt Options) (Result, error) {
	start := time.Now()
	if opt.URL == "" {
		return Result{}, recall.Errorf(recall.EINVALID, "no server URL")
	}
	opt.URL = strings.TrimRight(opt.URL, "/")
	if err := opt.Chunk.Validate(); err != nil {
		return Result{}, err
	}
	if opt.BatchChunks <= 0 {
		opt.BatchChunks = 256
	}
	if opt.BatchBytes <= 0 {
		opt.BatchBytes = 2 << 20
	}
	opt.BatchBytes = min(opt.BatchBytes, maxBatchBytes)
	if opt.Retries == 0 {
		opt.Retries = 3
	}
	if opt.MaxWait <= 0 {
		opt.MaxWait = 30 * time.Second
	}
	if opt.HTTPClient == nil {
		opt.HTTPClient = &http.Client{Timeout: 2 * time.Minute}
	}
	if opt.Failures == nil {
		opt.Failures = io.Discard
	}
	vault, err := ingest.VaultPath(root)
	if err != nil {
		return Result{}, err
	}
	unlock, err := lockManifest(opt.Manifest)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	dropPartialSaves(opt.Manifest)
	man, err := loadManifest(opt.Manifest, opt.URL, opt.Chunk)
	if err != nil {
		return Result{}, err
	}
	// The local sweep's walk, so that what one fails the other does: a
	// file or folder that cannot be read, a name that makes no source id,
	// files that are one source.
	files, failures, links, err := ingest.Walk(ctx, vault)
	if err != nil {
		return Result{}, err // ingest.Walk names the vault
	}
	s := &sweeper{opt: opt, man: man, bySource: map[string]*pending{}, zone: ingest.ZoneKey(opt.Zone)}
	s.res.FilesSeen = len(files) + len(failures)
	s.res.FilesFailed = len(failures)
	s.res.Links = links
	present := map[string]bool{}
	for _, f := range files {
		present[f.ID] = true
	}
	// A file that failed the walk may still be there, and so may every
	// file of a folder that could not be read: their entries are kept, as
	// a local sweep keeps their sources.
	unread := map[string]bool{}
	for _, f := range failures {
		ingest.LogFailure(opt.Failures, f.Name, ingest.FailureReason(f.Name, f.Err))
		if f.ID != "" {
			unread[f.ID] = true
		}
	}
	// A file gone stays in the manifest until the server confirms its
	// removal (--prune), so a later run with --prune still knows it.
	for rel := range man.Files {
		if !present[rel] && !ingest.UnderAny(rel, unread) {
			s.res.Removed = append(s.res.Removed, rel)
		}
	}
	sort.Strings(s.res.Removed)
	s.res.FilesRemoved = len(s.res.Removed)
	if opt.Prune {
		if err := ingest.CheckPrune(vault, len(files)+len(failures), s.res.FilesRemoved, opt.PruneEmpty); err != nil {
			return s.res, err
		}
	}

	if !opt.Full {
		reread, redate := 0, 0
		for _, f := range files {
			old, ok := man.Files[f.ID]
			switch {
			case !ok || old.Size != f.Size || old.MTime != f.MTime:
			case old.Reading < ingest.ReadingVersion:
				reread++
			case old.redate(s.zone):
				redate++
			}
		}
		if reread > 0 && opt.Rereading != nil {
			opt.Rereading(reread)
		}
		if redate > 0 && opt.Redating != nil {
			opt.Redating(redate)
		}
	}
	runErr := s.run(ctx, files)
	if runErr == nil {
		runErr = s.remove(ctx, present)
	}
	// Whatever happened, keep what the server confirmed.
	if err := man.save(opt.Manifest); err != nil && runErr == nil {
		runErr = fmt.Errorf("save manifest: %w", err)
	}
	s.res.Seconds = time.Since(start).Seconds()
	return s.res, runErr
}

func (s *sweeper) run(ctx context.Context, files []ingest.VaultFile) error {
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.file(ctx, f); err != nil {
			return err
		}
		if err := s.keep(); err != nil {
			return err
		}
	}
	if err := s.flush(ctx); err != nil {
		return err
	}
	// Every chunk went out and was accepted, yet a source was not reported
	// complete: chunks were lost on the way (the server's staging expired or
	// it restarted). The file is sent again next run.
	for _, p := range s.all {
		if !p.finished && !p.failed {
			s.failPending(p, fmt.Errorf("the server did not report %s complete", firstKey(p.waiting)))
		}
	}
	return nil
}

func firstKey(m map[string]bool) string {
	first := ""
	for k := range m {
		if first == "" || k < first {
			first = k
		}
	}
	return first
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// complete settles a file whose sources the server all confirmed: it is
// recorded now, or, when it gave sources it no longer gives, once the
// server confirms their removal (remove).
func (s *sweeper) complete(p *pending) {
	p.finished = true
	if len(p.stale) == 0 && !p.list {
		s.record(p)
	}
}

func (s *sweeper) record(p *pending) {
	s.man.Files[p.rel] = p.entry
	s.changed = true
	s.res.FilesChanged++
	s.res.Bytes += p.entry.Size
}

// file sends one new or changed file's conversations. An export is
// streamed, as a local sweep streams it: hashed, read once to name its
// sources, then read again with each conversation's chunks going into the
// batch as they are made, so that memory holds a batch and a conversation,
// not the export. Any other file is read whole, within the local sweep's
// limit (ingest.MaxFileSize).
func (s *sweeper) file(ctx context.Context, f ingest.VaultFile) error {
	old, recorded := s.man.Files[f.ID]
	// An older reading sent the file: it is read and sent again, and the
	// server keeps what reads the same (its chunks, their vectors).
	current := recorded && old.Reading >= ingest.ReadingVersion
	// dated: its dates were made in this zone, or depend on none. One not
	// dated is read again, and sent when some date depends on the zone.
	dated := recorded && !old.redate(s.zone)
	if !s.opt.Full && current && dated && old.Size == f.Size && old.MTime == f.MTime {
		s.res.FilesSkipped++
		return nil
	}
	if err := ingest.TooLarge(f.ID, f.Size); err != nil {
		s.fail(f.ID, err)
		return nil
	}
	mtime := f.MTime
	if ingest.Racy(mtime, time.Now()) {
		// It may change again within its mtime's tick: the entry records
		// no file's mtime, so the next run hashes the file again
		// (ingest.Racy).
		mtime = -1
	}
	fh, err := os.Open(f.Path)
	if err != nil {
		s.fail(f.ID, err)
		return nil
	}
	defer fh.Close()
	sum, each, err := conversations(ctx, f.ID, fh, s.opt.Zone)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.fail(f.ID, err)
		return nil
	}
	entry := fileEntry{Hash: sum, Size: f.Size, MTime: mtime, Reading: ingest.ReadingVersion}
	same := !s.opt.Full && current && old.Hash == entry.Hash
	if same && dated {
		entry.Sources, entry.Listed, entry.Zone = old.Sources, old.Listed, old.Zone
		s.man.Files[f.ID] = entry
		s.changed = true
		s.res.FilesSkipped++
		return nil
	}

	// Every source of the file is named before any is sent, so that a
	// broken export sends nothing (as a local sweep writes nothing of it)
	// and the file completes only once the server confirmed all of them.
	p := &pending{rel: f.ID, entry: entry, waiting: map[string]bool{}}
	zoned := false // a conversation's date depends on the zone (convo.Conversation.Zoned)
	err = each(func(c convo.Conversation) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		id, err := sourceID(f.ID, c)
		if err != nil || id == "" {
			return err
		}
		zoned = zoned || c.Zoned
		if p.waiting[id] {
			// Two conversations of the file are one source (ids that differ
			// only in Unicode normalisation): sending both would keep one.
			return fmt.Errorf("two conversations of the file are the source %s (their ids differ only in Unicode normalisation)", id)
		}
		p.waiting[id] = true
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.fail(f.ID, err)
		return nil
	}
	zone := ""
	if zoned {
		zone = s.zone
	}
	p.entry.Zone = &zone
	if same {
		if !zoned {
			// Read again for its zone alone, and no date of it depends on
			// one: the server's dates stand.
			entry.Sources, entry.Listed, entry.Zone = old.Sources, old.Listed, &zone
			s.man.Files[f.ID] = entry
			s.changed = true
			s.res.FilesSkipped++
			return nil
		}
		s.res.FilesRedated++
	}
	ids := sortedKeys(p.waiting)
	if len(ids) != 1 || ids[0] != f.ID {
		p.entry.Sources = ids
	}
	p.entry.Listed = convo.Several(f.ID)
	if recorded {
		for _, id := range old.sources(f.ID) {
			if !p.waiting[id] {
				p.stale = append(p.stale, id)
			}
		}
		p.list = old.unlisted(f.ID)
	}
	if len(ids) == 0 {
		// Nothing to send: done once what it gave before is removed.
		s.all = append(s.all, p)
		s.complete(p)
		return nil
	}
	for _, id := range ids {
		if prev := s.bySource[id]; prev != nil && !prev.finished {
			// Two files claim one source id: the later one waits for a run of its own.
			s.fail(f.ID, fmt.Errorf("source %s is also sent for %s", id, prev.rel))
			return nil
		}
	}
	s.all = append(s.all, p)
	named := make(map[string]bool, len(ids))
	for _, id := range ids {
		s.bySource[id] = p
		named[id] = true
	}

	var sendErr error
	err = each(func(c convo.Conversation) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		src, err := s.chunks(f.ID, c)
		if err != nil || len(src) == 0 {
			return err
		}
		if !named[src[0].SourceFile] {
			return errChanged
		}
		if sendErr = s.add(ctx, p, src); sendErr != nil {
			return sendErr
		}
		if p.failed {
			return errStop // it is sent whole next run: the rest would only wait on the server
		}
		return nil
	})
	switch {
	case sendErr != nil:
		return sendErr
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil && !errors.Is(err, errStop):
		// What was sent of it stays on the server; the file is sent again
		// next run.
		s.failPending(p, err)
	}
	return nil
}

// errStop ends the reading of a file that failed on its way to the server.
var errStop = errors.New("stop")

// errChanged fails a file whose bytes changed between its readings: what
// was read is not the file the manifest would record.
var errChanged = errors.New("the file changed while it was read: it is sent again next run")

// conversations hashes the file fh (the source rel) and gives each, which
// calls fn with every conversation in it, in order. An export is read from
// disk on every call, its bytes checked against the hash; any other file is
// read and parsed once, within ingest.MaxFileSize.
func conversations(ctx context.Context, rel string, fh *os.File, zone *time.Location) (sum string, each func(fn func(convo.Conversation) error) error, err error) {
	if ingest.IsExport(rel) {
		h := sha256.New()
		if _, err := io.Copy(h, fh); err != nil {
			return "", nil, err
		}
		sum = hex.EncodeToString(h.Sum(nil))
		return sum, func(fn func(convo.Conversation) error) error {
			if _, err := fh.Seek(0, io.SeekStart); err != nil {
				return err
			}
			h := sha256.New()
			if err := convo.Parse(rel, io.TeeReader(fh, h), zone, fn); err != nil {
				return err
			}
			if _, err := io.Copy(h, fh); err != nil {
				return err
			}
			if hex.EncodeToString(h.Sum(nil)) != sum {
				return errChanged
			}
			return nil
		}, nil
	}
	data, err := io.ReadAll(io.LimitReader(fh, ingest.MaxFileSize+1))
	if err == nil {
		err = ingest.TooLarge(rel, int64(len(data)))
	}
	if err != nil {
		return "", nil, err
	}
	h := sha256.Sum256(data)
	var convs []convo.Conversation
	if err := convo.Parse(rel, bytes.NewReader(data), zone, func(c convo.Conversation) error {
		convs = append(convs, c)
		return ctx.Err()
	}); err != nil {
		return "", nil, err
	}
	return hex.EncodeToString(h[:]), func(fn func(convo.Conversation) error) error {
		for _, c := range convs {
			if err := fn(c); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// sourceID is the source id of conversation c of the file rel, or "" when
// it makes no source (it holds no text).
func sourceID(rel string, c convo.Conversation) (string, error) {
	if len(c.Messages) == 0 || chunk.Empty(c.Messages) {
		return "", nil
	}
	return ingest.SourceID(rel, c)
}

// chunks turns one conversation into the chunks of its source, named,
// titled and dated as a local sweep does it (ingest.SourceID, ingest.Label).
func (s *sweeper) chunks(rel string, c convo.Conversation) ([]IngestChunk, error) {
	id, err := sourceID(rel, c)
	if err != nil || id == "" {
		return nil, err
	}
	title, date := ingest.Label(rel, c)
	zone := ""
	if c.Zoned {
		zone = s.zone
	}
	cs := chunk.Split(c.Messages, s.opt.Chunk)
	texts := make([]string, len(cs))
	for i, ch := range cs {
		texts[i] = ch.Text
	}
	version := sourceVersion(title, date, texts)
	out := make([]IngestChunk, len(cs))
	for i, t := range texts {
		// Both sent even when empty: the server labels a source whose
		// chunks give none as the file their path names, and a
		// conversation of an export is none.
		out[i] = IngestChunk{SourceFile: id, ChunkIndex: i, TotalChunks: len(cs), Content: t, Era: &date, ConversationTitle: &title, Version: version, Zone: &zone}
	}
	return out, nil
}

// sourceVersion is the version sent with a source's chunks: a hash of
// everything the server stores of it. The server assembles a source only
// from chunks of one version, so chunks of this text that an earlier run
// left waiting (its answer lost, or another batch refused) complete it
// correctly, and chunks of an older text are dropped, never mixed in.
func sourceVersion(title, date string, texts []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%q\x00%q", len(texts), title, date)
	for _, t := range texts {
		fmt.Fprintf(h, "\x00%d:%s", len(t), t)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// add puts a source's chunks in the batch. A source starts a new batch when
// it would not fit in the current one, so it spans requests only when it is
// larger than a whole batch. Batches are bounded by the bytes of the body
// sent, each chunk measured as it is encoded, its path and title included.
func (s *sweeper) add(ctx context.Context, p *pending, src []IngestChunk) error {
	sizes := make([]int, len(src))
	n := 0
	for i, c := range src {
		b, err := encode(c)
		if err != nil {
			return err
		}
		sizes[i] = len(b) + 1 // and its comma
		if envelope+sizes[i] > maxBatchBytes {
			// It can never be sent: the server would answer 413 on every run.
			s.failPending(p, fmt.Errorf("chunk %d of %s is %d bytes as JSON, more than a request to the server may hold (%d): sweep with a smaller --chunk-size",
				c.ChunkIndex, c.SourceFile, sizes[i], maxBatchBytes-envelope))
			return nil
		}
		n += sizes[i]
	}
	if len(s.batch) > 0 && (len(s.batch)+len(src) > s.opt.BatchChunks || envelope+s.size+n > s.opt.BatchBytes) {
		if err := s.flush(ctx); err != nil {
			return err
		}
	}
	s.res.Sources++
	for i, c := range src {
		if len(s.batch) > 0 && (len(s.batch) >= s.opt.BatchChunks || envelope+s.size+sizes[i] > s.opt.BatchBytes) {
			if err := s.flush(ctx); err != nil {
				return err
			}
		}
		if p.failed {
			return nil // it is sent whole next run: the rest would only wait on the server
		}
		s.batch = append(s.batch, c)
		s.size += sizes[i]
		if len(s.inBatch) == 0 || s.inBatch[len(s.inBatch)-1] != p {
			s.inBatch = append(s.inBatch, p)
		}
	}
	return nil
}

// Request bodies stay under the server's limit with room to spare (a
// server may run with a lower one than MaxBody; it says so with a 413).
// envelope is what a body holds besides its chunks: {"chunks":[...]}.
const (
	maxBatchBytes = MaxBody - 64<<10
	envelope      = len(`{"chunks":[]}`)
)

// encode is v as a request carries it: JSON without encoding/json's
// escaping of <, > and & (six bytes each), which a JSON decoder does not
// need and which made markup-heavy text several times its own size.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// flush posts the batch and settles the files it completes or fails.
func (s *sweeper) flush(ctx context.Context) error {
	if len(s.batch) == 0 {
		return nil
	}
	var batch []IngestChunk
	for _, c := range s.batch {
		// A source the server already completed, from chunks of this
		// version an earlier run left waiting, needs no more of them; nor
		// does a file already failed, which is sent whole next run.
		if p := s.bySource[c.SourceFile]; p != nil && !p.failed && p.waiting[c.SourceFile] {
			batch = append(batch, c)
		}
	}
	files := s.inBatch
	s.batch, s.inBatch, s.size = nil, nil, 0
	if len(batch) == 0 {
		return nil
	}
	s.res.Batches++
	if s.noZone {
		withoutZones(batch)
	}
	var resp IngestResponse
	err := s.post(ctx, "/ingest", IngestRequest{Chunks: batch}, &resp)
	var refused zoneRefused
	if errors.As(err, &refused) && !s.noZone {
		// A server older than the zone field records none, as before; the
		// manifest still records the zone, so a run in another zone still
		// sends what it dates again.
		s.noZone = true
		withoutZones(batch)
		err = s.post(ctx, "/ingest", IngestRequest{Chunks: batch}, &resp)
	}
	if err == nil && len(resp.Sources) == 0 {
		err = errors.New("the server answered with no source statuses")
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var fatal fatalError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		s.res.BatchesFailed++
		names := make([]string, 0, len(files))
		for _, p := range files {
			names = append(names, p.rel)
			s.failPending(p, nil)
		}
		ingest.LogFailure(s.opt.Failures, "batch", fmt.Sprintf("%d chunks of %s: %v", len(batch), strings.Join(names, ", "), err))
		var down unreachableError
		if !errors.As(err, &down) {
			s.unreachable = 0
			return nil
		}
		if s.unreachable++; s.unreachable >= maxUnreachable {
			return recall.WrapError(recall.EUNAVAILABLE, err, "the server at %s cannot be reached (%v): stopped after %d requests in a row failed; what it confirmed is recorded, and the next run sends the rest",
				s.opt.URL, down.err, s.unreachable)
		}
		return nil
	}
	s.unreachable = 0
	for _, st := range resp.Sources {
		p := s.bySource[st.SourceFile]
		if p == nil || p.failed {
			continue
		}
		switch {
		case st.Complete():
			delete(p.waiting, st.SourceFile)
			if st.Status == StatusWritten { // not unchanged: chunks_written counts what the server wrote
				s.res.ChunksWritten += st.TotalChunks
			}
		case st.Status == StatusRejected:
			s.failPending(p, fmt.Errorf("the server rejected %s: %s", st.SourceFile, st.Error))
		}
		if len(p.waiting) == 0 && !p.finished {
			s.complete(p)
		}
	}
	return nil
}

// withoutZones leaves the zone out of the chunks, for a server that refuses it.
func withoutZones(batch []IngestChunk) {
	for i := range batch {
		batch[i].Zone = nil
	}
}

func (s *sweeper) failPending(p *pending, err error) {
	if p.failed || p.finished {
		return
	}
	p.failed = true
	s.res.FilesFailed++
	if err != nil {
		ingest.LogFailure(s.opt.Failures, p.rel, ingest.FailureReason(p.rel, err))
	}
}

func (s *sweeper) fail(rel string, err error) {
	s.res.FilesFailed++
	ingest.LogFailure(s.opt.Failures, rel, ingest.FailureReason(rel, err))
}

// fatalError stops the run: retrying cannot help (wrong token, wrong URL).
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }
