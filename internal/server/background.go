package server

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/repair"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store"
)

// background loads the vector index and repairs missing vectors after the
// server is already answering, so start-up never waits for either. Until
// the index is loaded, searches run on full text and say so.

// RepairState is the background repair's progress, shown in stats.
type RepairState struct {
	State     string `json:"state"` // off (no embedder), waiting (not run yet), running, idle (nothing missing), retrying (after an error), stopped (the store refuses writes)
	Space     string `json:"space,omitempty"`
	Embedded  int    `json:"embedded"` // chunk texts embedded since start-up
	Missing   int    `json:"missing"`  // chunk texts without a vector after the last page
	LastError string `json:"last_error,omitempty"`
	LastRun   string `json:"last_run,omitempty"` // RFC 3339, UTC
	// TooLong counts the chunk texts refused for their size, as too long
	// for the model or too large for its service (SpaceStats.TooLong):
	// left without a vector (searchable by their words), and, recorded in
	// the store, sent to that model again by no process (a new model
	// tries them; `recall repair --retry-refused` and repair_archive's
	// retry_refused send them again);
	// TooLongReason is the provider's word for one of them.
	TooLong       int    `json:"too_long,omitempty"`
	TooLongReason string `json:"too_long_reason,omitempty"`
}

// fileChecker is a store that checks its file after opening (SQLite's
// CheckInBackground): FileChecked waits for the outcome.
type fileChecker interface {
	FileChecked(ctx context.Context) error
}

type background struct {
	eng *search.Engine
	st  recall.Store
	m   *metrics
	log logger
	now func() time.Time

	followEvery time.Duration // between looks for other processes' writes (0: 2s; < 0: never)

	vaults     []string      // swept by the server itself (Options.Vaults)
	sweepEvery time.Duration // between sweeps (0: once)
	sweepLog   io.Writer
	zone       *time.Location  // sweeps date conversations in it (Options.Zone)
	hurry      <-chan struct{} // closed at Server.Hurry: a stopping sweep commits nothing more
	// busy is, by vault, why its last rounds were skipped (another
	// process sweeping it), so that a skip is logged once, not each round.
	// Only sweepLoop's goroutine uses it.
	busy map[string]string
	// reread is, by vault, the files its last round read again for an
	// older reading (ingest.Options.Rereading), so that a round says so
	// only when some file is new to it: a file that fails on its re-read
	// keeps its older source and is read again every round, which said
	// so every round. redated is the same for the files read again to date
	// them in the zone (ingest.Options.Redating). Only sweepLoop's
	// goroutine uses them.
	reread, redated noted

	loadRetry   time.Duration // first wait before loading the index again after a failure (doubling to 5 min)
	repairRetry time.Duration // first wait before repairing again after a failed run (doubling to 5 min)
	// stoppedRetry is how often repair stopped by a store that refuses its
	// writes tries one text again (1 h).
	stoppedRetry time.Duration

	page  int           // texts per background page
	pause time.Duration // between pages, so foreground writes and searches get their turn
	idle  time.Duration // between checks once nothing is missing

	wg sync.WaitGroup // run and the goroutines it starts

	sem  chan struct{} // one repair at a time, background or admin
	wake chan struct{}

	// switched, when set, is told the new write target after the server
	// followed a switch of the read space (the memory service's SetSpace).
	switched func(emb recall.Embedder, space string, dim int)

	mu    sync.Mutex
	idx   string // loading, ready, failed
	rep   RepairState
	emb   recall.Embedder // repair and server sweeps write vectors with emb into space
	space string
	// moved ends when followSwitch moves the target (emb, space) to
	// another space, and is then made anew: it ends what works for the
	// old target (onTarget), a repair run for it, background or admin,
	// and the background repair's wait after a run, or for a target when
	// the server has none.
	moved    context.Context
	endMoved context.CancelFunc
}

// errTargetMoved is the cause of a context onTarget made when the target
// moved to another space.
var errTargetMoved = errors.New("the read space moved to another space")

// target returns the embedder and space repair and the server's sweeps
// write vectors with and into.
func (b *background) target() (recall.Embedder, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.emb, b.space
}

