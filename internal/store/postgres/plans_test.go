package postgres

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
	"github.com/recall-mcp/recall/internal/store/storetest"
)

// genericPlan is the plan PostgreSQL caches for query once a prepared
// statement (every statement pgx sends twice) has run five times and
// planning it for its values stops looking worthwhile: planned without
// the values, on the statistics of the moment.
func genericPlan(t *testing.T, db *DB, query string) string {
	t.Helper()
	// The simple protocol, as pgx would otherwise look for the $n's values.
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	res, err := conn.Conn().PgConn().Exec(ctx, `EXPLAIN (GENERIC_PLAN, COSTS OFF) `+query).ReadAll()
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	var lines []string
	for _, r := range res {
		for _, row := range r.Rows {
			lines = append(lines, string(row[0]))
		}
	}
	return strings.Join(lines, "\n")
}

// wholeTable matches what reads a whole table (or a whole space of it)
// in a plan: a sequential scan, or a subquery run once into a hash table
// that every row is then looked up in.
var wholeTable = regexp.MustCompile(`Seq Scan on (chunks|vectors|sources|postings|terms)\b|hashed SubPlan|Hash (Anti |Semi )?Join`)

// TestWritePlansProbe: the statements a write runs for its own sources and
// keys find them through indexes, a probe each, in the plans PostgreSQL
// caches for them (generic plans) as in those made for their values:
// a write's cost must not grow with the store. The generic plan that
// settled a write's sources had read every chunk and every vector of the
// read space into hash tables, on every write (232 ms at 12,000 chunks,
// BenchmarkWriteVectors), whether the store had been analyzed or not.
func TestWritePlansProbe(t *testing.T) {
	db := openTest(t, pgtest.Server(t), Options{})
	defer db.Close()
	if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "bench", Provider: "bench", Model: "bench", Dim: 384, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	// 60 conversations of 10 chunks with vectors, and 1,000 memories: so
	// many sources that reading them all is not the cheapest way to find a
	// few.
	load := storetest.NewWriteLoad()
	for range 3 {
		docs, vecs, _ := load.NextWithVectors("bench", 2, 384)
		if _, err := db.Write(ctx, docs, vecs); err != nil {
			t.Fatal(err)
		}
	}
	var memories []recall.Document
	for i := range 1000 {
		text := fmt.Sprintf("memory %d", i)
		memories = append(memories, recall.Document{Source: recall.Source{ID: fmt.Sprintf("m/%04d", i), Kind: recall.KindMemory},
			Chunks: []recall.Chunk{{Text: text, Hash: recall.TextHash(text)}}})
	}
	if _, err := db.Write(ctx, memories, nil); err != nil {
		t.Fatal(err)
	}
	statements := map[string]string{
		"settle written sources":      settleSQL(settleWrittenScope),
		"settle the vectors' sources": settleSpaceSQL,
		"drop orphan vectors":         dropOrphansSQL,
		"keys held":                   heldKeysSQL,
		"delete a batch's units":      deleteUnitsSQL,
		"stored sources":              sourcesOfIDsSQL,
		"chunks of stored sources":    chunksOfSidsSQL,
		"chunks of deleted sources":   chunksOfIDsSQL,
	}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := db.pool.Exec(ctx, `ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for name, q := range statements {
			if plan := genericPlan(t, db, q); wholeTable.MatchString(plan) {
				t.Errorf("%s (analyzed %t): the generic plan reads a whole table:\n%s", name, analyzed, plan)
			}
		}
	}
}
