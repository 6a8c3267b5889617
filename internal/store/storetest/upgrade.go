package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"

	"github.com/recall-mcp/recall"
)

// VectorKeysUpgrade checks the upgrade of a database from the schema that
// keyed vectors by their text's hash alone to vector keys
// (recall.VectorKey: header and text). It writes into s, then older turns
// s's database into one as the previous schema version left it (closing
// s): every vector renamed to the hash of the text its key's chunks hold,
// the chunks' vector keys gone, that version recorded. reopen opens it
// again, which upgrades it. Nothing is left to embed: every chunk has the
// vector its text had, under its own key (a passage under two headers, or
// also without one, gets a copy for each), and so no other.
func VectorKeysUpgrade(t *testing.T, s recall.Store, older func(t *testing.T, s recall.Store), reopen func(t *testing.T) recall.Store) {
	t.Helper()
	a, b, m := upgradeDocs()
	space := createSpace(t, s, "sp", 2)
	write(t, s, a, b, m)
	// One vector per text, as the older schema held them: under the key
	// of one of the chunks holding the text.
	vec := func(c recall.Chunk) recall.Vector {
		return recall.Vector{Space: space, Key: c.VectorKey(), Vec: vecFor(c.Text, 2)}
	}
	if err := s.PutVectors(ctx, []recall.Vector{vec(m.Chunks[0]), vec(a.Chunks[1]), vec(b.Chunks[1])}); err != nil {
		t.Fatal(err)
	}
	older(t, s)
	upgraded(t, reopen(t), space, a, b, m)
}

// VectorKeyPrefixUpgrade checks the upgrade of a database from the schema
// whose vector keys were a hash throughout (sha256 of a chunk's header, a
// NUL byte and its text's hash) to keys that begin with the text's hash
// (recall.VectorKey), which are looked up through the text hashes' index.
// It writes into s, a vector for every chunk; older turns s's database
// into one as the previous schema version left it (closing s), keys and
// vectors renamed to KeyV9's; reopen opens it again, which upgrades it.
// Every chunk keeps its vector, under its new key.
func VectorKeyPrefixUpgrade(t *testing.T, s recall.Store, older func(t *testing.T, s recall.Store), reopen func(t *testing.T) recall.Store) {
	t.Helper()
	a, b, m := upgradeDocs()
	space := createSpace(t, s, "sp", 2)
	write(t, s, a, b, m)
	var vecs []recall.Vector
	for _, d := range []recall.Document{a, b, m} {
		for _, c := range d.Chunks {
			vecs = append(vecs, recall.Vector{Space: space, Key: c.VectorKey(), Vec: vecFor(c.Text, 2)})
		}
	}
	if err := s.PutVectors(ctx, vecs); err != nil {
		t.Fatal(err)
	}
	older(t, s)
	upgraded(t, reopen(t), space, a, b, m)
}

// KeyV9 is a chunk's vector key as the schema before VectorKeyPrefixUpgrade
// made it.
func KeyV9(header, textHash string) string {
	if header == "" {
		return textHash
	}
	sum := sha256.Sum256([]byte(header + "\x00" + textHash))
	return hex.EncodeToString(sum[:])
}

// upgradeDocs are the documents of the upgrade tests: a passage under two
// headers and without one, a text under one header twice, and others.
func upgradeDocs() (a, b, m recall.Document) {
	const ha, hb = "Tea (2024-01)", "Café crème (2024-02)" // the key is of its UTF-8 bytes
	a = doc("a.md", recall.KindArchive, "shared passage", "only in a", "twice told")
	b = doc("b.md", recall.KindArchive, "shared passage", "twice told")
	for i := range a.Chunks {
		a.Chunks[i].Header = ha
	}
	for i := range b.Chunks {
		b.Chunks[i].Header = hb
	}
	m = doc("mem", recall.KindMemory, "shared passage") // no header
	return a, b, m
}

