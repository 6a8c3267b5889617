package recall

import "testing"

func TestFilterAllows(t *testing.T) {
	mem := &SourceMeta{ID: "person_ann", Kind: KindMemory, Owner: "ann", Category: "person", Date: "2025-07-14"}
	arc := &SourceMeta{ID: "2025/07/chat.md", Kind: KindArchive, Date: "2025-07"}
	undated := &SourceMeta{ID: "x.md", Kind: KindArchive}
	cases := []struct {
		name string
		f    Filter
		m    *SourceMeta
		want bool
	}{
		{"empty", Filter{}, mem, true},
		{"kind hit", Filter{Kinds: []Kind{KindMemory}}, mem, true},
		{"kind miss", Filter{Kinds: []Kind{KindDiary, KindArchive}}, mem, false},
		{"prefix", Filter{SourcePrefix: "2025/"}, arc, true},
		{"prefix miss", Filter{SourcePrefix: "2024/"}, arc, false},
		{"category", Filter{Category: "person"}, mem, true},
		{"category miss", Filter{Category: "project"}, mem, false},
		{"owner match", Filter{OwnerScoped: true, Owner: "ann"}, mem, true},
		{"owner other", Filter{OwnerScoped: true, Owner: "bob"}, mem, false},
		{"owner archive shared", Filter{OwnerScoped: true, Owner: "bob"}, arc, true},
		{"since month overlaps", Filter{Since: "2025-07-20"}, arc, true},
		{"since after", Filter{Since: "2025-08"}, arc, false},
		{"until before", Filter{Until: "2025-06-30"}, arc, false},
		{"until year", Filter{Until: "2025"}, arc, true},
		{"undated excluded", Filter{Since: "2000"}, undated, false},
	}
	for _, c := range cases {
		if got := c.f.Allows(c.m); got != c.want {
			t.Errorf("%s: Allows = %v, want %v", c.name, got, c.want)
		}
		if got := c.f.Matcher()(c.m); got != c.want {
			t.Errorf("%s: Matcher = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFilterValidate(t *testing.T) {
	bad := []Filter{{Since: "2025-13"}, {Until: "yesterday"}, {Kinds: []Kind{"file"}}, {Since: "2025-02", Until: "2025-01"}}
	for _, f := range bad {
		if err := f.Validate(); ErrorCode(err) != EINVALID {
			t.Errorf("Validate(%+v) = %v, want EINVALID", f, err)
		}
	}
	if err := (Filter{Since: "2024", Until: "2025-02-28"}).Validate(); err != nil {
		t.Error(err)
	}
	lo, hi, _ := DateRange("2024-02")
	if lo != "2024-02-01" || hi != "2024-02-29" {
		t.Errorf("DateRange(2024-02) = %s %s", lo, hi)
	}
}

func BenchmarkFilterMatcher(b *testing.B) {
	f := Filter{Kinds: []Kind{KindArchive}, Since: "2025-01", Until: "2025-12-31"}
	m := &SourceMeta{ID: "2025/07/chat.md", Kind: KindArchive, Date: "2025-07"}
	b.Run("Allows", func(b *testing.B) {
		for b.Loop() {
			f.Allows(m)
		}
	})
	match := f.Matcher()
	b.Run("Matcher", func(b *testing.B) {
		for b.Loop() {
			match(m)
		}
	})
}
