// Package vindex is the in-memory vector index over one vector space: exact
// top-k cosine search over every chunk that has a vector, built from the
// store at start-up and kept current by the search engine on every write and
// delete (Apply a recall.WriteResult, or Add and Remove).
//
// # Layout
//
// Each distinct chunk text (hash) has one vector, however many chunks hold
// that text; chunks point at it and the vector goes with its last chunk.
// Vectors are normalised once at insert and quantised to int8 codes with a
// per-vector scale, kept as two contiguous slabs of 4-bit digits (high and
// low digit of each code): one byte per dimension in all, 384 MB for a
// million 384-dimensional vectors where float32 would take 1.5 GB.
// Chunks sit in slabs of their own, each pointing at one shared SourceMeta
// per source for filters. Removal moves the last entry into the hole, so the
// slabs stay dense and a scan reads nothing dead.
//
// Each vector also keeps 48 bytes of sign bits (384 dimensions): the signs
// of its codes after a fixed random rotation (signs.go).
//
// # Search
//
// In an index of 64k vectors or more, a search first counts, for every
// allowed vector, the sign bits that differ from the query's (six
// popcounts): after the rotation that count estimates the angle between them
// (sign random projection). It then reads the high digits of the nearest
// few hundred by that count, takes the weakest score among the best of
// them, and reads every vector whose count could still belong to one that
// scores that well (its expected count plus four binomial standard
// deviations). On data that clusters, as embeddings do, that is a small
// share of the index; where it would be a third or more (uniform data, a
// filter that keeps the query's neighbours out) the search reads every
// allowed vector's high digits, as a smaller index always does. The signs
// only choose which vectors are read: any vector the full scan would keep
// is read, except with a probability the binomial model puts near 10⁻⁴.
//
// The scan of high digits is split across cores and reads half a byte per
// dimension, since a large scan is bounded by memory bandwidth. On amd64 it multiplies them with the query scaled to signed
// bytes (AVX-512 VNNI, else AVX2), and the candidates' high-digit products
// are computed again with the query quantised to 15 bits; elsewhere the
// portable Go kernel scans with the 15-bit query itself. The 512 best (8×pool when more) get their exact int8 scores
// from the low digits; the int8 scores err by about 0.001 in cosine. The
// best pool = k+max(k,32) of those are then rescored with their exact float
// vectors, fetched from the store through a FetchFunc, so the top of the
// ranking is what a float search gives. Filters are evaluated once per
// source into a bitmap before the scan; whole blocks of refused vectors are
// skipped, and nothing refused can take a place in the top k.
//
// Why fetch and not keep: float16 copies would double memory (768 MB at a
// million); an int4 residual per component (192 MB more) reached recall@10
// 0.993 in a prototype on 100k clustered vectors, where fetching a few dozen
// floats reaches 1.000.
// The codes alone give 0.95–0.99 (see the benchmarks), which is what an
// index without a FetchFunc returns.
//
// Results are one per distinct text: a Result lists every chunk holding that
// text that the filter allows. The search layer collapses duplicates anyway,
// and counting them once keeps a passage pasted into fifty files from
// filling the top k. An index made by NewGrouped goes one step further for
// texts with several vectors (the search layer's units of a chunk): a
// search returns the k best groups, each at its best vector's score. The
// scan's first pass is enlarged when one group's vectors crowd out the
// others, and rescoring takes every vector of a chosen group that the codes
// put near its best, so the group's exact best is among them.
//
// # Concurrency
//
// Every method is safe for concurrent use. Searches share a read lock; Add,
// Remove and Apply take the write lock, so a chunk removed before a Search
// starts is never in its results, and Apply makes a whole write visible at
// once. Rescoring runs after the read lock is released, so a slow store
// never holds up writers; a search's results are those of the index at one
// moment during the call.
package vindex
