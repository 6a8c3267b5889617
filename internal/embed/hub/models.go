// Package hub fetches the built-in encoder's models from Hugging Face and
// finds them on disk: a table of known models pinned to a commit with each
// file's size and sha256, resumable verified downloads (`recall model
// pull`), a listing of what is installed (`recall model list`) and the
// mapping from a model name or directory to the directory the encoder loads.
package hub

import (
	"strings"
)

// Model is a model this package knows how to fetch.
type Model struct {
	Name     string // what users type: "all-MiniLM-L6-v2"
	Repo     string // Hugging Face repository: "sentence-transformers/all-MiniLM-L6-v2"
	Revision string // the commit every file is fetched at
	Files    []File
}

// File is one file of a model at its pinned revision.
type File struct {
	Path string // inside the repository, forward slashes
	// Size in bytes; 0 when not recorded, and then not checked.
	Size int64
	// SHA256 in hex; "" when no published value could be found, and then
	// the check is skipped for this file until it is filled in.
	SHA256 string
}

// DefaultModel is the model the built-in encoder uses when none is named.
const DefaultModel = "all-MiniLM-L6-v2"

// known lists the models `recall model pull` fetches. Each holds what the
// encoder loads: the weights, config.json, tokenizer.json and the
// sentence-transformers files that say how to pool and whether to
// normalize.
//
// Revisions, sizes and hashes are the published values of the Hugging Face
// repositories at those commits (the LFS object ids for large files, the
// sha256 of the file for small ones), as recorded by several independent
// projects that pin the same snapshots; where the same content (same hash)
// is listed with its size elsewhere, that size is used.
var known = []Model{
	{
		Name:     "all-MiniLM-L6-v2",
		Repo:     "sentence-transformers/all-MiniLM-L6-v2",
		Revision: "1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
		Files: []File{
			{"config.json", 612, "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"},
			{"model.safetensors", 90868376, "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"},
			{"tokenizer.json", 466247, "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"},
			{"modules.json", 349, "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"},
			{"sentence_bert_config.json", 53, "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"},
			{"1_Pooling/config.json", 190, "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"},
		},
	},
	{
		Name:     "bge-small-en-v1.5",
		Repo:     "BAAI/bge-small-en-v1.5",
		Revision: "5c38ec7c405ec4b44b94cc5a9bb96e735b38267a",
		Files: []File{
			{"config.json", 743, "094f8e891b932f2000c92cfc663bac4c62069f5d8af5b5278c4306aef3084750"},
			{"model.safetensors", 133466304, "3c9f31665447c8911517620762200d2245a2518d6e7208acc78cd9db317e21ad"},
			{"tokenizer.json", 711396, "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"},
			{"modules.json", 349, "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"},
			{"sentence_bert_config.json", 52, "84e39fda68ccbff05bfa723ae9c0e70e23e2ec373b76e0f8c6e71af72a693cbf"},
			// Size not found published; the hash is checked.
			{"1_Pooling/config.json", 0, "d1caf60c96f5fba2157c0c26b76d80818fad6cf0b8eb5e73ec372ff9818eba5c"},
		},
	},
	{
		Name:     "multilingual-e5-small",
		Repo:     "intfloat/multilingual-e5-small",
		Revision: "614241f622f53c4eeff9890bdc4f31cfecc418b3",
		Files: []File{
			{"config.json", 655, "69137736cab8b8903a07fe8afaafdda25aac55415a12a55d1bffa9f581abf959"},
			{"model.safetensors", 470641600, "1a55775f53449dac10a2bcbc312469fac40b96d53198c407081a831f81c98477"},
			{"tokenizer.json", 17082730, "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39"},
			{"modules.json", 387, "c6e29747481e8b5dd2b58401966aeac910de39092f90cda9a704b1545f902b04"},
			{"sentence_bert_config.json", 57, "948201d8329907aae938fa62f9ceeed53f5694dacc2b87b9f3b78b37ee986529"},
			{"1_Pooling/config.json", 200, "987f7a67a38fa564c849bb5d277c52ab9088a84368fc0be31a354125aebb12a0"},
		},
	},
}

// Known returns the models `recall model pull` can fetch, default first.
func Known() []Model {
	out := make([]Model, len(known))
	for i, m := range known {
		m.Files = append([]File(nil), m.Files...)
		out[i] = m
	}
	return out
}

// Lookup finds a known model by name, ignoring case; the repository name
// ("BAAI/bge-small-en-v1.5") is accepted too.
func Lookup(name string) (Model, bool) {
	for _, m := range Known() {
		if strings.EqualFold(name, m.Name) || strings.EqualFold(name, m.Repo) {
			return m, true
		}
	}
	return Model{}, false
}

// knownNames is the list of names for messages.
func knownNames() string {
	names := make([]string, len(known))
	for i, m := range known {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

// required are the files the encoder cannot load a model without.
var required = []string{"config.json", "model.safetensors", "tokenizer.json"}