// followSwitch moves the server's writes to the read space Follow switched
// to, with its model: what the server saves, sweeps and repairs from then
// on is searchable there (and no longer needs the old space, which may be
// dropped next). A server that had no target (started without a model)
// has one from then on, and its background repair starts.
func (b *background) followSwitch() {
	emb, space, dim := b.eng.QueryEmbedder()
	if emb == nil || space == "" {
		return
	}
	b.mu.Lock()
	b.emb, b.space = emb, space
	b.rep.Space = space
	b.rep.TooLong, b.rep.TooLongReason = 0, ""
	if b.rep.State == "off" {
		b.rep.State = "waiting"
	}
	end := b.endMoved
	b.moved, b.endMoved = context.WithCancel(context.Background())
	b.mu.Unlock()
	if b.switched != nil {
		b.switched(emb, space, dim)
	}
	// The new space's missing vectors are repaired now: not after a
	// backoff from the old model's failures (up to 5 min), nor after a
	// call to it that may not answer for minutes, nor after an admin's
	// repair of the old space (which holds the one repair slot) has done
	// its max_texts.
	end()
}

// onTarget returns the target (nil and "" when the server has none) and a
// context that ends with ctx, or with errTargetMoved as its cause when
// followSwitch moves the target to another space; stop releases it.
func (b *background) onTarget(ctx context.Context) (tctx context.Context, stop func(), emb recall.Embedder, space string) {
	b.mu.Lock()
	emb, space, moved := b.emb, b.space, b.moved
	b.mu.Unlock()
	tctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(moved, func() { cancel(errTargetMoved) })
	return tctx, func() { unhook(); cancel(nil) }, emb, space
}

// logger is the part of slog.Logger background work uses.
type logger interface {
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

func newBackground(eng *search.Engine, st recall.Store, emb recall.Embedder, space string, m *metrics, log logger, now func() time.Time, page int, pause time.Duration) *background {
	if page <= 0 {
		page = 256
	}
	if pause <= 0 {
		pause = 250 * time.Millisecond
	}
	b := &background{eng: eng, st: st, emb: emb, space: space, m: m, log: log, now: now, page: page, pause: pause,
		idle: 5 * time.Minute, loadRetry: 5 * time.Second, repairRetry: 5 * time.Second, stoppedRetry: time.Hour, sem: make(chan struct{}, 1), wake: make(chan struct{}, 1), idx: "loading",
		rep: RepairState{State: "waiting", Space: space}}
	b.moved, b.endMoved = context.WithCancel(context.Background())
	if emb == nil || space == "" {
		b.rep = RepairState{State: "off"}
	}
	return b
}

func (b *background) index() IndexOutput {
	b.mu.Lock()
	state := b.idx
	b.mu.Unlock()
	out := IndexOutput{State: state}
	if state == "ready" {
		out.Space, out.Vectors = b.eng.ReadSpace()
	}
	return out
}

func (b *background) repairState() RepairState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rep
}

// nudge asks the repair loop to look for missing vectors now (new chunks
// arrived through /ingest).
func (b *background) nudge() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// loadIndex loads the engine's indexes and says how it went, in the log
// and the index state.
func (b *background) loadIndex(ctx context.Context, start time.Time) bool {
	if err := b.eng.LoadIndex(ctx); err != nil {
		if ctx.Err() == nil {
			b.log.Error("load vector index", "err", err)
			b.setIndex("failed")
		}
		return false
	}
	space, n := b.eng.ReadSpace()
	b.log.Info("vector index loaded", "space", space, "vectors", n, "ms", b.now().Sub(start).Milliseconds())
	b.setIndex("ready")
	return true
}

