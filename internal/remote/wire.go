// Package remote sweeps a local vault into a recall server over HTTP: it
// parses and chunks conversations locally, posts the chunks to the server's
// /ingest endpoint in batches, and keeps a local manifest of what the server
// has confirmed, so an unchanged file is never sent twice and a file whose
// chunks did not all arrive is sent again on the next run.
//
// This file is the /ingest protocol itself, shared with internal/server. It
// is the payload of the archive system recall replaces, answered with a
// status per source.
package remote

// MaxBody is the most a server takes in one /ingest body unless configured
// otherwise (server.DefaultMaxBody).
const MaxBody = 4 << 20

// IngestRequest is the body of POST /ingest.
type IngestRequest struct {
	Chunks []IngestChunk `json:"chunks"`
}

// IngestChunk is one chunk of one source. A source's chunks may arrive over
// several requests; the source is written, replacing the stored one, once
// all TotalChunks have arrived.
type IngestChunk struct {
	SourceFile        string `json:"source_file"`  // vault-relative path; backslashes are read as slashes
	ChunkIndex        int    `json:"chunk_index"`  // 0 <= ChunkIndex < TotalChunks
	TotalChunks       int    `json:"total_chunks"` // the source's chunk count
	Content           string `json:"content"`
	Era               string `json:"era,omitempty"` // date: YYYY, YYYY-MM or YYYY-MM-DD
	ConversationTitle string `json:"conversation_title,omitempty"`
	// Version names the version of the whole source the chunk belongs to
	// (the client sends a hash of all its chunks): the server assembles a
	// source only from chunks of one version and starts over when another
	// arrives, so chunks an earlier run left waiting never mix with these.
	// Optional: chunks without one are assembled by source and total_chunks.
	Version string `json:"version,omitempty"`
}

// Source statuses in an IngestResponse.
const (
	StatusWritten   = "written"   // every chunk arrived; the source was stored
	StatusUnchanged = "unchanged" // every chunk arrived; the stored source was already identical
	StatusPartial   = "partial"   // accepted and staged; more chunks are expected
	StatusRejected  = "rejected"  // not accepted: Error says why; send the whole source again
)

// IngestResponse answers POST /ingest with one entry per source named in
// the request, in the order they first appear.
type IngestResponse struct {
	Sources []SourceStatus `json:"sources"`
}

// SourceStatus is what became of one source's chunks.
type SourceStatus struct {
	SourceFile  string `json:"source_file"` // as sent
	Source      string `json:"source"`      // the stored source id ("" when the path was refused)
	Status      string `json:"status"`
	Received    int    `json:"received"` // distinct chunks the server holds for it
	TotalChunks int    `json:"total_chunks"`
	Error       string `json:"error,omitempty"`
}

// Complete reports whether the source is stored in full.
func (s SourceStatus) Complete() bool {
	return s.Status == StatusWritten || s.Status == StatusUnchanged
}
