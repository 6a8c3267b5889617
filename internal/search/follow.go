package search

import (
	"context"
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
	// ReadSpace is set when another process made a different space the
	// one searches read from: the engine keeps the space it loaded (its
	// query embedder belongs to it) until the process restarts.
	ReadSpace string
}

// Changed reports whether Follow changed the indexes.
func (f Followed) Changed() bool { return f.Added+f.Removed+f.Vectors > 0 }

// followBatch bounds the ids or hashes one store call of Follow reads.
const followBatch = 1024

// Follow brings the in-memory indexes in line with writes another process
// made to the store: a `recall sweep`, `recall memory delete` or `recall
// repair` beside a running server. Writes through this engine keep the
// indexes in step by themselves; Follow notices the others by comparing
// the store's census (Store.Census: with no commit since the last call it
// costs one pragma) with the indexes' own, and when the two differ it
// reads what the indexes lack and applies the difference. Writes of this
// engine that commit meanwhile are recorded and replayed, as LoadIndex
// does, so the indexes end exactly in step with the store.
//
// A server calls Follow every few seconds. It does nothing before
// LoadIndex, nor without the in-memory full-text index
// (Options.MemoryLexical), as in one-off commands.
func (e *Engine) Follow(ctx context.Context) (Followed, error) {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.mu.RLock()
	loaded, space := e.loaded && e.lx != nil, e.space
	e.mu.RUnlock()
	var f Followed
	if !loaded {
		return f, nil
	}
	c, err := e.store.Census(ctx, space)
	if err != nil {
		return f, err
	}
	if c.ReadSpace != space {
		f.ReadSpace = c.ReadSpace
	}
	if c == e.seen {
		return f, nil
	}
	e.mu.RLock()
	mem := e.census(c.ReadSpace)
	e.mu.RUnlock()
	if mem != c {
		if err := e.followChunks(ctx, c, &f); err != nil {
			return f, fmt.Errorf("follow the store: %w", err)
		}
		e.mu.RLock()
		mem = e.census(c.ReadSpace)
		e.mu.RUnlock()
		if mem.Vectors != c.Vectors {
			if err := e.followVectors(ctx, &f); err != nil {
				return f, fmt.Errorf("follow the store: %w", err)
			}
		}
	}
	e.seen = c
	return f, nil
}

// census is the census of what the indexes hold, for comparing with the
// store's (whose read space is given). Called with e.mu held.
func (e *Engine) census(readSpace string) recall.Census {
	c := recall.Census{ReadSpace: readSpace}
	c.Chunks, c.MaxChunkID, c.ChunkIDSum, c.ChunkIDMix = e.lx.Census()
	if e.vx != nil {
		c.Vectors = e.vx.texts() + e.strays
	}
	return c
}

// sameChunks reports whether two censuses count the same chunks.
func sameChunks(a, b recall.Census) bool {
	return a.Chunks == b.Chunks && a.MaxChunkID == b.MaxChunkID && a.ChunkIDSum == b.ChunkIDSum && a.ChunkIDMix == b.ChunkIDMix
}

