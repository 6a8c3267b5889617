package server

import (
	"context"
	"strings"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/remote"
)

// POST /ingest/remove is how a remote sweep takes back what it sent: the
// sources of vault files that are gone (recall sweep --remote --prune) and
// conversations a changed export no longer holds. It removes archive
// sources that came through /ingest only (vault ""): a source the server
// sweeps from a folder of its own follows that folder, and memories and
// diary days cannot be named (their ids are no paths).

// maxRemoveSources bounds the sources one request removes, all its names
// together: one transaction, and its ids held in memory.
const maxRemoveSources = 100_000

// removeSources resolves every name first, so a request holding one bad
// name removes nothing, then removes all of it in one write.
func (s *Server) removeSources(ctx context.Context, req remote.RemoveRequest) (remote.RemoveResponse, error) {
	n := len(req.Files) + len(req.Sources)
	if n == 0 {
		return remote.RemoveResponse{}, recall.Errorf(recall.EINVALID, "files and sources are empty: name at least one")
	}
	if n > remote.MaxRemoveNames {
		return remote.RemoveResponse{}, recall.Errorf(recall.EINVALID, "%d names in one request; send at most %d", n, remote.MaxRemoveNames)
	}
	resp := remote.RemoveResponse{Files: make([]remote.Removal, len(req.Files)), Sources: make([]remote.Removal, len(req.Sources))}
	for _, names := range []struct {
		field string
		sent  []string
		out   []remote.Removal
	}{{"files", req.Files, resp.Files}, {"sources", req.Sources, resp.Sources}} {
		for i, name := range names.sent {
			id, err := cleanName(names.field, name)
			if err != nil {
				return remote.RemoveResponse{}, err
			}
			names.out[i] = remote.Removal{Name: name, Source: id}
		}
	}
	var ids []string
	read := map[string]recall.Source{}      // the version of each source to remove, as read
	namedBy := map[string]*remote.Removal{} // the name that covers it
	take := func(r *remote.Removal, src recall.Source) error {
		_, seen := read[src.ID]
		switch {
		case src.Kind != recall.KindArchive || seen:
		case src.Vault != "":
			r.Kept++
		default:
			if len(ids) >= maxRemoveSources {
				return recall.Errorf(recall.ETOOLARGE, "the names cover more than %d sources: send fewer in one request", maxRemoveSources)
			}
			read[src.ID], namedBy[src.ID] = src, r
			ids = append(ids, src.ID)
			r.Removed++
		}
		return nil
	}
	one := func(r *remote.Removal) error {
		src, err := s.st.Source(ctx, r.Source)
		if recall.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return take(r, src)
	}
	for i := range resp.Files {
		r := &resp.Files[i]
		if err := one(r); err != nil {
			return remote.RemoveResponse{}, err
		}
		for cursor := ""; ; {
			page, next, err := s.conversationsOf(ctx, r.Source, cursor)
			if err != nil {
				return remote.RemoveResponse{}, err
			}
			for _, src := range page {
				if err := take(r, src); err != nil {
					return remote.RemoveResponse{}, err
				}
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
	for i := range resp.Sources {
		if err := one(&resp.Sources[i]); err != nil {
			return remote.RemoveResponse{}, err
		}
	}
	s.unstage(resp.Files, resp.Sources)
	if len(ids) > 0 {
		// Only the versions read above go: one stored since (an upload of
		// the same file, a sweep of the server's own folder) is kept, as
		// the check and the removal are one transaction.
		kept := map[string]bool{}
		dctx := recall.WithDeleteGuard(ctx, func(stored *recall.Source) bool {
			was := read[stored.ID]
			same := stored.Kind == recall.KindArchive && stored.Vault == "" && stored.UpdatedAt.Equal(was.UpdatedAt) &&
				stored.ContentHash == was.ContentHash && stored.ChunkCount == was.ChunkCount
			kept[stored.ID] = !same // set again if the transaction begins again
			return same
		})
		n, _, err := s.eng.Delete(dctx, ids...)
		if err != nil {
			return remote.RemoveResponse{}, err
		}
		for id, k := range kept {
			if k {
				namedBy[id].Removed--
				namedBy[id].Kept++
			}
		}
		resp.Removed = n
		s.metrics.ingested.add(float64(n), "removed")
	}
	return resp, nil
}

// conversationsOf reads one page, from cursor, of the archive sources one
// level under the file id (an export's conversations, as a local sweep
// assigns sources to their files); next is "" after the last page. A page
// reads at most 1,000 sources, deeper ones included, so it may give none
// and still have a next.
func (s *Server) conversationsOf(ctx context.Context, file, cursor string) (page []recall.Source, next string, err error) {
	prefix := file + "/"
	page, next, err = s.st.ListSources(ctx, recall.ListOptions{Filter: recall.Filter{Kinds: []recall.Kind{recall.KindArchive}, SourcePrefix: prefix},
		Cursor: cursor, Limit: 1000})
	if err != nil {
		return nil, "", err
	}
	kept := page[:0]
	for _, src := range page {
		if !strings.Contains(src.ID[len(prefix):], "/") {
			kept = append(kept, src)
		}
	}
	return kept, next, nil
}

// POST /ingest/sources tells a remote sweep which sources it holds for a
// file, a page at a time: the sources /ingest/remove would remove for it,
// so that a client that does not know which conversations it sent for an
// export (its manifest was written by an older client) can remove those
// the export no longer holds. Who may remove them may list them.
func (s *Server) listSources(ctx context.Context, req remote.SourcesRequest) (remote.SourcesResponse, error) {
	id, err := cleanName("file", req.File)
	if err != nil {
		return remote.SourcesResponse{}, err
	}
	resp := remote.SourcesResponse{File: id, Sources: []string{}}
	sent := func(src recall.Source) bool { return src.Kind == recall.KindArchive && src.Vault == "" }
	if req.Cursor == "" {
		src, err := s.st.Source(ctx, id)
		switch {
		case err == nil && sent(src):
			resp.Sources = append(resp.Sources, src.ID)
		case err != nil && !recall.IsNotFound(err):
			return remote.SourcesResponse{}, err
		}
	}
	page, next, err := s.conversationsOf(ctx, id, req.Cursor)
	if err != nil {
		return remote.SourcesResponse{}, err
	}
	for _, src := range page {
		if sent(src) {
			resp.Sources = append(resp.Sources, src.ID)
		}
	}
	resp.Next = next
	return resp, nil
}

// cleanName checks one name as /ingest checks source_file.
func cleanName(field, name string) (string, error) {
	id, err := recall.CleanSourceID(name)
	if err != nil {
		return "", recall.Errorf(recall.EINVALID, "%s: %s", field, recall.ErrorMessage(err))
	}
	return id, nil
}

// unstage drops chunks waiting in staging for the sources named: a source
// removed must not be written later by the rest of an older upload.
func (s *Server) unstage(files, sources []remote.Removal) {
	st := s.stage
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, r := range sources {
		st.drop(r.Source)
	}
	if len(files) == 0 {
		return
	}
	gone := make(map[string]bool, len(files))
	for _, r := range files {
		gone[r.Source] = true
		st.drop(r.Source)
	}
	for id := range st.m {
		if p := ingest.Parent(id); p != "" && gone[p] {
			st.drop(id)
		}
	}
}
