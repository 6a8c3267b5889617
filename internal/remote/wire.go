// Package remote sweeps a local vault into a recall server over HTTP: it
// parses and chunks conversations locally, posts the chunks to the server's
// /ingest endpoint in batches, and keeps a local manifest of what the server
// has confirmed, so an unchanged file is never sent twice and a file whose
// chunks did not all arrive is sent again on the next run. What left the
// vault is taken back through /ingest/remove: conversations a changed
// export no longer holds, and, with Prune, the sources of files gone.
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
	SourceFile  string `json:"source_file"`  // vault-relative path; backslashes are read as slashes
	ChunkIndex  int    `json:"chunk_index"`  // 0 <= ChunkIndex < TotalChunks
	TotalChunks int    `json:"total_chunks"` // the source's chunk count
	Content     string `json:"content"`
	// Era is the source's date (YYYY, YYYY-MM or YYYY-MM-DD) and
	// ConversationTitle its title. Either one absent (nil) from every chunk
	// of a source is made as a local sweep makes it for the file
	// SourceFile names (ingest.Label): the file's name, a date in its path.
	// Sent, even empty, it is stored as sent: a conversation of an export
	// with no title or date of its own has none (recall sweep --remote
	// sends both, labelled by ingest.Label).
	Era               *string `json:"era,omitempty"`
	ConversationTitle *string `json:"conversation_title,omitempty"`
	// Version names the version of the whole source the chunk belongs to
	// (the client sends a hash of all its chunks): the server assembles a
	// source only from chunks of one version and starts over when another
	// arrives, so chunks an earlier run left waiting never mix with these.
	// Optional: chunks without one are assembled by source and total_chunks.
	Version string `json:"version,omitempty"`
	// Zone names the time zone the source's date was made in, when the
	// day of a moment written in UTC dated it (ingest.ZoneKey of the
	// client's zone), or is "" when its date does not depend on one: the
	// server records it with the source (recall.Source.Zone), as a local
	// sweep does. Absent (nil) from every chunk of a source, as older
	// clients send them, it is recorded as "". The client's manifest
	// records it too, and a run in another zone sends the file again.
	// Last in the struct, so that a server older than Version names that
	// field first when it refuses the request; one that knows Version but
	// not Zone refuses this field (unknown field "zone"), and the client
	// then sends its chunks without it.
	Zone *string `json:"zone,omitempty"`
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

// RemovePath is where a remote sweep removes sources it sent: POST with a
// RemoveRequest, answered with a RemoveResponse.
const RemovePath = "/ingest/remove"

// MaxRemoveNames bounds the files and sources one RemoveRequest names.
const MaxRemoveNames = 1000

// RemoveRequest is the body of POST /ingest/remove: the archive sources of
// vault files that are gone, and conversations an export no longer holds.
// Only sources that came through /ingest are removed: a source the server
// swept from a folder of its own (serve --vault) is kept, as are memories
// and diary days, which no path here can name.
type RemoveRequest struct {
	// Files are vault files (paths as source_file takes them): each
	// file's own source and the sources of its conversations
	// ("<file>/<conversation id>") are removed.
	Files []string `json:"files,omitempty"`
	// Sources are single sources, such as one conversation of an export.
	Sources []string `json:"sources,omitempty"`
}

// RemoveResponse answers POST /ingest/remove with one entry per name sent,
// in the order sent.
type RemoveResponse struct {
	Files   []Removal `json:"files"`
	Sources []Removal `json:"sources"`
	Removed int       `json:"removed"` // sources removed in all
}

// Removal is what became of the sources one name covers.
type Removal struct {
	Name    string `json:"name"`           // as sent
	Source  string `json:"source"`         // the source id it names
	Removed int    `json:"removed"`        // sources removed (0: the server held none)
	Kept    int    `json:"kept,omitempty"` // sources the server swept from a folder of its own, or stored again since the request read them: not removed
}

// SourcesPath is where a remote sweep asks which sources the server holds
// for a file it sent: POST with a SourcesRequest, answered with a
// SourcesResponse. A client whose manifest does not record the
// conversations it sent for an export (one an older client wrote) asks it
// once the export changed, so that conversations the export lost before
// are removed too.
const SourcesPath = "/ingest/sources"

// SourcesRequest is the body of POST /ingest/sources.
type SourcesRequest struct {
	// File is a vault file, as source_file takes it.
	File string `json:"file"`
	// Cursor continues a listing: the Next of the page before ("" starts it).
	Cursor string `json:"cursor,omitempty"`
}

// SourcesResponse answers POST /ingest/sources with one page of the
// sources RemoveRequest.Files would remove for the file: its own source
// and the sources of its conversations ("<file>/<conversation id>", one
// level under it), archive sources sent through /ingest only, in id order.
type SourcesResponse struct {
	File    string   `json:"file"`           // the source id File names
	Sources []string `json:"sources"`        // this page's ids (a page may hold none and still have a Next)
	Next    string   `json:"next,omitempty"` // the cursor of the next page; "" after the last
}
