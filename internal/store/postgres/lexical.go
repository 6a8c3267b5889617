package postgres

import (
	"context"
	"crypto/sha256"
	"math"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/textindex"
)

// Full-text result limits, as in the SQLite store.
const (
	defaultLexicalLimit = 50
	maxLexicalLimit     = 1000
)

// BM25 as SQLite FTS5's bm25() computes it, with the SQLite store's column
// weights (title 2.0, body 1.0): k1 and b are FTS5's fixed values.
const (
	k1          = 1.2
	b           = 0.75
	titleWeight = 2.0
	bodyWeight  = 1.0
)

// maxTermBytes is the longest term the full-text tables hold as it is. A
// B-tree entry holds at most about 2,700 bytes, so a longer word (a base64
// blob, a run of Cyrillic or Thai without spaces) could not be a key of
// postings or terms, and failed its whole write; SQLite's FTS5 stores any.
const maxTermBytes = 256

// termKey is what the full-text tables hold for term t, on write and on
// lookup alike: t itself, or for a longer term its first maxTermBytes bytes
// and its SHA-256. A key is longer than maxTermBytes, so it never equals a
// term held as itself; two long terms share one only if their digests do.
// Each long term keeps its own postings and document frequency, so BM25
// ranks it as FTS5 does, and a prefix of at most maxTermBytes bytes (the
// index's prefixes are one CJK character) matches its key as it matches
// the term. Migration 0002 rekeys terms stored before.
func termKey(t string) string {
	if len(t) <= maxTermBytes {
		return t
	}
	sum := sha256.Sum256([]byte(t))
	return t[:maxTermBytes] + string(sum[:])
}

// termPosting is one term of a chunk as the postings table holds it.
type termPosting struct {
	term      string
	tf        float32 // titleWeight × title count + bodyWeight × body count
	positions []int32
}

// termDoc is what a chunk adds to the full-text index.
type termDoc struct {
	terms    []termPosting
	titleLen int // tokens of the title column
	length   int // tokens of title and body: FTS5's row size
}

// makeTermDoc indexes a chunk: the terms of its source's title text
// (textindex.TitleText) and of its text, exactly as the SQLite store gives
// them to FTS5 (textindex.IndexText), so both rank alike, each held by its
// key (termKey). Title tokens take
// positions 0..titleLen-1 and body tokens start at titleLen+1, so a phrase
// never spans the two columns, as in FTS5.
func makeTermDoc(title string, c *recall.Chunk) termDoc {
	tt := textindex.Terms(title)
	var body []string
	if c.IndexText != "" {
		body = strings.Split(c.IndexText, " ")
	} else {
		body = textindex.Terms(c.Text)
	}
	d := termDoc{titleLen: len(tt), length: len(tt) + len(body)}
	at := make(map[string]int, len(body)/2+len(tt))
	add := func(t string, pos int, w float32) {
		t = termKey(t)
		i, ok := at[t]
		if !ok {
			i = len(d.terms)
			at[t] = i
			d.terms = append(d.terms, termPosting{term: t})
		}
		p := &d.terms[i]
		p.tf += w
		p.positions = append(p.positions, int32(pos))
	}
	for i, t := range tt {
		add(t, i, titleWeight)
	}
	for i, t := range body {
		add(t, len(tt)+1+i, bodyWeight)
	}
	return d
}

// unit is a query unit as the index looks it up: its terms in order (the
// last one a prefix when prefix is set).
type unit struct {
	terms  []string
	prefix bool
	df     int // estimated chunks holding it (planning); see unitFreqs
}

func (u unit) key() string {
	k := strings.Join(u.terms, " ")
	if u.prefix {
		k += "*"
	}
	return k
}

// toUnits gives the index terms of parsed query units, by their keys
// (termKey), leaving out the tokens FTS5 would drop (an empty term) and
// units left with no term. A prefix is cut to maxTermBytes, which the keys
// of longer terms begin with.
func toUnits(us []textindex.Unit) []unit {
	var out []unit
	for _, u := range us {
		var terms []string
		for _, t := range u.Tokens {
			if term := textindex.Term(t); term != "" {
				terms = append(terms, term)
			}
		}
		if len(terms) == 0 {
			continue
		}
		for i, t := range terms {
			if u.Prefix && i == len(terms)-1 {
				terms[i] = t[:min(len(t), maxTermBytes)]
			} else {
				terms[i] = termKey(t)
			}
		}
		out = append(out, unit{terms: terms, prefix: u.Prefix})
	}
	return out
}

