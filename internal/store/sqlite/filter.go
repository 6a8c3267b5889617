package sqlite

import (
	"encoding/json"
	"strings"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

// filterSQL returns the conditions of f as SQL joined by AND (or "1" when f
// restricts nothing), with its arguments. The attributes are read from the
// table aliased attrs (sources or chunks, which repeat them); the source id
// from sources aliased s, needed only for a prefix. Every value is a bound
// parameter. The source prefix is a range on the id, not a LIKE pattern, so
// "%" and "_" in ids are plain characters.
func filterSQL(f recall.Filter, attrs string) (string, []any, error) {
	if err := f.Validate(); err != nil {
		return "", nil, err
	}
	var conds []string
	var args []any
	if len(f.Kinds) > 0 {
		conds = append(conds, attrs+".kind IN (SELECT value FROM json_each(?))")
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
	// A date bound compares the ranges a source's date and the bound cover
	// (recall.Filter.Allows); an undated source, with NULL bounds, passes
	// no date bound.
	if f.Since != "" {
		since, _, _ := recall.DateRange(f.Since)
		conds = append(conds, attrs+".date_hi >= ?")
		args = append(args, since)
	}
	if f.Until != "" {
		_, until, _ := recall.DateRange(f.Until)
		conds = append(conds, attrs+".date_lo <= ?")
		args = append(args, until)
	}
	if f.Category != "" {
		conds = append(conds, attrs+".category = ?")
		args = append(args, f.Category)
	}
	if f.OwnerScoped {
		conds = append(conds, "("+attrs+".kind = 'archive' OR "+attrs+".owner = ?)")
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
