package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// config holds settings from the config file. Precedence, highest first:
// command-line flag, RECALL_* environment variable, config file, default.
//
// The file is plain `key = value` lines; `#` starts a comment. Keys are the
// environment variable names without the RECALL_ prefix, lower-cased:
// db, embedder, model, ollama_url, openai_url, openai_api_key,
// openai_dimensions, cloudflare_account_id, cloudflare_api_token,
// tokens_file, admin_token, timezone, models_dir.
type config map[string]string

// loadConfig reads the config file: --config, RECALL_CONFIG, or
// $XDG_CONFIG_HOME/recall/config, else ~/.config/recall/config (on every
// system). A missing default file is not an error.
func (m *Main) loadConfig() (config, error) {
	path := m.env(m.g.config, "RECALL_CONFIG")
	explicit := path != ""
	if !explicit {
		dir := m.Getenv("XDG_CONFIG_HOME")
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
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
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
			// Not quoted: a line like "token SECRET = x" must not print SECRET.
			return nil, usagef("config %s:%d: not a setting (settings: %s)", path, n, strings.Join(slices.Sorted(maps.Keys(knownSettings)), ", "))
		}
		if _, dup := c[k]; dup {
			return nil, usagef("config %s:%d: %s is set twice", path, n, k)
		}
		c[k] = configValue(v)
	}
	return c, sc.Err()
}

// knownSettings are the keys a config file may set (each is also
// RECALL_<KEY> in the environment).
var knownSettings = map[string]bool{
	"admin_token": true, "audit": true, "categories": true, "cloudflare_account_id": true,
	"cloudflare_api_token": true, "cloudflare_url": true, "db": true, "dimensions": true,
	"embedder": true, "fusion": true, "model": true, "models_dir": true, "ollama_url": true,
	"openai_api_key": true, "openai_url": true, "timezone": true, "token": true, "tokens_file": true,
}

// settingName names a setting in a message for both places it may come
// from: "dimensions (RECALL_DIMENSIONS or the config file)".
func settingName(key string) string {
	return fmt.Sprintf("%s (RECALL_%s or the config file)", key, strings.ToUpper(key))
}

// configValue reads a value: a comment after white space ("path  # note")
// is not part of it, and one pair of matching quotes around it is removed.
func configValue(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') {
		if end := strings.IndexByte(v[1:], v[0]); end >= 0 {
			return v[1 : end+1] // what follows the closing quote is a comment
		}
	}
	for i := 1; i < len(v); i++ {
		if v[i] == '#' && (v[i-1] == ' ' || v[i-1] == '\t') {
			v = v[:i]
			break
		}
	}
	return strings.TrimSpace(v)
}

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
