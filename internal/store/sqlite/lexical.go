package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/textindex"
)

// Full-text result limits.
const (
	defaultLexicalLimit = 50
	maxLexicalLimit     = 1000
)

// bm25 weights the title column (source title or memory key) twice the body.
const rankExpr = `bm25(chunks_fts, 2.0, 1.0)`

// Lexical returns full-text candidates best first, scored by -bm25 (higher
// is better). The query is literal text (see textindex.ParseQuery): quoted
// parts are required phrases, other words are alternatives ranked by BM25,
// stopwords are dropped unless nothing else is left, and nothing in the text
// is ever read as FTS5 syntax. The index stems English words, so a word
// matches its inflections ("runs" finds "running", a phrase the same stems
// in order), and words of one stem count once. A query without any word
// (empty, or only punctuation) has no candidates; it is not an error.
//
// Each text counts once: of the chunks holding one text (a passage pasted
// into many sources), only the best ranked is a candidate (ties to the
// newer chunk), so that copies of one passage never fill the limit.
//
// The cost of a query is the number of chunks it ranks. Over a large store a
// natural-language query holds words found in a good share of all chunks,
// so the query is planned by document frequency (see plan), and no query
// ranks more than twice Options.LexicalBudget chunks: past that many
// matches (a query of words found everywhere), the newest are ranked.
// Filters are conditions of the same SQL statement, applied before any
// limit.
func (db *DB) Lexical(ctx context.Context, q recall.LexicalQuery) ([]recall.Candidate, error) {
	page, distinct, args, err := lexicalSQL(q.Filter)
	if err != nil {
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
	exprs, err := db.plan(ctx, pq)
	if err != nil {
		return nil, db.fail(ctx, err, "plan full-text query")
	}
	maxRanked := max(2*db.opts.LexicalBudget, limit)
	var out []recall.Candidate
	for _, expr := range exprs {
		out, err = db.match(ctx, page, distinct, limit, append(append([]any{expr}, args...), maxRanked, limit)...)
		if err != nil || len(out) >= limit {
			break
		}
	}
	return out, err
}

// match runs a statement of lexicalSQL and returns one candidate per text.
// Most pages hold no text twice, and the statement looks up only the
// hashes of the rows it returns; when some text is there twice, the page
// is made again by the statement that keeps each text's best row before
// the limit, which looks up the hash of every row it ranks.
func (db *DB) match(ctx context.Context, page, distinct string, limit int, args ...any) ([]recall.Candidate, error) {
	out, hashes, err := db.matchRows(ctx, page, args...)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(out))
	var kept []recall.Candidate
	for i, c := range out {
		if !seen[hashes[i]] {
			seen[hashes[i]] = true
			kept = append(kept, c)
		}
	}
	if len(kept) == len(out) || len(out) < limit {
		// No text twice, or every match is on the page.
		return kept, nil
	}
	out, _, err = db.matchRows(ctx, distinct, args...)
	return out, err
}

