package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/embed/encoder"
	"github.com/recall-mcp/recall/internal/embed/hub"
	"github.com/recall-mcp/recall/internal/search"
)

// engine builds the search engine over st. It returns the engine, the
// embedder new chunks are written with and the vector space they go to (nil
// and "" when embedding is off or the model is unavailable: recall then runs
// lexical-only and says so once on stderr). Queries are embedded with the
// model of the space searches read from, which may differ from the
// configured one while a model switch is under way (`recall space`).
// vectors says how searches reach the read space's vectors, when there is
// a query embedder to search them with.
func (m *Main) engine(ctx context.Context, st recall.Store, vectors vectorUse) (*search.Engine, recall.Embedder, string, error) {
	provider := strings.ToLower(m.setting(m.g.embedder, "embedder", "builtin"))
	model := m.setting(m.g.model, "model", "")
	emb, err := m.configuredEmbedder(provider, model)
	unusable := "" // why the configured model cannot be used
	if err != nil {
		if recall.ErrorCode(err) != recall.EUNAVAILABLE {
			return nil, nil, "", err
		}
		unusable, emb = recall.ErrorMessage(err), nil
	}
	space := ""
	unprobed := false // unusable for now: its vector size could not be learned
	var query recall.Embedder
	if emb != nil {
		if space, err = m.ensureSpace(ctx, st, emb); errors.Is(err, errUnprobed) {
			// No space can be made without the vector size: store text now
			// (as when the embedder fails during a write) rather than
			// nothing, unless the read space's model can be used (below).
			info := emb.Info()
			unusable = fmt.Sprintf("%s/%s could not be reached to learn its vector size (%s)", info.Provider, info.Model, recall.ErrorMessage(err))
			unprobed, emb, err = true, nil, nil
		}
		if err != nil {
			return nil, nil, "", err
		}
	}
	switch {
	case emb != nil:
		if query, err = m.queryEmbedder(ctx, st, emb); err != nil {
			return nil, nil, "", err
		}
	case provider != "none":
		// The configured model cannot be used, but the read space's model
		// may be another one that can (a switch to a remote model, the
		// config file still naming the built-in one, which this machine
		// lacks): searches and new text use it, so that a server repairs
		// and embeds into the space it searches.
		var read *recall.VectorSpace
		if emb, read, err = m.readSpaceEmbedder(ctx, st, provider, model); err != nil {
			return nil, nil, "", err
		}
		if emb != nil {
			query, space = emb, read.Name
			if unusable != "" {
				fmt.Fprintf(m.Stderr, "recall: %s; using read space %s's model (%s/%s) instead\n", unusable, read.Name, read.Provider, read.Model)
			}
			unusable = ""
		}
	}
	switch {
	case unusable != "" && unprobed:
		fmt.Fprintf(m.Stderr, "recall: %s; storing text only: `recall repair` embeds it once the embedder is back (or set dimensions)\n", unusable)
	case unusable != "":
		fmt.Fprintf(m.Stderr, "recall: %s; running lexical-only\n", unusable)
	}
	if query != nil {
		query = embed.WithQueryCache(query, 256, 10*time.Minute)
	}
	fusion, err := m.fusionSetting()
	if err != nil {
		return nil, nil, "", err
	}
	// A command-line search waits for the model to load; a server answers
	// from full text rather than keep a client waiting.
	budget := time.Minute
	if m.serving {
		budget = 2 * time.Second
	}
	opt := search.Options{Embedder: query, EmbedderOff: provider == "none", Fusion: fusion, EmbedBudget: budget,
		MemoryLexical: m.serving, ScanVectors: vectors == scanVectors}
	if !m.serving {
		// The search's budget holds that wait and the usual time for the
		// rest: within the engine's 5 s alone, a query the embedder held
		// up left its search no time, and its line of --queries failed.
		opt.Budget = budget + cmp.Or(m.searchWork, search.DefaultBudget)
	}
	if opt.ScanVectors {
		// The search reads every vector of the read space (about a
		// second at 100,000 chunks): it has as long as the index load it
		// replaces had, which nothing bounded but the command's end.
		opt.Budget = time.Hour
	}
	if m.serving && (emb != nil || provider != "none") {
		// A server moves to a read space another process switches to
		// (`recall space use`) with that space's model. So does one whose
		// model could not be used at start (not installed yet, a remote
		// one down on a new database): the space another process makes
		// once the model is there is searched and repaired without a
		// restart. One configured with embedder none stays on full text.
		opt.SpaceEmbedder = func(ctx context.Context, sp recall.VectorSpace) (recall.Embedder, error) {
			q, err := m.spaceEmbedder(ctx, st, sp, emb)
			if err != nil {
				return nil, err
			}
			return embed.WithQueryCache(q, 256, 10*time.Minute), nil
		}
	}
	eng := search.New(st, opt)
	// Without a query embedder no search reads the vectors: a one-off
	// command would load hundreds of megabytes of them for nothing (9 s
	// at 100,000 chunks).
	if vectors != noVectors && query != nil {
		if err := eng.LoadIndex(ctx); err != nil {
			return nil, nil, "", err
		}
	}
	return eng, emb, space, nil
}