// selection is one way of choosing candidates: chunks matching all units
// (and) or any (or), scored over score units, times factor (the SQLite
// store's expressions repeat units in some plans, doubling its bm25; the
// factor keeps the two stores' scores equal).
type selection struct {
	units  []unit
	and    bool
	score  []unit
	factor float64
}

// Lexical returns full-text candidates best first, scored by BM25 exactly
// as the SQLite store's FTS5 bm25() scores them (higher is better). The
// query is literal text (textindex.ParseQuery): quoted parts are required
// phrases, other words are alternatives ranked by BM25, stopwords are
// dropped unless nothing else is left; words are stemmed as the index is.
//
// Queries are planned as the SQLite store plans them, by document
// frequency, and no query ranks more than twice Options.LexicalBudget
// chunks: candidates are chosen newest first, filters applied, by a
// statement that walks each selecting word's postings in descending chunk
// id and stops at that many; then their postings are read, phrases checked
// by position (pages of older chunks read on until that many hold the
// phrases, as FTS5 checks them before its cut), and BM25 computed here. The document frequency of a phrase
// or a CJK prefix is counted exactly when its rarest word is in at most
// four budgets of chunks, and estimated by that word's beyond (FTS5 always
// counts it).
func (db *DB) Lexical(ctx context.Context, q recall.LexicalQuery) ([]recall.Candidate, error) {
	if err := q.Filter.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultLexicalLimit
	}
	limit = min(limit, maxLexicalLimit)
	pq := textindex.ParseQuery(q.Text)
	if pq.Empty() {
		return nil, nil
	}
	phrases := toUnits(pq.Phrases)
	terms := distinctUnits(toUnits(pq.Terms))
	terms = terms[:min(len(terms), textindex.MaxQueryUnits)]
	if len(phrases) == 0 && len(terms) == 0 {
		return nil, nil
	}
	lx := &lexQuery{db: db, filter: q.Filter, maxRanked: max(2*db.opts.LexicalBudget, limit)}
	if err := lx.loadTotals(ctx); err != nil {
		return nil, db.fail(ctx, err, "full-text search")
	}
	plans, err := lx.plan(ctx, phrases, terms)
	if err != nil {
		return nil, db.fail(ctx, err, "plan full-text query")
	}
	var out []recall.Candidate
	for _, sel := range plans {
		out, err = lx.run(ctx, sel, limit)
		if err != nil {
			return nil, db.fail(ctx, err, "full-text search")
		}
		if len(out) >= limit {
			break
		}
	}
	return out, nil
}

// distinctUnits drops units that look for the same terms as an earlier
// one: "run" and "running" are one stem to the index.
func distinctUnits(us []unit) []unit {
	seen := map[string]bool{}
	var out []unit
	for _, u := range us {
		if k := u.key(); !seen[k] {
			seen[k] = true
			out = append(out, u)
		}
	}
	return out
}

// lexQuery is the state of one full-text query.
type lexQuery struct {
	db        *DB
	filter    recall.Filter
	maxRanked int
	n         float64 // chunks
	avgdl     float64 // average tokens per chunk
	dfs       map[string]int
}

func (lx *lexQuery) loadTotals(ctx context.Context) error {
	var n, total int64
	if err := lx.db.pool.QueryRow(ctx, `SELECT chunks, total_len FROM counters`).Scan(&n, &total); err != nil {
		return err
	}
	lx.n = float64(n)
	lx.avgdl = 1
	if n > 0 && total > 0 {
		lx.avgdl = float64(total) / float64(n)
	}
	return nil
}

