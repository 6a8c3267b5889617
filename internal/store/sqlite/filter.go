package sqlite

import (
	"encoding/json"
	"strings"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

// filterSQL returns the conditions of f on the sources table aliased s, as
// SQL joined by AND (or "1" when f restricts nothing), with its arguments.
// Every value is a bound parameter. The source prefix is a range on the id,
// not a LIKE pattern, so "%" and "_" in ids are plain characters.
func filterSQL(f recall.Filter) (string, []any, error) {
	if err := store.ValidateFilter(f); err != nil {
		return "", nil, err
	}
	var conds []string
	var args []any
	if len(f.Kinds) > 0 {
		conds = append(conds, "s.kind IN (SELECT value FROM json_each(?))")
		args = append(args, jsonArray(f.Kinds))
	}
	if f.SourcePrefix != "" {
		conds = append(conds, "s.id >= ?")
		args = append(args, f.SourcePrefix)
		if end, ok := store.PrefixEnd(f.SourcePrefix); ok {
			conds = append(conds, "s.id < ?")
			args = append(args, end)
		}
	}
	since, until, _ := store.DateBounds(f)
	if since != "" {
		conds = append(conds, "s.date_hi >= ?")
		args = append(args, since)
	}
	if until != "" {
		conds = append(conds, "s.date_lo <= ?")
		args = append(args, until)
	}
	if f.Category != "" {
		conds = append(conds, "s.category = ?")
		args = append(args, f.Category)
	}
	if f.OwnerScoped {
		conds = append(conds, "(s.kind = 'archive' OR s.owner = ?)")
		args = append(args, f.Owner)
	}
	if len(conds) == 0 {
		return "1", nil, nil
	}
	return strings.Join(conds, " AND "), args, nil
}

// filtered reports whether f restricts anything, so a query can skip the
// join to sources.
func filtered(f recall.Filter) bool {
	return len(f.Kinds) > 0 || f.SourcePrefix != "" || f.Since != "" || f.Until != "" ||
		f.Category != "" || f.OwnerScoped
}

// jsonArray encodes a list for json_each, which lets one bound parameter
// carry any number of values.
func jsonArray[T any](vs []T) string {
	if len(vs) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(vs)
	return string(b)
}