// vectorUse says how a command's searches reach the read space's vectors.
type vectorUse int

const (
	// noVectors: the command reads no vectors here: it searches none
	// (or full text only), or it is a server, which loads the index in
	// the background.
	noVectors vectorUse = iota
	// scanVectors: the command answers one query, whose vector leg reads
	// the vectors from the store as it scores them (search.Options.
	// ScanVectors): building the whole index for one query cost more
	// than twice as much (BENCHMARKS.md, "One-off command-line search").
	scanVectors
	// indexVectors: the command answers many queries, from the index.
	indexVectors
)

// fusionSetting is the hybrid fusion to use: --fusion, RECALL_FUSION or the
// config file's fusion.
func (m *Main) fusionSetting() (string, error) {
	fusion := m.setting(m.fusion, "fusion", search.DefaultFusion)
	if err := checkSetting["fusion"](fusion); err != nil {
		return "", settingf("%v", err)
	}
	return fusion, nil
}

// queryEmbedder returns the embedder for the read space: emb itself when
// it made that space, else one built from the space's provider and model.
func (m *Main) queryEmbedder(ctx context.Context, st recall.Store, emb recall.Embedder) (recall.Embedder, error) {
	read, err := readSpace(ctx, st)
	if err != nil || read == nil {
		return emb, err
	}
	q, err := m.spaceEmbedder(ctx, st, *read, emb)
	if err != nil {
		fmt.Fprintf(m.Stderr, "recall: searches read space %s (%s/%s), which cannot be used: %s; running lexical-only\n",
			read.Name, read.Provider, read.Model, recall.ErrorMessage(err))
		return nil, nil
	}
	return q, nil
}

// readSpaceEmbedder returns the read space and its embedder when the
// configured one (provider, model) could not be made or reached and the
// read space is of another model; nil, saying why, when that one cannot
// be made either. The configured model's own space is not tried again: it
// fails as the configured model did.
func (m *Main) readSpaceEmbedder(ctx context.Context, st recall.Store, provider, model string) (recall.Embedder, *recall.VectorSpace, error) {
	read, err := readSpace(ctx, st)
	if err != nil || read == nil {
		return nil, nil, err
	}
	if read.Provider == provider && (model == "" || read.Model == model) {
		return nil, nil, nil
	}
	e, err := m.spaceEmbedder(ctx, st, *read, nil)
	if err != nil || e == nil {
		msg := "not available"
		if err != nil {
			msg = recall.ErrorMessage(err)
		}
		fmt.Fprintf(m.Stderr, "recall: searches read space %s (%s/%s), which cannot be used: %s\n",
			read.Name, read.Provider, read.Model, msg)
		return nil, nil, nil
	}
	return e, read, nil
}

// spaceEmbedder returns the embedder of space sp: the configured one
// (which may be nil) when it made the space — the only way to reach a model
// loaded from a directory, whose name is not a place to load it from —
// else one built from the space's provider and model.
//
// A space of the same model may hold vectors of another size than the
// configured embedder makes (made with `dimensions` set, for a model that
// can shorten its vectors): the embedder is then built to ask for the
// space's size.
func (m *Main) spaceEmbedder(ctx context.Context, st recall.Store, sp recall.VectorSpace, configured recall.Embedder) (recall.Embedder, error) {
	if configured != nil {
		if i := configured.Info(); i.Provider == sp.Provider && i.Model == sp.Model && i.Dim == 0 {
			if spaces, err := st.Spaces(ctx); err == nil && sizesOfModel(spaces, i) > 1 {
				knowDim(ctx, configured)
			}
		}
		if m.madeSpace(ctx, st, sp, configured) {
			return configured, nil
		}
	}
	e, err := m.makeEmbedder(sp.Provider, sp.Model)
	if err != nil || e == nil {
		return e, err
	}
	if d := knowDim(ctx, e); d != 0 && d != sp.Dim {
		return m.makeEmbedderDim(sp.Provider, sp.Model, sp.Dim)
	}
	return e, nil
}

