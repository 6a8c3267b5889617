package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/server"
)

// searchFlags are the filters and shaping flags search accepts.
type searchFlags struct {
	fs        *flag.FlagSet // the command's flags, all of them
	asJSON    *bool
	limit     *int
	mode      *string
	perSource *int
	prefix    *string
	kind      *string
	since     *string
	until     *string
	category  *string
	queries   *string
}

func (m *Main) fusionFlag(fs *flag.FlagSet) {
	fs.StringVar(&m.fusion, "fusion", "", "hybrid `FUSION`: convex (default), rrf or weighted (env RECALL_FUSION)")
}

func newSearchFlags(fs *flag.FlagSet) *searchFlags {
	return &searchFlags{
		fs:        fs,
		asJSON:    fs.Bool("json", false, "print results as one JSON object"),
		limit:     fs.Int("limit", recall.DefaultLimit, fmt.Sprintf("results to return (at most %d)", recall.MaxLimit)),
		mode:      fs.String("mode", "", "search `MODE`: hybrid, lexical or semantic (default hybrid when vectors exist, else lexical)"),
		perSource: fs.Int("per-source", recall.DefaultPerSource, "at most this many results from one source"),
		prefix:    fs.String("source-prefix", "", "only sources whose id starts with `P`"),
		kind:      fs.String("kind", "", "only this `KIND`: archive, memory or diary (comma-separated for several)"),
		since:     fs.String("since", "", "only sources dated on or after `DATE` (YYYY, YYYY-MM or YYYY-MM-DD)"),
		until:     fs.String("until", "", "only sources dated on or before `DATE`"),
		category:  fs.String("category", "", "only memories of this `CATEGORY`"),
		queries:   fs.String("queries", "", "batch mode: read one JSON object per line from `FILE.jsonl` (its \"query\" field) and print one result object per line"),
	}
}

func (f *searchFlags) request(q string) recall.SearchRequest {
	req := recall.SearchRequest{Query: q, Mode: *f.mode, Limit: *f.limit, PerSource: *f.perSource,
		Filter: recall.Filter{SourcePrefix: *f.prefix, Since: *f.since, Until: *f.until, Category: *f.category}}
	for _, k := range strings.Split(*f.kind, ",") {
		if k = strings.TrimSpace(k); k != "" {
			req.Filter.Kinds = append(req.Filter.Kinds, recall.Kind(k))
		}
	}
	return req
}

// checkSearchFlags refuses bad values of the flags that shape a search, as
// usage errors naming the flag, before anything is opened. limitFlag is the
// flag giving the number of results (search --limit, eval --k).
func (m *Main) checkSearchFlags(limitFlag string, limit, perSource int, mode string, f recall.Filter) error {
	if limit < 1 || limit > recall.MaxLimit {
		return usagef("%s must be between 1 and %d, got %d", limitFlag, recall.MaxLimit, limit)
	}
	if perSource < 1 || perSource > recall.MaxLimit {
		return usagef("--per-source must be between 1 and %d, got %d", recall.MaxLimit, perSource)
	}
	switch mode {
	case "", recall.ModeHybrid, recall.ModeLexical, recall.ModeSemantic:
	default:
		return usagef("--mode %q: use hybrid, lexical or semantic", mode)
	}
	if err := f.Validate(); err != nil {
		return usagef("%s", recall.ErrorMessage(err))
	}
	_, err := m.fusionSetting()
	return err
}

