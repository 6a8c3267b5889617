package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/recall-mcp/recall"
)

// errorBody is every REST error: {"error": {"code": ..., "message": ...}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// httpStatus is the one mapping from recall error codes to HTTP statuses.
func httpStatus(code string) int {
	switch code {
	case recall.EINVALID:
		return http.StatusBadRequest
	case recall.ENOTFOUND:
		return http.StatusNotFound
	case recall.ECONFLICT:
		return http.StatusConflict
	case recall.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case recall.EFORBIDDEN:
		return http.StatusForbidden
	case recall.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case recall.ERATELIMIT:
		return http.StatusTooManyRequests
	case recall.EUNAVAILABLE, recall.ECANCELED:
		return http.StatusServiceUnavailable
	}
	// EDAMAGED too is a 500, but its message is shown (writeError): the
	// operator must restore a backup.
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"internal error"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(escapeJSONHidden(buf.Bytes()))
}

// writeError answers with err's code and client-safe message. Internal
// errors are logged with the request id, which the client gets instead of
// the detail.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := recall.ErrorCode(err), recall.ErrorMessage(err)
	ri := reqInfoFrom(r.Context())
	id := "-"
	if ri != nil {
		id = ri.id
		ri.set(func(ri *reqInfo) { ri.errCode = code })
	}
	switch code {
	case recall.EINTERNAL:
		s.log.Error("request failed", "id", id, "err", err)
		msg = fmt.Sprintf("internal error (request %s)", id)
	case recall.EDAMAGED: // the client is told; the log says where
		s.log.Error("request failed", "id", id, "err", err)
	}
	if code == recall.EUNAUTHORIZED {
		w.Header().Set("WWW-Authenticate", `Bearer realm="recall"`)
	}
	if code == recall.ERATELIMIT && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	if ri != nil && ri.mcp {
		var rpcID any
		ri.set(func(ri *reqInfo) { rpcID = ri.rpcID })
		writeRPCError(w, httpStatus(code), rpcID, rpcCode(code), code, msg)
		return
	}
	writeJSON(w, httpStatus(code), errorBody{Error: errorDetail{Code: code, Message: shorten(msg)}})
}

// ok answers 200 with v and records how many results it holds.
func ok(w http.ResponseWriter, r *http.Request, v any, results int) {
	if ri := reqInfoFrom(r.Context()); ri != nil {
		ri.set(func(ri *reqInfo) { ri.results, ri.counted = results, true })
	}
	writeJSON(w, http.StatusOK, v)
}

func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return recall.Errorf(recall.ETOOLARGE, "the request body is over the %d byte limit", mbe.Limit)
	}
	return recall.WrapError(recall.EINVALID, err, "could not read the request body")
}

// decode reads one JSON object into v, refusing unknown fields and
// trailing data, with messages that name the field to fix. An empty body
// is refused: the endpoint needs some field.
func decode(r *http.Request, v any) error {
	return decodeBody(r, v, false)
}

// decodeOptional is decode for an endpoint whose every field is optional:
// an empty body is {}, every field its default.
func decodeOptional(r *http.Request, v any) error {
	return decodeBody(r, v, true)
}

func decodeBody(r *http.Request, v any, emptyOK bool) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return bodyError(err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if emptyOK {
			return nil
		}
		return recall.Errorf(recall.EINVALID, "the request body is empty: send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return recall.Errorf(recall.EINVALID, "the body is not valid JSON (at byte %d)", se.Offset)
		case errors.As(err, &te) && te.Field != "" && strings.HasPrefix(te.Value, "number "):
			// A number the field cannot hold: a fraction or one out of range.
			return recall.Errorf(recall.EINVALID, "field %s must be a whole number in range, not %s", te.Field, strings.TrimPrefix(te.Value, "number "))
		case errors.As(err, &te) && te.Field != "":
			return recall.Errorf(recall.EINVALID, "field %s must be %s, not %s", te.Field, withArticle(jsonType(te.Type.Kind().String())), withArticle(te.Value))
		case errors.As(err, &te):
			return recall.Errorf(recall.EINVALID, "the body must be a JSON object")
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return recall.Errorf(recall.EINVALID, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return recall.Errorf(recall.EINVALID, "the body is not valid JSON")
	}
	if dec.More() {
		return recall.Errorf(recall.EINVALID, "the body holds more than one JSON value")
	}
	return nil
}

func jsonType(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"), strings.HasPrefix(kind, "float"):
		return "number"
	case kind == "bool":
		return "boolean"
	case kind == "string":
		return "string"
	case kind == "slice":
		return "list"
	}
	return "object"
}