// sizesOfModel counts the spaces of info's model: with more than one (of
// different sizes), the size of the embedder's vectors tells which is its,
// and an embedder that has not said must be asked (knowDim). With one, it
// is taken to be its, as always, without a call.
func sizesOfModel(spaces []recall.VectorSpace, info recall.EmbedderInfo) int {
	n := 0
	for _, s := range spaces {
		if s.Provider == info.Provider && s.Model == info.Model {
			n++
		}
	}
	return n
}

// knowDim returns the size of emb's vectors, asking it once when it was
// not configured (a remote model's size is learned from its first
// answer); 0 when it cannot be reached.
func knowDim(ctx context.Context, emb recall.Embedder) int {
	d, _ := embed.Dim(ctx, emb)
	return d
}

// madeSpace reports whether emb is the model of space sp. A model loaded
// from a directory is named by its files (hub.Identify); recall before
// 2026-11-30 named it after the directory alone, so a space of that name is
// this model's if it embeds one of the space's stored chunks to the vector
// stored for it.
func (m *Main) madeSpace(ctx context.Context, st recall.Store, sp recall.VectorSpace, emb recall.Embedder) bool {
	info := emb.Info()
	switch {
	case sp.Provider != info.Provider:
		return false
	case sp.Model == info.Model:
		// One model, two sizes (a space made with dimensions set): the
		// size tells them apart, when it is known.
		return info.Dim == 0 || sp.Dim == info.Dim
	case m.dirModel == "" || sp.Model != m.dirModel || info.Dim != 0 && sp.Dim != info.Dim:
		return false
	}
	if ok, seen := m.legacySpaces[sp.Name]; seen {
		return ok
	}
	ok := sameVectors(ctx, st, sp, emb)
	if m.legacySpaces == nil {
		m.legacySpaces = map[string]bool{}
	}
	m.legacySpaces[sp.Name] = ok
	return ok
}

// sameVectors embeds the first chunk that has a vector in space sp with emb
// and compares the result with the stored vector.
func sameVectors(ctx context.Context, st recall.Store, sp recall.VectorSpace, emb recall.Embedder) bool {
	errStop := errors.New("stop")
	var id int64
	var stored []float32
	err := st.ScanVectors(ctx, sp.Name, func(c recall.IndexedChunk, vec []float32) error {
		id, stored = c.ID, vec
		return errStop
	})
	if !errors.Is(err, errStop) {
		return false // an empty space proves nothing
	}
	chunks, err := st.ChunksByID(ctx, []int64{id})
	if err != nil || len(chunks) != 1 {
		return false
	}
	got, err := embed.EmbedChunks(ctx, emb, sp.Dim, []embed.ChunkText{{Header: chunks[0].Header, Text: chunks[0].Text}})
	if err != nil || len(got[0]) != len(stored) {
		return false
	}
	for i, v := range got[0] {
		if math.Abs(float64(v-stored[i])) > 1e-3 {
			return false
		}
	}
	return true
}

func readSpace(ctx context.Context, st recall.Store) (*recall.VectorSpace, error) {
	spaces, err := st.Spaces(ctx)
	if err != nil {
		return nil, err
	}
	for i := range spaces {
		if spaces[i].Read {
			return &spaces[i], nil
		}
	}
	return nil, nil
}

// configuredEmbedder is makeEmbedder for the embedder and model the
// settings name. A model that is none (an unknown name, a folder without a
// model's files) or a setting the provider refuses is the settings'
// mistake, exit 2, as an unknown embedder is: `sweep --model nosuch`
// exited 1 where `model pull nosuch` exited 2. A space's model, which
// the database names, is made with makeEmbedder: this machine lacking it
// is no mistake in what the command was given.
func (m *Main) configuredEmbedder(provider, model string) (recall.Embedder, error) {
	emb, err := m.makeEmbedder(provider, model)
	if recall.ErrorCode(err) == recall.EINVALID {
		return nil, settingError(err)
	}
	return emb, err
}

