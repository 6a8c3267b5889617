package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
)

// The client side of the HTTP exchange: a request, its retries and what a
// failure means for the run.

// post sends one request to the server's path and decodes its answer into
// out, retrying transient failures with backoff.
func (s *sweeper) post(ctx context.Context, path string, req, out any) error {
	body, err := encode(req)
	if err != nil {
		return err
	}
	wait := time.Second
	for attempt := 0; ; attempt++ {
		retryAfter, err := s.postOnce(ctx, path, body, out)
		if err == nil {
			return nil
		}
		var fatal fatalError
		var bad badBatch
		var refused zoneRefused
		if errors.As(err, &fatal) || errors.As(err, &bad) || errors.As(err, &refused) || attempt >= s.opt.Retries || s.opt.Retries < 0 {
			return err
		}
		if retryAfter > 0 {
			wait = retryAfter
		}
		wait = min(wait, s.opt.MaxWait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait *= 2
	}
}

// postOnce makes one request. Errors that retrying cannot fix are fatalError.
func (s *sweeper) postOnce(ctx context.Context, path string, body []byte, out any) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opt.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, fatalError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	if s.opt.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.opt.Token)
	}
	resp, err := s.opt.HTTPClient.Do(req)
	if err != nil {
		return 0, unreachableError{err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		msg := serverMessage(data)
		err := fmt.Errorf("the server answered %s: %s", resp.Status, msg)
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
			code := map[int]string{http.StatusUnauthorized: recall.EUNAUTHORIZED, http.StatusForbidden: recall.EFORBIDDEN,
				http.StatusNotFound: recall.ENOTFOUND}[resp.StatusCode]
			return 0, fatalError{recall.Errorf(code, "%s %s: %s", s.opt.URL, resp.Status, msg)}
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			return time.Duration(secs) * time.Second, err
		}
		if resp.StatusCode >= 500 {
			return 0, err
		}
		if resp.StatusCode == http.StatusBadRequest && strings.Contains(msg, `unknown field "version"`) {
			// A server from before chunks carried a version refuses every
			// batch alike: sending the rest of the vault cannot help.
			return 0, fatalError{recall.Errorf(recall.EINVALID, "the server at %s is older than this client: upgrade it", s.opt.URL)}
		}
		if resp.StatusCode == http.StatusBadRequest && strings.Contains(msg, `unknown field "zone"`) {
			return 0, zoneRefused{err} // one from before chunks carried their zone: sent without it
		}
		// Other 4xx: this batch is wrong and will stay wrong; later ones may be fine.
		return 0, badBatch{err}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return 0, fmt.Errorf("the server's answer to %s is not what it should be: %w", path, err)
	}
	return 0, nil
}

// unreachableError is a request that got no answer: the connection was
// refused, reset or timed out.
type unreachableError struct{ err error }

func (e unreachableError) Error() string { return e.err.Error() }
func (e unreachableError) Unwrap() error { return e.err }

// zoneRefused is a batch refused by a server older than IngestChunk.Zone.
type zoneRefused struct{ err error }

func (e zoneRefused) Error() string { return e.err.Error() }

// badBatch is a batch the server refused as invalid: not retried now.
type badBatch struct{ err error }

func (e badBatch) Error() string { return e.err.Error() }

func serverMessage(data []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