// plan mirrors the SQLite store's planner (see its Lexical and plan):
//
//   - Quoted phrases select: every one must match; the other words only rank.
//   - Otherwise, if the words' document frequencies add up to at most the
//     budget, any of them selects.
//   - If not, the rarest words that fit in the budget select and the
//     common ones (in fewer than half of all chunks) only rank.
//   - If even the rarest word is over the budget, the words are required
//     together, and the most common is let go, one at a time, while fewer
//     chunks than the limit match.
func (lx *lexQuery) plan(ctx context.Context, phrases, terms []unit) ([]selection, error) {
	if len(phrases) > 0 {
		sel := selection{units: phrases, and: true, score: append(slices.Clone(phrases), terms...), factor: 1}
		if len(terms) > 0 {
			sel.factor = 2
		}
		return []selection{sel}, nil
	}
	if len(terms) == 1 {
		return []selection{{units: terms, score: terms, factor: 1}}, nil
	}
	if err := lx.unitFreqs(ctx, terms); err != nil {
		return nil, err
	}
	order := slices.Clone(terms)
	slices.SortStableFunc(order, func(a, b unit) int { return a.df - b.df })
	budget := lx.db.opts.LexicalBudget
	n, sum := 0, 0
	for n < len(order) && sum+order[n].df <= budget {
		sum += order[n].df
		n++
	}
	switch {
	case n == len(order):
		return []selection{{units: terms, score: terms, factor: 1}}, nil
	case n == 0:
		var ladder []selection
		for k := len(order); k >= 1; k-- {
			ladder = append(ladder, selection{units: order[:k], and: true, score: order[:k], factor: 1})
		}
		return ladder, nil
	}
	var common []unit
	for _, u := range order[n:] {
		if 2*float64(u.df) < lx.n {
			common = append(common, u)
		}
	}
	rare := order[:n]
	if len(common) == 0 {
		return []selection{{units: rare, score: rare, factor: 1}}, nil
	}
	return []selection{{units: rare, score: append(slices.Clone(rare), common...), factor: 2}}, nil
}

// unitFreqs estimates how many chunks each unit matches: the document
// frequency of its rarest term (a phrase matches no more chunks than
// that), for a prefix the sum over the terms it matches.
func (lx *lexQuery) unitFreqs(ctx context.Context, us []unit) error {
	for i := range us {
		best := -1
		for j, t := range us[i].terms {
			f, err := lx.termFreq(ctx, t, us[i].prefix && j == len(us[i].terms)-1)
			if err != nil {
				return err
			}
			if best < 0 || f < best {
				best = f
			}
		}
		us[i].df = best
	}
	return nil
}

// termFreq returns the document frequency of a term, or the sum of those
// of the terms beginning with it.
func (lx *lexQuery) termFreq(ctx context.Context, t string, prefix bool) (int, error) {
	key := t
	if prefix {
		key += "*"
	}
	if f, ok := lx.dfs[key]; ok {
		return f, nil
	}
	var f int
	var err error
	if prefix {
		err = lx.db.pool.QueryRow(ctx, `SELECT coalesce(sum(df), 0) FROM terms WHERE term >= $1 AND term < $2`,
			[]byte(t), prefixEnd(t)).Scan(&f)
	} else {
		err = lx.db.pool.QueryRow(ctx, `SELECT coalesce(max(df), 0) FROM terms WHERE term = $1`, []byte(t)).Scan(&f)
	}
	if err != nil {
		return 0, err
	}
	if lx.dfs == nil {
		lx.dfs = map[string]int{}
	}
	lx.dfs[key] = f
	return f, nil
}

// prefixEnd is the smallest byte string above every string beginning with
// t: t followed by 0xFF bytes' successor; as terms are compared as bytes
// (bytea), t+"\xff" bounds every term that continues t with valid UTF-8.
func prefixEnd(t string) []byte {
	return append([]byte(t), 0xFF)
}

// termCond is the SQL condition that posting alias p holds term t (or a
// term beginning with it).
func termCond(a *args, p, t string, prefix bool) string {
	if prefix {
		return "(" + p + ".term >= " + a.add([]byte(t)) + " AND " + p + ".term < " + a.add(prefixEnd(t)) + ")"
	}
	return p + ".term = " + a.add([]byte(t))
}

type token struct {
	term   string
	prefix bool
	df     int
}

