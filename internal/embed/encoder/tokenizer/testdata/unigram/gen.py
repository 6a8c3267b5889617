#!/usr/bin/env python3
"""Builds the Unigram tokenizer fixtures and their golden encodings.

The golden ids come from Hugging Face `tokenizers` (the reference the Go
tokenizer must match), so this runs once and its output is committed:

    python3 -m venv /tmp/tokvenv
    /tmp/tokvenv/bin/pip install tokenizers==0.23.3 sentencepiece==0.2.3 protobuf
    /tmp/tokvenv/bin/python gen.py          # from this directory

No XLM-R tokenizer.json can be downloaded here (Hugging Face is out of
reach), so the fixtures are real SentencePiece Unigram models converted the
way transformers' XLMRobertaConverter does it:

  * xlmr.json   - trained by sentencepiece on corpus.txt + botchan.txt with
                  the nmt_nfkc rules (a real precompiled_charsmap), XLM-R
                  layout: fairseq ids, Precompiled, Metaspace, <s> $A </s>.
  * m3.json     - same vocabulary, bge-m3 style pipeline: Sequence
                  normalizer (Replace, Precompiled, Strip), WhitespaceSplit +
                  Metaspace(prepend first), RobertaProcessing.
  * bytes.json  - trained with byte_fallback, NFKC + Lowercase normalizers,
                  Metaspace without split.
  * kyoto.json  - Google's kyoto_ja_unigram_8000.model from the sentencepiece
                  sdist (a real Japanese model with an older charsmap), saved
                  in the legacy add_prefix_space form.

  * added.json  - bytes.json plus added tokens of every kind: normalized
                  (matched after NFKC + Lowercase), single_word, rstrip.

golden_random.json holds seeded random mixes of corpus words, specials,
spaces, marks and emoji, encoded by each fixture.

charsmap_*.json hold, for each charsmap, every code point the reference
Precompiled normalizer changes, plus multi-character strings (graphemes).
"""

import base64
import glob
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as pb
from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers
from tokenizers import pre_tokenizers, processors

HERE = os.path.dirname(os.path.abspath(__file__))


def spm_sdist():
    """Unpacks the sentencepiece sdist (test models and botchan.txt)."""
    tmp = tempfile.mkdtemp()
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
         "-d", tmp, "sentencepiece==0.2.3"],
        check=True, stdout=subprocess.DEVNULL)
    (archive,) = glob.glob(os.path.join(tmp, "*.tar.gz"))
    with tarfile.open(archive) as tf:
        tf.extractall(tmp, filter="data")
    (root,) = glob.glob(os.path.join(tmp, "sentencepiece-*/"))
    return os.path.join(root, "test")


def train(text_files, prefix, vocab_size, **extra):
    params = dict(
        input=",".join(text_files), model_prefix=prefix, model_type="unigram",
        vocab_size=vocab_size, character_coverage=1.0, hard_vocab_limit=False,
        normalization_rule_name="nmt_nfkc", input_sentence_size=0,
        num_threads=2, minloglevel=2, seed_sentencepiece_size=200000)
    params.update(extra)
    spm.SentencePieceTrainer.train(**params)
    proto = pb.ModelProto()
    with open(prefix + ".model", "rb") as f:
        proto.ParseFromString(f.read())
    return proto


def xlmr_vocab(proto):
    # XLMRobertaConverter: fairseq's four specials first, spm's own
    # <unk>/<s>/</s> (ids 0-2) dropped, <mask> last.
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    vocab += [(p.piece, p.score) for p in proto.pieces[3:]]
    vocab += [("<mask>", 0.0)]
    return vocab


def add_xlmr_specials(tok, vocab):
    n = len(vocab)
    tok.add_special_tokens([
        AddedToken("<s>", normalized=False, special=True),
        AddedToken("<pad>", normalized=False, special=True),
        AddedToken("</s>", normalized=False, special=True),
        AddedToken("<unk>", normalized=False, special=True),
        AddedToken("<mask>", lstrip=True, normalized=False, special=True),
    ])
    assert tok.token_to_id("<mask>") == n - 1


def build_xlmr(proto):
    vocab = xlmr_vocab(proto)
    tok = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    tok.normalizer = normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)])
    add_xlmr_specials(tok, vocab)
    return tok


def build_m3(proto):
    vocab = xlmr_vocab(proto)
    tok = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([
        normalizers.Replace("``", '"'),
        normalizers.Replace("''", '"'),
        normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
        normalizers.Replace(Regex(" {2,}"), " "),
        normalizers.Strip(left=True, right=True),
    ])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True),
    ])
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    add_xlmr_specials(tok, vocab)
    return tok


