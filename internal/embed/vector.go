package embed

import (
	"fmt"
	"strconv"
)

// number is a float32 that refuses JSON null and anything out of float32
// range. encoding/json would decode null as 0, hiding a service's NaN (JSON
// has no NaN, so servers send null or a string) behind a plausible vector.
type number float32

func (n *number) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 32)
	if err != nil {
		return fmt.Errorf("vector component %.24s is not a finite number", b)
	}
	*n = number(f)
	return nil
}

// vector is one embedding as it arrives in JSON.
type vector []number

func (v vector) floats() []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func floats(vs []vector) [][]float32 {
	out := make([][]float32, len(vs))
	for i, v := range vs {
		out[i] = v.floats()
	}
	return out
}
