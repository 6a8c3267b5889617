// Package repair embeds the chunk texts that lack a vector in a space, page
// by page, recording where it stopped so the next run resumes there.
package repair

import (
	"cmp"
	"context"
	"fmt"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
)

// VectorWriter stores vectors and keeps the vector index in step (the
// search engine).
type VectorWriter interface {
	PutVectors(ctx context.Context, vecs []recall.Vector) error
}

// Options bound one run.
type Options struct {
	Limit    int            // at most this many texts this run; 0 means no limit
	PageSize int            // texts read from the store at a time (0: 256)
	Batch    int            // chunk texts per embedder call (0: 16)
	Progress func(Progress) // called after every page (nil: quiet)
	// RetryRefused forgets the texts the space's model refused as too
	// long for it (Store.ForgetRefusals) before the run, so that they are
	// sent again: for after the provider's limit was raised. Otherwise
	// they are passed without a call.
	RetryRefused bool
}

// Progress reports a run.
type Progress struct {
	Space    string `json:"space"`
	Embedded int    `json:"embedded"`          // texts embedded in this run
	Refused  int    `json:"refused,omitempty"` // texts the embedder failed on alone while it embedded others or a probe text: left for a later run
	Missing  int    `json:"missing"`           // texts still without a vector
	Cursor   int64  `json:"cursor"`            // chunk id the next run resumes after
	Done     bool   `json:"done"`              // a full pass embedded every text it could
	// TooLong counts the texts of this run refused for their size (too
	// long for the model, or too large for its service): refused now, or in an earlier run of any process (recorded
	// in the store, Store.RecordRefusals), and then passed without a
	// call; TooLongReason gives the provider's words for one of them.
	TooLong       int    `json:"too_long,omitempty"`
	TooLongReason string `json:"too_long_reason,omitempty"`
	// Refusals counts the space's texts left without a vector because its
	// model or its service refused them for their size
	// (SpaceStats.TooLong), after the run.
	Refusals int `json:"refusals,omitempty"`
	// Forgotten counts the refusals Options.RetryRefused forgot.
	Forgotten int `json:"forgotten,omitempty"`
}

// Run embeds missing vectors of space with emb. It resumes after the
// space's recorded cursor; on reaching the end it wraps around once to pick
// up texts that went missing behind the cursor (an embedder failure during a
// later sweep), so Done means nothing is missing at all.
func Run(ctx context.Context, st recall.Store, w VectorWriter, space string, emb recall.Embedder, opt Options) (Progress, error) {
	if opt.PageSize <= 0 {
		opt.PageSize = 256
	}
	if opt.Batch <= 0 {
		opt.Batch = 16
	}
	sp, err := findSpace(ctx, st, space)
	if err != nil {
		return Progress{}, err
	}
	info := emb.Info()
	if info.Provider != sp.Provider || info.Model != sp.Model {
		return Progress{}, recall.Errorf(recall.ECONFLICT, "space %s holds %s/%s vectors; the embedder is %s/%s",
			space, sp.Provider, sp.Model, info.Provider, info.Model)
	}
	p := Progress{Space: space, Cursor: sp.RepairCursor}
	if opt.RetryRefused {
		if p.Forgotten, err = st.ForgetRefusals(ctx, space); err != nil {
			return p, err
		}
	}
	wrapped := p.Cursor == 0
	refusals := embed.Refusals{Store: st, Space: space}
	for opt.Limit == 0 || p.Embedded < opt.Limit {
		size := opt.PageSize
		if opt.Limit > 0 {
			size = min(size, opt.Limit-p.Embedded)
		}
		page, err := st.MissingVectors(ctx, space, p.Cursor, size)
		if err != nil {
			return p, err
		}
		if len(page) == 0 {
			if wrapped {
				p.Done = true
				break
			}
			wrapped, p.Cursor = true, 0
			continue
		}
		keys := make([]string, len(page))
		for i, t := range page {
			keys[i] = t.Key
		}
		_, known, err := refusals.Pass(ctx, keys)
		if err != nil {
			return p, err
		}
		for i := 0; i < len(page); i += opt.Batch {
			part := page[i:min(i+opt.Batch, len(page))]
			out, refused, rerr, err := embedPart(ctx, emb, sp, part, known, refusals, &p)
			if err != nil {
				return p, fmt.Errorf("%s/%s could not embed the texts: %w", sp.Provider, sp.Model, err)
			}
			if rerr != nil {
				return p, rerr
			}
			if len(out) > 0 {
				if err := w.PutVectors(ctx, out); err != nil {
					return p, err
				}
			}
			p.Embedded += len(out)
			p.Refused += refused
			p.Cursor = part[len(part)-1].ChunkID
			if err := st.SetRepairCursor(ctx, space, p.Cursor); err != nil {
				return p, err
			}
		}
		if opt.Progress != nil {
			opt.Progress(p)
		}
	}
	if p.Done {
		p.Cursor = 0
		if err := st.SetRepairCursor(ctx, space, 0); err != nil {
			return p, err
		}
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		return p, err
	}
	for _, s := range stats.Spaces {
		if s.Name == space {
			p.Missing, p.Refusals = s.Missing, s.TooLong
		}
	}
	return p, nil
}

