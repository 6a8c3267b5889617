package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/recall-mcp/recall/internal/search"
)

// config holds settings from the config file. Precedence, highest first:
// command-line flag, RECALL_* environment variable, config file, default.
//
// The file is plain `key = value` lines; `#` starts a comment. Keys are the
// environment variable names without the RECALL_ prefix, lower-cased: the
// settings of knownSettings.
type config map[string]string

// loadConfig reads the config file: --config, RECALL_CONFIG, or
// $XDG_CONFIG_HOME/recall/config (an absolute one), else
// ~/.config/recall/config (on every system). A missing default file is not
// an error.
func (m *Main) loadConfig() (config, error) {
	path := m.env(m.g.config, "RECALL_CONFIG")
	explicit := path != ""
	if !explicit {
		dir := m.Getenv("XDG_CONFIG_HOME")
		if !filepath.IsAbs(dir) { // a relative one is ignored, as the XDG spec asks (and XDG_DATA_HOME is)
			dir = ""
		}
		if dir == "" {
			if home := m.Getenv("HOME"); home != "" {
				dir = filepath.Join(home, ".config")
			}
		}
		if dir == "" {
			return config{}, nil
		}
		path = filepath.Join(dir, "recall", "config")
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return config{}, nil
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) { // "config: open PATH: …" said the system call
			err = pe.Err
		}
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	defer f.Close()
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c := config{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff") // a byte-order mark
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, usagef("config %s:%d: expected key = value", path, n)
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if !knownSettings[k] {
			return nil, usagef("config %s:%d: %s (settings: %s)", path, n, unknownSetting(k), strings.Join(slices.Sorted(maps.Keys(knownSettings)), ", "))
		}
		if _, dup := c[k]; dup {
			return nil, usagef("config %s:%d: %s is set twice", path, n, k)
		}
		// Errors name the key, never the value (it may be a token).
		v, err := configValue(v)
		if err == nil {
			v, err = m.configPath(k, v, dir)
		}
		if err == nil && v != "" && checkSetting[k] != nil {
			err = checkSetting[k](v)
		}
		if err != nil {
			return nil, usagef("config %s:%d: %s: %v", path, n, k, err)
		}
		c[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// knownSettings are the keys a config file may set (each is also
// RECALL_<KEY> in the environment).
var knownSettings = map[string]bool{
	"admin_token": true, "audit": true, "categories": true, "cloudflare_account_id": true,
	"cloudflare_api_token": true, "cloudflare_url": true, "db": true, "dimensions": true,
	"embedder": true, "fusion": true, "model": true, "models_dir": true, "ollama_api_key": true, "ollama_url": true,
	"openai_api_key": true, "openai_url": true, "timezone": true, "token": true, "tokens_file": true,
}

// unknownSetting says what is wrong with a key that is not a setting. It
// names the key only when it looks like one: a line like "token SECRET =
// x" must not print SECRET.
func unknownSetting(k string) string {
	if !settingLike.MatchString(k) {
		return "not a setting"
	}
	if s, ok := strings.CutPrefix(k, "recall_"); ok && knownSettings[s] {
		return fmt.Sprintf("%s is not a setting: write %s, without the RECALL_ of the environment variable", k, s)
	}
	return fmt.Sprintf("%s is not a setting", k)
}

// settingLike matches what could be a setting's name, mistyped.
var settingLike = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// settingName names a setting in a message for both places it may come
// from: "dimensions (RECALL_DIMENSIONS or the config file)".
func settingName(key string) string {
	return fmt.Sprintf("%s (RECALL_%s or the config file)", key, strings.ToUpper(key))
}

// configValue reads a value: a # at its start or after white space starts
// a comment ("db = # set later" is no value), and one pair of matching
// quotes around it is removed (a quoted value may hold " #"). A quote left
// open, or text after the closing quote other than a comment, is an error:
// either way the value is not what its writer meant.
func configValue(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v != "" && (v[0] == '"' || v[0] == '\'') {
		end := strings.IndexByte(v[1:], v[0])
		if end < 0 {
			return "", fmt.Errorf("the quote (%c) is not closed", v[0])
		}
		if rest := strings.TrimSpace(v[end+2:]); rest != "" && rest[0] != '#' {
			return "", errors.New("text after the closing quote (quotes cannot be doubled or escaped)")
		}
		return v[1 : end+1], nil
	}
	for i := 0; i < len(v); i++ {
		if v[i] == '#' && (i == 0 || v[i-1] == ' ' || v[i-1] == '\t') {
			v = v[:i]
			break
		}
	}
	return strings.TrimSpace(v), nil
}

// configPath anchors a config file's path-valued setting: a leading ~/ is
// the home directory, and a relative path is relative to the config file's
// folder (dir), not to wherever recall happens to run. A model is a path
// only when written as one (~/, ./ or ../, or absolute): a bare name is a
// model's name. A PostgreSQL db is not a path.
func (m *Main) configPath(key, v, dir string) (string, error) {
	switch key {
	case "db":
		if isPostgres(v) {
			return v, nil
		}
	case "model":
		if !explicitPath(v) {
			return v, nil
		}
	case "models_dir", "audit", "tokens_file":
	default:
		return v, nil
	}
	if v == "" {
		return v, nil
	}
	if v == "~" || hasDirPrefix(v, "~") {
		home, err := m.homeDir()
		if err != nil {
			return "", fmt.Errorf("~ needs HOME to be set: %w", err)
		}
		v = filepath.Join(home, v[1:])
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(dir, v)
	}
	return v, nil
}

// explicitPath reports whether v is written as a path: absolute, or
// starting with ~/, ./ or ../ (or being ~, . or ..).
func explicitPath(v string) bool {
	if filepath.IsAbs(v) {
		return true
	}
	for _, p := range []string{"~", ".", ".."} {
		if v == p || hasDirPrefix(v, p) {
			return true
		}
	}
	return false
}

// hasDirPrefix reports whether v starts with the folder p and a separator.
func hasDirPrefix(v, p string) bool {
	return strings.HasPrefix(v, p+"/") || strings.HasPrefix(v, p+string(filepath.Separator))
}

// checkSetting checks the values a config file may get wrong, so that the
// error names the file and line: once the value is in use, it could have
// come from a flag or the environment as well.
var checkSetting = map[string]func(string) error{
	"embedder": func(v string) error {
		if !slices.Contains(embedders, strings.ToLower(v)) {
			return fmt.Errorf("unknown embedder %q: use %s", v, strings.Join(embedders, ", "))
		}
		return nil
	},
	"fusion": func(v string) error {
		if !slices.Contains(search.Fusions, v) {
			return fmt.Errorf("unknown fusion %q: use %s", v, strings.Join(search.Fusions, ", "))
		}
		return nil
	},
	"timezone": func(v string) error {
		if _, err := time.LoadLocation(v); err != nil {
			return fmt.Errorf("unknown time zone %q (use an IANA name such as Europe/Berlin)", v)
		}
		return nil
	},
	"categories": func(v string) error {
		_, err := parseCategories(v)
		return err
	},
	"dimensions": func(v string) error {
		if n, err := strconv.Atoi(v); err != nil || n <= 0 {
			return fmt.Errorf("must be a positive number, got %q", v)
		}
		return nil
	},
}

// embedders are the embedding providers (makeEmbedderDim's cases).
var embedders = []string{"builtin", "ollama", "openai", "cloudflare", "none"}

// setting resolves one setting: flag value, then RECALL_<KEY>, then the
// config file, then def.
func (m *Main) setting(flagValue, key, def string) string {
	if !knownSettings[key] {
		panic("recall: setting " + key + " is missing from knownSettings") // a config file could not set it
	}
	if flagValue != "" {
		return flagValue
	}
	if v := strings.TrimSpace(m.Getenv("RECALL_" + strings.ToUpper(key))); v != "" {
		return v
	}
	if m.cfg != nil {
		if v := m.cfg[key]; v != "" {
			return v
		}
	}
	return def
}
