package search

import (
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/textindex"
)

// Fusion methods for hybrid search.
const (
	FusionRRF      = "rrf"      // reciprocal rank fusion (Cormack et al. 2009)
	FusionWeighted = "weighted" // semantic score + bonuses, as the replaced personal-memory system ranked
	FusionConvex   = "convex"   // equal mix of the two scores, each scaled to [0, 1] over the candidates
)

// DefaultFusion is the fusion method measured best on the development set
// (BENCHMARKS.md).
const DefaultFusion = FusionConvex

// Fusions lists the fusion methods.
var Fusions = []string{FusionRRF, FusionWeighted, FusionConvex}

// rrfK is the reciprocal-rank-fusion constant from Cormack et al. (2009).
const rrfK = 60

// exactBonus lifts a chunk that holds the query (or every quoted phrase)
// verbatim in convex fusion: half the weight of either retriever.
const exactBonus = 0.25

// shape fuses, hydrates, labels, collapses and caps.
// have holds candidates already read from the store; shape reads the rest.
func (e *Engine) shape(ctx context.Context, req recall.SearchRequest, resp recall.SearchResponse, order []*candidate, have map[int64]*recall.StoredChunk) (recall.SearchResponse, error) {
	var ids []int64
	for _, c := range order {
		if have[c.id] == nil {
			ids = append(ids, c.id)
		}
	}
	chunks, err := e.store.ChunksByID(ctx, ids)
	if err != nil {
		return resp, err
	}
	byID := have
	for i := range chunks {
		byID[chunks[i].ID] = &chunks[i]
	}
	quoted, all := exactPhrases(req.Query)
	phrases := textindex.NewPhrases(all)
	// For convex fusion, each score is scaled to [0, 1] over the candidates:
	// BM25 by its best (it is never negative), cosine by min-max (cosines
	// can be negative, and their spread matters more than their level). A
	// candidate the vector search did not return scores as the lowest one
	// that it did: it was merely outside the vector top-k. An exact match of
	// the query or of its quoted phrases adds a bonus, so a verbatim hit
	// ranks above near misses however the vectors fall.
	var maxLex, maxVec, minVec float64
	minVec = 1
	for _, c := range order {
		if c.lexRank > 0 {
			maxLex = max(maxLex, c.lexScore)
		}
		if c.vecRank > 0 {
			maxVec = max(maxVec, c.vecScore)
			minVec = min(minVec, c.vecScore)
		}
	}
	type scored struct {
		c     *candidate
		sc    *recall.StoredChunk
		match []string
	}
	var list []scored
	anyExact := false
	for _, c := range order {
		sc := byID[c.id]
		if sc == nil {
			continue
		}
		exact := phrases.InAll(sc.Text)
		anyExact = anyExact || exact
		titleHit := phrases.InAll(sc.Source.Title + " " + sc.Source.ID)
		var match []string
		if exact {
			match = append(match, "exact")
		}
		if c.vecRank > 0 {
			match = append(match, "semantic")
		}
		if c.lexRank > 0 {
			match = append(match, "text")
		}
		switch {
		case resp.Mode == recall.ModeLexical:
			c.score = c.lexScore
		case resp.Mode == recall.ModeSemantic:
			c.score = c.vecScore
		case e.opt.Fusion == FusionConvex:
			if c.vecRank > 0 && maxVec > minVec {
				c.score += 0.5 * (c.vecScore - minVec) / (maxVec - minVec)
			}
			if c.lexRank > 0 && maxLex > 0 {
				c.score += 0.5 * c.lexScore / maxLex
			}
			if exact {
				c.score += exactBonus
			}
		case e.opt.Fusion == FusionWeighted:
			c.score = c.vecScore
			if exact {
				c.score += 2.0
			}
			if titleHit {
				c.score += 0.6
			}
			if c.lexRank > 0 {
				c.score += 0.1
			}
		default:
			if c.lexRank > 0 {
				c.score += 1.0 / float64(rrfK+c.lexRank)
			}
			if c.vecRank > 0 {
				c.score += 1.0 / float64(rrfK+c.vecRank)
			}
		}
		list = append(list, scored{c, sc, match})
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].c.score > list[j].c.score })
	if quoted {
		// Quoting asks for the phrase word for word: only the passages
		// that hold it are ranked. Full text needs the check as much as
		// the vectors: its index matches a phrase by stems ("run late"
		// finds "running late") and in the title. When no passage holds
		// it, full text returns nothing and the vectors the closest
		// passages, saying so.
		switch {
		case anyExact:
			kept := list[:0]
			for _, s := range list {
				if slices.Contains(s.match, "exact") {
					kept = append(kept, s)
				}
			}
			list = kept
		case resp.Mode == recall.ModeLexical:
			list = nil
		default:
			resp.Note = "no passage holds the quoted words exactly; these are the closest"
		}
	} else if resp.Mode == recall.ModeHybrid && len(list) > 0 && !slices.ContainsFunc(list, func(s scored) bool { return s.c.lexRank > 0 }) {
		// Nothing holds a word of the query: the vectors still rank the
		// closest passages, which may be about something else. An
		// assistant reading the results is told so rather than left to
		// take the nearest for a match (a floor on the cosine would be a
		// knob fitted to one model's scale).
		resp.Note = "no passage holds a word of the query; these are the closest in meaning"
	}

	// Collapse identical passages: the best-ranked copy stands for all.
	seenHash := make(map[string]bool)
	perSource := make(map[string]int)
	var hits []recall.Hit
	var hashes []string
	for _, s := range list {
		if len(hits) == req.Limit {
			break
		}
		if seenHash[s.sc.Hash] {
			continue
		}
		if perSource[s.sc.Source.ID] >= req.PerSource {
			continue
		}
		seenHash[s.sc.Hash] = true
		perSource[s.sc.Source.ID]++
		hashes = append(hashes, s.sc.Hash)
		hits = append(hits, recall.Hit{
			Source: recall.PublicID(s.sc.Source.ID), ChunkIndex: s.sc.Index, Kind: s.sc.Source.Kind,
			Owner: s.sc.Source.Owner, Title: s.sc.Source.Title, Date: s.sc.Source.Date, Score: round(s.c.score),
			Match: s.match, Text: s.sc.Text,
		})
	}
	if len(hashes) > 0 {
		others, err := e.store.SourcesByHash(ctx, hashes, req.Filter)
		if err != nil {
			return resp, err
		}
		for i := range hits {
			self := hitID(hits[i])
			for _, src := range others[hashes[i]] {
				if src != self {
					hits[i].AlsoIn = append(hits[i].AlsoIn, recall.PublicID(src))
				}
			}
		}
	}
	if hits == nil {
		hits = []recall.Hit{}
	}
	resp.Results = hits
	return resp, nil
}

// exactPhrases returns the folded phrases a chunk must contain to count as
// an exact match: the quoted parts of the query (quoted is true), or else
// the whole query.
func exactPhrases(q string) (quoted bool, phrases []string) {
	var out []string
	for _, p := range textindex.QuotedPhrases(q) {
		out = append(out, textindex.Fold(p))
	}
	if len(out) > 0 {
		return true, out
	}
	if p := strings.TrimSpace(strings.TrimFunc(q, textindex.IsQuote)); p != "" {
		out = append(out, textindex.Fold(p))
	}
	return false, out
}

func round(f float64) float64 {
	return float64(int64(f*1e6+0.5)) / 1e6
}
