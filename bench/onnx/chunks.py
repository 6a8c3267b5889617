"""Writes the benchmark's 2000-character chunks, one JSON string per line.

Deterministic (fixed seed, no external data), so the Go and ONNX Runtime
sides embed exactly the same text. The text imitates the archive recall
indexes: turns of a technical conversation with prose, numbers, identifiers,
paths and a little code.
"""

import json
import random
import sys

WORDS = """the a to of and in is that it for on with as this be are was by at or from
have not can will but if when what which you we they an all one would there their
about more also so use using used need make like time only new some could should
just how up out then them into than other these two first because way any each may
database query index search memory server client model token vector embedding chunk
file folder archive conversation message answer question result error config setting
function method value string number list table column row key cache batch window
test benchmark latency throughput thread core build release version update change
user assistant system prompt context document text sentence word meaning similar
store write read load save delete insert select order limit offset filter rank score""".split()

NAMES = ["recall", "sqlite", "fts5", "MiniLM", "BERT", "Go", "Python", "ONNX", "Ollama",
         "PostgreSQL", "WordPiece", "safetensors", "GOMAXPROCS", "HNSW", "cosine"]

CODE = [
    "func (s *Store) Search(ctx context.Context, q Query) ([]Hit, error) {",
    "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 50;",
    "for i, v := range vec { norm += v * v }",
    "if err != nil { return fmt.Errorf(\"sweep %s: %w\", path, err) }",
    "def embed(texts): return model.encode(texts, normalize_embeddings=True)",
    "curl -s localhost:8080/api/search?q=index",
]


def sentence(rng):
    n = rng.randint(6, 18)
    words = []
    for _ in range(n):
        r = rng.random()
        if r < 0.08:
            words.append(rng.choice(NAMES))
        elif r < 0.12:
            words.append(str(rng.randint(0, 20000)))
        elif r < 0.14:
            words.append("/".join(rng.choice(WORDS) for _ in range(3)) + ".go")
        else:
            words.append(rng.choice(WORDS))
    s = " ".join(words)
    return s[0].upper() + s[1:] + rng.choice([".", ".", ".", "?", "!", ":"])


def chunk(rng, size):
    parts = []
    length = 0
    while length < size:
        turn = rng.choice(["User: ", "Assistant: "])
        body = " ".join(sentence(rng) for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.2:
            body += "\n" + rng.choice(CODE)
        piece = turn + body + "\n"
        parts.append(piece)
        length += len(piece)
    return "".join(parts)[:size]


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rng = random.Random(20240601)
    for _ in range(count):
        print(json.dumps(chunk(rng, size)))


if __name__ == "__main__":
    main()