// lexicalSQL returns the full-text statements for a filter, each taking
// the match expression, the filter's arguments, the most rows to rank and
// the limit, and returning rows of chunk id, bm25 and text hash, best
// first: page returns the best rows, distinct the best row of each text.
// The inner query walks matches newest first, in the index's own order,
// and stops after the most rows to rank: no query ranks more, however
// common its words. Every filter is a condition of the inner query, so it
// applies before any limit.
func lexicalSQL(f recall.Filter) (page, distinct string, args []any, err error) {
	where, args, err := filterSQL(f, "c")
	if err != nil {
		return "", "", nil, err
	}
	inner := `SELECT chunks_fts.rowid AS id, ` + rankExpr + ` AS r FROM chunks_fts`
	switch {
	case !filtered(f):
		inner += ` WHERE chunks_fts MATCH ?`
	case f.OwnerScoped && !filtered(recall.Filter{Kinds: f.Kinds, SourcePrefix: f.SourcePrefix,
		Since: f.Since, Until: f.Until, Category: f.Category}):
		// Owner scoping alone hides the few chunks of other owners' memories
		// and diaries: a set built once per query from a partial index,
		// cheaper than looking up every matching chunk.
		inner += ` WHERE chunks_fts MATCH ? AND chunks_fts.rowid NOT IN
			(SELECT id FROM chunks WHERE kind != 'archive' AND owner != ?)`
		args = []any{f.Owner}
	default:
		// CROSS JOIN keeps the full-text index the outer loop: the other
		// way round, FTS5 would run once per chunk. Chunks carry their
		// source's attributes; only a prefix needs the source id.
		inner += ` CROSS JOIN chunks c ON c.id = chunks_fts.rowid`
		if f.SourcePrefix != "" {
			inner += ` CROSS JOIN sources s ON s.sid = c.sid`
		}
		inner += ` WHERE chunks_fts MATCH ? AND ` + where
	}
	ranked := `SELECT id, r FROM (` + inner + ` ORDER BY chunks_fts.rowid DESC LIMIT ?)`
	// Ties go to the newer chunk, as in the in-memory index. The page's
	// rows alone are looked up for their texts' hashes; distinct looks up
	// every ranked row's, to keep each text's best one before the limit.
	page = `SELECT x.id, x.r, c.hash FROM (` + ranked + ` ORDER BY r, id DESC LIMIT ?) x
		CROSS JOIN chunks c ON c.id = x.id ORDER BY x.r, x.id DESC`
	distinct = `SELECT id, r, hash FROM (SELECT x.id, x.r, c.hash,
		row_number() OVER (PARTITION BY c.hash ORDER BY x.r, x.id DESC) AS n
		FROM (` + ranked + `) x CROSS JOIN chunks c ON c.id = x.id) WHERE n = 1 ORDER BY r, id DESC LIMIT ?`
	return page, distinct, args, nil
}

// matchRows runs a full-text statement and returns its candidates and
// their texts' hashes.
func (db *DB) matchRows(ctx context.Context, query string, args ...any) ([]recall.Candidate, []string, error) {
	st, err := db.readStmt(ctx, query)
	if err != nil {
		return nil, nil, db.fail(ctx, err, "full-text search")
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, nil, db.fail(ctx, err, "full-text search")
	}
	defer rows.Close()
	var out []recall.Candidate
	var hashes []string
	for rows.Next() {
		var c recall.Candidate
		var h string
		if err := rows.Scan(&c.ChunkID, &c.Score, &h); err != nil {
			return nil, nil, db.fail(ctx, err, "full-text search")
		}
		c.Score = -c.Score
		out = append(out, c)
		hashes = append(hashes, h)
	}
	return out, hashes, db.fail(ctx, rows.Err(), "full-text search")
}