func (m *Main) cmdSearch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	sf := newSearchFlags(fs)
	m.fusionFlag(fs)
	pos, err := m.parse(fs, args, "search [flags] QUERY   or   search --json --queries FILE.jsonl")
	if err != nil {
		return err
	}
	if *sf.queries == "" && len(pos) == 0 {
		return usagef("search needs a query (or --queries FILE.jsonl)")
	}
	if *sf.queries != "" && len(pos) > 0 {
		return usagef("give either a query or --queries, not both")
	}
	req := sf.request("")
	if err := m.checkSearchFlags("--limit", req.Limit, req.PerSource, req.Mode, req.Filter); err != nil {
		return err
	}
	if *sf.queries == "" {
		// A query the engine would refuse (empty, over MaxQueryLen) is a
		// mistake on the command line, found before anything is opened.
		q := sf.request(strings.Join(pos, " "))
		if err := search.Validate(&q); err != nil {
			return inputError(err)
		}
	}
	if err := m.checkModel(); err != nil {
		return err
	}
	st, err := m.openReading(ctx)
	if err != nil {
		return err
	}
	// A full-text search of one query reads no vectors: it need not wait
	// for them to load (seconds on a large archive). Another search of one
	// query reads them from the store as it scores them; a file of queries
	// searches an index of them.
	vectors := indexVectors
	switch {
	case *sf.queries != "":
	case req.Mode == recall.ModeLexical:
		vectors = noVectors
	default:
		vectors = scanVectors
	}
	eng, _, _, err := m.engine(ctx, st, vectors)
	if err != nil {
		return err
	}
	if *sf.queries != "" {
		return m.searchBatch(ctx, eng, sf)
	}
	resp, err := eng.Search(ctx, sf.request(strings.Join(pos, " ")))
	if err != nil {
		return err
	}
	m.embedFailed(nil, resp)
	if *sf.asJSON {
		return json.NewEncoder(m.Stdout).Encode(resp)
	}
	printResults(m.Stdout, resp)
	return nil
}

// optionIn returns the first field of a JSON line (in sorted order) that
// names one of the command's flags ("limit", "per_source", "mode", ...),
// or "". Such a field would be silently ignored, and a line that says
// "limit": 3 and gets 10 results has been misread. Other fields are labels
// the line may carry, as an eval query file's "expect" does, and so is a
// numeric "category": that is the eval format's question category, while
// the search option is a memory category's name.
func (f *searchFlags) optionIn(fields map[string]json.RawMessage) string {
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if name == "query" || f.fs.Lookup(flagName(name)) == nil {
			continue
		}
		if v := bytes.TrimSpace(fields[name]); name == "category" && len(v) > 0 && v[0] != '"' {
			continue
		}
		return name
	}
	return ""
}

// flagName is the flag a JSON field name stands for: per_source is
// --per-source.
func flagName(field string) string { return strings.ReplaceAll(field, "_", "-") }

