package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
// <user config dir>/recall/config. A missing default file is not an error.
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
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("config %s:%d: expected key = value", path, n)
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		c[k] = v
	}
	return c, sc.Err()
}

// setting resolves one setting: flag value, then RECALL_<KEY>, then the
// config file, then def.
func (m *Main) setting(flagValue, key, def string) string {
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