// plan turns a parsed query into FTS5 expressions to try in order, each one
// broader than the one before; Lexical stops at the first that fills the
// limit.
//
//   - Quoted phrases select: every one must match. The other words only
//     rank: (p1 AND p2) AND (p1 OR p2 OR words OR words) holds wherever the
//     phrases match, and as every unit appears twice, bm25 weighs phrases
//     and words alike.
//   - Otherwise, if the words' document frequencies add up to at most the
//     budget, the query is their OR: plain BM25 over every chunk that holds
//     any of them. This is the case for most queries and for every query
//     over a small store.
//   - If not, the rarest words that fit in the budget select the candidates
//     and the common ones only rank them: (rare) AND (rare OR common OR
//     common). Every word appears twice, so bm25 ranks the candidates
//     exactly as the plain OR would (scores are doubled). Only chunks that
//     hold nothing but common words are lost, and those rank low anyway.
//     Over a generated 40,000-chunk corpus the top 10 agree 96% with the
//     plain OR at a fraction of its cost (BenchmarkLexical's corpus).
//   - If even the rarest word is over the budget, the words are required
//     together (AND), and the most common is let go, one at a time, while
//     fewer chunks than the limit match.
func (db *DB) plan(ctx context.Context, q textindex.Query) ([]string, error) {
	// Past a few dozen words a query is a pasted text, not a question;
	// each word costs ranking time on every candidate.
	terms := distinctTerms(q.Terms)
	terms = terms[:min(len(terms), textindex.MaxQueryUnits)]
	if len(q.Phrases) > 0 {
		req := joinUnits(q.Phrases, " AND ")
		if len(terms) == 0 {
			return []string{req}, nil
		}
		t := joinUnits(terms, " OR ")
		return []string{req + " AND (" + joinUnits(q.Phrases, " OR ") + " OR " + t + " OR " + t + ")"}, nil
	}
	if len(terms) == 1 {
		return []string{unitExpr(terms[0])}, nil
	}
	dfs, err := db.unitFreqs(ctx, terms)
	if err != nil {
		return nil, err
	}
	order := make([]int, len(terms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return dfs[a] - dfs[b] })
	n, sum := 0, 0
	for n < len(order) && sum+dfs[order[n]] <= db.opts.LexicalBudget {
		sum += dfs[order[n]]
		n++
	}
	pick := func(idx []int) []textindex.Unit {
		us := make([]textindex.Unit, len(idx))
		for i, j := range idx {
			us[i] = terms[j]
		}
		return us
	}
	if n == len(order) {
		return []string{joinUnits(terms, " OR ")}, nil
	}
	if n == 0 {
		var ladder []string
		for k := len(order); k >= 1; k-- {
			ladder = append(ladder, joinUnits(pick(order[:k]), " AND "))
		}
		return ladder, nil
	}
	// Words in at least half of all chunks get an idf of zero from FTS5's
	// bm25 (it then counts them 1e-6): they cannot change the ranking of
	// rows the rare words select, and evaluating them twice would cost two
	// scans of their long doclists.
	total, err := db.chunkCount(ctx)
	if err != nil {
		return nil, err
	}
	var common []int
	for _, j := range order[n:] {
		if 2*dfs[j] < total {
			common = append(common, j)
		}
	}
	rare := joinUnits(pick(order[:n]), " OR ")
	if len(common) == 0 {
		return []string{rare}, nil
	}
	c := joinUnits(pick(common), " OR ")
	return []string{"(" + rare + ") AND (" + rare + " OR " + c + " OR " + c + ")"}, nil
}

// unitExpr writes a unit as one FTS5 string, which FTS5 reads as a phrase
// of the terms inside; quoting every term is what keeps user text from ever
// being an operator. The index holds terms (textindex.IndexText), so the
// tokens are written as their terms.
func unitExpr(u textindex.Unit) string {
	var b strings.Builder
	b.WriteByte('"')
	n := 0
	for _, t := range unitTerms(u) {
		if t == "" {
			continue
		}
		if n > 0 {
			b.WriteByte(' ')
		}
		n++
		b.WriteString(strings.ReplaceAll(t, `"`, `""`))
	}
	b.WriteByte('"')
	if u.Prefix {
		b.WriteString(" *")
	}
	return b.String()
}

func joinUnits(us []textindex.Unit, op string) string {
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = unitExpr(u)
	}
	return strings.Join(parts, op)
}

// unitFreqs estimates how many chunks each unit matches: the document
// frequency of its rarest token (a phrase matches no more chunks than that),
// or for a prefix the sum over the tokens it matches. The vocabulary holds
// stems, which textindex.Term gives for each token, as FTS5 makes them of
// the query text (a prefix included).
func (db *DB) unitFreqs(ctx context.Context, units []textindex.Unit) ([]int, error) {
	var exact, prefixes []string
	for _, u := range units {
		terms := unitTerms(u)
		last := len(terms) - 1
		exact = append(exact, terms[:last]...)
		if u.Prefix {
			prefixes = append(prefixes, terms[last])
		} else {
			exact = append(exact, terms[last])
		}
	}
	freq, err := db.docFreqs(ctx, exact, prefixes)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(units))
	for i, u := range units {
		terms := unitTerms(u)
		last := len(terms) - 1
		best := -1
		for j, t := range terms {
			key := t
			if j == last && u.Prefix {
				key = t + "*"
			}
			if f := freq[key]; best < 0 || f < best {
				best = f
			}
		}
		out[i] = best
	}
	return out, nil
}

// unitTerms returns the index terms of a unit's tokens.
func unitTerms(u textindex.Unit) []string {
	terms := make([]string, len(u.Tokens))
	for i, t := range u.Tokens {
		terms[i] = textindex.Term(t)
	}
	return terms
}

