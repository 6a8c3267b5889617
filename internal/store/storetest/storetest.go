// Package storetest is the contract every recall.Store backend passes: one
// suite of subtests, run by each backend's own tests against fresh stores.
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) recall.Store { ... a new, empty store ... })
//	}
package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

// Run runs the contract suite. open must return a new, empty store for each
// call; Run closes it.
func Run(t *testing.T, open func(t *testing.T) recall.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s recall.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"Validation", testValidation},
		{"WriteIsAtomic", testWriteIsAtomic},
		{"ReplaceShrinkAndGrow", testReplaceShrinkAndGrow},
		{"UnchangedChunksKeepIDs", testUnchangedChunksKeepIDs},
		{"MetadataChangeRenewsChunks", testMetadataChangeRenewsChunks},
		{"KindCannotChange", testKindCannotChange},
		{"Delete", testDelete},
		{"WriteRemoves", testWriteRemoves},
		{"UpdateConcurrentAppends", testUpdateConcurrentAppends},
		{"UpdateAbort", testUpdateAbort},
		{"SourceNotFound", testSourceNotFound},
		{"ListSourcesPaging", testListSourcesPaging},
		{"ChunksByVectorKeyAndSourcesByHash", testByHash},
		{"Manifest", testManifest},
		{"FileWithoutConversation", testFileWithoutConversation},
		{"ExportImport", func(t *testing.T, s recall.Store) { testExportImport(t, s, open) }},
		{"WriteGuard", testWriteGuard},
		{"WriteGuardRefusedVectors", testWriteGuardRefusedVectors},
		{"DeleteGuard", testDeleteGuard},
		{"LexicalBasics", testLexicalBasics},
		{"LexicalFilters", testLexicalFilters},
		{"LexicalHostileQueries", testLexicalHostile},
		{"UnstorableFilters", testUnstorableFilters},
		{"LexicalLiteralMeaning", testLexicalLiteralMeaning},
		{"LexicalPhrase", testLexicalPhrase},
		{"LexicalCJK", testLexicalCJK},
		{"LexicalCaseFolding", testLexicalCaseFolding},
		{"LexicalRanking", testLexicalRanking},
		{"LexicalDistinctTexts", testLexicalDistinctTexts},
		{"LexicalCommonWords", testLexicalCommonWords},
		{"LexicalDateWords", testLexicalDateWords},
		{"Spaces", testSpaces},
		{"VectorValidation", testVectorValidation},
		{"VectorsFollowChunks", testVectorsFollowChunks},
		{"MissingVectors", testMissingVectors},
		{"Refusals", testRefusals},
		{"ScanVectors", testScanVectors},
		{"StreamVectors", testStreamVectors},
		{"ScanChunks", testScanChunks},
		{"Census", testCensus},
		{"IDsOnlyGrow", testIDsOnlyGrow},
		{"ScanVectorsUnits", testScanVectorsUnits},
		{"CommitHook", testCommitHook},
		{"PendingSettlesOnWrite", testPendingSettlesOnWrite},
		{"SkippedOnlyWithoutSpace", testSkippedOnlyWithoutSpace},
		{"FirstSpaceSettles", testFirstSpaceSettles},
		{"StatesFollowReadSpace", testStatesFollowReadSpace},
		{"Stats", testStats},
		{"OwnerStats", testOwnerStats},
		{"Canceled", testCanceled},
		{"Ping", testPing},
		{"VaultLock", func(t *testing.T, s recall.Store) { testVaultLock(t, s, open) }},
		{"WritesUnderVaultLock", testWritesUnderVaultLock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

var ctx = context.Background()

// doc builds a document whose chunks are the given texts.
func doc(id string, kind recall.Kind, texts ...string) recall.Document {
	d := recall.Document{Source: recall.Source{
		ID: id, Kind: kind, ContentHash: recall.TextHash(strings.Join(texts, "\x00")),
		Size: int64(len(strings.Join(texts, ""))), IndexState: recall.IndexPending,
	}}
	if kind != recall.KindArchive {
		d.Source.Body = strings.Join(texts, "\n")
	}
	for i, text := range texts {
		d.Chunks = append(d.Chunks, recall.Chunk{Index: i, Text: text, Hash: recall.TextHash(text)})
	}
	return d
}

func withSource(d recall.Document, edit func(s *recall.Source)) recall.Document {
	edit(&d.Source)
	return d
}

func write(t *testing.T, s recall.Store, docs ...recall.Document) recall.WriteResult {
	t.Helper()
	res, err := s.Write(ctx, docs, nil)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return res
}

func wantCode(t *testing.T, err error, code string, what string) {
	t.Helper()
	if got := recall.ErrorCode(err); got != code {
		t.Errorf("%s: error %v (code %q); want code %q", what, err, got, code)
	}
}

// chunkState is every chunk of a store, by id: the view an in-memory index
// keeps in step through WriteResults.
type chunkState map[int64]recall.IndexedChunk

func snapshot(t *testing.T, s recall.Store) chunkState {
	t.Helper()
	state := chunkState{}
	err := s.Export(ctx, func(d recall.Document) error {
		chunks, err := s.Chunks(ctx, d.Source.ID, 0, len(d.Chunks))
		if err != nil {
			return err
		}
		for _, c := range chunks {
			state[c.ID] = recall.IndexedChunk{ID: c.ID, Hash: c.Hash, VectorKey: c.VectorKey(), Source: c.Source}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return state
}

// apply follows a WriteResult the way an in-memory index does.
func (st chunkState) apply(res recall.WriteResult) chunkState {
	next := chunkState{}
	for id, c := range st {
		next[id] = c
	}
	for _, id := range res.Removed {
		delete(next, id)
	}
	for _, c := range res.Added {
		next[c.ID] = c
	}
	return next
}

// checkResult verifies that a WriteResult is exact: an index that applies it
// to the state before the write holds exactly the state after, and it names
// no id twice.
func checkResult(t *testing.T, before, after chunkState, res recall.WriteResult) {
	t.Helper()
	for _, id := range res.Removed {
		if _, ok := before[id]; !ok {
			t.Errorf("WriteResult removes chunk %d, which did not exist", id)
		}
	}
	for _, c := range res.Added {
		if _, ok := before[c.ID]; ok {
			t.Errorf("WriteResult adds chunk %d, which existed before", c.ID)
		}
	}
	got := before.apply(res)
	for id, c := range after {
		if g, ok := got[id]; !ok {
			t.Errorf("chunk %d (%s #%s) exists, but the WriteResult did not add it", id, c.Source.ID, c.Hash[:8])
		} else if g != c {
			t.Errorf("chunk %d: index following the WriteResult holds %+v; store holds %+v", id, g, c)
		}
	}
	for id := range got {
		if _, ok := after[id]; !ok {
			t.Errorf("chunk %d is gone, but the WriteResult did not remove it", id)
		}
	}
}

// search returns the source ids of a lexical query's candidates, best first.
func search(t *testing.T, s recall.Store, text string, f recall.Filter) []string {
	t.Helper()
	cands, err := s.Lexical(ctx, recall.LexicalQuery{Text: text, Filter: f, Limit: 20})
	if err != nil {
		t.Fatalf("Lexical(%q): %v", text, err)
	}
	return sourcesOf(t, s, cands)
}

func sourcesOf(t *testing.T, s recall.Store, cands []recall.Candidate) []string {
	t.Helper()
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.ChunkID
	}
	chunks, err := s.ChunksByID(ctx, ids)
	if err != nil {
		t.Fatalf("ChunksByID: %v", err)
	}
	if len(chunks) != len(cands) {
		t.Fatalf("ChunksByID found %d of %d candidates", len(chunks), len(cands))
	}
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.Source.ID
	}
	return out
}

// sameSet compares two lists of ids ignoring order and duplicates.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func sameTime(a, b time.Time) bool { return a.Equal(b) }

func describeDoc(d recall.Document) string {
	var b strings.Builder
	s := d.Source
	fmt.Fprintf(&b, "%s %s vault=%q title=%q date=%q owner=%q cat=%q hash=%s size=%d mtime=%d n=%d body=%q state=%q",
		s.ID, s.Kind, s.Vault, s.Title, s.Date, s.Owner, s.Category, s.ContentHash, s.Size, s.MTime, s.ChunkCount,
		s.Body, s.IndexState)
	for _, c := range d.Chunks {
		fmt.Fprintf(&b, "\n  #%d %q header=%q mid=%t %s", c.Index, c.Text, c.Header, c.MidWord, c.Hash[:8])
	}
	return b.String()
}