// memoryIDs returns the ids of the chunks either index holds, ascending.
// Called with e.mu held.
func (e *Engine) memoryIDs() []int64 {
	ids := e.lx.IDs()
	if e.vx != nil {
		ids = append(ids, e.vx.chunkIDs()...)
		slices.Sort(ids)
		ids = slices.Compact(ids)
	}
	return ids
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

// followChunks applies the chunks another process added or removed since
// the store's census c. Chunk ids only grow, so what was added since the
// indexes were last in step has ids above the largest id then: it reads
// those, and when the indexes with them still disagree with c (something
// was removed too), every id. What it can read before taking the write
// lock it reads first, so searches wait only for the in-memory changes.
func (e *Engine) followChunks(ctx context.Context, c recall.Census, f *Followed) error {
	e.startRecording()
	stop := func() {
		e.mu.Lock()
		e.stopRecording()
		e.mu.Unlock()
	}
	after := e.seen.MaxChunkID
	ids, err := e.store.ChunkIDs(ctx, after)
	if err != nil {
		stop()
		return err
	}
	e.mu.RLock()
	lack := e.lacking(ids)
	mem := e.census(c.ReadSpace)
	e.mu.RUnlock()
	for _, id := range lack {
		mem.Chunks++
		mem.MaxChunkID = max(mem.MaxChunkID, id)
		mem.ChunkIDSum += id
		mem.ChunkIDMix += recall.CensusMix(id)
	}
	full := after == 0 || !sameChunks(mem, c)
	if full && after != 0 {
		if ids, err = e.store.ChunkIDs(ctx, 0); err != nil {
			stop()
			return err
		}
		e.mu.RLock()
		lack = e.lacking(ids)
		e.mu.RUnlock()
	}

	// The chunks the indexes lack, their terms and their texts' vectors.
	var added []recall.StoredChunk
	for batch := range slices.Chunk(lack, followBatch) {
		cs, err := e.store.ChunksByID(ctx, batch)
		if err != nil {
			stop()
			return err
		}
		added = append(added, cs...)
	}
	terms := make([][]string, len(added))
	par.For(runtime.GOMAXPROCS(0), len(added), func(_, i int) { terms[i] = textindex.Terms(added[i].Text) })
	vecs := map[string][]float32{}
	e.mu.RLock()
	space, hasVecs := e.space, e.vx != nil
	var need []string
	if hasVecs {
		hashes := make([]string, len(added))
		for i, c := range added {
			hashes[i] = c.Hash
		}
		slices.Sort(hashes)
		need = e.vx.lacking(slices.Compact(hashes))
	}
	e.mu.RUnlock()
	for batch := range slices.Chunk(need, followBatch) {
		got, err := e.store.VectorsByHash(ctx, space, batch)
		if err != nil {
			stop()
			return err
		}
		maps.Copy(vecs, got)
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	pending := e.stopRecording()
	ctx = context.WithoutCancel(ctx) // the indexes must end in step
	var res recall.WriteResult
	if full {
		// A chunk this engine wrote after the listing is missing from
		// it, not from the store. Full-text searches read the in-memory
		// index without the engine's lock, so it must not drop out even
		// for the moment before the replay below.
		wrote := map[int64]bool{}
		for _, w := range pending {
			for _, c := range w.res.Added {
				wrote[c.ID] = true
			}
		}
		res.Removed = slices.DeleteFunc(minus(e.memoryIDs(), ids), func(id int64) bool { return wrote[id] })
		e.lx.Remove(res.Removed...)
	}
	for i, c := range added {
		e.lx.Add(c.ID, c.Source, titleTerms(c.Source), terms[i])
		res.Added = append(res.Added, recall.IndexedChunk{ID: c.ID, Hash: c.Hash, Source: c.Source})
	}
	f.Added, f.Removed = len(added), len(res.Removed)
	if e.vx != nil {
		batch := map[string][]float32{}
		for _, c := range res.Added {
			if v, ok := vecs[c.Hash]; ok && !e.vx.has(c.Hash) {
				batch[c.Hash] = v
			}
		}
		if err := e.vx.apply(res, batch); err != nil {
			return err
		}
		f.Vectors += len(batch)
	}
	e.gen++
	return e.replay(ctx, pending)
}

// lacking returns the ids of ids that neither index holds. Called with
// e.mu held.
func (e *Engine) lacking(ids []int64) []int64 {
	var out []int64
	for _, id := range ids {
		if !e.lx.Has(id) {
			out = append(out, id)
		}
	}
	return out
}

// followVectors indexes the vectors another process stored for texts of
// chunks the indexes hold (its `recall repair`), and counts the vectors no
// chunk holds, which are never indexed.
func (e *Engine) followVectors(ctx context.Context, f *Followed) error {
	e.startRecording()
	e.mu.RLock()
	space := e.space
	e.mu.RUnlock()
	hashes, err := e.store.VectorHashes(ctx, space)
	var (
		vecs    = map[string][]float32{}
		holders []recall.IndexedChunk
	)
	if err == nil {
		e.mu.RLock()
		need := e.vx.lacking(hashes)
		e.mu.RUnlock()
		for batch := range slices.Chunk(need, followBatch) {
			var got map[string][]float32
			if got, err = e.store.VectorsByHash(ctx, space, batch); err != nil {
				break
			}
			maps.Copy(vecs, got)
			var cs []recall.IndexedChunk
			if cs, err = e.store.ChunksByHash(ctx, batch); err != nil {
				break
			}
			holders = append(holders, cs...)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	pending := e.stopRecording()
	if err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	var res recall.WriteResult
	batch := map[string][]float32{}
	for _, c := range holders {
		v, ok := vecs[c.Hash]
		if !ok || !e.lx.Has(c.ID) {
			continue
		}
		res.Added = append(res.Added, c)
		if !e.vx.has(c.Hash) {
			batch[c.Hash] = v
		}
	}
	if err := e.vx.apply(res, batch); err != nil {
		return err
	}
	f.Vectors += len(batch)
	e.gen++
	if err := e.replay(ctx, pending); err != nil {
		return err
	}
	// Vectors no chunk holds (a text deleted while another process
	// embedded it) are never indexed; the census counts them apart.
	e.strays = len(e.vx.lacking(hashes))
	return nil
}
