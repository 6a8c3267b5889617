package storetest

import (
	"maps"
	"testing"

	"github.com/recall-mcp/recall"
)

// testRefusals: the texts a space's model refused as too long for it are
// recorded by vector key, for that space alone; a text that changes, or
// goes, takes its refusal with it, and so does its space; ForgetRefusals
// clears a space's; stats count the refused texts still missing.
func testRefusals(t *testing.T, s recall.Store) {
	sp := createSpace(t, s, "sp", 2)
	other := createSpace(t, s, "other", 2)
	write(t, s, doc("a.md", recall.KindArchive, "long", "short"), doc("b.md", recall.KindArchive, "huge"))
	long, short, huge := recall.TextHash("long"), recall.TextHash("short"), recall.TextHash("huge")

	refused := func(space string, keys ...string) map[string]string {
		t.Helper()
		got, err := s.Refusals(ctx, space, keys)
		if err != nil {
			t.Fatalf("Refusals(%s): %v", space, err)
		}
		return got
	}
	tooLong := func(space string) int {
		t.Helper()
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range st.Spaces {
			if x.Name == space {
				return x.TooLong
			}
		}
		t.Fatalf("no space %s in stats", space)
		return 0
	}

	if err := s.RecordRefusals(ctx, sp, map[string]string{long: "too long: 900 > 512", huge: "too long: 9000 > 512"}); err != nil {
		t.Fatal(err)
	}
	// Recorded again with other words: the first stay.
	if err := s.RecordRefusals(ctx, sp, map[string]string{long: "other words"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{long: "too long: 900 > 512", huge: "too long: 9000 > 512"}
	if got := refused(sp, long, short, huge); !maps.Equal(got, want) {
		t.Errorf("Refusals = %v; want %v", got, want)
	}
	if got := refused(other, long, short, huge); len(got) != 0 {
		t.Errorf("another space's model has refused %v; want none (another model tries again)", got)
	}
	if got := refused(sp); len(got) != 0 {
		t.Errorf("Refusals of no keys = %v", got)
	}
	if n := tooLong(sp); n != 2 {
		t.Errorf("stats too_long = %d; want 2", n)
	}
	if n := tooLong(other); n != 0 {
		t.Errorf("stats too_long of the other space = %d; want 0", n)
	}
	wantCode(t, s.RecordRefusals(ctx, "nope", map[string]string{long: "x"}), recall.ENOTFOUND, "RecordRefusals in a missing space")

	// A vector stored after all (another process's model took it) leaves
	// the text out of the count.
	putVecs(t, s, sp, "huge")
	if n := tooLong(sp); n != 1 {
		t.Errorf("stats too_long with the refused text embedded = %d; want 1", n)
	}

	// The text changes: its refusal goes with the last chunk holding it.
	write(t, s, doc("a.md", recall.KindArchive, "long, now shorter", "short"))
	if got := refused(sp, long); len(got) != 0 {
		t.Errorf("the refusal of a text no chunk holds stayed: %v", got)
	}

	if err := s.RecordRefusals(ctx, other, map[string]string{short: "x"}); err != nil {
		t.Fatal(err)
	}
	n, err := s.ForgetRefusals(ctx, sp)
	if err != nil || n != 1 {
		t.Errorf("ForgetRefusals = %d, %v; want 1 (huge)", n, err)
	}
	if got := refused(sp, long, short, huge); len(got) != 0 {
		t.Errorf("after ForgetRefusals: %v", got)
	}
	if got := refused(other, short); len(got) != 1 {
		t.Errorf("ForgetRefusals of one space took another's: %v", got)
	}
	_, err = s.ForgetRefusals(ctx, "nope")
	wantCode(t, err, recall.ENOTFOUND, "ForgetRefusals of a missing space")

	// A dropped space takes its refusals: made again, it has none.
	if err := s.DropSpace(ctx, other); err != nil {
		t.Fatal(err)
	}
	createSpace(t, s, "other", 2)
	if got := refused(other, short); len(got) != 0 {
		t.Errorf("a space made again has its namesake's refusals: %v", got)
	}
}
