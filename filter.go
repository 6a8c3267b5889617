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
// date overlap, where a date filter excludes undated sources.
func (f Filter) Allows(m *SourceMeta) bool {
	if len(f.Kinds) > 0 {
		found := false
		for _, k := range f.Kinds {
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
	if f.Since != "" || f.Until != "" {
		lo, hi, ok := DateRange(m.Date)
		if !ok {
			return false
		}
		if f.Since != "" {
			slo, _, _ := DateRange(f.Since)
			if hi < slo {
				return false
			}
		}
		if f.Until != "" {
			_, uhi, _ := DateRange(f.Until)
			if lo > uhi {
				return false
			}
		}
	}
	return true
}