// params reads query parameters, refusing any not in allowed.
type params struct {
	v   url.Values
	err error
}

func queryParams(r *http.Request, allowed ...string) *params {
	v := r.URL.Query()
	p := &params{v: v}
	for name := range v {
		found := false
		for _, a := range allowed {
			found = found || a == name
		}
		if !found {
			p.err = recall.Errorf(recall.EINVALID, "unknown query parameter %q (allowed: %s)", name, strings.Join(allowed, ", "))
		}
	}
	return p
}

func (p *params) str(name string) string { return p.v.Get(name) }

func (p *params) int(name string) int {
	s := p.v.Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil && p.err == nil {
		p.err = recall.Errorf(recall.EINVALID, "query parameter %s must be a whole number", name)
	}
	return n
}

func (p *params) bool(name string) bool {
	s := p.v.Get(name)
	if s == "" {
		return false
	}
	b, err := strconv.ParseBool(s)
	if err != nil && p.err == nil {
		p.err = recall.Errorf(recall.EINVALID, "query parameter %s must be true or false", name)
	}
	return b
}

func callerFrom(r *http.Request) caller {
	return caller{id: identityFrom(r.Context()), ri: reqInfoFrom(r.Context())}
}

// restRoutes registers the REST API: the same operations as the MCP tools,
// with stored text returned verbatim.
func (s *Server) restRoutes(handle func(pattern string, admin bool, h http.HandlerFunc)) {
	handle("POST /api/search", false, func(w http.ResponseWriter, r *http.Request) {
		var in SearchInput
		if err := decode(r, &in); err != nil {
			s.writeError(w, r, err)
			return
		}
		resp, err := s.search(r.Context(), callerFrom(r), in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, resp, len(resp.Results))
	})
	handle("POST /api/context", false, func(w http.ResponseWriter, r *http.Request) {
		var in ContextInput
		if err := decode(r, &in); err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := s.context(r.Context(), callerFrom(r), in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, len(out.Chunks))
	})
	handle("GET /api/stats", false, func(w http.ResponseWriter, r *http.Request) {
		if p := queryParams(r); p.err != nil {
			s.writeError(w, r, p.err)
			return
		}
		out, err := s.stats(r.Context(), callerFrom(r))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, 1)
	})

	handle("PUT /api/memories/{key...}", false, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Value    string `json:"value"`
			Category string `json:"category,omitempty"`
			Owner    string `json:"owner,omitempty"`
			Date     string `json:"date,omitempty"`
		}
		if err := decode(r, &body); err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := s.save(r.Context(), callerFrom(r), SaveInput{Key: r.PathValue("key"), Value: body.Value,
			Category: body.Category, Owner: body.Owner, Date: body.Date})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, 1)
	})
	handle("GET /api/memories/{key...}", false, func(w http.ResponseWriter, r *http.Request) {
		p := queryParams(r, "owner")
		if p.err != nil {
			s.writeError(w, r, p.err)
			return
		}
		out, err := s.read(r.Context(), callerFrom(r), KeyInput{Key: r.PathValue("key"), Owner: p.str("owner")})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, 1)
	})
	handle("DELETE /api/memories/{key...}", false, func(w http.ResponseWriter, r *http.Request) {
		p := queryParams(r, "owner", "confirm")
		in := DeleteInput{Key: r.PathValue("key"), Owner: p.str("owner"), Confirm: p.bool("confirm")}
		if p.err != nil {
			s.writeError(w, r, p.err)
			return
		}
		out, err := s.deleteMemory(r.Context(), callerFrom(r), in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, 1)
	})
	handle("GET /api/memories", false, func(w http.ResponseWriter, r *http.Request) {
		p := queryParams(r, "prefix", "category", "owner", "since", "until", "cursor", "limit")
		in := FindInput{Prefix: p.str("prefix"), Category: p.str("category"), Owner: p.str("owner"),
			Since: p.str("since"), Until: p.str("until"), Cursor: p.str("cursor"), Limit: p.int("limit")}
		if p.err != nil {
			s.writeError(w, r, p.err)
			return
		}
		out, err := s.find(r.Context(), callerFrom(r), in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, len(out.Items))
	})

	handle("POST /api/diary", false, func(w http.ResponseWriter, r *http.Request) {
		var in DiaryWriteInput
		if err := decode(r, &in); err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := s.writeDiary(r.Context(), callerFrom(r), in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, 1)
	})
	handle("GET /api/diary/{date}", false, func(w http.ResponseWriter, r *http.Request) {
		p := queryParams(r, "owner")
		if p.err != nil {
			s.writeError(w, r, p.err)
			return
		}
		out, err := s.readDiary(r.Context(), callerFrom(r), DiaryReadInput{Date: r.PathValue("date"), Owner: p.str("owner")})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, len(out.Entries))
	})
	handle("GET /api/diary", false, func(w http.ResponseWriter, r *http.Request) {
		p := queryParams(r, "days", "owner")
		in := RecentInput{Days: p.int("days"), Owner: p.str("owner")}
		if p.err != nil {
			s.writeError(w, r, p.err)
			return
		}
		out, err := s.recentDiary(r.Context(), callerFrom(r), in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, len(out.Days))
	})

	handle("GET /admin/memories", true, func(w http.ResponseWriter, r *http.Request) {
		p := queryParams(r, "cursor", "limit")
		in := ListInput{Cursor: p.str("cursor"), Limit: p.int("limit")}
		if p.err != nil {
			s.writeError(w, r, p.err)
			return
		}
		out, err := s.listAll(r.Context(), in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, len(out.Items))
	})
	handle("POST /admin/reindex", true, func(w http.ResponseWriter, r *http.Request) {
		var in ReindexInput
		if err := decode(r, &in); err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := s.reindex(r.Context(), in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, 1)
	})
	handle("GET /admin/index-status", true, func(w http.ResponseWriter, r *http.Request) {
		out, err := s.indexStatus(r.Context())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, len(out.Pending))
	})
	handle("POST /admin/repair", true, func(w http.ResponseWriter, r *http.Request) {
		var in RepairInput
		if err := decodeOptional(r, &in); err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := s.repair(r.Context(), in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, out, out.Embedded)
	})
}

// archiveRoute serves an endpoint of the archive every owner shares
// (/ingest, /ingest/remove, /ingest/sources): a token bound to one owner
// may not put text in front of the others, nor take it back or list it
// (doing says which, in the refusal); the body is one JSON request, and
// results counts what the answer holds for the audit log.
func archiveRoute[Req, Resp any](s *Server, doing string, do func(context.Context, Req) (Resp, error), results func(Resp) int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if id := identityFrom(r.Context()); id.bound {
			s.writeError(w, r, recall.Errorf(recall.EFORBIDDEN, "this token is bound to an owner; %s the shared archive needs an unbound token or the admin token", doing))
			return
		}
		var req Req
		if err := decode(r, &req); err != nil {
			s.writeError(w, r, err)
			return
		}
		resp, err := do(r.Context(), req)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ok(w, r, resp, results(resp))
	}
}