// searchBatch answers a JSONL file of queries in one process, one result
// object per line in input order. A bad line gets an error object, so line
// numbers stay aligned, and makes the command fail once every line is out.
func (m *Main) searchBatch(ctx context.Context, eng recall.Searcher, sf *searchFlags) error {
	var in io.Reader
	if *sf.queries == "-" {
		in = m.Stdin
	} else {
		f, err := openQueries(*sf.queries)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	out := bufio.NewWriter(m.Stdout)
	told := map[string]bool{} // each reason the queries could not be embedded, said once
	defer out.Flush()
	enc := json.NewEncoder(out)
	r := bufio.NewReader(in)
	failed, answered := 0, 0
	for line := 1; ; line++ {
		text, err := r.ReadString('\n')
		if text = strings.TrimSpace(text); text != "" {
			// One decoding serves both the query and the check for options.
			var fields map[string]json.RawMessage
			var query string
			var resp any
			if jerr := json.Unmarshal([]byte(text), &fields); jerr != nil {
				resp = map[string]string{"error": fmt.Sprintf("line %d: not a JSON object: %v", line, jerr)}
			} else if raw, ok := fields["query"]; ok && json.Unmarshal(raw, &query) != nil {
				resp = map[string]string{"error": fmt.Sprintf("line %d: \"query\" must be a string", line)}
			} else if opt := sf.optionIn(fields); opt != "" {
				resp = map[string]string{"query": query, "error": fmt.Sprintf("line %d: %q is a search option, which a line does not set: give --%s on the command line, for every line (a line's one search field is \"query\")", line, opt, flagName(opt))}
			} else if res, serr := eng.Search(ctx, sf.request(query)); serr != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				resp = map[string]string{"query": query, "error": recall.ErrorMessage(serr)}
			} else {
				m.embedFailed(told, res)
				resp = res
			}
			if _, ok := resp.(map[string]string); ok {
				failed++
			}
			answered++
			if err := enc.Encode(resp); err != nil {
				return err
			}
		}
		if err == io.EOF {
			if failed > 0 {
				return fmt.Errorf("%d of %s failed (their lines hold \"error\")", failed, plural(answered, "query", "queries"))
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// embedFailed says on stderr why a search fell back to full text because
// its query could not be embedded: the note in the results gives no reason
// (a client must not see the embedder's address), and "searched full text
// only" alone leaves the user guessing between a wrong key, a server down
// and a model missing. told, when not nil, holds the reasons said already.
func (m *Main) embedFailed(told map[string]bool, resp recall.SearchResponse) {
	if resp.EmbedError == nil {
		return
	}
	msg := resp.EmbedError.Error()
	if told != nil {
		if told[msg] {
			return
		}
		told[msg] = true
	}
	fmt.Fprintf(m.Stderr, "recall: the query could not be embedded: %s\n", msg)
}

func printResults(w io.Writer, resp recall.SearchResponse) {
	if resp.Note != "" {
		fmt.Fprintf(w, "(%s)\n", resp.Note)
	}
	if len(resp.Results) == 0 {
		fmt.Fprintf(w, "no results for %q\n", resp.Query)
		return
	}
	for i, h := range resp.Results {
		fmt.Fprintf(w, "%d. %s #%d", i+1, server.EscapeLine(h.Source), h.ChunkIndex)
		if h.Owner != "" {
			fmt.Fprintf(w, "  owner %s", server.EscapeLine(h.Owner))
		}
		if h.Date != "" {
			fmt.Fprintf(w, "  %s", server.EscapeLine(h.Date))
		}
		fmt.Fprintf(w, "  score %.4g  [%s]\n", h.Score, strings.Join(h.Match, ", "))
		if h.Title != "" {
			fmt.Fprintf(w, "   title: %s\n", server.EscapeLine(h.Title))
		}
		if len(h.AlsoIn) > 0 {
			fmt.Fprintf(w, "   also in: %s\n", server.EscapeLine(strings.Join(h.AlsoIn, ", ")))
		}
		fmt.Fprintln(w, indent(server.EscapeBlock(h.Text), "   | "))
		fmt.Fprintln(w)
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

func (m *Main) cmdContext(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("context", flag.ContinueOnError)
	radius := fs.Int("radius", 1, "chunks to show on each side (at most 3)")
	kind := fs.String("kind", "", "the source's `KIND` (archive, memory or diary), when a memory and a file share a name")
	owner := fs.String("owner", "", "the `OWNER` of the memory or diary day (a search result's owner)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := m.parse(fs, args, "context [flags] SOURCE CHUNK_INDEX")
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("context takes SOURCE and CHUNK_INDEX")
	}
	idx, err := strconv.Atoi(pos[1])
	if err != nil || idx < 0 {
		return usagef("chunk index %q is not a number of 0 or more", pos[1])
	}
	if *radius < 0 || *radius > 3 {
		return usagef("--radius must be between 0 and 3, got %d", *radius)
	}
	switch recall.Kind(*kind) {
	case "", recall.KindArchive, recall.KindMemory, recall.KindDiary:
	default:
		return usagef("--kind must be archive, memory or diary")
	}
	if err := m.checkModel(); err != nil {
		return err
	}
	st, err := m.openReading(ctx)
	if err != nil {
		return err
	}
	eng, _, _, err := m.engine(ctx, st, noVectors)
	if err != nil {
		return err
	}
	scope := recall.Filter{}
	if *owner != "" {
		scope.OwnerScoped, scope.Owner = true, *owner
	}
	chunks, got, err := eng.Context(ctx, pos[0], recall.Kind(*kind), idx, *radius, scope)
	if err != nil {
		return inputError(m.ownerHint(ctx, err, *owner, recall.Kind(*kind), pos[0]))
	}
	if *asJSON {
		type out struct {
			Source string `json:"source"`
			Index  int    `json:"chunk_index"`
			Text   string `json:"text"`
		}
		res := make([]out, len(chunks))
		for i, c := range chunks {
			res[i] = out{recall.PublicID(c.Source.ID), c.Index, c.Text}
		}
		return json.NewEncoder(m.Stdout).Encode(map[string]any{"source": pos[0], "kind": got, "chunks": res})
	}
	for _, c := range chunks {
		mark := ""
		if c.Index == idx {
			mark = "  <- hit"
		}
		fmt.Fprintf(m.Stdout, "── %s #%d%s\n%s\n\n", server.EscapeLine(recall.PublicID(c.Source.ID)), c.Index, mark, server.EscapeBlock(c.Text))
	}
	return nil
}
