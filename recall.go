// Package recall holds the domain of recall, a searchable long-term memory for
// AI assistants: the types every package shares (sources, chunks, hits,
// vector spaces) and the interfaces between packages (Store, Embedder,
// Searcher). It imports nothing of the project; everything else imports it.
package recall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// Kind says what a source is.
type Kind string

const (
	KindArchive Kind = "archive" // a conversation from a swept vault or /ingest
	KindMemory  Kind = "memory"  // a key-value memory saved by an assistant
	KindDiary   Kind = "diary"   // one day of diary entries, source id "diary/YYYY-MM-DD"
)

// Valid reports whether k is one of the known kinds.
func (k Kind) Valid() bool {
	return k == KindArchive || k == KindMemory || k == KindDiary
}

// Index states of a source's vectors (visible per memory and in stats).
const (
	IndexOK      = "ok"      // every chunk has a vector in the read space (or there is no space yet: nothing to miss)
	IndexPending = "pending" // stored and searchable by text; vectors still to be made
	IndexSkipped = "skipped" // stored without an embedder while no vector space existed (a save's answer: content unchanged, nothing re-embedded)
)

// Source is one indexed unit: an archive conversation, a memory or a diary day.
type Source struct {
	ID          string `json:"source"`             // stable id: vault-relative path, memory key, or diary/YYYY-MM-DD
	Kind        Kind   `json:"kind"`               // archive, memory or diary
	Vault       string `json:"vault,omitempty"`    // absolute vault root an archive source was swept from ("" for /ingest, memories)
	Title       string `json:"title,omitempty"`    // conversation title or memory key
	Date        string `json:"date,omitempty"`     // "YYYY", "YYYY-MM" or "YYYY-MM-DD"
	Owner       string `json:"owner,omitempty"`    // owner of a memory or diary day ("" = unowned)
	Category    string `json:"category,omitempty"` // memory category (project, person, ...)
	ContentHash string `json:"content_hash"`       // hex sha256 of the source content
	Size        int64  `json:"size"`               // bytes of the source content
	MTime       int64  `json:"mtime"`              // file modification time, unix nanoseconds (0 when not a file; -1 while a sweep has written only part of its export; -2 when read within 2 s of its change, to be read again)
	ChunkCount  int    `json:"chunk_count"`
	// Reading is the version of the reading (parsers, chunker) a sweep made
	// an archive source with (ingest.ReadingVersion); 0 for other sources
	// and for those written before it was recorded.
	Reading int `json:"reading,omitempty"`
	// Zone is the time zone a sweep dated an archive source in when its
	// date is the day of a moment written in UTC there (ingest.ZoneKey),
	// so that a sweep in another zone dates it again; "" when its date
	// does not depend on the zone.
	Zone       string    `json:"zone,omitempty"`
	Body       string    `json:"body,omitempty"`        // verbatim value of a memory or diary day; empty for archive files
	IndexState string    `json:"index_state,omitempty"` // IndexOK, IndexPending or IndexSkipped
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Chunk is one searchable passage of a source.
type Chunk struct {
	Index  int    `json:"index"`
	Text   string `json:"text"`             // verbatim source text
	Header string `json:"header,omitempty"` // context prepended for embedding only, never part of Text
	Hash   string `json:"hash"`             // TextHash(Text): identical passages share it, and are collapsed into one result
	// MidWord is true when the chunk begins partway through a word of the
	// source (measured by the chunker against the original text).
	MidWord bool `json:"mid_word,omitempty"`
	// IndexText, when set, is textindex.IndexText(Text), computed ahead by
	// a caller with cores to spare (the sweep's parse workers); a store
	// computes it when it is empty. It is never stored or exported.
	IndexText string `json:"-"`
}

// Document is a source with all of its chunks: the unit that is written in
// one transaction.
type Document struct {
	Source Source
	Chunks []Chunk
}

// TextHash is the hex sha256 of s: the identity of a chunk's text, by which
// duplicates are collapsed.
func TextHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// VectorKey is the key a chunk's vector is stored under in a space: the
// identity of what was embedded, its context header and its text (given
// by its TextHash), since both go into the embedder (EmbedInput). A chunk
// without a header is embedded as its text alone, and its key is its
// text's hash. Otherwise the key is as long and begins as the text's hash
// does (its first 32 hex digits, KeyPrefixLen) and ends with the first 32
// of the hex sha256 of the header, a NUL byte and the text's hash. Chunks
// holding one passage under two headers (a conversation retitled, one
// passage in two conversations) have vectors of their own. The chunks
// holding a key are a range of an index of text hashes, so a store need
// keep no index of keys (SQLite keeps none).
func VectorKey(header, textHash string) string {
	if header == "" {
		return textHash
	}
	sum := sha256.Sum256([]byte(header + "\x00" + textHash))
	return textHash[:min(KeyPrefixLen, len(textHash))] + hex.EncodeToString(sum[:])[:KeyPrefixLen]
}

// KeyPrefixLen is how many hex digits of a text's hash begin the vector
// keys of its chunks (VectorKey).
const KeyPrefixLen = 32

// VectorKey is the key of the chunk's vector (recall.VectorKey).
func (c Chunk) VectorKey() string { return VectorKey(c.Header, c.Hash) }

// SourceMeta is what filters and results need to know about a chunk's source.
type SourceMeta struct {
	ID       string
	Kind     Kind
	Title    string
	Date     string
	Owner    string
	Category string
}

// StoredChunk is a chunk as the store holds it, with its row id and source.
type StoredChunk struct {
	ID     int64 // store-assigned, unique across the database, never reused while the chunk exists
	Source SourceMeta
	Chunk
}

// IndexedChunk identifies a chunk for the in-memory indexes: its id, text
// hash (by which full text counts a passage once), the key of its vector
// (by which the vector index holds it) and the source attributes filters
// need.
type IndexedChunk struct {
	ID        int64
	Hash      string
	VectorKey string
	Source    SourceMeta
}

// WriteResult tells what a write changed, so in-memory indexes can follow.
type WriteResult struct {
	Removed []int64        // chunk ids that no longer exist
	Added   []IndexedChunk // chunk ids that now exist and did not before
}

// Census summarises a store's chunks and one space's vectors. Chunk ids
// only grow, so the set of chunks has changed since an earlier census
// exactly when the count or the largest id has: a chunk added since
// raises the largest id unless it is gone again, and removals alone lower
// the count.
type Census struct {
	ReadSpace  string // the space searches read from ("" when none)
	Chunks     int    // chunks
	MaxChunkID int64  // largest chunk id (0 when there is none)
	Vectors    int    // vectors stored in the space asked about
}

// ZoneUnknown is the SourceState.Zone of a source stored before the stores
// recorded the zone its date was made in: it may depend on one.
const ZoneUnknown = "?"

// SourceState is what the incremental sweep compares to decide whether a file changed.
type SourceState struct {
	Size        int64
	MTime       int64
	ContentHash string
	Reading     int // see Source.Reading
	// Zone is Source.Zone, or ZoneUnknown for a source written before the
	// stores recorded it.
	Zone string
	// Chunks is the source's chunk count. An archive source without chunks
	// is a sweep's record of a vault file that holds no conversation (an
	// empty note, an export of "[]"), with the file's size, mtime and
	// reading, so that the next sweep skips the file while it is
	// unchanged: it is no conversation, and the stores leave it out of
	// Source, ListSources, Stats and Export (and searches, having no
	// chunks); only Manifest, Write and Delete see it.
	Chunks int
	// UpdatedAt is Source.UpdatedAt: with the rest, it tells one stored
	// version of the source from any written after it (SameVersion).
	UpdatedAt time.Time
}

// SameVersion reports whether stored is the version of its source that
// st, read from a Manifest, describes: a write made since (another sweep,
// an /ingest upload, an import) gives it another UpdatedAt, or other
// contents. Zone is left out: Manifest gives ZoneUnknown where Source
// gives "".
func (st SourceState) SameVersion(stored *Source) bool {
	return stored.UpdatedAt.Equal(st.UpdatedAt) && stored.Size == st.Size && stored.MTime == st.MTime &&
		stored.ContentHash == st.ContentHash && stored.Reading == st.Reading && stored.ChunkCount == st.Chunks
}

// Filter restricts search candidates and listings. Filters are applied before
// any top-k cut, in every search mode.
type Filter struct {
	Kinds        []Kind // empty: every kind
	SourcePrefix string // source id prefix
	Since        string // inclusive lower date bound, "YYYY[-MM[-DD]]"
	Until        string // inclusive upper date bound, "YYYY[-MM[-DD]]"
	Category     string
	// Owner scoping: when OwnerScoped is true, memory and diary sources are
	// visible only when their owner equals Owner. Archive sources stay shared.
	OwnerScoped bool
	Owner       string
}

// ListOptions selects sources for listings (find_memories, admin pages, prune).
type ListOptions struct {
	Filter
	Cursor string // opaque, from a previous page; "" starts at the beginning
	Limit  int
}

// VectorSpace is one (provider, model, dimension) combination. Vectors are
// stored per space, keyed by their chunks' VectorKey.
type VectorSpace struct {
	Name       string    `json:"name"`
	Provider   string    `json:"provider"`
	Model      string    `json:"model"`
	Dim        int       `json:"dim"`
	Normalized bool      `json:"normalized"`
	Read       bool      `json:"read"` // the one space searches read from
	CreatedAt  time.Time `json:"created_at"`
	// RepairCursor is the chunk id up to which repair has looked for missing
	// vectors; the next repair resumes after it.
	RepairCursor int64 `json:"repair_cursor"`
}

// Vector is the embedding of one chunk's header and text in a space: one or
// more unit vectors of the space's dimension, concatenated (a chunk is
// embedded as its paragraphs and scores as its best one; see
// internal/embed.Units).
type Vector struct {
	Space string
	Key   string // VectorKey of the header and text it embeds
	Vec   []float32
}

// PendingText is a chunk's header and text that lack a vector in some
// space.
type PendingText struct {
	ChunkID int64  // the lowest chunk id holding this header and text
	Key     string // their VectorKey
	Text    string
	Header  string
}

// SpaceStats reports a vector space's coverage.
type SpaceStats struct {
	VectorSpace
	Vectors int `json:"vectors"` // distinct texts embedded (a header and text: a VectorKey) with a vector
	Missing int `json:"missing"` // distinct ones without
	// TooLong counts the missing ones refused for their size
	// (Store.RecordRefusals): as too long for the space's model, or, alone
	// in a request, as too large for its service or a proxy in front of it
	// (HTTP 413, Workers AI's 3006); they are not sent to it again. The
	// name is kept for the JSON's readers; labels say "refused for size".
	TooLong  int     `json:"too_long,omitempty"`
	Coverage float64 `json:"coverage"` // Vectors / (Vectors + Missing); 1 when there is nothing to embed
}

// SweepRecord is one run of the sweep, kept for stats and health checks.
type SweepRecord struct {
	Vault          string    `json:"vault"`
	Started        time.Time `json:"started"`
	Finished       time.Time `json:"finished"`
	FilesSeen      int       `json:"files_seen"`
	FilesChanged   int       `json:"files_changed"`
	FilesSkipped   int       `json:"files_skipped"`
	FilesFailed    int       `json:"files_failed"`
	FilesRemoved   int       `json:"files_removed"`
	ChunksWritten  int       `json:"chunks_written"`
	Bytes          int64     `json:"bytes"`
	VectorsMissing int       `json:"vectors_missing"`
	Outcome        string    `json:"outcome"` // "ok", "failures", "interrupted"
}

// Stats summarises a store.
type Stats struct {
	Sources      map[Kind]int   `json:"sources"`
	Chunks       int            `json:"chunks"`
	Bytes        int64          `json:"bytes"`          // chunk text held, in bytes
	KindChunks   map[Kind]int   `json:"kind_chunks"`    // Chunks of listed sources, by kind
	KindBytes    map[Kind]int64 `json:"kind_bytes"`     // Bytes by kind
	DBBytes      int64          `json:"db_bytes"`       // database size on disk (0 if unknown)
	MidWordShare float64        `json:"mid_word_share"` // share of chunks that begin partway through a word
	IndexStates  map[string]int `json:"index_states"`   // memory and diary sources by index state
	Spaces       []SpaceStats   `json:"spaces"`
	LastSweep    *SweepRecord   `json:"last_sweep,omitempty"`
}

// LexicalQuery asks the store's full-text index for candidates.
type LexicalQuery struct {
	Text   string // the user's query, taken literally; "quoted parts" must match as phrases
	Filter Filter
	Limit  int
}

// Candidate is a chunk a retriever proposes, with a retriever-specific score
// (higher is better).
type Candidate struct {
	ChunkID int64
	Score   float64
}

// Store is the persistent state of recall. Every method is safe for
// concurrent use. A write is one transaction: all of it or none of it.
// Implementations: internal/store/sqlite (embedded default). Every
// implementation passes internal/store/storetest.
type Store interface {
	// Write stores each document (replacing any source with the same id:
	// chunks 0..n-1 replaced, chunks at or beyond n deleted, full-text rows in
	// step) and the given vectors, all in one transaction. A chunk whose
	// index, text and header and whose source's attributes are unchanged
	// keeps its id; any other is new. Vectors whose key no chunk holds any
	// more are deleted in the same transaction. The sources named in remove
	// are deleted in it too, as Delete deletes them (after the documents are
	// written, so a vector a new chunk shares with a removed one stays): a
	// sweep writes an export's last piece and removes the conversations the
	// export no longer holds at once, so no crash can leave them stored
	// with the export recorded as swept. An id both written and removed is
	// refused.
	Write(ctx context.Context, docs []Document, vecs []Vector, remove ...string) (WriteResult, error)
	// Update reads the current document with the given id (nil when absent),
	// calls fn, and writes what fn returns, all in one transaction, so that
	// read-modify-write (diary appends) cannot lose a concurrent update.
	// fn returning (nil, nil) leaves the source unchanged.
	Update(ctx context.Context, id string, fn func(cur *Document) (*Document, error)) (WriteResult, error)
	// Delete removes sources with their chunks, full-text rows and vectors no
	// other chunk uses. Missing ids are ignored; it returns how many existed.
	Delete(ctx context.Context, ids ...string) (int, WriteResult, error)

	// Source returns a source's metadata and body; ENOTFOUND when absent.
	// Source, ListSources, Export and Stats leave out archive sources
	// without chunks (SourceState.Chunks).
	Source(ctx context.Context, id string) (Source, error)
	// Manifest returns the sweep state of every source of a kind in a
	// vault, archive sources without chunks included.
	Manifest(ctx context.Context, kind Kind, vault string) (map[string]SourceState, error)
	// Vaults returns the vaults that sources of a kind came from ("" for
	// sources that came through /ingest or an import), sorted.
	Vaults(ctx context.Context, kind Kind) ([]string, error)
	// ListSources pages through sources matching opts, ordered by id.
	ListSources(ctx context.Context, opts ListOptions) (page []Source, next string, err error)
	// Chunks returns a source's chunks with from <= index <= to, in order.
	Chunks(ctx context.Context, source string, from, to int) ([]StoredChunk, error)
	// ChunksByID returns the chunks with the given ids (missing ids omitted), in the order given.
	ChunksByID(ctx context.Context, ids []int64) ([]StoredChunk, error)
	// SourcesByHash returns, for each hash, the ids of the sources passing f
	// that hold a chunk with that text (for collapsing duplicates).
	SourcesByHash(ctx context.Context, hashes []string, f Filter) (map[string][]string, error)
	// ChunksByVectorKey returns the chunks whose vector key is one of keys.
	ChunksByVectorKey(ctx context.Context, keys []string) ([]IndexedChunk, error)
	// ScanChunks calls fn for every chunk with its text and source, in chunk
	// id order (for building in-memory indexes).
	ScanChunks(ctx context.Context, fn func(StoredChunk) error) error
	// ChunkIDs returns the id of every chunk, ascending.
	ChunkIDs(ctx context.Context) ([]int64, error)
	// Census summarises the chunks and the vectors of a space ("" for
	// none, or a space that does not exist). It is cheap enough to call
	// every few seconds: a process holding in-memory indexes compares it
	// with the last one to notice writes made by another process
	// (search.Engine.Follow).
	Census(ctx context.Context, space string) (Census, error)
	// Export calls fn for every source with all its chunks, ordered by id.
	Export(ctx context.Context, fn func(Document) error) error

	// Lexical returns full-text candidates, best first, one per text: of
	// the chunks holding one text, the best ranked (ties to the newer
	// chunk), so Limit counts distinct texts.
	Lexical(ctx context.Context, q LexicalQuery) ([]Candidate, error)

	// CreateSpace records a new vector space; ECONFLICT if the name exists
	// with different parameters. The first space created becomes the read space.
	CreateSpace(ctx context.Context, s VectorSpace) (VectorSpace, error)
	Spaces(ctx context.Context) ([]VectorSpace, error)
	// UseSpace makes the named space the one searches read from.
	UseSpace(ctx context.Context, name string) error
	// DropSpace deletes a space and its vectors; EINVALID for the read space.
	DropSpace(ctx context.Context, name string) error
	// PutVectors stores vectors (ECONFLICT on a dimension mismatch; EINVALID
	// for NaN, Inf or empty vectors) in one transaction.
	PutVectors(ctx context.Context, vecs []Vector) error
	// MissingVectors returns up to limit distinct vector keys of chunks
	// without a vector in the space, each with the header and text of its
	// lowest chunk, that chunk's id > after, ordered by that id.
	MissingVectors(ctx context.Context, space string, after int64, limit int) ([]PendingText, error)
	// SetRepairCursor records how far repair got in a space.
	SetRepairCursor(ctx context.Context, space string, chunkID int64) error
	// RecordRefusals records, by vector key, the texts the model of the
	// space (or its service) refused for their size, with the provider's
	// reason (which says which), so
	// that no process sends them to it again (Refusals); a key recorded
	// before keeps its first reason. A text that changes has another key,
	// and another model another space, so either is tried again. A
	// refusal goes with its space, with the last chunk holding its key
	// (as a vector does), and with ForgetRefusals.
	RecordRefusals(ctx context.Context, space string, reasons map[string]string) error
	// Refusals returns the recorded reasons of those of keys the space's
	// model refused.
	Refusals(ctx context.Context, space string, keys []string) (map[string]string, error)
	// ForgetRefusals deletes the space's recorded refusals, so that their
	// texts are sent again (a deliberate retry: the provider's limit was
	// raised); it returns how many there were.
	ForgetRefusals(ctx context.Context, space string) (int, error)
	// VectorsByKey returns the stored vectors of a space for the given keys.
	VectorsByKey(ctx context.Context, space string, keys []string) (map[string][]float32, error)
	// VectorKeys returns the keys of the vectors the space holds, in no
	// particular order.
	VectorKeys(ctx context.Context, space string) ([]string, error)
	// ScanVectors calls fn for every chunk that has a vector in the space.
	// fn may keep c and vec: each call is given its own.
	ScanVectors(ctx context.Context, space string, fn func(c IndexedChunk, vec []float32) error) error
	// StreamVectors calls fn for every chunk that has a vector in the
	// space, as ScanVectors does, but in whatever order the store reads
	// fastest, and vec is valid only during the call (the store may reuse
	// it): for scoring one query against the vectors as they are read,
	// which keeps none of them.
	StreamVectors(ctx context.Context, space string, fn func(c IndexedChunk, vec []float32) error) error

	// RecordSweep appends a sweep record; Stats reports the latest.
	RecordSweep(ctx context.Context, r SweepRecord) error
	// LockVault takes the sweep lock of a vault (the absolute path its
	// sources record as Source.Vault), which keeps sweeps of one vault
	// into one store to one at a time, whichever processes or machines
	// share the store: a second would parse, embed and write the same
	// files again. unlock releases it. When another holder, in this
	// process or another, has the lock, LockVault returns an ECONFLICT
	// error naming that holder when the store can tell; or, given wait,
	// calls wait once with that error and waits until the lock is free or
	// ctx is done. A lock ends with its holder however that ends (a
	// process killed, a connection lost), so a crash never keeps sweeps
	// out. ctx bounds only the taking; given a context of WithVaultLock
	// for this vault, the lock is recorded under its mark, and writes
	// made with that context fail once the store no longer holds it: a
	// lock can end before unlock (on PostgreSQL its session can, with a
	// server restart, a cut connection, a terminated backend).
	LockVault(ctx context.Context, vault string, wait func(busy error)) (unlock func(), err error)
	Stats(ctx context.Context) (Stats, error)
	// OwnerStats counts one owner's memories and diary days, as Stats
	// counts every owner's: its Sources, Chunks, Bytes and IndexStates
	// hold only those sources ("" is the unowned ones), its other fields
	// are empty. A token bound to an owner is shown these in place of
	// every owner's (a count is not another owner's to read either).
	OwnerStats(ctx context.Context, owner string) (Stats, error)
	// Ping checks that the database answers, at the cost of one trivial
	// statement: for a server's readiness (/readyz).
	Ping(ctx context.Context) error
	Close() error
}

// commitHookKey is the context key of WithCommitHook.
type commitHookKey struct{}

// WithCommitHook returns a context that makes a Store write (Write, Update,
// Delete, PutVectors) call hook once, right before it commits, after all of
// the transaction's other work; a write that fails before then never calls
// it. search.Engine takes its write lock there, so searches run during the
// transaction's work and wait only for the commit and the index update.
func WithCommitHook(ctx context.Context, hook func()) context.Context {
	return context.WithValue(ctx, commitHookKey{}, hook)
}

// CommitHook returns the hook of WithCommitHook, or nil.
func CommitHook(ctx context.Context) func() {
	h, _ := ctx.Value(commitHookKey{}).(func())
	return h
}

// writeGuardKey is the context key of WithWriteGuard.
type writeGuardKey struct{}

// WriteGuard decides, inside a write's transaction, whether a document is
// written: stored is the source the store holds under the document's id
// (nil when it holds none). It may be called again for the same document
// should the write begin again, and must not write to the store.
type WriteGuard func(stored *Source, d *Document) bool

// WithWriteGuard returns a context that makes a Store Write ask guard about
// each of its documents, in the transaction that writes them: a document
// the guard refuses is left out with the vectors of texts only it holds
// (the source the store holds stays exactly as it was, vectors and index
// state included), the others are written as usual. The
// read and the write are one transaction, so no other write comes between
// them: a condition on what the store holds ("only over an older copy")
// holds when the document is written. Update ignores it.
func WithWriteGuard(ctx context.Context, guard WriteGuard) context.Context {
	return context.WithValue(ctx, writeGuardKey{}, guard)
}

// WriteGuardOf returns the guard of WithWriteGuard, or nil.
func WriteGuardOf(ctx context.Context) WriteGuard {
	g, _ := ctx.Value(writeGuardKey{}).(WriteGuard)
	return g
}

// deleteGuardKey is the context key of WithDeleteGuard.
type deleteGuardKey struct{}

// DeleteGuard decides, inside a removal's transaction, whether the source
// stored under an id is removed: stored is what the store holds (archive
// sources without chunks included); it is not called for an id the store
// does not hold. It may be called again for the same id should the
// transaction begin again, and must not write to the store.
type DeleteGuard func(stored *Source) bool

// WithDeleteGuard returns a context that makes a Store Delete, and the
// removals of a Write, ask guard about each source they would remove, in
// the transaction that removes them: a source the guard refuses stays
// exactly as it is, and is not counted as removed. The read and the
// removal are one transaction, so no other write comes between them: a
// removal decided on an earlier read ("the file of this version is gone")
// spares a source written since.
func WithDeleteGuard(ctx context.Context, guard DeleteGuard) context.Context {
	return context.WithValue(ctx, deleteGuardKey{}, guard)
}

// DeleteGuardOf returns the guard of WithDeleteGuard, or nil.
func DeleteGuardOf(ctx context.Context) DeleteGuard {
	g, _ := ctx.Value(deleteGuardKey{}).(DeleteGuard)
	return g
}

// vaultLockKey is the context key of WithVaultLock.
type vaultLockKey struct{}

// VaultLockMark is what WithVaultLock puts in a context: the vault, and,
// by its address, one taking of its lock, told apart from any other.
type VaultLockMark struct{ Vault string }

// WithVaultLock returns a context for taking the sweep lock of vault
// (Store.LockVault) and writing under it. The store records the lock it
// gives under the context's mark; every write made with the context
// (Write, Update, Delete, PutVectors and the others) then checks, in its
// transaction right before it commits, that the store still holds that
// lock, and fails, writing nothing, with an error wrapping
// store.ErrVaultLockLost when it does not (released, lost with the
// database session that held it, or never taken with this context). A
// sweep stops at its next write once another may have taken the vault,
// instead of writing beside it.
func WithVaultLock(ctx context.Context, vault string) context.Context {
	return context.WithValue(ctx, vaultLockKey{}, &VaultLockMark{Vault: vault})
}

// VaultLockOf returns the mark of WithVaultLock, or nil.
func VaultLockOf(ctx context.Context) *VaultLockMark {
	m, _ := ctx.Value(vaultLockKey{}).(*VaultLockMark)
	return m
}

// InputKind tells an embedder whether texts are queries or documents, since
// many models prefix or encode them differently.
type InputKind int

const (
	InputQuery InputKind = iota
	InputDocument
)

// EmbedderInfo describes an embedder.
type EmbedderInfo struct {
	Provider   string // builtin, ollama, openai, cloudflare
	Model      string
	Dim        int  // 0 when not known until the first call
	MaxTokens  int  // the model's input window, 0 when unknown
	Normalized bool // vectors come out with unit length
}

// Embedder turns texts into vectors. Implementations return exactly one
// vector per text, all of the described dimension, or an error.
type Embedder interface {
	Info() EmbedderInfo
	Embed(ctx context.Context, kind InputKind, texts []string) ([][]float32, error)
}

// Search modes.
const (
	ModeHybrid   = "hybrid"
	ModeLexical  = "lexical"
	ModeSemantic = "semantic"
)

// Search limits.
const (
	DefaultLimit     = 5
	MaxLimit         = 20
	DefaultPerSource = 2
	MaxQueryLen      = 500 // characters
)

// SearchRequest is one search.
type SearchRequest struct {
	Query     string
	Mode      string // "" means hybrid when vectors exist, else lexical
	Limit     int    // 0 means DefaultLimit
	PerSource int    // 0 means DefaultPerSource
	Filter    Filter
}

// Hit is one search result.
type Hit struct {
	Source     string `json:"source"`
	ChunkIndex int    `json:"chunk_index"`
	Kind       Kind   `json:"kind"`
	// Owner is a memory's or diary day's owner ("" for unowned ones and
	// archive files): a caller that may see several owners' memories
	// passes it back to read around the hit (get_context).
	Owner  string   `json:"owner,omitempty"`
	Title  string   `json:"title,omitempty"`
	Date   string   `json:"date,omitempty"`
	Score  float64  `json:"score"`
	Match  []string `json:"match,omitempty"` // how it matched: "exact", "semantic", "text"
	Text   string   `json:"text"`
	AlsoIn []string `json:"also_in,omitempty"` // other sources holding the identical passage
}

// SearchResponse is what a search returns.
type SearchResponse struct {
	Query   string `json:"query"`
	Mode    string `json:"mode"`           // the mode actually used
	Note    string `json:"note,omitempty"` // e.g. why hybrid fell back to lexical
	Results []Hit  `json:"results"`
	// EmbedError is why the query could not be embedded when hybrid fell
	// back to full text for that reason: for the operator (the command's
	// stderr, the server's log), never the client, since it may name the
	// embedder's address.
	EmbedError error `json:"-"`
}

// Searcher answers searches and reads around hits.
type Searcher interface {
	Search(ctx context.Context, req SearchRequest) (SearchResponse, error)
	// Context returns the chunks of source (of the given kind, "" for any)
	// within radius of index, and the kind of the source it read.
	Context(ctx context.Context, source string, kind Kind, index, radius int, scope Filter) ([]StoredChunk, Kind, error)
}

func isCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// EmbedInput is the text an embedder sees for a chunk: its context header
// (title, date), a blank line, then the verbatim text. Every path that embeds
// chunks (sweep, memories, repair) uses it, so one header and text always get
// the same vector (stored under their VectorKey).
func EmbedInput(header, text string) string {
	if header == "" {
		return text
	}
	return header + "\n\n" + text
}
