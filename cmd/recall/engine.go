package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/search"
)

// engine builds the search engine over st with the configured embedder. It
// returns the engine, the embedder new chunks are written with and the name
// of the vector space they go to (nil and "" when embedding is off or the
// model is unavailable, in which case recall runs lexical-only and says so
// once on stderr). With loadIndex, the read space's vectors are loaded for
// semantic search.
func (m *Main) engine(ctx context.Context, st recall.Store, loadIndex bool) (*search.Engine, recall.Embedder, string, error) {
	provider := strings.ToLower(m.setting(m.g.embedder, "embedder", "builtin"))
	model := m.setting(m.g.model, "model", "")
	emb, err := m.makeEmbedder(provider, model)
	if err != nil {
		if recall.ErrorCode(err) != recall.EUNAVAILABLE {
			return nil, nil, "", err
		}
		fmt.Fprintf(m.Stderr, "recall: %s; running lexical-only\n", recall.ErrorMessage(err))
		emb = nil
	}
	eng := search.New(st, search.Options{Embedder: emb})
	space := ""
	if emb != nil {
		sp, err := m.ensureSpace(ctx, st, emb)
		if err != nil {
			return nil, nil, "", err
		}
		space = sp
	}
	if loadIndex {
		if err := eng.LoadIndex(ctx); err != nil {
			return nil, nil, "", err
		}
	}
	return eng, emb, space, nil
}

// makeEmbedder constructs the named provider. EUNAVAILABLE means recall can
// run without it (lexical-only); other errors are configuration mistakes.
func (m *Main) makeEmbedder(provider, model string) (recall.Embedder, error) {
	switch provider {
	case "none", "":
		return nil, nil
	case "builtin", "ollama", "openai", "cloudflare":
		return nil, recall.Errorf(recall.EUNAVAILABLE, "the %s embedder is not available in this build", provider)
	}
	return nil, usagef("unknown embedder %q: use builtin, ollama, openai, cloudflare or none", provider)
}

// spaceName is the default name of the vector space of an embedder.
func spaceName(info recall.EmbedderInfo) string {
	r := strings.NewReplacer("/", "-", "@", "", ":", "-", " ", "-")
	return r.Replace(info.Provider + "-" + info.Model)
}

// ensureSpace finds or creates the space new vectors of emb are written to.
func (m *Main) ensureSpace(ctx context.Context, st recall.Store, emb recall.Embedder) (string, error) {
	info := emb.Info()
	spaces, err := st.Spaces(ctx)
	if err != nil {
		return "", err
	}
	for _, s := range spaces {
		if s.Provider == info.Provider && s.Model == info.Model && (info.Dim == 0 || s.Dim == info.Dim) {
			return s.Name, nil
		}
	}
	dim := info.Dim
	if dim == 0 {
		v, err := emb.Embed(ctx, recall.InputDocument, []string{"dimension probe"})
		if err != nil {
			return "", fmt.Errorf("probe %s/%s for its dimension: %w", info.Provider, info.Model, err)
		}
		dim = len(v[0])
	}
	s, err := st.CreateSpace(ctx, recall.VectorSpace{Name: spaceName(info), Provider: info.Provider,
		Model: info.Model, Dim: dim, Normalized: info.Normalized})
	if err != nil {
		return "", err
	}
	return s.Name, nil
}
