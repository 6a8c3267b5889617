#!/usr/bin/env python3
"""Write tiny random-weight BGE- and E5-style models and their reference embeddings.

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

The E5-style twin (mean pooling, "query: " and "passage: ") checks that a
document prefix is repeated in every window as the reference is given it,
and a multilingual-E5-style one runs the same behind an XLM-R SentencePiece
(Unigram) tokenizer.

Writes internal/embed/encoder/testdata/{bge,e5,multilingual-e5}-tiny/ (model
directories) and internal/embed/encoder/testdata/golden/*-tiny.json.

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
from transformers import BertConfig, BertModel, BertTokenizerFast, PreTrainedTokenizerFast

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_embeddings import BGE_QUERY, OUT, SENTENCES, golden  # noqa: E402

WINDOW = 24
E5 = {"query": "query: ", "document": "passage: "}

WORDS = """the of and to in is was for that on with as by at from this it be are or an have not which but were
recall memory search sqlite vector text query passage database migration decide night sweep file chunk
represent sentence searching relevant passages""".split()


def vocab():
    chars = string.ascii_lowercase + string.digits + string.punctuation + "中文数据库迁移向量索引会议我爱北京天安门"
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    pieces += list(chars) + ["##" + c for c in chars] + WORDS
    return list(dict.fromkeys(pieces))


def main():
    write("bge-tiny", "cls", {"query": BGE_QUERY}, wordpiece_tokenizer(), seed=20260501)
    write("e5-tiny", "mean", E5, wordpiece_tokenizer(), seed=20260502)
    write("multilingual-e5-tiny", "mean", E5, xlmr_tokenizer(), seed=20260503)


def wordpiece_tokenizer():
    ids = {piece: i for i, piece in enumerate(vocab())}
    t = Tokenizer(tokenizer_models.WordPiece(ids, unk_token="[UNK]"))
    t.normalizer = normalizers.BertNormalizer(lowercase=True)
    t.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    t.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return BertTokenizerFast(tokenizer_object=t, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                             sep_token="[SEP]", mask_token="[MASK]")


def xlmr_tokenizer():
    """multilingual-e5-small is a BertModel behind XLM-R's SentencePiece
    tokenizer; this is the tokenizer package's XLM-R-layout fixture (Unigram,
    2,002 pieces, precompiled charsmap, Metaspace, <s> ... </s>)."""
    path = os.path.join(OUT, "..", "..", "tokenizer", "testdata", "unigram", "xlmr.json")
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_file(path), bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="<pad>", cls_token="<s>", sep_token="</s>",
                                   mask_token="<mask>")


def write(name, pooling_mode, prefixes, tok, seed):
    model_dir = os.path.join(OUT, "..", name)
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64, max_position_embeddings=64, hidden_act="gelu")
        bert = BertModel(cfg, add_pooling_layer=False)
        with torch.no_grad():
            # Random init keeps LayerNorm at identity; perturb it so its
            # weights are exercised too.
            for param_name, p in bert.named_parameters():
                if "LayerNorm" in param_name:
                    p.add_(torch.randn_like(p) * 0.1)
        hf_dir = os.path.join(tmp, "hf")
        bert.save_pretrained(hf_dir)
        tok.save_pretrained(hf_dir)

        transformer = models.Transformer(hf_dir, max_seq_length=WINDOW)
        pooling = models.Pooling(transformer.get_embedding_dimension(), pooling_mode=pooling_mode)
        st = SentenceTransformer(modules=[transformer, pooling, models.Normalize()], device="cpu")
        if os.path.exists(model_dir):
            shutil.rmtree(model_dir)
        st.save(model_dir)
    # Keep only what the Go encoder reads; the rest would be noise in review.
    # sentence-transformers 6 keeps the window in tokenizer_config.json.
    keep = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "modules.json",
            "sentence_bert_config.json", "1_Pooling"}
    for entry in os.listdir(model_dir):
        if entry not in keep:
            path = os.path.join(model_dir, entry)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    golden(name, model_dir, prefixes, True)


if __name__ == "__main__":
    main()
