package postgres

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
)

// args collects the bound parameters of a statement and names them $1, $2, ...
type args []any

// add binds v and returns its placeholder.
func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// filterSQL returns the conditions of f as SQL joined by AND ("true" when f
// restricts nothing), binding its values into a. The attributes are read
// from the table aliased attrs (sources or chunks, which repeat them); the
// source id from sources aliased s, needed only for a prefix. The prefix is
// a literal prefix (starts_with), never a LIKE pattern, so "%" and "_" in
// ids are plain characters; the range condition beside it lets an index
// on the id serve it.
//
// A value no source can hold (unstorable), which PostgreSQL would refuse
// as a parameter, matches nothing: a prefix or category so written makes
// the condition false, an owner so named owns nothing.
func filterSQL(f recall.Filter, attrs string, a *args) (string, error) {
	if err := f.Validate(); err != nil {
		return "", err
	}
	if unstorable(f.SourcePrefix) || unstorable(f.Category) {
		return "false", nil
	}
	var conds []string
	if len(f.Kinds) > 0 {
		kinds := make([]string, len(f.Kinds))
		for i, k := range f.Kinds {
			kinds[i] = string(k)
		}
		conds = append(conds, attrs+".kind = ANY("+a.add(kinds)+"::text[])")
	}
	if f.SourcePrefix != "" {
		p := a.add(f.SourcePrefix)
		conds = append(conds, "s.id >= "+p+" AND starts_with(s.id, "+p+")")
	}
	// A date bound compares the ranges a source's date and the bound cover
	// (recall.Filter.Allows); an undated source, with NULL bounds, passes
	// no date bound.
	if f.Since != "" {
		since, _, _ := recall.DateRange(f.Since)
		conds = append(conds, attrs+".date_hi >= "+a.add(since))
	}
	if f.Until != "" {
		_, until, _ := recall.DateRange(f.Until)
		conds = append(conds, attrs+".date_lo <= "+a.add(until))
	}
	if f.Category != "" {
		conds = append(conds, attrs+".category = "+a.add(f.Category))
	}
	switch {
	case f.OwnerScoped && unstorable(f.Owner):
		conds = append(conds, attrs+".kind = 'archive'")
	case f.OwnerScoped:
		conds = append(conds, "("+attrs+".kind = 'archive' OR "+attrs+".owner = "+a.add(f.Owner)+")")
	}
	if len(conds) == 0 {
		return "true", nil
	}
	return strings.Join(conds, " AND "), nil
}

// unstorable reports a value PostgreSQL's text type cannot hold, a NUL
// character or invalid UTF-8: no row holds it (ValidateDocument refuses it
// on write), and PostgreSQL refuses it as a parameter, so a lookup by it
// is answered without the database, as finding nothing.
func unstorable(v string) bool { return strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) }
