package search

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/par"
	"github.com/recall-mcp/recall/internal/textindex"
)

// Followed tells what Follow changed in the in-memory indexes.
type Followed struct {
	Added   int // chunks another process wrote
	Removed int // chunks another process deleted
	Vectors int // texts whose vectors came from another process
	// Switched is the space searches read from now, when another process
	// made it the read space and Follow moved to it (Options.SpaceEmbedder).
	Switched string
	// ReadSpace is set when another process made a different space the
	// read space and the engine stays on the one it has: without
	// Options.SpaceEmbedder, or because it failed (SwitchErr), until the
	// read space changes again or the process restarts.
	ReadSpace string
	SwitchErr error
}

// Changed reports whether Follow changed the indexes.
func (f Followed) Changed() bool { return f.Added+f.Removed+f.Vectors > 0 }

// followBatch bounds the ids or hashes one store call of Follow reads.
const followBatch = 1024

// Follow brings the in-memory indexes in line with writes another process
// made to the store: a `recall sweep`, `recall memory delete` or `recall
// repair` beside a running server. Writes through this engine keep the
// indexes in step by themselves; Follow notices the others through the
// store's census (Store.Census: with no commit since the last call it
// costs one pragma). When the chunks changed since the last look it lists
// every chunk id and applies the difference with the indexes; when the
// vectors of the read space changed it lists their keys and indexes the
// ones it lacks. Additions are read and applied in batches, each under the
// write lock only for its in-memory changes, so a large sweep elsewhere
// never stalls searches for long. Writes of this engine meanwhile are
// recorded and replayed, as LoadIndex does, so the indexes end exactly in
// step with the store.
//
// A server calls Follow every few seconds. It does nothing before
// LoadIndex, nor without the in-memory full-text index
// (Options.MemoryLexical), as in one-off commands.
func (e *Engine) Follow(ctx context.Context) (Followed, error) {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.mu.RLock()
	loaded, space, hasVecs := e.loaded && e.lx != nil, e.space, e.vx != nil
	e.mu.RUnlock()
	var f Followed
	if !loaded {
		return f, nil
	}
	c, err := e.store.Census(ctx, space)
	if err != nil {
		return f, err
	}
	if c.ReadSpace != e.refused {
		e.refused = ""
	}
	if c.ReadSpace != space {
		switch {
		case c.ReadSpace != "" && e.opt.SpaceEmbedder != nil && e.refused == "":
			err := e.switchSpace(ctx, c.ReadSpace)
			switch {
			case err == nil:
				f.Switched = c.ReadSpace
				return f, nil
			case errors.Is(err, errSpaceMoved) || ctx.Err() != nil:
				return f, nil // the next look sees where it went
			case errors.Is(err, errNoEmbedder):
				e.refused = c.ReadSpace
				f.ReadSpace, f.SwitchErr = c.ReadSpace, err
			default:
				return f, fmt.Errorf("switch to read space %s: %w", c.ReadSpace, err)
			}
		default:
			f.ReadSpace = c.ReadSpace
		}
	}
	if c == e.seen {
		return f, nil
	}
	chunks := c.Chunks != e.seen.Chunks || c.MaxChunkID != e.seen.MaxChunkID || !e.seenSet
	if chunks {
		if err := e.followChunks(ctx, &f); err != nil {
			return f, fmt.Errorf("follow the store: %w", err)
		}
	}
	// The store keeps a vector exactly while a chunk holds its text, and
	// followChunks gave the chunks it added the vectors the store has: the
	// vector index lacks texts only if another process stored vectors for
	// texts of chunks it already held (its repair). Then it holds fewer
	// texts than the store has vectors.
	if hasVecs {
		e.mu.RLock()
		texts := e.vx.texts()
		e.mu.RUnlock()
		if texts != c.Vectors || !e.seenSet {
			if err := e.followVectors(ctx, &f); err != nil {
				return f, fmt.Errorf("follow the store: %w", err)
			}
		}
	}
	e.seen, e.seenSet = c, true
	return f, nil
}