// run loads the index, then repairs page by page until ctx ends.
func (b *background) run(ctx context.Context) {
	start := b.now()
	if c, ok := b.st.(fileChecker); ok {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if err := c.FileChecked(ctx); err != nil && ctx.Err() == nil {
				// Damage holds every write (the error says so); reads of
				// what is intact go on.
				b.log.Error("database check", "err", err)
			}
		}()
	}
	if !b.loadIndex(ctx, start) {
		if ctx.Err() != nil {
			return
		}
		// A load that failed (a dropped connection, an I/O error) is tried
		// again, while sweeps and repair go on: until it succeeds,
		// searches use the store's full text and nothing follows other
		// processes' writes.
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for wait := b.loadRetry; ; wait = min(2*wait, 5*time.Minute) {
				if !sleepCtx(ctx, wait) || b.loadIndex(ctx, start) || ctx.Err() != nil {
					return
				}
			}
		}()
	}
	b.wg.Add(1)
	go func() { defer b.wg.Done(); b.follow(ctx) }()
	if len(b.vaults) > 0 {
		b.wg.Add(1)
		go func() { defer b.wg.Done(); b.sweepLoop(ctx) }()
	}
	var backoff time.Duration
	stopped := false // the store refused repair's writes (see below)
	for {
		// A round (a run and the wait after it) ends early when the
		// target moves to another space.
		rctx, done, emb, space := b.onTarget(ctx)
		if emb == nil || space == "" {
			// No model to repair with until another process makes a
			// read space this server can load one for (followSwitch).
			<-rctx.Done()
			done()
			if ctx.Err() != nil {
				return
			}
			continue
		}
		page := b.page
		if stopped {
			page = 1 // one text tells whether the store takes writes again
		}
		p, err := b.repairWith(rctx, emb, space, repair.Options{Limit: page})
		wait := b.pause
		switch {
		case ctx.Err() != nil:
			done()
			return
		case rctx.Err() != nil:
			// The target moved during the run, which was stopped, not
			// failed: the wait below ends at once (rctx is done).
		case recall.ErrorCode(err) == recall.EFORBIDDEN:
			// The store refuses this server's writes (a PostgreSQL role
			// granted only SELECT): a run would embed a page for nothing
			// and fail alike until the role is granted writes, so repair
			// stops, saying so once, and tries one text every
			// stoppedRetry, quietly, to find out when it may go on.
			// (Admin repair still runs when asked.) repairWith has set
			// the state.
			if !stopped {
				b.log.Warn("background repair stopped: the database refuses this server's writes; it tries again every "+b.stoppedRetry.String(), "err", recall.ErrorMessage(err))
			}
			stopped, wait = true, b.stoppedRetry
		case err != nil:
			backoff = min(max(2*backoff, b.repairRetry), 5*time.Minute)
			wait = backoff
			b.log.Warn("background repair", "err", recall.ErrorMessage(err), "retry_in", backoff.String())
		case p.Done:
			backoff, wait = 0, b.idle
		default:
			backoff = 0
		}
		if stopped && err == nil && rctx.Err() == nil {
			stopped = false
			b.log.Info("background repair resumed: the database takes this server's writes again")
			if !p.Done {
				wait = b.pause
			}
		}
		// New writes wake the loop early, except while it backs off from a
		// failing embedder: /ingest traffic must not turn the backoff
		// into a retry per request.
		wake := b.wake
		if err != nil {
			wake = nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			done()
			return
		case <-rctx.Done():
			t.Stop()
		case <-wake:
			t.Stop()
		case <-t.C:
		}
		if rctx.Err() != nil {
			backoff = 0 // the target moved: the old model's failures say nothing of the new one
		}
		done()
	}
}

// follow brings the in-memory indexes in line with writes other processes
// make to the store (a `recall sweep` run beside the server), every
// followEvery, and wakes the repair loop for the chunks they brought
// without vectors. A look after a commit reads the store's census (about
// 30 ms at 100,000 chunks); the wait stretches to 20 times the last look
// so that on a large store under steady writes it stays within 5% of a
// core.
func (b *background) follow(ctx context.Context) {
	every := b.followEvery
	if every == 0 {
		every = 2 * time.Second
	}
	if every < 0 {
		return
	}
	wait := every
	warned := ""
	failing := "" // the error of the looks failing since it was logged
	failed := 0   // how many looks failed since the last that did not
	for {
		if !sleepCtx(ctx, wait) {
			return
		}
		start := time.Now()
		f, err := b.eng.Follow(ctx)
		wait = followWait(every, time.Since(start), f)
		if f.Switched != "" {
			b.followSwitch()
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			// An outage (the database restarting) fails every look,
			// every 2 s: said once, and again only if the reason changes.
			failed++
			if msg := err.Error(); msg != failing {
				failing = msg
				b.log.Warn("follow writes of other processes", "err", msg)
			}
			continue
		case failed > 0:
			b.log.Info("following writes of other processes again", "failed_looks", failed)
			failing, failed = "", 0
		}
		if f.Changed() {
			b.log.Info("followed writes of another process", "chunks_added", f.Added, "chunks_removed", f.Removed, "vectors_added", f.Vectors)
			if f.Added > 0 {
				b.nudge()
			}
		}
		if f.Switched != "" {
			_, n := b.eng.ReadSpace()
			b.log.Info("searches and writes moved to another space, made the read space by another process", "read_space", f.Switched, "chunks", n)
		}
		if f.ReadSpace != warned {
			warned = f.ReadSpace
			if warned != "" {
				space, _ := b.eng.ReadSpace()
				msg := "another process made a different space the read space; searches keep reading the one loaded until the server restarts"
				args := []any{"read_space", warned, "loaded", space}
				if f.SwitchErr != nil {
					msg = "another process made a different space the read space, whose model cannot be used here; searches keep reading the one loaded"
					args = append(args, "err", recall.ErrorMessage(f.SwitchErr))
				}
				b.log.Warn(msg, args...)
			}
		}
	}
}