// embedPart embeds the texts of part. When the embedder fails on the whole
// batch it tells an outage from texts it cannot take (a model that makes
// NaN of one input, a provider that refuses one as too long) by trying a
// few texts alone — the first two, the middle one and the last, so that
// refused texts side by side at the start do not pass for an outage. If
// none embeds, a probe text any model takes decides: the texts of a batch
// can all be refused while the embedder is up (a refused text left alone
// in the last batch of a page, once the texts around it have vectors), and
// taking that for an outage would stop every later run at it. If the probe
// fails too, it is an outage and the run stops, to resume there; else the
// batch is split until every text that can be embedded is, and the texts
// that fail alone are counted as refused and passed, so that no text holds
// up all after it.
//
// Texts the provider refuses as too long for the model need none of this:
// it says so of each (embed.Refused) while embedding the others. They are
// counted in p.TooLong and recorded with the provider's words (refusals),
// even when the embedder then fails, so that no later run sends them
// again; rerr is the first failure to record them. Those known refused
// before (known, from the store) are passed without a call.
func embedPart(ctx context.Context, emb recall.Embedder, sp recall.VectorSpace, part []recall.PendingText, known map[string]*recall.Error, refusals embed.Refusals, p *Progress) (out []recall.Vector, refused int, rerr, err error) {
	send := make([]recall.PendingText, 0, len(part))
	for _, t := range part {
		if why, ok := known[t.Key]; ok {
			p.TooLong++
			p.TooLongReason = cmp.Or(p.TooLongReason, why.Message)
			continue
		}
		send = append(send, t)
	}
	passed := len(part) - len(send)
	if len(send) == 0 {
		return nil, passed, nil, nil
	}
	out, refused, err = embedSent(ctx, emb, sp, send, refusals, &rerr, p)
	return out, refused + passed, rerr, err
}

// embedSent is embedPart for texts to send; it records those the provider
// refuses as too long for the model, keeping the first failure to in rerr.
func embedSent(ctx context.Context, emb recall.Embedder, sp recall.VectorSpace, part []recall.PendingText, refusals embed.Refusals, rerr *error, p *Progress) ([]recall.Vector, int, error) {
	tooLong := 0
	one := func(ts []recall.PendingText) ([]recall.Vector, error) {
		texts := make([]embed.ChunkText, len(ts))
		keys := make([]string, len(ts))
		for j, t := range ts {
			texts[j] = embed.ChunkText{Header: t.Header, Text: t.Text}
			keys[j] = t.Key
		}
		vecs, refused, err := embed.Partial(embed.EmbedChunks(ctx, emb, sp.Dim, texts))
		for _, why := range refused {
			tooLong++
			p.TooLong++
			p.TooLongReason = why.Message
		}
		if e := refusals.Record(ctx, keys, refused); e != nil {
			*rerr = cmp.Or(*rerr, e)
		}
		if err != nil {
			return nil, err
		}
		out := make([]recall.Vector, 0, len(ts))
		for j, t := range ts {
			if vecs[j] != nil {
				out = append(out, recall.Vector{Space: sp.Name, Key: t.Key, Vec: vecs[j]})
			}
		}
		return out, nil
	}
	out, err := one(part)
	if err == nil || ctx.Err() != nil {
		return out, tooLong, err
	}
	// outage is nil when the probe embeds, so that the texts that failed
	// were refused, and otherwise the error to stop the run with. A vector
	// of the wrong size fails the probe as it fails the texts, so an
	// embedder of another dimension stops the run too.
	outage := func() error {
		if _, perr := one([]recall.PendingText{{Text: embed.ProbeText}}); perr == nil {
			return nil
		}
		return cmp.Or(ctx.Err(), err)
	}
	if len(part) == 1 {
		if oerr := outage(); oerr != nil {
			return nil, 0, oerr
		}
		return nil, 1 + tooLong, nil
	}
	refused := 0
	tried := map[int]bool{}
	for _, i := range []int{0, 1, len(part) / 2, len(part) - 1} {
		if tried[i] {
			continue
		}
		tried[i] = true
		v, perr := one(part[i : i+1])
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		if perr == nil {
			out = v
			break
		}
		refused++
	}
	if out == nil {
		if oerr := outage(); oerr != nil {
			return nil, 0, oerr
		}
	}
	rest := make([]recall.PendingText, 0, len(part))
	for i, t := range part {
		if !tried[i] {
			rest = append(rest, t)
		}
	}
	var split func(ts []recall.PendingText) error
	split = func(ts []recall.PendingText) error {
		if len(ts) == 0 {
			return nil
		}
		v, err := one(ts)
		switch {
		case err == nil:
			out = append(out, v...)
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case len(ts) == 1:
			refused++
			return nil
		}
		h := len(ts) / 2
		if err := split(ts[:h]); err != nil {
			return err
		}
		return split(ts[h:])
	}
	if err := split(rest); err != nil {
		return nil, 0, err
	}
	return out, refused + tooLong, nil
}

func findSpace(ctx context.Context, st recall.Store, name string) (recall.VectorSpace, error) {
	spaces, err := st.Spaces(ctx)
	if err != nil {
		return recall.VectorSpace{}, err
	}
	for _, s := range spaces {
		if s.Name == name {
			return s, nil
		}
	}
	return recall.VectorSpace{}, recall.Errorf(recall.ENOTFOUND, "no vector space %q", name)
}