// upgraded checks s, an upgraded store (which it closes), holding a, b and
// m: every chunk has the vector of its text under its key, and a chunk
// retitled later gets a new key without a vector, its old one going.
func upgraded(t *testing.T, s recall.Store, space string, a, b, m recall.Document) {
	t.Helper()
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	wantKeys := map[string]string{} // every chunk's vector key: its text
	for _, d := range []recall.Document{a, b, m} {
		for _, c := range d.Chunks {
			wantKeys[c.VectorKey()] = c.Text
		}
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Spaces) != 1 || st.Spaces[0].Missing != 0 || st.Spaces[0].Vectors != len(wantKeys) {
		t.Errorf("stats after the upgrade: %+v; want %d vectors, none missing", st.Spaces, len(wantKeys))
	}
	if c, err := s.Census(ctx, space); err != nil || c.Vectors != len(wantKeys) {
		t.Errorf("census after the upgrade: %+v, %v; want %d vectors", c, err, len(wantKeys))
	}
	if p, err := s.MissingVectors(ctx, space, 0, 10); err != nil || len(p) != 0 {
		t.Errorf("MissingVectors after the upgrade = %+v, %v; want none", p, err)
	}
	keys, err := s.VectorKeys(ctx, space)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for k := range wantKeys {
		want = append(want, k)
	}
	if !sameSet(keys, want) || len(keys) != len(want) {
		t.Errorf("VectorKeys after the upgrade = %v; want %v", keys, want)
	}
	n := 0
	err = s.ScanVectors(ctx, space, func(c recall.IndexedChunk, v []float32) error {
		n++
		text, ok := wantKeys[c.VectorKey]
		if !ok || c.Hash != recall.TextHash(text) || !slices.Equal(v, vecFor(text, 2)) {
			t.Errorf("chunk %d of %s: key %s, hash %s, vector %v; want the vector of %q", c.ID, c.Source.ID, c.VectorKey, c.Hash, v, text)
		}
		return nil
	})
	if err != nil || n != 6 {
		t.Errorf("ScanVectors after the upgrade: %d chunks, %v; want all 6", n, err)
	}
	for key, text := range wantKeys {
		chunks, err := s.ChunksByVectorKey(ctx, []string{key})
		if err != nil || len(chunks) == 0 {
			t.Errorf("ChunksByVectorKey(%s) after the upgrade = %v, %v; want the chunks of %q", key, chunks, err, text)
		}
		for _, c := range chunks {
			if c.VectorKey != key || c.Hash != recall.TextHash(text) {
				t.Errorf("ChunksByVectorKey(%s) after the upgrade gave %+v", key, c)
			}
		}
	}
	// The upgrade's keys are the writer's: a.md written again as it is
	// keeps its chunks and vectors; retitled, its chunks get new keys,
	// without vectors, and the old keys' vectors go.
	if res := write(t, s, a); len(res.Added)+len(res.Removed) != 0 {
		t.Errorf("a.md written again unchanged: %+v; want nothing changed", res)
	}
	retitled := a
	retitled.Chunks = slices.Clone(a.Chunks)
	for i := range retitled.Chunks {
		retitled.Chunks[i].Header = "Green tea (2024-01)"
	}
	write(t, s, retitled)
	var old []string
	for _, c := range a.Chunks {
		old = append(old, c.VectorKey())
	}
	if vecs, err := s.VectorsByKey(ctx, space, old); err != nil || len(vecs) != 0 {
		t.Errorf("vectors of a.md's old keys after retitling it: %d, %v; want none", len(vecs), err)
	}
	if st, err := s.Stats(ctx); err != nil || st.Spaces[0].Missing != 3 {
		t.Errorf("stats after retitling a.md: %+v, %v; want its 3 chunks missing vectors", st.Spaces, err)
	}
}

// ZoneUpgrade checks the upgrade of a database from the schema that did
// not record the zone a source's date was made in (recall.Source.Zone): a
// source written before it is in the manifest with recall.ZoneUnknown, so
// that a sweep dates it again once, and shows no zone. older turns s's
// database into one as the previous schema version left it (closing s);
// reopen opens it again, which upgrades it.
func ZoneUpgrade(t *testing.T, s recall.Store, older func(t *testing.T, s recall.Store), reopen func(t *testing.T) recall.Store) {
	t.Helper()
	d := doc("e.json/a", recall.KindArchive, "tea")
	d.Source.Vault, d.Source.Date, d.Source.Reading = "/v", "2024-05-06", 2
	write(t, s, d)
	older(t, s)
	s = reopen(t)
	defer s.Close()
	if m, err := s.Manifest(ctx, recall.KindArchive, "/v"); err != nil || m["e.json/a"].Zone != recall.ZoneUnknown {
		t.Errorf("manifest after the upgrade: %+v, %v; want the zone unknown", m, err)
	}
	if src, err := s.Source(ctx, "e.json/a"); err != nil || src.Zone != "" {
		t.Errorf("source after the upgrade: zone %q, %v; want none", src.Zone, err)
	}
}