// tokensOf lists the distinct tokens of units with their frequencies.
func (lx *lexQuery) tokensOf(ctx context.Context, us []unit) ([]token, error) {
	var out []token
	for _, u := range us {
		for j, t := range u.terms {
			tok := token{term: t, prefix: u.prefix && j == len(u.terms)-1}
			if slices.ContainsFunc(out, func(o token) bool { return o.term == tok.term && o.prefix == tok.prefix }) {
				continue
			}
			f, err := lx.termFreq(ctx, tok.term, tok.prefix)
			if err != nil {
				return nil, err
			}
			tok.df = f
			out = append(out, tok)
		}
	}
	return out, nil
}

// matchSQL returns a statement listing, newest first and at most
// maxRanked, the ids below before (when not 0) of the chunks passing the
// filter that hold every token given: it walks the postings of the rarest
// one down from the largest chunk id and checks the others per chunk, so
// it stops early.
func (lx *lexQuery) matchSQL(a *args, toks []token, before int64) (string, error) {
	driver := 0
	for i, t := range toks {
		if t.df < toks[driver].df {
			driver = i
		}
	}
	d := toks[driver]
	q := `SELECT DISTINCT p.chunk_id FROM postings p`
	if filtered(lx.filter) {
		q += ` JOIN chunks c ON c.id = p.chunk_id`
		if lx.filter.SourcePrefix != "" {
			q += ` JOIN sources s ON s.sid = c.sid`
		}
	}
	q += ` WHERE ` + termCond(a, "p", d.term, d.prefix)
	if before > 0 {
		q += ` AND p.chunk_id < ` + a.add(before)
	}
	for i, t := range toks {
		if i != driver {
			q += ` AND EXISTS (SELECT 1 FROM postings q WHERE q.chunk_id = p.chunk_id AND ` + termCond(a, "q", t.term, t.prefix) + `)`
		}
	}
	if filtered(lx.filter) {
		where, err := filterSQL(lx.filter, "c", a)
		if err != nil {
			return "", err
		}
		q += ` AND ` + where
	}
	return q + ` ORDER BY p.chunk_id DESC LIMIT ` + a.add(lx.maxRanked), nil
}

// filtered reports whether f restricts anything.
func filtered(f recall.Filter) bool {
	return len(f.Kinds) > 0 || f.SourcePrefix != "" || f.Since != "" || f.Until != "" ||
		f.Category != "" || f.OwnerScoped
}

