package recall

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Memories and diary days live in the same store as archive files. Their
// internal source ids are namespaced by owner so that two owners can each
// have a key "notes" and neither can learn of the other's (an owner's key
// reads exactly like a missing key to everyone else):
//
//	memory:<owner>:<key>     shown to clients as <key>
//	diary:<owner>:<date>     shown to clients as diary/<date>
//
// Archive ids are vault paths; CleanSourceID refuses paths that start with
// these prefixes, so the namespaces cannot collide.
const (
	memoryIDPrefix = "memory:"
	diaryIDPrefix  = "diary:"
)

// MemoryID is the internal source id of an owner's memory key.
func MemoryID(owner, key string) string { return memoryIDPrefix + owner + ":" + key }

// DiaryID is the internal source id of an owner's diary day (YYYY-MM-DD).
func DiaryID(owner, date string) string { return diaryIDPrefix + owner + ":" + date }

// MemoryPrefix is the id prefix of an owner's memories whose keys start with keyPrefix.
func MemoryPrefix(owner, keyPrefix string) string { return memoryIDPrefix + owner + ":" + keyPrefix }

// DiaryPrefix is the id prefix of an owner's diary days.
func DiaryPrefix(owner string) string { return diaryIDPrefix + owner + ":" }

// PublicID is the source name clients see for an internal source id: the
// key of a memory, diary/<date> for a diary day, the path of an archive file.
func PublicID(id string) string {
	for _, p := range []struct{ prefix, shown string }{{memoryIDPrefix, ""}, {diaryIDPrefix, "diary/"}} {
		if rest, ok := strings.CutPrefix(id, p.prefix); ok {
			if _, v, ok := strings.Cut(rest, ":"); ok {
				return p.shown + v
			}
		}
	}
	return id
}

// IDKind is the kind of source an internal id names: a memory or diary
// day by its namespace, else an archive file.
func IDKind(id string) Kind {
	switch {
	case strings.HasPrefix(id, memoryIDPrefix):
		return KindMemory
	case strings.HasPrefix(id, diaryIDPrefix):
		return KindDiary
	}
	return KindArchive
}

// reservedID reports whether an archive path would fall in a memory namespace.
func reservedID(p string) bool {
	return strings.HasPrefix(p, memoryIDPrefix) || strings.HasPrefix(p, diaryIDPrefix)
}

// NormKey is the form memory keys are saved in: NFKC, so a key typed with
// a precomposed accent or a combining one is one key, and so is one typed
// in the full-width letters of a CJK input method ("ｐｅｒｓｏｎ_ann" is
// person_ann), as search folds them. NFKC text is NFC too. A key that is
// not valid UTF-8 is left for validation to refuse.
func NormKey(key string) string {
	if !utf8.ValidString(key) {
		return key
	}
	return norm.NFKC.String(key)
}

// KeyForms returns the forms a memory key a caller names is looked up
// under, in order: the key exactly as given, which reaches a memory saved
// before keys were normalised (and is the saved form when it is normal),
// then its normal form (NormKey) when that differs. Exact first: a legacy
// key and its normal twin saved since are two memories, and each is
// reached by its own name.
func KeyForms(key string) []string {
	if n := NormKey(key); n != key {
		return []string{key, n}
	}
	return []string{key}
}
