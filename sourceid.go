package recall

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxSourceIDLen bounds a source id in bytes.
const MaxSourceIDLen = 1024

// CleanSourceID turns a path relative to a vault root (with either slash) into
// a source id: forward slashes, Unicode NFC, no "." or ".." elements, never
// absolute, no control characters. It refuses ids that would escape the vault
// rather than fixing them.
func CleanSourceID(p string) (string, error) {
	if !utf8.ValidString(p) {
		return "", Errorf(EINVALID, "source id is not valid UTF-8")
	}
	p = strings.ReplaceAll(p, `\`, "/")
	p = norm.NFC.String(p)
	if p == "" {
		return "", Errorf(EINVALID, "source id is empty")
	}
	if strings.HasPrefix(p, "/") || hasDrive(p) {
		return "", Errorf(EINVALID, "source id %q is absolute; it must be relative to the vault", p)
	}
	if i := strings.IndexFunc(p, unicode.IsControl); i >= 0 {
		// C0 (NUL, ESC, line breaks...), DEL and C1: an id is shown on a
		// terminal line, where they would move the cursor or end the line.
		return "", Errorf(EINVALID, "source id contains the control character %U", []rune(p[i:])[0])
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", Errorf(EINVALID, "source id %q leaves the vault (..)", p)
		}
	}
	p = path.Clean(p)
	if p == "." {
		return "", Errorf(EINVALID, "source id is empty")
	}
	if reservedID(p) { // after cleaning: "./memory:a:b" is "memory:a:b"
		return "", Errorf(EINVALID, "source id %q starts with a prefix reserved for memories and diary days", p)
	}
	if len(p) > MaxSourceIDLen {
		return "", Errorf(EINVALID, "source id is longer than %d bytes", MaxSourceIDLen)
	}
	return p, nil
}

// hasDrive reports whether p (with forward slashes) starts with a Windows
// drive: a letter and a colon, then a slash or nothing ("C:/x", "C:"). A
// colon elsewhere is an ordinary character of a file name on other systems
// ("1:1 with Bob.md", "Q:A session.md"). "C:x", a drive's current folder on
// Windows, cannot be a file name there, and joined under a vault it stays
// inside it.
func hasDrive(p string) bool {
	if len(p) < 2 || p[1] != ':' || !('a' <= p[0] && p[0] <= 'z' || 'A' <= p[0] && p[0] <= 'Z') {
		return false
	}
	return len(p) == 2 || p[2] == '/'
}