// candidates returns the ids below before (when not 0) of the chunks a
// selection chooses (before phrases are checked), newest first, at most
// maxRanked.
func (lx *lexQuery) candidates(ctx context.Context, sel selection, before int64) ([]int64, error) {
	var a args
	var query string
	if sel.and {
		toks, err := lx.tokensOf(ctx, sel.units)
		if err != nil {
			return nil, err
		}
		if query, err = lx.matchSQL(&a, toks, before); err != nil {
			return nil, err
		}
	} else {
		var parts []string
		for _, u := range sel.units {
			toks, err := lx.tokensOf(ctx, []unit{u})
			if err != nil {
				return nil, err
			}
			part, err := lx.matchSQL(&a, toks, before)
			if err != nil {
				return nil, err
			}
			parts = append(parts, "("+part+")")
		}
		query = `SELECT DISTINCT chunk_id FROM (` + strings.Join(parts, " UNION ALL ") +
			`) m ORDER BY chunk_id DESC LIMIT ` + a.add(lx.maxRanked)
	}
	// Planned for these values each time (custom plans): a prepared
	// statement's generic plan cannot see how selective a source prefix
	// or a term is, and picked plans 50 times slower.
	rows, err := lx.db.pool.Query(ctx, query, append([]any{pgx.QueryExecModeExec}, a...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// chunkTerms is what scoring needs of one candidate chunk.
type chunkTerms struct {
	titleLen, length int
	hash             string // the chunk's text: a text is one candidate (see run)
	terms            map[string]termPosting
}

// load reads the candidates' sizes and their postings of the tokens of
// the units.
func (lx *lexQuery) load(ctx context.Context, ids []int64, us []unit) (map[int64]*chunkTerms, error) {
	out := make(map[int64]*chunkTerms, len(ids))
	rows, err := lx.db.pool.Query(ctx, `SELECT id, title_len, tok_len, hash FROM chunks WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		c := &chunkTerms{terms: map[string]termPosting{}}
		if err := rows.Scan(&id, &c.titleLen, &c.length, &c.hash); err != nil {
			rows.Close()
			return nil, err
		}
		out[id] = c
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Positions are read only for the terms of phrases, which need them:
	// a common word's run to thousands per chunk.
	var exact, withPos [][]byte
	var prefixes []string
	seen := map[string]bool{}
	for _, u := range us {
		for j, t := range u.terms {
			if u.prefix && j == len(u.terms)-1 {
				prefixes = append(prefixes, t)
				continue
			}
			if len(u.terms) > 1 {
				withPos = append(withPos, []byte(t))
			}
			if !seen[t] {
				seen[t] = true
				exact = append(exact, []byte(t))
			}
		}
	}
	// Each term's postings of the candidates are looked up in the
	// (term, chunk_id) key, one probe per candidate: reading the
	// candidates' postings by chunk would read every term they hold.
	read := func(query string, args ...any) error {
		rows, err := lx.db.pool.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var term []byte
			var id int64
			var p termPosting
			if err := rows.Scan(&term, &id, &p.tf, &p.positions); err != nil {
				return err
			}
			p.term = string(term)
			if c := out[id]; c != nil {
				c.terms[p.term] = p
			}
		}
		return rows.Err()
	}
	if len(exact) > 0 {
		if err := read(`SELECT p.term, p.chunk_id, p.tf, NULL::integer[]
			FROM unnest($1::bytea[]) AS t(term)
			CROSS JOIN LATERAL (SELECT q.term, q.chunk_id, q.tf FROM postings q WHERE q.term = t.term AND q.chunk_id = ANY($2)) p`,
			exact, ids); err != nil {
			return nil, err
		}
	}
	if len(withPos) > 0 {
		if err := read(`SELECT p.term, p.chunk_id, p.tf, p.positions
			FROM unnest($1::bytea[]) AS t(term)
			CROSS JOIN LATERAL (SELECT * FROM postings q WHERE q.term = t.term AND q.chunk_id = ANY($2)) p`,
			withPos, ids); err != nil {
			return nil, err
		}
	}
	for _, t := range prefixes {
		if err := read(`SELECT p.term, p.chunk_id, p.tf, p.positions FROM postings p
			WHERE p.term >= $1 AND p.term < $2 AND p.chunk_id = ANY($3)`, []byte(t), prefixEnd(t), ids); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// weight returns the weighted number of instances of unit u in chunk c
// (FTS5's per-phrase hit count with column weights): a term's tf; for a
// prefix the sum over the terms it matches; for a phrase the instances
// found by position, each weighted by the column it starts in.
func (c *chunkTerms) weight(u unit) float64 {
	if len(u.terms) == 1 {
		if !u.prefix {
			return float64(c.terms[u.terms[0]].tf)
		}
		w := 0.0
		for t, p := range c.terms {
			if strings.HasPrefix(t, u.terms[0]) {
				w += float64(p.tf)
			}
		}
		return w
	}
	last := len(u.terms) - 1
	has := func(i int, pos int32) bool {
		if i == last && u.prefix {
			for t, p := range c.terms {
				if strings.HasPrefix(t, u.terms[i]) && slices.Contains(p.positions, pos) {
					return true
				}
			}
			return false
		}
		_, ok := slices.BinarySearch(c.terms[u.terms[i]].positions, pos)
		return ok
	}
	w := 0.0
	for _, start := range c.terms[u.terms[0]].positions {
		ok := true
		for i := 1; i <= last && ok; i++ {
			ok = has(i, start+int32(i))
		}
		if ok {
			if int(start) < c.titleLen {
				w += titleWeight
			} else {
				w += bodyWeight
			}
		}
	}
	return w
}

// run chooses a selection's candidates, checks its phrases and returns the
// best limit of them by BM25. The candidates are the newest maxRanked
// chunks that match, as FTS5 checks phrases before its newest-first cut:
// when a unit is checked by position (a phrase, a CJK word), chunks that
// hold its words but not in order do not count, and pages of older chunks
// are read until maxRanked match or none is left.
func (lx *lexQuery) run(ctx context.Context, sel selection, limit int) ([]recall.Candidate, error) {
	all := append(slices.Clone(sel.units), sel.score...)
	positional := slices.ContainsFunc(sel.units, func(u unit) bool { return len(u.terms) > 1 })
	var ids []int64
	chunks := map[int64]*chunkTerms{}
	var before int64
	for len(ids) < lx.maxRanked {
		page, err := lx.candidates(ctx, sel, before)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			break
		}
		loaded, err := lx.load(ctx, page, all)
		if err != nil {
			return nil, err
		}
		for _, id := range page {
			if c := loaded[id]; c != nil && sel.matches(c) && len(ids) < lx.maxRanked { // nil: deleted since chosen
				ids = append(ids, id)
				chunks[id] = c
			}
		}
		if !positional || len(page) < lx.maxRanked {
			break
		}
		before = page[len(page)-1]
	}
	if len(ids) == 0 {
		return nil, nil
	}
	idf := make([]float64, len(sel.score))
	for i, u := range sel.score {
		hits, err := lx.hits(ctx, u)
		if err != nil {
			return nil, err
		}
		idf[i] = math.Log((lx.n - float64(hits) + 0.5) / (float64(hits) + 0.5))
		if idf[i] <= 0 {
			idf[i] = 1e-6
		}
	}
	out := make([]recall.Candidate, 0, len(ids))
	for _, id := range ids {
		c := chunks[id]
		score := 0.0
		norm := k1 * (1 - b + b*float64(c.length)/lx.avgdl)
		for i, u := range sel.score {
			if w := c.weight(u); w > 0 {
				score += idf[i] * (w * (k1 + 1)) / (w + norm)
			}
		}
		out = append(out, recall.Candidate{ChunkID: id, Score: sel.factor * score})
	}
	slices.SortStableFunc(out, func(x, y recall.Candidate) int {
		switch {
		case x.Score > y.Score:
			return -1
		case x.Score < y.Score:
			return 1
		}
		return int(y.ChunkID - x.ChunkID)
	})
	// A text counts once, by its best chunk (ties: the newer), as in the
	// SQLite store: copies of one passage would fill the limit otherwise.
	seen := make(map[string]bool, len(out))
	out = slices.DeleteFunc(out, func(c recall.Candidate) bool {
		h := chunks[c.ChunkID].hash
		dup := seen[h]
		seen[h] = true
		return dup
	})
	return out[:min(len(out), limit)], nil
}

// matches reports whether chunk c holds all the selection's units (and)
// or any of them.
func (sel selection) matches(c *chunkTerms) bool {
	for _, u := range sel.units {
		in := c.weight(u) > 0
		if sel.and && !in {
			return false
		}
		if !sel.and && in {
			return true
		}
	}
	return sel.and
}

// hits returns the number of chunks holding unit u, BM25's n(q): a term's
// document frequency; for a phrase or a prefix, counted over the chunks
// holding all its terms when its rarest term is in at most four budgets of
// chunks, else that term's frequency (an upper bound).
func (lx *lexQuery) hits(ctx context.Context, u unit) (int, error) {
	toks, err := lx.tokensOf(ctx, []unit{u})
	if err != nil {
		return 0, err
	}
	if len(u.terms) == 1 && !u.prefix {
		return toks[0].df, nil
	}
	rarest := toks[0].df
	for _, t := range toks {
		rarest = min(rarest, t.df)
	}
	if rarest == 0 || rarest > 4*lx.db.opts.LexicalBudget {
		return rarest, nil
	}
	all := &lexQuery{db: lx.db, maxRanked: rarest, n: lx.n, avgdl: lx.avgdl, dfs: lx.dfs}
	var a args
	query, err := all.matchSQL(&a, toks, 0)
	if err != nil {
		return 0, err
	}
	rows, err := lx.db.pool.Query(ctx, query, append([]any{pgx.QueryExecModeExec}, a...)...)
	if err != nil {
		return 0, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return 0, err
	}
	if len(u.terms) == 1 {
		return len(ids), nil // a prefix: distinct chunks holding a term it begins
	}
	chunks, err := lx.load(ctx, ids, []unit{u})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range chunks {
		if c.weight(u) > 0 {
			n++
		}
	}
	return n, nil
}
