package server

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"github.com/recall-mcp/recall"
)

// MinTokenLen is the shortest token accepted, in characters.
const MinTokenLen = 24

// Token is a user credential as configured: a name (shown in logs and the
// audit trail), the secret, and optionally the owner it is bound to.
type Token struct {
	Name   string
	Secret string
	Owner  string // "" leaves the token unbound: it may act for any owner it names
}

// NewToken returns a fresh random token: 32 bytes from the system's secure
// generator, base64url without padding (43 characters).
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

var (
	tokenNameRE  = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	tokenOwnerRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
)

// ParseTokens reads a tokens file: one `name token [owner]` per line, blank
// lines and lines starting with # ignored. Several lines let a token be
// rotated: add the new one, move clients over, remove the old one.
func ParseTokens(r io.Reader) ([]Token, error) {
	var out []Token
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 || len(f) > 3 {
			// The line is not echoed: it may hold a secret.
			return nil, recall.Errorf(recall.EINVALID, "tokens file line %d: expected `name token [owner]`", n)
		}
		t := Token{Name: f[0], Secret: f[1]}
		if len(f) == 3 {
			t.Owner = f[2]
		}
		if err := t.validate(); err != nil {
			return nil, recall.Errorf(recall.EINVALID, "tokens file line %d: %s", n, recall.ErrorMessage(err))
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read tokens file: %w", err)
	}
	return out, nil
}

// validate checks a token's fields. Its errors name no field's value: a
// line with its fields swapped would put the secret where the name goes.
func (t Token) validate() error {
	if !tokenNameRE.MatchString(t.Name) {
		return recall.Errorf(recall.EINVALID, "the name must be 1-64 letters, digits, '_', '.' or '-'")
	}
	if err := validSecret(t.Secret); err != nil {
		return err
	}
	if t.Owner != "" && !tokenOwnerRE.MatchString(t.Owner) {
		return recall.Errorf(recall.EINVALID, "the owner must be 1-64 letters, digits, '_', '.' or '-'")
	}
	return nil
}

// CheckSecret refuses a token a server would refuse (too short, spaces or
// control characters, too few different characters), for a caller that
// can name where the token came from: the server's own refusal can only
// number it.
func CheckSecret(s string) error { return validSecret(s) }

func validSecret(s string) error {
	if n := utf8.RuneCountInString(s); n < MinTokenLen {
		return recall.Errorf(recall.EINVALID, "the token is %d characters; tokens must be at least %d (make one with `recall token new`)", n, MinTokenLen)
	}
	// Printable ASCII only: a secret pasted with an invisible character
	// (U+200B) would look right and never match what a client sends.
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return recall.Errorf(recall.EINVALID, "the token contains spaces, control or non-ASCII characters (make one with `recall token new`)")
	}
	// Length is not strength: "aaaa…" is 24 characters. A random token of
	// that length holds some 20 different ones.
	distinct := map[rune]bool{}
	for _, r := range s {
		distinct[r] = true
	}
	if len(distinct) < minTokenDistinct {
		return recall.Errorf(recall.EINVALID, "the token repeats too few characters (%d different) to be hard to guess: make one with `recall token new`", len(distinct))
	}
	return nil
}

// minTokenDistinct is the fewest different characters a token may have.
const minTokenDistinct = 10

// identity is who a request acts as.
type identity struct {
	name  string // token name, "admin", or "local" when no token is configured
	key   string // distinct per credential: binds MCP sessions to it
	owner string
	bound bool
	admin bool
	lim   *rate.Limiter // nil: unlimited
}

// keyring holds the sha256 of every accepted token, never the token itself.
type keyring struct {
	entries []keyEntry
}

type keyEntry struct {
	hash [sha256.Size]byte
	id   *identity
}

func newKeyring(users []Token, admin string, lim func() *rate.Limiter) (*keyring, error) {
	k := &keyring{}
	names := map[string]bool{}
	for i, t := range users {
		if err := t.validate(); err != nil {
			return nil, recall.Errorf(recall.EINVALID, "user token %d: %s", i+1, recall.ErrorMessage(err))
		}
		if names[t.Name] {
			return nil, recall.Errorf(recall.EINVALID, "user token %d: its name is another's too", i+1)
		}
		names[t.Name] = true
		h := sha256.Sum256([]byte(t.Secret))
		if k.find(h) != nil {
			return nil, recall.Errorf(recall.EINVALID, "user token %d: its secret is another's too", i+1)
		}
		k.entries = append(k.entries, keyEntry{h, &identity{name: t.Name, key: fmt.Sprintf("user-%d", i),
			owner: t.Owner, bound: t.Owner != "", lim: lim()}})
	}
	if admin != "" {
		if err := validSecret(admin); err != nil {
			return nil, recall.Errorf(recall.EINVALID, "admin token: %s", recall.ErrorMessage(err))
		}
		h := sha256.Sum256([]byte(admin))
		if k.find(h) != nil {
			return nil, recall.Errorf(recall.EINVALID, "the admin token must differ from every user token")
		}
		k.entries = append(k.entries, keyEntry{h, &identity{name: "admin", key: "admin", admin: true, lim: lim()}})
	}
	return k, nil
}

// find compares against every entry, whatever matches first, so the time
// taken says nothing about which token (or how much of one) was right.
func (k *keyring) find(h [sha256.Size]byte) *identity {
	var found *identity
	for i := range k.entries {
		if subtle.ConstantTimeCompare(h[:], k.entries[i].hash[:]) == 1 {
			found = k.entries[i].id
		}
	}
	return found
}

// lookup returns the identity of a presented token, or nil.
func (k *keyring) lookup(token string) *identity {
	return k.find(sha256.Sum256([]byte(token)))
}

// hasUsers reports whether any user token is configured.
func (k *keyring) hasUsers() bool {
	for _, e := range k.entries {
		if !e.id.admin {
			return true
		}
	}
	return false
}
