package store

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/recall-mcp/recall"
)

// ErrNewerSchema is wrapped when a database records a migration this
// binary does not know: a newer recall wrote it, and an older one must not
// guess at its schema.
var ErrNewerSchema = errors.New("database was written by a newer version of recall")

// NewerSchema is the error for a database whose highest recorded schema
// version, v, is past this binary's known ones. It says what to do: a user
// who went back to an older recall has the newer one, or a copy made
// before it upgraded the database.
func NewerSchema(v, known int) error {
	return fmt.Errorf("%w (schema version %d; this one knows up to %d): use that version, or a backup made before it upgraded the database; nothing was changed", ErrNewerSchema, v, known)
}

// UpgradedSince is the error of a write refused because a newer recall
// upgraded the database, to schema version v, after this process opened
// it (a server left running across an upgrade). It wraps ErrNewerSchema
// and, unlike NewerSchema's, its message reaches the server's log and its
// clients (an internal error showed them only "internal error"), and it
// says what helps: this process must give way to the newer recall.
func UpgradedSince(v, known int) error {
	return recall.WrapError(recall.EUNAVAILABLE, ErrNewerSchema,
		"a newer recall upgraded the database to schema version %d after this process opened it (this one knows up to %d): "+
			"nothing was written; restart this process with the newer recall", v, known)
}

// Migration is one versioned schema step of a backend.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations reads a backend's embedded migrations, migrations/NNNN_name.sql
// in fsys, in order; versions are unique and run 1..n without gaps.
func Migrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s is not named NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration versions must run 1..n without gaps; found %d at position %d", m.Version, i+1)
		}
	}
	return ms, nil
}
