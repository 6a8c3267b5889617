#!/usr/bin/env python3
"""Write a tiny random-weight BGE-style model and its reference embeddings.

No PyPI package ships bge-small-en-v1.5 as safetensors, so the parts of the
encoder only BGE-family models use (CLS pooling, the query instruction) are
checked here against the reference on a model small enough to commit:
transformers' BertModel with random weights (hidden 32, 2 layers, a
character-level WordPiece vocabulary), saved by sentence-transformers with
CLS pooling and a Normalize module, exactly as BAAI's models are laid out.
The windows of over-length texts are cut as in golden_embeddings.py. The
directory is in sentence-transformers 6's layout (window in
tokenizer_config.json, "pooling_mode" in the pooling config), so the newer
layout is covered as all-MiniLM-L6-v2 covers the older one.

Writes internal/embed/encoder/testdata/bge-tiny/ (the model directory) and
internal/embed/encoder/testdata/golden/bge-tiny.json.

Usage:
    scripts/install-test-models.sh --reference
    python3 scripts/golden_tiny.py
"""

import json
import os
import shutil
import string
import sys
import tempfile

import torch
from sentence_transformers import SentenceTransformer, models
from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
from tokenizers import models as tokenizer_models
from transformers import BertConfig, BertModel, BertTokenizerFast

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_embeddings import BGE_QUERY, OUT, SENTENCES, golden  # noqa: E402

MODEL_DIR = os.path.join(OUT, "..", "bge-tiny")
WINDOW = 24

WORDS = """the of and to in is was for that on with as by at from this it be are or an have not which but were
recall memory search sqlite vector text query passage database migration decide night sweep file chunk
represent sentence searching relevant passages""".split()


def vocab():
    chars = string.ascii_lowercase + string.digits + string.punctuation + "中文数据库迁移向量索引会议我爱北京天安门"
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    pieces += list(chars) + ["##" + c for c in chars] + WORDS
    return list(dict.fromkeys(pieces))


def main():
    torch.manual_seed(20260501)
    with tempfile.TemporaryDirectory() as tmp:
        ids = {piece: i for i, piece in enumerate(vocab())}
        t = Tokenizer(tokenizer_models.WordPiece(ids, unk_token="[UNK]"))
        t.normalizer = normalizers.BertNormalizer(lowercase=True)
        t.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        t.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
        tok = BertTokenizerFast(tokenizer_object=t, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                sep_token="[SEP]", mask_token="[MASK]")
        cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64, max_position_embeddings=64, hidden_act="gelu")
        bert = BertModel(cfg, add_pooling_layer=False)
        with torch.no_grad():
            # Random init keeps LayerNorm at identity; perturb it so its
            # weights are exercised too.
            for name, p in bert.named_parameters():
                if "LayerNorm" in name:
                    p.add_(torch.randn_like(p) * 0.1)
        hf_dir = os.path.join(tmp, "hf")
        bert.save_pretrained(hf_dir)
        tok.save_pretrained(hf_dir)

        transformer = models.Transformer(hf_dir, max_seq_length=WINDOW)
        pooling = models.Pooling(transformer.get_embedding_dimension(), pooling_mode="cls")
        st = SentenceTransformer(modules=[transformer, pooling, models.Normalize()], device="cpu")
        if os.path.exists(MODEL_DIR):
            shutil.rmtree(MODEL_DIR)
        st.save(MODEL_DIR)
    # Keep only what the Go encoder reads; the rest would be noise in review.
    # sentence-transformers 6 keeps the window in tokenizer_config.json.
    keep = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "modules.json",
            "sentence_bert_config.json", "1_Pooling"}
    for name in os.listdir(MODEL_DIR):
        if name not in keep:
            path = os.path.join(MODEL_DIR, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    golden("bge-tiny", MODEL_DIR, {"query": BGE_QUERY}, True)


if __name__ == "__main__":
    main()
