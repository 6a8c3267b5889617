package ingest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"

	"github.com/recall-mcp/recall"
)

// ZoneKey names the dates zone gives moments, as sources record the zone
// their dates were made in (recall.Source.Zone): a hash of its offsets from
// UTC and of every change of them between 1970 and 2040, to the second.
// Two zones that date every moment alike have one key, whatever their
// names: time.Local and the IANA name it is, a zone and its alias, so a
// sweep dates files again only when their dates may differ. A nil zone is
// UTC (convo.Parse).
func ZoneKey(zone *time.Location) string {
	if zone == nil {
		zone = time.UTC
	}
	if k, ok := zoneKeys.Load(zone); ok {
		return k.(string)
	}
	k := zoneKey(zone)
	zoneKeys.Store(zone, k)
	return k
}

// zoneKeys caches ZoneKey by zone: a server sweeps every few minutes.
var zoneKeys sync.Map

// zoneKey is ZoneKey, uncached.
func zoneKey(zone *time.Location) string {
	h := sha256.New()
	var buf [16]byte
	put := func(at time.Time, off int) {
		binary.BigEndian.PutUint64(buf[:8], uint64(at.Unix()))
		binary.BigEndian.PutUint64(buf[8:], uint64(int64(off)))
		h.Write(buf[:])
	}
	offset := func(t time.Time) int { _, off := t.In(zone).Zone(); return off }
	at := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	off := offset(at)
	put(at, off)
	// Offsets change at most a few times a year, never twice within 12
	// hours: a step of 12 hours meets every change, and a bisection finds
	// its second.
	const step = 12 * time.Hour
	for ; at.Before(end); at = at.Add(step) {
		next := offset(at.Add(step))
		if next == off {
			continue
		}
		lo, hi := at, at.Add(step) // offset(lo) == off, offset(hi) == next
		for hi.Sub(lo) > time.Second {
			mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
			if offset(mid) == off {
				lo = mid
			} else {
				hi = mid
			}
		}
		put(hi, next)
		off = next
	}
	return "z1:" + hex.EncodeToString(h.Sum(nil)[:12])
}

// redate reports whether a source of a file records that its date was
// made in another zone than the one of key, or may have been
// (recall.ZoneUnknown: stored before the zone was recorded).
func redate(ids []string, m map[string]recall.SourceState, key string) bool {
	for _, id := range ids {
		if z := m[id].Zone; z != "" && z != key {
			return true
		}
	}
	return false
}