// distinctTerms drops the units that look for the same terms as an earlier
// one: "run" and "running" are one stem to the index, and a word repeated
// in a query should not count twice.
func distinctTerms(units []textindex.Unit) []textindex.Unit {
	seen := make(map[string]bool, len(units))
	out := units[:0:0]
	for _, u := range units {
		key := strings.Join(unitTerms(u), " ")
		if u.Prefix {
			key += "*"
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, u)
		}
	}
	return out
}

// docFreqs returns the number of chunks holding each index term (key term)
// and, for each prefix, holding any term that starts with it (key
// prefix+"*"), from the fts5vocab table, through a cache that every
// committed write empties.
func (db *DB) docFreqs(ctx context.Context, tokens, prefixes []string) (map[string]int, error) {
	gen := db.gen.Load()
	out := make(map[string]int, len(tokens)+len(prefixes))
	var missing []string
	for _, t := range tokens {
		if f, ok := db.df.get(gen, t); ok {
			out[t] = f
		} else if !slices.Contains(missing, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		found, err := db.vocabFreqs(ctx, missing)
		if err != nil {
			return nil, err
		}
		for _, t := range missing {
			out[t] = found[t]
			db.df.put(gen, t, found[t])
		}
	}
	for _, p := range prefixes {
		key := p + "*"
		if f, ok := db.df.get(gen, key); ok {
			out[key] = f
			continue
		}
		var f int
		// Every token starting with p sorts between p and p followed by
		// the highest code point.
		err := db.ro.QueryRowContext(ctx, `SELECT coalesce(sum(doc), 0) FROM chunks_fts_vocab WHERE term >= ? AND term < ?`,
			p, p+"\U0010FFFF").Scan(&f)
		if err != nil {
			return nil, err
		}
		out[key] = f
		db.df.put(gen, key, f)
	}
	return out, nil
}

// vocabFreqs reads the document frequencies of terms from the fts5vocab
// table: those present, in one statement. A stem can be invalid UTF-8 (the
// stemmer works on bytes; see textindex.Stem), which a JSON array cannot
// carry, so such a term is looked up on its own.
func (db *DB) vocabFreqs(ctx context.Context, terms []string) (map[string]int, error) {
	found := make(map[string]int, len(terms))
	valid := make([]string, 0, len(terms))
	for _, t := range terms {
		if utf8.ValidString(t) {
			valid = append(valid, t)
			continue
		}
		var f int
		err := db.ro.QueryRowContext(ctx, `SELECT doc FROM chunks_fts_vocab WHERE term = ?`, t).Scan(&f)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		found[t] = f
	}
	if len(valid) == 0 {
		return found, nil
	}
	st, err := db.readStmt(ctx, `SELECT term, doc FROM chunks_fts_vocab WHERE term IN (SELECT value FROM json_each(?))`)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, jsonArray(valid))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var f int
		if err := rows.Scan(&t, &f); err != nil {
			return nil, err
		}
		found[t] = f
	}
	return found, rows.Err()
}

// chunkCount returns the number of chunks, through the frequency cache.
func (db *DB) chunkCount(ctx context.Context) (int, error) {
	const key = "\x00chunks"
	gen := db.gen.Load()
	if n, ok := db.df.get(gen, key); ok {
		return n, nil
	}
	var n int
	if err := db.ro.QueryRowContext(ctx, `SELECT count(*) FROM chunks`).Scan(&n); err != nil {
		return 0, err
	}
	db.df.put(gen, key, n)
	return n, nil
}

// dfCache holds document frequencies for one write generation.
type dfCache struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]int
}

// maxCachedFreqs bounds the cache; past it the cache starts over.
const maxCachedFreqs = 50000

func (c *dfCache) get(gen uint64, key string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return 0, false
	}
	f, ok := c.m[key]
	return f, ok
}

func (c *dfCache) put(gen uint64, key string, f int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen < c.gen {
		return
	}
	if gen > c.gen || c.m == nil || len(c.m) >= maxCachedFreqs {
		c.gen, c.m = gen, map[string]int{}
	}
	c.m[key] = f
}