func (b *background) setIndex(state string) {
	b.mu.Lock()
	b.idx = state
	b.mu.Unlock()
}

// repairOnce embeds up to opt.Limit missing texts of the target space,
// resuming at its recorded cursor (and, with opt.RetryRefused, sending
// again the texts its model refused for their size). A run the target
// moved away from stops and returns errTargetMoved, with the progress it
// made for the space it was repairing.
func (b *background) repairOnce(ctx context.Context, opt repair.Options) (repair.Progress, error) {
	tctx, stop, emb, space := b.onTarget(ctx)
	defer stop()
	if emb == nil || space == "" {
		return repair.Progress{}, recall.Errorf(recall.EUNAVAILABLE, "no embedder is configured, so there is nothing to repair with")
	}
	p, err := b.repairWith(tctx, emb, space, opt)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(tctx), errTargetMoved) {
		p.Space = space
		return p, errTargetMoved
	}
	return p, err
}

// repairWith embeds up to opt.Limit missing texts of space with emb,
// passing those its model refused for their size (recorded in the store)
// unless opt.RetryRefused.
func (b *background) repairWith(ctx context.Context, emb recall.Embedder, space string, opt repair.Options) (repair.Progress, error) {
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return repair.Progress{}, ctx.Err()
	}
	defer func() { <-b.sem }()
	b.mu.Lock()
	before := b.rep.State
	if before != "stopped" {
		// A run while stopped tries one text to learn whether the store
		// takes writes again: repair is still stopped until one is taken.
		b.rep.State = "running"
	}
	b.mu.Unlock()

	opt.PageSize = min(opt.Limit, 256)
	p, err := repair.Run(ctx, b.st, b.eng, space, emb, opt)
	b.m.repaired.add(float64(p.Embedded))
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rep.Embedded += p.Embedded
	if err == nil && space == b.space {
		// The store's count, after the run: every process's refusals.
		b.rep.TooLong = p.Refusals
		if p.TooLongReason != "" || p.Refusals == 0 {
			b.rep.TooLongReason = p.TooLongReason
		}
	}
	b.rep.LastRun = b.now().UTC().Format(time.RFC3339)
	switch {
	case err != nil && ctx.Err() != nil:
		b.rep.State = before // stopped (the server closes, the target moved, a client left), not failed
	case recall.ErrorCode(err) == recall.EFORBIDDEN:
		// Said here, in the same step as the failure, not after by run:
		// the store refusing writes is no failure repair retries soon,
		// and a status read in between must not say so.
		b.rep.State, b.rep.LastError = "stopped", recall.ErrorMessage(err)
	case err != nil:
		b.rep.State, b.rep.LastError = "retrying", recall.ErrorMessage(err)
	case p.Done:
		b.rep.State, b.rep.LastError, b.rep.Missing = "idle", "", p.Missing
	default:
		b.rep.State, b.rep.LastError, b.rep.Missing = "running", "", p.Missing
	}
	return p, err
}

