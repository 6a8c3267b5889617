package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/recall-mcp/recall"
)

// TestFailCodes: a server's errors reach callers with the code that says
// what to do about them, and what was being done.
func TestFailCodes(t *testing.T) {
	db := &DB{}
	for _, c := range []struct {
		err  error
		code string
	}{
		{&pgconn.PgError{Code: "XX001", Message: "invalid page in block 7 of relation base/16384/16385"}, recall.EDAMAGED},
		{&pgconn.PgError{Code: "XX002", Message: "index \"chunks_pkey\" contains unexpected zero page"}, recall.EDAMAGED},
		{&pgconn.PgError{Code: "53100", Message: "could not extend file"}, recall.EUNAVAILABLE},
		{&pgconn.PgError{Code: "22021", Message: "invalid byte sequence"}, recall.EINVALID},
		{&pgconn.PgError{Code: "54000", Message: "index row size 3016 exceeds btree version 4 maximum 2704 for index \"postings_pkey\""}, recall.EINVALID},
		{&pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}, recall.EUNAVAILABLE},
		{&pgconn.PgError{Code: "55P03", Message: "canceling statement due to lock timeout"}, recall.EUNAVAILABLE},
		{&pgconn.PgError{Code: "53300", Message: "too many connections for role \"recall\""}, recall.EUNAVAILABLE},
		{fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "XX001"}), recall.EDAMAGED},
		{errors.New("something else"), recall.EINTERNAL},
	} {
		err := db.fail(context.Background(), c.err, "read chunk %d", 7)
		if got := recall.ErrorCode(err); got != c.code {
			t.Errorf("%v: code %s, want %s", c.err, got, c.code)
		}
		if msg := recall.ErrorMessage(err); c.code != recall.EINTERNAL && msg[:12] != "read chunk 7" {
			t.Errorf("%v: message %q does not say what failed", c.err, msg)
		}
	}
}