// checkModel refuses a setting that names no embedder or model (exit 2,
// as configuredEmbedder does) before the command opens the database:
// `sweep --model nosuch` created an empty database file, or upgraded an
// older one, and then said the model was unknown. The built-in model is
// found, not loaded (seconds; the engine loads it); a remote one is made,
// not reached. One that is unavailable (not installed, not answering)
// passes: the engine runs without it and says so.
func (m *Main) checkModel() error {
	provider := strings.ToLower(m.setting(m.g.embedder, "embedder", "builtin"))
	model := m.setting(m.g.model, "model", "")
	var err error
	if provider == "builtin" {
		if _, err = m.dimensions(); err == nil {
			_, _, err = m.resolveBuiltin(model)
		}
	} else {
		_, err = m.makeEmbedder(provider, model)
	}
	var ue usageError
	switch {
	case recall.ErrorCode(err) == recall.EINVALID:
		return settingError(err)
	case errors.As(err, &ue):
		return err
	}
	return nil
}

// makeEmbedder constructs the named provider. EUNAVAILABLE means recall can
// run without it (lexical-only); other errors are configuration mistakes.
func (m *Main) makeEmbedder(provider, model string) (recall.Embedder, error) {
	dim, err := m.dimensions()
	if err != nil {
		return nil, err
	}
	return m.makeEmbedderDim(provider, model, dim)
}

// dimensions is the dimensions setting: the size of the vectors to ask a
// remote model for (0: its own).
func (m *Main) dimensions() (int, error) {
	d := m.setting("", "dimensions", "")
	if d == "" {
		return 0, nil
	}
	if err := checkSetting["dimensions"](d); err != nil {
		return 0, settingf("%s %v", settingName("dimensions"), err)
	}
	dim, _ := strconv.Atoi(d)
	return dim, nil
}

// makeEmbedderDim is makeEmbedder asking the model for vectors of dim
// values (0: its own size); the built-in encoder has one size.
func (m *Main) makeEmbedderDim(provider, model string, dim int) (recall.Embedder, error) {
	switch provider {
	case "none", "":
		return nil, nil
	case "builtin":
		return m.builtinEmbedder(model)
	case "ollama":
		if model == "" {
			model = "bge-m3"
		}
		// A key is for an Ollama behind an authenticating proxy; a local
		// one needs none.
		return embed.NewOllama(embed.OllamaConfig{BaseURL: m.setting("", "ollama_url", embed.DefaultOllamaURL),
			Model: model, APIKey: m.setting("", "ollama_api_key", ""), Dim: dim})
	case "openai":
		if model == "" {
			model = "text-embedding-3-small"
		}
		key := m.setting("", "openai_api_key", m.Getenv("OPENAI_API_KEY"))
		return embed.NewOpenAI(embed.OpenAIConfig{BaseURL: m.setting("", "openai_url", embed.DefaultOpenAIURL),
			Model: model, APIKey: key, Dim: dim})
	case "cloudflare":
		if model == "" {
			model = "@cf/baai/bge-m3"
		}
		acct := m.setting("", "cloudflare_account_id", m.Getenv("CLOUDFLARE_ACCOUNT_ID"))
		tok := m.setting("", "cloudflare_api_token", m.Getenv("CLOUDFLARE_API_TOKEN"))
		var missing []string
		for _, v := range []struct{ value, key, env string }{
			{acct, "cloudflare_account_id", "CLOUDFLARE_ACCOUNT_ID"},
			{tok, "cloudflare_api_token", "CLOUDFLARE_API_TOKEN"},
		} {
			if v.value == "" {
				missing = append(missing, fmt.Sprintf("%s (RECALL_%s, %s or the config file)", v.key, strings.ToUpper(v.key), v.env))
			}
		}
		if len(missing) > 0 {
			return nil, settingf("the cloudflare embedder needs %s", strings.Join(missing, " and "))
		}
		return embed.NewCloudflare(embed.CloudflareConfig{AccountID: acct, APIToken: tok, Model: model,
			BaseURL: m.setting("", "cloudflare_url", ""), Dim: dim})
	}
	return nil, settingf("%v", checkSetting["embedder"](provider))
}

// builtinEmbedder loads the in-process encoder. A missing model is
// EUNAVAILABLE with a one-line explanation of how to get it; so is any
// model but one in a folder named by path when there is no models
// directory (no home directory to find it in, as for a system service),
// since a database given by --db or RECALL_DB needs none.
func (m *Main) builtinEmbedder(model string) (recall.Embedder, error) {
	dir, name, err := m.resolveBuiltin(model)
	if err != nil {
		return nil, err
	}
	return encoder.Load(dir, encoder.Options{Name: name})
}