// sweepLoop sweeps the server's vaults, one after the other, at start and
// then every sweepEvery.
func (b *background) sweepLoop(ctx context.Context) {
	for {
		for _, v := range b.vaults {
			if ctx.Err() != nil {
				return
			}
			b.sweep(ctx, v)
		}
		if b.sweepEvery <= 0 {
			return
		}
		t := time.NewTimer(b.sweepEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// sweep ingests one vault through the engine, on one parse worker so that
// a core stays free for searches, records the sweep as `recall sweep`
// does, and wakes the repair loop for the new chunks' vectors. Searches
// wait for each write transaction (the engine orders index updates
// against them), so transactions are kept to 1 MB of text.
func (b *background) sweep(ctx context.Context, vault string) {
	started := b.now().UTC()
	failures := b.sweepLog
	_, space := b.target()
	abs, _ := filepath.Abs(vault)
	reread, keepReread := b.reread.note(b.log, vault, abs,
		"sweep: this recall reads some files differently from the one that last swept the vault: reading them again (text that reads the same keeps its vectors)")
	redate, keepRedated := b.redated.note(b.log, vault, abs,
		"sweep: some files' conversations were dated in another time zone than the server's, or before recall recorded it: reading them again to date them in it (a conversation whose day changes is embedded again)")
	res, err := ingest.Sweep(ctx, b.st, b.eng, vault, ingest.Options{Workers: 1, Failures: failures, Zone: b.zone,
		Space: space, Batch: ingest.BatchLimits{Docs: 256, Bytes: 1 << 20}, Hurry: b.hurry, Rereading: reread, Redating: redate})
	if b.skipped(abs, err) {
		return
	}
	if !res.Started.IsZero() { // it compared the files (a round that failed before leaves the last one's)
		keepReread()
		keepRedated()
	}
	if res.VectorsMissing > 0 {
		b.nudge()
	}
	outcome := res.Outcome(err)
	if err == nil || res.Interrupted {
		rec := res.Record(abs, started, b.now().UTC(), err)
		if rerr := b.st.RecordSweep(context.WithoutCancel(ctx), rec); rerr != nil {
			b.log.Warn("record sweep", "vault", abs, "err", recall.ErrorMessage(rerr))
		}
	}
	if failures != nil {
		res.LogSummary(failures, b.now(), abs, err)
	}
	if err != nil && !res.Interrupted {
		b.log.Warn("sweep", "vault", abs, "err", recall.ErrorMessage(err))
		return
	}
	if res.FilesChanged+res.FilesFailed+res.FilesRemoved == 0 {
		return // nothing new: the record and sweep.log say it was looked at
	}
	b.log.Info("sweep", "vault", abs, "outcome", outcome, "files_changed", res.FilesChanged, "files_seen", res.FilesSeen,
		"files_failed", res.FilesFailed, "files_gone", res.FilesRemoved, "chunks_written", res.ChunksWritten, "chunks_reread", res.ChunksReread,
		"vectors_missing", res.VectorsMissing, "seconds", res.Seconds)
}

// skipped reports whether a sweep of vault that returned err did not run
// because another process (a `recall sweep`, another server on the same
// database) is sweeping the vault: that one does the work, and its sweep
// records itself, so this round is skipped, logged once for as long as
// the same holder keeps the server out, and tried again next round.
func (b *background) skipped(vault string, err error) bool {
	if !errors.Is(err, store.ErrVaultBusy) {
		delete(b.busy, vault)
		return false
	}
	why := recall.ErrorMessage(err)
	if b.busy[vault] == why {
		return true
	}
	if b.busy == nil {
		b.busy = map[string]string{}
	}
	b.busy[vault] = why
	next := "none (--sweep-every 0)"
	if b.sweepEvery > 0 {
		next = "in " + b.sweepEvery.String()
	}
	b.log.Info("sweep skipped: another process is sweeping this vault", "vault", vault, "reason", why, "next_try", next)
	return true
}

// followWait is the wait before the next look for other processes' writes,
// after a look that took took and found f. A look that found nothing costs
// a listing that grows with the store, so the wait stretches to 20 times
// it, which keeps following within 5% of a core at any size. A look that
// applied changes, or moved to another read space, took the time of the
// work found, not of looking: the next look comes at the usual pace, or
// a memory another process saves after a large sweep would wait 20 times
// that sweep's catching up (56 s after 43,000 chunks) to be found.
func followWait(every, took time.Duration, f search.Followed) time.Duration {
	if f.Changed() || f.Switched != "" {
		return every
	}
	return max(every, 20*took)
}

// sleepCtx waits d, or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// noted is, by vault, the files its last round said it read again for one
// reason (see background.reread).
type noted map[string]map[string]bool

// note returns a callback for ingest.Options.Rereading or Redating that
// logs msg when the files it is given hold one the vault's last round did
// not, and keep, which makes them the vault's last round's.
func (n *noted) note(log logger, vault, abs, msg string) (call func(files []string), keep func()) {
	var these map[string]bool
	call = func(files []string) {
		these = make(map[string]bool, len(files))
		said := true
		for _, f := range files {
			these[f] = true
			said = said && (*n)[abs][f]
		}
		if !said {
			log.Info(msg, "vault", vault, "files", len(files))
		}
	}
	keep = func() {
		if *n == nil {
			*n = noted{}
		}
		(*n)[abs] = these
	}
	return call, keep
}