// errNoEmbedder marks a read space whose query embedder cannot be made.
var errNoEmbedder = errors.New("no query embedder")

// switchSpace moves searches to read space name: it makes the space's
// query embedder and loads the indexes anew beside the live ones (searches
// and writes go on meanwhile, as at start-up), then swaps both in at once.
// Called with e.loadMu held.
func (e *Engine) switchSpace(ctx context.Context, name string) error {
	spaces, err := e.store.Spaces(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(spaces, func(sp recall.VectorSpace) bool { return sp.Name == name && sp.Read })
	if i < 0 {
		return errSpaceMoved
	}
	emb, err := e.opt.SpaceEmbedder(ctx, spaces[i])
	if err == nil && emb == nil {
		err = errors.New("the space's model is not available")
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errNoEmbedder, err)
	}
	return e.load(ctx, &spaceSwitch{space: name, emb: emb})
}

// minus returns the ids of a that are not in b; both ascending.
func minus(a, b []int64) []int64 {
	var out []int64
	j := 0
	for _, id := range a {
		for j < len(b) && b[j] < id {
			j++
		}
		if j == len(b) || b[j] != id {
			out = append(out, id)
		}
	}
	return out
}

// startRecording makes this engine's writes also kept for a replay.
// Called without e.mu.
func (e *Engine) startRecording() {
	e.mu.Lock()
	e.pending, e.recording = nil, true
	e.mu.Unlock()
}

// stopRecording ends recording and returns the writes kept. Called with
// e.mu held.
func (e *Engine) stopRecording() []recordedWrite {
	pending := e.pending
	e.pending, e.recording = nil, false
	return pending
}

// followChunks applies the chunks another process added or removed: it
// lists every chunk id, drops what the store no longer has, and reads and
// adds what the indexes lack, followBatch chunks at a time.
func (e *Engine) followChunks(ctx context.Context, f *Followed) error {
	e.startRecording()
	ids, err := e.store.ChunkIDs(ctx)
	e.mu.Lock()
	pending := e.stopRecording()
	if err != nil {
		e.mu.Unlock()
		return err
	}
	// A chunk this engine wrote after the listing is missing from it, not
	// from the store. Full-text searches read the in-memory index without
	// the engine's lock, so it must not drop out even for the moment
	// before the replay below.
	wrote := map[int64]bool{}
	for _, w := range pending {
		for _, c := range w.res.Added {
			wrote[c.ID] = true
		}
	}
	// The full-text index's ids stand for both indexes: the vector index
	// holds a subset of them (TestFollowStress checks it).
	memIDs := e.lx.IDs()
	removed := slices.DeleteFunc(minus(memIDs, ids), func(id int64) bool { return wrote[id] })
	lack := minus(ids, memIDs)
	if len(removed) > 0 {
		res := recall.WriteResult{Removed: removed}
		e.lx.Remove(removed...)
		if e.vx != nil {
			if err := e.vx.apply(res, nil); err != nil {
				e.mu.Unlock()
				return err
			}
		}
		e.gen++
		f.Removed += len(removed)
	}
	err = e.replay(context.WithoutCancel(ctx), pending)
	e.mu.Unlock()
	if err != nil {
		return err
	}
	for batch := range slices.Chunk(lack, followBatch) {
		if err := e.addChunks(ctx, batch, f); err != nil {
			return err
		}
	}
	return nil
}

