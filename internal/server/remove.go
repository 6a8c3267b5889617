package server

import (
	"context"
	"net/http"
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

func (s *Server) serveRemove(w http.ResponseWriter, r *http.Request) {
	// Who may put text in front of every owner may take it back; a token
	// bound to one owner may do neither.
	if id := identityFrom(r.Context()); id.bound {
		s.writeError(w, r, recall.Errorf(recall.EFORBIDDEN, "this token is bound to an owner; removing sources of the shared archive needs an unbound token or the admin token"))
		return
	}
	var req remote.RemoveRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	resp, err := s.removeSources(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ok(w, r, resp, resp.Removed)
}

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
	for i, name := range req.Files {
		if err := cleanName(&resp.Files[i], "files", name); err != nil {
			return remote.RemoveResponse{}, err
		}
	}
	for i, name := range req.Sources {
		if err := cleanName(&resp.Sources[i], "sources", name); err != nil {
			return remote.RemoveResponse{}, err
		}
	}
	var ids []string
	seen := map[string]bool{}
	take := func(r *remote.Removal, src recall.Source) error {
		switch {
		case src.Kind != recall.KindArchive || seen[src.ID]:
		case src.Vault != "":
			r.Kept++
		default:
			if len(ids) >= maxRemoveSources {
				return recall.Errorf(recall.ETOOLARGE, "the names cover more than %d sources: send fewer in one request", maxRemoveSources)
			}
			seen[src.ID] = true
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
		// An export's conversations, one level under the file, as a
		// local sweep assigns sources to their files.
		prefix := r.Source + "/"
		opts := recall.ListOptions{Filter: recall.Filter{Kinds: []recall.Kind{recall.KindArchive}, SourcePrefix: prefix}, Limit: 1000}
		for {
			page, next, err := s.st.ListSources(ctx, opts)
			if err != nil {
				return remote.RemoveResponse{}, err
			}
			for _, src := range page {
				if strings.Contains(src.ID[len(prefix):], "/") {
					continue
				}
				if err := take(r, src); err != nil {
					return remote.RemoveResponse{}, err
				}
			}
			if next == "" {
				break
			}
			opts.Cursor = next
		}
	}
	for i := range resp.Sources {
		if err := one(&resp.Sources[i]); err != nil {
			return remote.RemoveResponse{}, err
		}
	}
	s.unstage(resp.Files, resp.Sources)
	if len(ids) > 0 {
		if _, _, err := s.eng.Delete(ctx, ids...); err != nil {
			return remote.RemoveResponse{}, err
		}
		s.metrics.ingested.add(float64(len(ids)), "removed")
	}
	resp.Removed = len(ids)
	return resp, nil
}

// cleanName checks one name as /ingest checks source_file.
func cleanName(r *remote.Removal, field, name string) error {
	r.Name = name
	id, err := recall.CleanSourceID(name)
	if err != nil {
		return recall.Errorf(recall.EINVALID, "%s: %s", field, recall.ErrorMessage(err))
	}
	r.Source = id
	return nil
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
