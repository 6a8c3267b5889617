package embed

import "strings"

// The same open models are served under many names: "nomic-embed-text:v1.5"
// by Ollama, "nomic-ai/nomic-embed-text-v1.5" by vLLM, "text-embedding-nomic-
// embed-text-v1.5" by LM Studio. The tables below therefore match a family
// name anywhere in the model's last path element, first match winning, so more
// specific families come before the families they extend.

// retrievalInstruction is the query marker the BGE English, mxbai and Arctic
// v1 model cards give for retrieval.
const retrievalInstruction = "Represent this sentence for searching relevant passages: "

var knownPrefixes = []struct {
	family   string
	prefixes Prefixes
}{
	{"nomic-embed-text", Prefixes{Query: "search_query: ", Document: "search_document: "}},
	{"mxbai-embed-large", Prefixes{Query: retrievalInstruction}},
	{"arctic-embed2", Prefixes{Query: "query: "}},
	{"arctic-embed-l-v2", Prefixes{Query: "query: "}},
	{"arctic-embed-m-v2", Prefixes{Query: "query: "}},
	{"arctic-embed", Prefixes{Query: retrievalInstruction}},
	{"bge-small-en", Prefixes{Query: retrievalInstruction}},
	{"bge-base-en", Prefixes{Query: retrievalInstruction}},
	{"bge-large-en", Prefixes{Query: retrievalInstruction}},
	// Qwen's model card: "Instruct: {task}\nQuery:{query}", no space after the colon.
	{"qwen3-embedding", Prefixes{Query: "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"}},
	{"embeddinggemma", Prefixes{Query: "task: search result | query: ", Document: "title: none | text: "}},
	{"multilingual-e5", Prefixes{Query: "query: ", Document: "passage: "}},
	{"e5-small", Prefixes{Query: "query: ", Document: "passage: "}},
	{"e5-base", Prefixes{Query: "query: ", Document: "passage: "}},
	{"e5-large", Prefixes{Query: "query: ", Document: "passage: "}},
}

// knownMaxTokens are the input windows of common embedding models.
var knownMaxTokens = []struct {
	family string
	tokens int
}{
	{"bge-m3", 8192},
	{"nomic-embed-text", 8192},
	{"mxbai-embed-large", 512},
	{"arctic-embed2", 8192},
	{"arctic-embed-l-v2", 8192},
	{"arctic-embed-m-v2", 8192},
	{"arctic-embed", 512},
	{"bge-small-en", 512},
	{"bge-base-en", 512},
	{"bge-large-en", 512},
	{"qwen3-embedding", 32768},
	{"embeddinggemma", 2048},
	{"all-minilm", 256},
	{"multilingual-e5", 512},
	{"e5-small", 512},
	{"e5-base", 512},
	{"e5-large", 512},
	{"text-embedding-3-small", 8191},
	{"text-embedding-3-large", 8191},
	{"text-embedding-ada-002", 8191},
}

// KnownPrefixes returns the query and document prefixes the model's authors
// recommend for retrieval, or none for models that need none (bge-m3, OpenAI's
// text-embedding-3) and models this package does not know.
func KnownPrefixes(model string) Prefixes {
	name := family(model)
	for _, k := range knownPrefixes {
		if strings.Contains(name, k.family) {
			return k.prefixes
		}
	}
	return Prefixes{}
}

// KnownMaxTokens returns the model's input window in tokens, or 0 when unknown.
func KnownMaxTokens(model string) int {
	name := family(model)
	for _, k := range knownMaxTokens {
		if strings.Contains(name, k.family) {
			return k.tokens
		}
	}
	return 0
}

// family reduces a served model name to the part that names the model:
// lower case, without the organisation path and without an Ollama tag.
func family(model string) string {
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}
