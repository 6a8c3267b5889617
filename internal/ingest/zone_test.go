package ingest

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

// Zones that date every moment alike share a key, whatever their names;
// zones that date some moment apart do not.
func TestZoneKey(t *testing.T) {
	load := func(name string) *time.Location {
		t.Helper()
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	same := [][2]*time.Location{
		{nil, time.UTC},
		{time.FixedZone("A", 3600), time.FixedZone("B", 3600)},
		{load("America/New_York"), load("US/Eastern")},
		{load("Asia/Kolkata"), load("Asia/Calcutta")},
	}
	for _, p := range same {
		if ZoneKey(p[0]) != ZoneKey(p[1]) {
			t.Errorf("%v and %v have keys %s and %s; want one", p[0], p[1], ZoneKey(p[0]), ZoneKey(p[1]))
		}
	}
	differ := [][2]*time.Location{
		{time.UTC, time.FixedZone("", 3600)},
		{load("Europe/Berlin"), time.FixedZone("CET", 3600)},    // summer time
		{load("America/New_York"), load("America/Chicago")},     // an hour apart
		{load("Europe/London"), load("Europe/Lisbon")},          // apart in 1992-1996
		{load("America/Phoenix"), load("America/Denver")},       // one keeps no summer time
		{load("Australia/Sydney"), load("Australia/Melbourne")}, // apart in a few years' changes, to the hour
		{time.FixedZone("", 5*3600+30*60), time.FixedZone("", 5*3600+45*60)},
	}
	for _, p := range differ {
		if ZoneKey(p[0]) == ZoneKey(p[1]) {
			t.Errorf("%v and %v have one key %s; want two", p[0], p[1], ZoneKey(p[0]))
		}
	}
}

// A sweep in another zone than the one a source's date was made in reads
// its file again, though unchanged, and dates it in its own, as a clean
// sweep there does; it said so (Options.Redating, Result.FilesRedated). A
// file whose dates are the days written (the note) is not read again. A
// sweep where `sweep --full` was needed before.
func TestSweepRedatesInANewZone(t *testing.T) {
	root := t.TempDir()
	// Every conversation was created at 07:08:09 UTC on 6 May 2024: the
	// 5th at UTC-10, the 6th at UTC+14.
	write(t, root, "conversations.json", claudeExport(t, 4, 400, 3, nil))
	write(t, root, "note.md", "# Tea\n\nDate: 2024-03-06 05:30\n\n**user:** how hot for green tea?\n")
	west, east := time.FixedZone("UTC-10", -10*3600), time.FixedZone("UTC+14", 14*3600)
	st := openStore(t)
	date := func(id string) string {
		t.Helper()
		s, err := st.Source(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return s.Date
	}
	if res, log := sweep(t, st, root, Options{Zone: west}); res.FilesChanged != 2 || res.FilesRedated != 0 {
		t.Fatalf("first sweep: %+v %q", res, log)
	}
	if d := date("conversations.json/c-3-0"); d != "2024-05-05" {
		t.Fatalf("dated %s at UTC-10; want 2024-05-05", d)
	}

	var told []string
	res, log := sweep(t, st, root, Options{Zone: east, Redating: func(files []string) { told = files }})
	if res.FilesChanged != 1 || res.FilesSkipped != 1 || res.FilesRedated != 1 || !slices.Equal(told, []string{"conversations.json"}) {
		t.Errorf("sweep at UTC+14: %+v %q, told of %q; want the export read again to date it, and said, the note skipped", res, log, told)
	}
	for _, id := range []string{"conversations.json/c-3-0", "conversations.json/c-3-3"} {
		if d := date(id); d != "2024-05-06" {
			t.Errorf("%s dated %s after a sweep at UTC+14; want 2024-05-06", id, d)
		}
	}
	if d := date("note.md"); d != "2024-03-06" {
		t.Errorf("note dated %s; want the day written", d)
	}
	clean := openStore(t)
	sweep(t, clean, root, Options{Zone: east})
	if got, want := content(t, st), content(t, clean); got != want {
		t.Errorf("after the zone changed the store holds\n%s\nwant, as a clean sweep there stores,\n%s", got, want)
	}

	// Then nothing more, in the same zone or one that dates alike.
	told = nil
	res, log = sweep(t, st, root, Options{Zone: time.FixedZone("also +14", 14*3600), Redating: func(files []string) { told = files }})
	if res.FilesChanged != 0 || res.FilesSkipped != 2 || res.FilesRedated != 0 || told != nil {
		t.Errorf("the next sweep: %+v %q, told of %q; want every file skipped", res, log, told)
	}

	// A source stored before the zone was recorded may have been dated in
	// another: its file is read again once.
	vault, _ := filepath.Abs(root)
	m, err := st.Manifest(context.Background(), recall.KindArchive, vault)
	if err != nil {
		t.Fatal(err)
	}
	if m["conversations.json/c-3-1"].Zone != ZoneKey(east) || m["note.md"].Zone != "" {
		t.Errorf("manifest zones %+v; want the export's conversations in UTC+14's, the note in none", m)
	}
	var unknown []recall.Document
	err = st.Export(context.Background(), func(d recall.Document) error {
		if d.Source.ID == "conversations.json/c-3-1" {
			d.Source.Zone = recall.ZoneUnknown
			unknown = append(unknown, d)
		}
		return nil
	})
	if err != nil || len(unknown) != 1 {
		t.Fatal(err, unknown)
	}
	if _, err := st.Write(context.Background(), unknown, nil); err != nil {
		t.Fatal(err)
	}
	if res, log := sweep(t, st, root, Options{Zone: east}); res.FilesRedated != 1 || res.FilesChanged != 1 {
		t.Errorf("sweep after a source's zone is unknown: %+v %q; want its file read again", res, log)
	}
	if res, _ := sweep(t, st, root, Options{Zone: east}); res.FilesRedated != 0 || res.FilesSkipped != 2 {
		t.Errorf("and the next: %+v; want every file skipped", res)
	}
}

// BenchmarkZoneKey is what a sweep pays once a process for its zone's key
// (ZoneKey caches it): a zone with summer time, and one without.
func BenchmarkZoneKey(b *testing.B) {
	for _, name := range []string{"Europe/Berlin", "Asia/Kolkata"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				zoneKey(loc)
			}
		})
	}
}