def build_bytes(proto):
    vocab = [(p.piece, p.score) for p in proto.pieces]
    unk = next(i for i, p in enumerate(proto.pieces) if p.type == pb.ModelProto.SentencePiece.UNKNOWN)
    tok = Tokenizer(models.Unigram(vocab, unk_id=unk, byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    bos = tok.token_to_id("<s>")
    eos = tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> $B:1 </s>:1",
        special_tokens=[("<s>", bos), ("</s>", eos)])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in ("<unk>", "<s>", "</s>")])
    return tok


def build_kyoto(model_path):
    proto = pb.ModelProto()
    with open(model_path, "rb") as f:
        proto.ParseFromString(f.read())
    vocab = [(p.piece, p.score) for p in proto.pieces]
    tok = Tokenizer(models.Unigram(vocab, unk_id=0, byte_fallback=False))
    tok.normalizer = normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", 2)])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in ("<unk>", "<s>", "</s>")])
    doc = json.loads(tok.to_str())
    # Models converted before tokenizers 0.14 say add_prefix_space instead of
    # prepend_scheme; keep one fixture in that older form.
    doc["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True}
    return Tokenizer.from_str(json.dumps(doc)), proto


LONG = ("Recall keeps a long-term memory of past conversations. " * 30 +
        "我们明天上午九点在会议室讨论数据库迁移的问题。" * 10)

TEXTS = [
    "",
    " ",
    "   ",
    "Hello world",
    "Hello, world!",
    "  leading and trailing spaces  ",
    "multiple    spaces\tand\ttabs\nand\nnewlines",
    "line one\r\nline two\r\n",
    "The quick brown fox jumps over the lazy dog.",
    "Recall keeps a long-term memory of past conversations and searches it by meaning.",
    "Unigram language models pick the most probable segmentation.",
    "We met on Tuesday to discuss the migration.",
    "café déjà vu naïve résumé",
    "cafe\u0301 de\u0301ja\u0300 vu",  # decomposed accents
    "Ångström Ærøskøbing Œuvre",
    "Die Straße war nass. Über den Wolken.",
    "¿Dónde está la estación? ¡Olé!",
    "Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "Съешь же ещё этих мягких французских булок.",
    "Η γρήγορη καφέ αλεπού.",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "Xin chào thế giới",
    "我们明天上午九点在会议室讨论数据库迁移的问题。",
    "今天天气很好，我们去公园散步吧。",
    "他说：“记忆是一种能力。”",
    "電腦、軟體與網際網路",
    "饕餮鼗鼙龘",  # rare characters: unknown pieces
    "東京は日本の首都です。",
    "カタカナとひらがな",
    "ｶﾀｶﾅ ﾊﾝｶｸ ｶﾞｷﾞ",
    "서울은 대한민국의 수도입니다.",
    "한국어 문장을 토큰으로 나누기",
    "Emoji: 😀 🎉 👍🏽 ❤️ 🇫🇷 👨‍👩‍👧",
    "😀😀😀",
    "Full-width ＡＢＣ１２３ ｈｅｌｌｏ！",
    "ideographic\u3000space and\u00a0nbsp",
    "zero\u200bwidth\u200djoiner\ufeffbom",
    "control\x00\x01\x07chars\x7f",
    "ﬁ ﬂ ™ ½ ① ㍿ ℃",
    "3.14159 2,718 100% $42.00 €19,99 ¥500",
    "func main() { fmt.Println(\"hello\") }",
    "someone@example.com https://example.org/path?q=1",
    "``quoted'' text",
    "<s> literal specials </s> and <mask> here",
    "a<mask>b <mask>",
    "<unk><pad>",
    "cat catि cat\u0301 cat_x xcat cat9 ½cat cat ⓐcat [MEMORY] ẞtraße <sep>   tail",  # added.json: word edges, marks

    "▁already▁has▁metaspace",
    "Mixed 中文 English 日本語 한국어 text",
    "x" * 120,
    LONG,
]

# Total lengths (specials included) the golden encodings are cut to; 0 means
# no truncation.
MAX_LENS = [0, 16, 512]


def golden(tok, name):
    cases = []
    for text in TEXTS:
        for max_len in MAX_LENS:
            if max_len:
                tok.enable_truncation(max_length=max_len)
            else:
                tok.no_truncation()
            enc = tok.encode(text)
            cases.append({
                "text": text, "max_len": max_len, "ids": enc.ids, "type_ids": enc.type_ids,
                "attention_mask": enc.attention_mask, "tokens": enc.tokens,
            })
    tok.no_truncation()
    return {"tokenizer": name, "cases": cases}


def random_golden(fixtures, n=300):
    rng = random.Random(7)
    with open(os.path.join(HERE, "corpus.txt"), encoding="utf-8") as f:
        corpus = f.read()
    atoms = sorted(set(corpus)) + [
        " ", "  ", "\t", "\n", "\r\n", "\u3000", "\u00a0", "\u200b", "\u0301", "\u0308", "<s>", "</s>",
        "<mask>", " <mask> ", "<unk>", "▁", "``", "''", "ｶﾞ", "ﬁ", "👍🏽", "🇫🇷", "\u200d", "İ", "ẞ", "[memory]",
        "cat", "<sep>", "e\u0301", "Ａ", "①", "ि"]
    words = corpus.split()
    out = []
    for name, tok in fixtures.items():
        cases = []
        for _ in range(n):
            parts = []
            for _ in range(rng.randint(0, 12)):
                parts.append(rng.choice(atoms) if rng.random() < 0.6 else rng.choice(words))
                if rng.random() < 0.3:
                    parts.append(" ")
            text = "".join(parts)
            cases.append({"text": text, "ids": tok.encode(text).ids})
        out.append({"tokenizer": name, "cases": cases})
    return {"generator": "tokenizers==0.23.3, seed 7", "tokenizers": out}


def charsmap_golden(charsmap, name):
    norm = normalizers.Precompiled(charsmap)
    changed = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        s = chr(cp)
        out = norm.normalize_str(s)
        if out != s:
            changed.append([cp, out])
    multi = [
        "e\u0301", "A\u0308", "\r\n", "\uff76\uff9e", "ｶﾞｷﾞｸﾞ", "ﬁ\u0301", "1\u20e3",
        "👍🏽", "🇫🇷", "👨‍👩‍👧", "❤️", "각", "\u1100\u1161\u11a8", "क्ष", "ﾊﾟ ﾋﾟ",
        "ＡＢＣ ａｂｃ", "Ⅻ ⅻ", "㌀㍻", "a\u0300\u0301\u0302", "\u0301\u0301x", "ß ẞ",
        "　 \t\n\v\f\r\x85", "ǅ ǈ", "\u00ad soft", "ḱ\u0307", "Ω Å K", "\U0001d400\U0001d7ce",
    ] + TEXTS
    cases = [[s, norm.normalize_str(s)] for s in multi]
    return {"charsmap": name, "changed": changed, "strings": cases}


def write(name, doc):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")


def main():
    test_dir = spm_sdist()
    work = tempfile.mkdtemp()
    corpus = os.path.join(HERE, "corpus.txt")
    botchan = os.path.join(test_dir, "botchan.txt")

    proto = train([corpus, botchan], os.path.join(work, "multi"), 2000)
    fixtures = {
        "xlmr.json": build_xlmr(proto),
        "m3.json": build_m3(proto),
    }
    bproto = train([corpus], os.path.join(work, "bytes"), 800, byte_fallback=True, character_coverage=0.98)
    fixtures["bytes.json"] = build_bytes(bproto)
    added = build_bytes(bproto)
    added.add_tokens([
        AddedToken("[memory]", normalized=True),
        AddedToken("ẞtraße", normalized=True),
        AddedToken("cat", single_word=True, normalized=True),
        AddedToken("<sep>", rstrip=True, normalized=False),
    ])
    fixtures["added.json"] = added
    kyoto, kproto = build_kyoto(os.path.join(test_dir, "kyoto_ja_unigram_8000.model"))
    fixtures["kyoto.json"] = kyoto

    goldens = {}
    for name, tok in fixtures.items():
        if name == "kyoto.json":
            write(name, json.loads(tok.to_str()))
            # Keep the legacy form on disk exactly as the loader will meet it.
            doc = json.loads(tok.to_str())
            doc["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True}
            write(name, doc)
        else:
            tok.save(os.path.join(HERE, name), pretty=False)
        goldens[name] = golden(Tokenizer.from_file(os.path.join(HERE, name)), name)
    write("golden.json", {"generator": "tokenizers==0.23.3, sentencepiece==0.2.3", "tokenizers": list(goldens.values())})
    write("golden_random.json", random_golden({n: Tokenizer.from_file(os.path.join(HERE, n)) for n in fixtures}))

    write("charsmap_nmt_nfkc.json", charsmap_golden(proto.normalizer_spec.precompiled_charsmap, "xlmr.json"))
    write("charsmap_kyoto.json", charsmap_golden(kproto.normalizer_spec.precompiled_charsmap, "kyoto.json"))


if __name__ == "__main__":
    main()