// resolveBuiltin finds the built-in model's folder and name, as
// builtinEmbedder loads it, without loading it.
func (m *Main) resolveBuiltin(model string) (dir, name string, err error) {
	modelsDir, dirErr := m.modelsDir()
	// Python's directories are looked through only when the model is not
	// in the models directory (or a folder named by path): that is where
	// most starts find it.
	dir, fromDir, err := hub.Resolve(model, modelsDir, nil)
	if err != nil {
		dir, fromDir, err = hub.Resolve(model, modelsDir, hub.PackageDirs(m.sitePackages()))
	}
	if dirErr != nil && recall.ErrorCode(err) == recall.EUNAVAILABLE {
		return "", "", recall.Errorf(recall.EUNAVAILABLE, "the built-in model is unavailable: %v", dirErr)
	}
	if err != nil {
		return "", "", err
	}
	name = model
	if name == "" {
		name = hub.DefaultModel
	}
	if fromDir { // a directory, however it was written: name the model by its files
		if name, err = hub.Identify(dir); err != nil {
			return "", "", err
		}
		m.dirModel = filepath.Base(filepath.Clean(dir)) // the name earlier versions gave it
	}
	return dir, name, nil
}

// modelsDir is where built-in models are kept (RECALL_MODELS_DIR, config
// models_dir, or "models" in the data directory, beside the database).
func (m *Main) modelsDir() (string, error) {
	if d := m.setting("", "models_dir", ""); d != "" {
		return d, nil
	}
	dir, err := m.dataDir()
	if err != nil {
		return "", fmt.Errorf("no models directory (there is no home directory to keep models in): set RECALL_MODELS_DIR or models_dir in the config file")
	}
	return filepath.Join(dir, "models"), nil
}

// spaceDim is the dimension of a vector space (0 when there is none).
func spaceDim(ctx context.Context, st recall.Store, name string) (int, error) {
	if name == "" {
		return 0, nil
	}
	spaces, err := st.Spaces(ctx)
	if err != nil {
		return 0, err
	}
	for _, s := range spaces {
		if s.Name == name {
			return s.Dim, nil
		}
	}
	return 0, recall.Errorf(recall.ENOTFOUND, "no vector space %q", name)
}

// spaceName is the default name of the vector space of an embedder.
func spaceName(info recall.EmbedderInfo) string {
	r := strings.NewReplacer("/", "-", "@", "", ":", "-", " ", "-")
	return r.Replace(info.Provider + "-" + info.Model)
}

// vectorSizeError is the failure of a model asked for the size of its
// vectors (embed.Dim), to make its space: said as what could not be done
// and with which model, not the step ("probe ollama/m: …").
func vectorSizeError(info recall.EmbedderInfo, err error) error {
	return fmt.Errorf("cannot use %s/%s (asked for the size of its vectors): %w", info.Provider, info.Model, err)
}

// errUnprobed: there is no space for the embedder yet, and it could not be
// reached to learn the size of its vectors.
var errUnprobed = errors.New("no vector size")

// ensureSpace finds or creates the space new vectors of emb are written to.
// When it has to ask an unreachable embedder for its vector size, the error
// is errUnprobed (wrapping the embedder's).
func (m *Main) ensureSpace(ctx context.Context, st recall.Store, emb recall.Embedder) (string, error) {
	info := emb.Info()
	spaces, err := st.Spaces(ctx)
	if err != nil {
		return "", err
	}
	if info.Dim == 0 && sizesOfModel(spaces, info) > 1 {
		// Which of the model's spaces (one per size) is its depends on
		// the size it makes.
		knowDim(ctx, emb)
		info = emb.Info()
	}
	// The read space comes first: a model can have a second space (`space
	// create --force`), and once searches read that one, vectors written
	// to the first would be missing where they are searched.
	for _, read := range []bool{true, false} {
		for _, s := range spaces {
			if s.Read == read && (info.Dim == 0 || s.Dim == info.Dim) && m.madeSpace(ctx, st, s, emb) {
				return s.Name, nil
			}
		}
	}
	dim, err := embed.Dim(ctx, emb)
	if recall.ErrorCode(err) == recall.EUNAVAILABLE {
		return "", fmt.Errorf("%w: %w", errUnprobed, err)
	}
	if err != nil {
		return "", vectorSizeError(info, err)
	}
	info = emb.Info()
	s, err := st.CreateSpace(ctx, recall.VectorSpace{Name: spaceName(info), Provider: info.Provider,
		Model: info.Model, Dim: dim, Normalized: info.Normalized})
	if err != nil {
		return "", err
	}
	return s.Name, nil
}
