package ingest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
)

// embed makes vectors for the chunks of pr whose vector keys (header and
// text) the space lacks. A failure leaves them missing: the chunks are
// still written and searchable by text, and repair embeds them later.
func (p *pipeline) embed(ctx context.Context, pr *parsed) {
	if p.opt.Space != "" && ctx.Err() != nil {
		return // the sweep is ending: the piece is cut, never written
	}
	for i := range pr.docs {
		pr.docs[i].Source.IndexState = recall.IndexOK
	}
	if p.opt.Space == "" {
		return
	}
	var keys []string
	texts := make(map[string]embed.ChunkText)
	for _, d := range pr.docs {
		for _, c := range d.Chunks {
			k := c.VectorKey()
			if _, ok := texts[k]; !ok {
				texts[k] = embed.ChunkText{Header: c.Header, Text: c.Text}
				keys = append(keys, k)
			}
		}
	}
	have, err := p.st.VectorsByKey(ctx, p.opt.Space, keys)
	if err != nil {
		have = nil
	}
	var need []string
	p.embMu.Lock()
	if p.embedded == nil {
		p.embedded = make(map[string]bool)
	}
	for _, k := range keys {
		if _, ok := have[k]; !ok && !p.embedded[k] {
			need = append(need, k)
		} else {
			pr.reused = append(pr.reused, k)
		}
	}
	p.embMu.Unlock()
	vecs, failed := p.embedTexts(ctx, texts, need)
	pr.vecs = append(pr.vecs, vecs...)
	pr.missing = len(failed)
	pr.refused = refusedReasons(failed)
	markPending(pr.docs, failed)
	p.logRefused(pr.docs, failed)
}

// logRefused writes a failure line for each chunk of docs whose text the
// embedder refused on its own (failed holds its reason): the chunk is
// stored and searchable by text, but it has no vector and, with this
// model, never will; the line says which file and chunk, and why.
func (p *pipeline) logRefused(docs []recall.Document, failed map[string]error) {
	for _, d := range docs {
		for _, c := range d.Chunks {
			if err := failed[c.VectorKey()]; err != nil {
				p.mu.Lock()
				logFailure(p.opt.Failures, d.Source.ID, fmt.Errorf("chunk %d is searchable by its words only: %w", c.Index, err))
				p.mu.Unlock()
			}
		}
	}
}

// embedderDown reports whether the embedder is in an outage's wait.
func (p *pipeline) embedderDown() bool {
	p.down.Lock()
	defer p.down.Unlock()
	return p.now().Before(p.down.until)
}

// noteOutage records a call's outcome (failed: its retries spent) and
// returns the wait before the next call.
func (p *pipeline) noteOutage(failed bool) time.Duration {
	p.down.Lock()
	defer p.down.Unlock()
	if !failed {
		p.down.wait, p.down.until = 0, time.Time{}
		return 0
	}
	p.down.wait = min(max(2*p.down.wait, firstOutageWait), maxOutageWait)
	p.down.until = p.now().Add(p.down.wait)
	return p.down.wait
}

// The waits of an embedder outage (see pipeline.down).
const (
	firstOutageWait = 5 * time.Second
	maxOutageWait   = 5 * time.Minute
)

// embedTexts embeds the headers and texts of the given keys, returning
// their vectors and the keys it could not embed: those the embedder
// refused on their own (too long for its model) with the reason, the
// others, when the embedder failed (which is logged), with nil.
// With a space but no embedder (Options.Embedder) every one is left to
// repair.
func (p *pipeline) embedTexts(ctx context.Context, texts map[string]embed.ChunkText, need []string) ([]recall.Vector, map[string]error) {
	const batch = 16 // chunks per embedder call (each is several units)
	var out []recall.Vector
	failed := make(map[string]error)
	if p.opt.Embedder == nil || (len(need) > 0 && p.embedderDown()) {
		for _, h := range need {
			failed[h] = nil
		}
		return nil, failed
	}
	// The texts the model refused as too long before, by any process, are
	// not sent; a store that cannot say leaves them all to send.
	refusals := embed.Refusals{Store: p.st, Space: p.opt.Space}
	need, known, _ := refusals.Pass(ctx, need)
	for k, why := range known {
		failed[k] = why
	}
	for i := 0; i < len(need); i += batch {
		part := need[i:min(i+batch, len(need))]
		in := make([]embed.ChunkText, len(part))
		for j, h := range part {
			in[j] = texts[h]
		}
		vecs, refused, err := embed.Partial(embed.EmbedChunks(ctx, p.opt.Embedder, p.opt.Dim, in))
		for j, why := range refused { // the embedder works; it cannot take these texts
			failed[part[j]] = why
		}
		if rerr := refusals.Record(ctx, part, refused); rerr != nil { // costs one more call for each
			p.refusalsErr(rerr)
		}
		if err != nil {
			for _, h := range need[i:] {
				failed[h] = nil
			}
			if ctx.Err() == nil {
				err = fmt.Errorf("%w (texts are left to repair; the embedder is tried again in %s)", err, p.noteOutage(true))
			}
			p.embedErr(err)
			break
		}
		p.noteOutage(false)
		p.embMu.Lock()
		if p.embedded == nil {
			p.embedded = make(map[string]bool)
		}
		for j, k := range part {
			if vecs[j] == nil {
				continue // refused
			}
			out = append(out, recall.Vector{Space: p.opt.Space, Key: k, Vec: vecs[j]})
			p.embedded[k] = true
		}
		p.embMu.Unlock()
	}
	return out, failed
}

