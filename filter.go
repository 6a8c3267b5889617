package recall

import (
	"strings"
	"time"
)

// DateRange returns the first and last day ("YYYY-MM-DD") covered by a date
// of the form "YYYY", "YYYY-MM" or "YYYY-MM-DD"; ok is false for anything else.
func DateRange(d string) (lo, hi string, ok bool) {
	switch len(d) {
	case 4:
		if _, err := time.Parse("2006", d); err != nil {
			return "", "", false
		}
		return d + "-01-01", d + "-12-31", true
	case 7:
		t, err := time.Parse("2006-01", d)
		if err != nil {
			return "", "", false
		}
		last := t.AddDate(0, 1, -1)
		return d + "-01", last.Format("2006-01-02"), true
	case 10:
		if _, err := time.Parse("2006-01-02", d); err != nil {
			return "", "", false
		}
		return d, d, true
	}
	return "", "", false
}

// Validate checks a filter's fields and returns EINVALID naming the bad one.
func (f Filter) Validate() error {
	if len(f.SourcePrefix) > MaxSourceIDLen {
		return Errorf(EINVALID, "source prefix is %d bytes; a source id is at most %d", len(f.SourcePrefix), MaxSourceIDLen)
	}
	for _, k := range f.Kinds {
		if !k.Valid() {
			return Errorf(EINVALID, "unknown kind %q: use archive, memory or diary", k)
		}
	}
	if f.Since != "" {
		if _, _, ok := DateRange(f.Since); !ok {
			return Errorf(EINVALID, "since %q is not a date: use YYYY, YYYY-MM or YYYY-MM-DD", f.Since)
		}
	}
	if f.Until != "" {
		if _, _, ok := DateRange(f.Until); !ok {
			return Errorf(EINVALID, "until %q is not a date: use YYYY, YYYY-MM or YYYY-MM-DD", f.Until)
		}
	}
	if f.Since != "" && f.Until != "" {
		slo, _, _ := DateRange(f.Since)
		_, uhi, _ := DateRange(f.Until)
		if slo > uhi {
			return Errorf(EINVALID, "since %s is after until %s", f.Since, f.Until)
		}
	}
	return nil
}

// Allows reports whether a source passes the filter. It is the reference
// semantics that every store's SQL and the vector index's predicate follow:
// kinds, id prefix, category, owner scoping (memory and diary only), and
// date overlap, where a date filter excludes undated sources. For many
// calls, use Matcher.
func (f Filter) Allows(m *SourceMeta) bool { return f.Matcher()(m) }

// Matcher returns Allows as a function with the filter's date bounds worked
// out once: the vector index calls it for every source of a search, so it
// compares strings and parses nothing. f must be valid (Validate), and
// source dates well-formed (stores validate them on write).
func (f Filter) Matcher() func(*SourceMeta) bool {
	var since, until string
	if f.Since != "" {
		since, _, _ = DateRange(f.Since)
	}
	if f.Until != "" {
		_, until, _ = DateRange(f.Until)
	}
	kinds := f.Kinds
	return func(m *SourceMeta) bool {
		if len(kinds) > 0 {
			found := false
			for _, k := range kinds {
				if m.Kind == k {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		if f.SourcePrefix != "" && !strings.HasPrefix(m.ID, f.SourcePrefix) {
			return false
		}
		if f.Category != "" && m.Category != f.Category {
			return false
		}
		if f.OwnerScoped && m.Kind != KindArchive && m.Owner != f.Owner {
			return false
		}
		if since != "" || until != "" {
			lo, hi, ok := quickRange(m.Date)
			if !ok || (since != "" && hi < since) || (until != "" && lo > until) {
				return false
			}
		}
		return true
	}
}

// quickRange is DateRange for dates already known to be well-formed (they
// were validated when stored), by string operations only. A month's last
// day is written as 31: only the order of the strings matters, and no real
// date falls between a month's last day and its "31".
func quickRange(d string) (lo, hi string, ok bool) {
	switch len(d) {
	case 4:
		return d + "-01-01", d + "-12-31", true
	case 7:
		return d + "-01", d + "-31", true
	case 10:
		return d, d, true
	}
	return "", "", false
}