// addChunks reads the chunks with the given ids, their terms and their
// stored vectors, then adds them to the indexes under the write
// lock, replaying this engine's writes made meanwhile (which may have
// removed some of them).
func (e *Engine) addChunks(ctx context.Context, ids []int64, f *Followed) error {
	e.startRecording()
	added, err := e.store.ChunksByID(ctx, ids)
	var vecs map[string][]float32
	e.mu.RLock()
	space, hasVecs := e.space, e.vx != nil
	e.mu.RUnlock()
	if err == nil && hasVecs && len(added) > 0 {
		// Every added key's vector as the store holds it now: the index
		// may hold a key whose vector the store has since dropped (its
		// chunks deleted, then written again without one).
		keys := make([]string, len(added))
		for i, c := range added {
			keys[i] = c.VectorKey()
		}
		slices.Sort(keys)
		vecs, err = e.store.VectorsByKey(ctx, space, slices.Compact(keys))
	}
	terms := make([][]string, len(added))
	if err == nil {
		par.For(runtime.GOMAXPROCS(0), len(added), func(_, i int) { terms[i] = textindex.Terms(added[i].Text) })
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	pending := e.stopRecording()
	if err != nil {
		return err
	}
	var res recall.WriteResult
	for i, c := range added {
		e.lx.Add(c.ID, c.Source, c.Hash, titleTerms(c.Source), terms[i])
		k := c.VectorKey()
		if _, ok := vecs[k]; ok {
			res.Added = append(res.Added, recall.IndexedChunk{ID: c.ID, Hash: c.Hash, VectorKey: k, Source: c.Source})
		}
	}
	f.Added += len(added)
	if e.vx != nil {
		batch := map[string][]float32{}
		for _, c := range res.Added {
			if !e.vx.has(c.VectorKey) {
				batch[c.VectorKey] = vecs[c.VectorKey]
			}
		}
		if err := e.vx.apply(res, batch); err != nil {
			return err
		}
		f.Vectors += len(batch)
		// Chunks indexed earlier without a vector for these keys join.
		if err := e.joinHolders(context.WithoutCancel(ctx), slices.Collect(maps.Keys(batch))); err != nil {
			return err
		}
	}
	e.gen++
	if err := e.replay(context.WithoutCancel(ctx), pending); err != nil {
		return err
	}
	if e.vx != nil {
		// A key that got its vector while these chunks were read (a
		// repair here, whose chunks were not yet indexed): they join.
		var late []recall.IndexedChunk
		for _, c := range added {
			if k := c.VectorKey(); e.lx.Has(c.ID) && !e.vx.hasChunk(c.ID) && e.vx.has(k) {
				late = append(late, recall.IndexedChunk{ID: c.ID, Hash: c.Hash, VectorKey: k, Source: c.Source})
			}
		}
		return e.indexChunks(late, nil)
	}
	return nil
}

// followVectors indexes the vectors another process stored for keys of
// chunks the indexes hold (its `recall repair`). A read space another
// process dropped has no vectors to follow: the indexes keep what they
// have, and Follow reports the new read space.
func (e *Engine) followVectors(ctx context.Context, f *Followed) error {
	e.mu.RLock()
	space := e.space
	e.mu.RUnlock()
	keys, err := e.store.VectorKeys(ctx, space)
	if recall.ErrorCode(err) == recall.ENOTFOUND {
		return nil
	}
	if err != nil {
		return err
	}
	e.mu.RLock()
	need := e.vx.lacking(keys)
	e.mu.RUnlock()
	for batch := range slices.Chunk(need, followBatch) {
		e.startRecording()
		vecs, err := e.store.VectorsByKey(ctx, space, batch)
		var holders []recall.IndexedChunk
		if err == nil {
			holders, err = e.store.ChunksByVectorKey(ctx, batch)
		}
		e.mu.Lock()
		pending := e.stopRecording()
		if err == nil {
			holders = slices.DeleteFunc(holders, func(c recall.IndexedChunk) bool { return !e.lx.Has(c.ID) })
			err = e.indexChunks(holders, vecs)
			for _, k := range batch { // keys the index lacked
				if e.vx.has(k) {
					f.Vectors++
				}
			}
			e.gen++
		}
		if err == nil {
			err = e.replay(context.WithoutCancel(ctx), pending)
		}
		e.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}