// refusedReasons returns the provider's reasons for the keys of failed
// whose texts the embedder refused on their own (too long for its model),
// by key; nil for none.
func refusedReasons(failed map[string]error) map[string]string {
	var out map[string]string
	for k, err := range failed {
		var why *recall.Error
		if errors.As(err, &why) {
			if out == nil {
				out = make(map[string]string)
			}
			out[k] = why.Message
		}
	}
	return out
}

// addRefused adds refusals (by key, with the provider's reasons) to b's.
func (b *batch) addRefused(refused map[string]string) {
	if len(refused) == 0 {
		return
	}
	if b.refused == nil {
		b.refused = make(map[string]string, len(refused))
	}
	maps.Copy(b.refused, refused)
}

// keepRefusals records again, once batch b has committed, the texts of b
// the model refused as too long for it (Store.RecordRefusals keeps a
// refusal's first reason). The embedding stage recorded them, or found
// them recorded, before b's chunks held them, and meanwhile a write (of
// another process, or of this sweep) that removed the last other chunk
// holding such a text dropped its refusal, as a write drops the refusals no
// chunk holds: the text would be sent once more. Now that b's chunks hold
// them, only the removal of those chunks drops them. Refusals are few, and
// a batch without any writes nothing more.
func (p *pipeline) keepRefusals(ctx context.Context, b *batch) {
	if len(b.refused) == 0 {
		return
	}
	if err := p.st.RecordRefusals(ctx, p.opt.Space, b.refused); err != nil {
		p.refusalsErr(err)
	}
}

// refusalsErr logs a failure to record the texts the model refused as too
// long: it costs one more call for each.
func (p *pipeline) refusalsErr(err error) {
	p.embedErr(fmt.Errorf("record the texts refused for their size: %w", err))
}

// markPending marks the documents holding a chunk whose key failed as
// pending.
func markPending(docs []recall.Document, failed map[string]error) {
	if len(failed) == 0 {
		return
	}
	for i, d := range docs {
		for _, c := range d.Chunks {
			if _, ok := failed[c.VectorKey()]; ok {
				docs[i].Source.IndexState = recall.IndexPending
				break
			}
		}
	}
}

// revive embeds again the chunks of batch b whose vectors the embedding
// stage found stored (or on their way) but that are gone by the time b
// commits: a commit in between removed the last other chunk holding such
// a key, and its vector with it. Without this the chunk would be written
// with no vector and its source marked indexed. It runs on the writer,
// just before b's transaction, so nothing can remove them in between.
func (p *pipeline) revive(ctx context.Context, b *batch) {
	if len(b.reused) == 0 {
		return
	}
	carried := make(map[string]bool, len(b.vecs))
	for _, v := range b.vecs {
		carried[v.Key] = true
	}
	var check []string
	for _, k := range b.reused {
		if !carried[k] {
			check = append(check, k)
			carried[k] = true
		}
	}
	have, err := p.st.VectorsByKey(ctx, p.opt.Space, check)
	if err != nil {
		return // the write goes on; repair finds what is missing
	}
	var lost []string
	texts := map[string]embed.ChunkText{}
	for _, k := range check {
		if _, ok := have[k]; !ok {
			lost = append(lost, k)
		}
	}
	if len(lost) == 0 {
		return
	}
	for _, d := range b.docs {
		for _, c := range d.Chunks {
			texts[c.VectorKey()] = embed.ChunkText{Header: c.Header, Text: c.Text}
		}
	}
	vecs, failed := p.embedTexts(ctx, texts, lost)
	b.vecs = append(b.vecs, vecs...)
	b.addRefused(refusedReasons(failed))
	markPending(b.docs, failed)
	p.logRefused(b.docs, failed)
	p.mu.Lock()
	p.res.VectorsMissing += len(failed)
	p.mu.Unlock()
}

// forget drops committed vectors from embedded, which would otherwise grow
// with the vault: a later piece finds them in the store.
func (p *pipeline) forget(vecs []recall.Vector) {
	p.embMu.Lock()
	defer p.embMu.Unlock()
	for _, v := range vecs {
		delete(p.embedded, v.Key)
	}
}

func (p *pipeline) embedErr(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	logFailure(p.opt.Failures, "(embedder)", err)
}
