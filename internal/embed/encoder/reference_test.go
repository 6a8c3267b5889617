package encoder

import (
	"fmt"
	"math"
)

// naiveEmbed is a deliberately plain float64 BERT: the batch is padded to
// its longest text and padding is hidden by the attention mask, the way the
// reference implementation runs it. The packed float32 forward pass must
// agree with it.
func naiveEmbed(w map[string]tensor, s tinySpec, batch [][]int32, cls, norm bool) [][]float64 {
	h, heads := s.hidden, s.heads
	d := h / heads
	L := 0
	for _, ids := range batch {
		L = max(L, len(ids))
	}
	get := func(name string) []float64 {
		t := w[name]
		out := make([]float64, len(t.data))
		for i, v := range t.data {
			out[i] = float64(v)
		}
		return out
	}
	linear := func(x [][]float64, wName, bName string) [][]float64 {
		W, B := get(wName), get(bName)
		outN := len(B)
		inN := len(W) / outN
		out := make([][]float64, len(x))
		for i, row := range x {
			out[i] = make([]float64, outN)
			for o := 0; o < outN; o++ {
				sum := B[o]
				for p := 0; p < inN; p++ {
					sum += row[p] * W[o*inN+p]
				}
				out[i][o] = sum
			}
		}
		return out
	}
	layerNorm := func(x [][]float64, prefix string) {
		g, b := get(prefix+".weight"), get(prefix+".bias")
		for _, row := range x {
			var mean, vr float64
			for _, v := range row {
				mean += v
			}
			mean /= float64(len(row))
			for _, v := range row {
				vr += (v - mean) * (v - mean)
			}
			vr /= float64(len(row))
			for i := range row {
				row[i] = (row[i]-mean)/math.Sqrt(vr+1e-12)*g[i] + b[i]
			}
		}
	}

	out := make([][]float64, len(batch))
	word, pos, typ := get("embeddings.word_embeddings.weight"), get("embeddings.position_embeddings.weight"), get("embeddings.token_type_embeddings.weight")
	for bi, ids := range batch {
		mask := make([]bool, L)
		x := make([][]float64, L)
		for p := 0; p < L; p++ {
			id := 0 // [PAD]
			if p < len(ids) {
				id, mask[p] = int(ids[p]), true
			}
			x[p] = make([]float64, h)
			for j := 0; j < h; j++ {
				x[p][j] = word[id*h+j] + pos[p*h+j] + typ[j]
			}
		}
		layerNorm(x, "embeddings.LayerNorm")
		for l := 0; l < s.layers; l++ {
			p := fmt.Sprintf("encoder.layer.%d.", l)
			q := linear(x, p+"attention.self.query.weight", p+"attention.self.query.bias")
			k := linear(x, p+"attention.self.key.weight", p+"attention.self.key.bias")
			v := linear(x, p+"attention.self.value.weight", p+"attention.self.value.bias")
			ctx := make([][]float64, L)
			for i := range ctx {
				ctx[i] = make([]float64, h)
			}
			for hd := 0; hd < heads; hd++ {
				for i := 0; i < L; i++ {
					scores := make([]float64, L)
					top := math.Inf(-1)
					for j := 0; j < L; j++ {
						var dot float64
						for c := hd * d; c < (hd+1)*d; c++ {
							dot += q[i][c] * k[j][c]
						}
						scores[j] = dot / math.Sqrt(float64(d))
						if !mask[j] {
							scores[j] = math.Inf(-1)
						}
						top = max(top, scores[j])
					}
					var sum float64
					for j := range scores {
						scores[j] = math.Exp(scores[j] - top)
						sum += scores[j]
					}
					for j := range scores {
						for c := hd * d; c < (hd+1)*d; c++ {
							ctx[i][c] += scores[j] / sum * v[j][c]
						}
					}
				}
			}
			a := linear(ctx, p+"attention.output.dense.weight", p+"attention.output.dense.bias")
			for i := range x {
				for j := range x[i] {
					x[i][j] += a[i][j]
				}
			}
			layerNorm(x, p+"attention.output.LayerNorm")
			inter := linear(x, p+"intermediate.dense.weight", p+"intermediate.dense.bias")
			for _, row := range inter {
				for j, v := range row {
					row[j] = 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
				}
			}
			f := linear(inter, p+"output.dense.weight", p+"output.dense.bias")
			for i := range x {
				for j := range x[i] {
					x[i][j] += f[i][j]
				}
			}
			layerNorm(x, p+"output.LayerNorm")
		}
		vec := make([]float64, h)
		if cls {
			copy(vec, x[0])
		} else {
			n := 0
			for p := 0; p < L; p++ {
				if mask[p] {
					n++
					for j := range vec {
						vec[j] += x[p][j]
					}
				}
			}
			for j := range vec {
				vec[j] /= float64(n)
			}
		}
		if norm {
			var ss float64
			for _, v := range vec {
				ss += v * v
			}
			for j := range vec {
				vec[j] /= math.Sqrt(ss)
			}
		}
		out[bi] = vec
	}
	return out
}
