"""ONNX Runtime peer for the built-in encoder's throughput figure.

Embeds the chunks from chunks.py the way recall does: tokenise with the
model's tokenizer.json (truncated to the window), run the transformer, pool
as the model does (all-MiniLM-L6-v2: mean over the attention mask;
bge-small-en-v1.5: the [CLS] token), L2-normalise. Prints the median
chunks/s over several timed runs.

Usage: ort_bench.py MODEL.onnx TOKENIZER.json CHUNKS.jsonl [--threads N]
       [--batch 32] [--window 256] [--pooling mean|cls] [--runs 5]
"""

import argparse
import json
import os
import statistics
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("tokenizer")
    p.add_argument("chunks")
    p.add_argument("--threads", type=int, default=int(os.environ.get("GOMAXPROCS", os.cpu_count())))
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--window", type=int, default=256)
    p.add_argument("--pooling", choices=("mean", "cls"), default="mean")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument(
        "--no-spin",
        action="store_true",
        help="idle worker threads sleep instead of spinning (ORT spins by default, which "
        "helps on an idle machine and hurts on a busy one)",
    )
    p.add_argument("--out", help="write the embeddings here as JSON, for main.go -check")
    args = p.parse_args()

    with open(args.chunks) as f:
        chunks = [json.loads(line) for line in f]

    tok = Tokenizer.from_file(args.tokenizer)
    # The jar's tokenizer.json pads every input to 128 and truncates there;
    # recall truncates to the model window and pads only to the longest in
    # the batch, so set the same here.
    tok.enable_truncation(args.window)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")

    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if args.no_spin:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])

    def embed_all():
        out = []
        for i in range(0, len(chunks), args.batch):
            enc = tok.encode_batch(chunks[i : i + args.batch])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            types = np.array([e.type_ids for e in enc], dtype=np.int64)
            (hidden,) = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
            if args.pooling == "cls":
                pooled = hidden[:, 0].copy()
            else:
                m = mask[:, :, None].astype(np.float32)
                pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out.append(pooled)
        return np.concatenate(out)

    vecs = embed_all()  # warm-up: first-run allocations and graph setup
    rates = []
    cpu0 = time.process_time()
    for _ in range(args.runs):
        t0 = time.perf_counter()
        embed_all()
        rates.append(len(chunks) / (time.perf_counter() - t0))
    cpu = time.process_time() - cpu0
    if args.out:
        with open(args.out, "w") as f:
            json.dump(vecs.tolist(), f)
    # Per CPU-second barely moves with background load; with spinning
    # threads it also counts the spinning.
    print(f"onnxruntime: {len(chunks) * args.runs / cpu:.2f} chunks per CPU-second")
    print(
        f"onnxruntime{'-nospin' if args.no_spin else ''} {ort.__version__}: {statistics.median(rates):.2f} chunks/s "
        f"(median of {args.runs}; {len(chunks)} chunks of {len(chunks[0])} chars, "
        f"batch {args.batch}, window {args.window}, {args.pooling} pooling, {args.threads} threads; "
        f"runs: {', '.join(f'{r:.2f}' for r in rates)})"
    )


if __name__ == "__main__":
    main()
