package encoder

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/recall-mcp/recall"
)

func TestFloat16(t *testing.T) {
	tests := []struct {
		bits uint16
		want float32
	}{
		{0x0000, 0},
		{0x3c00, 1},
		{0xc000, -2},
		{0x3555, 0.33325195},
		{0x7bff, 65504},           // largest normal
		{0x0400, 1.0 / (1 << 14)}, // smallest normal
		{0x0001, 1.0 / (1 << 24)}, // smallest subnormal
		{0x83ff, -1023.0 / (1 << 24)},
		{0x7c00, float32(math.Inf(1))},
		{0xfc00, float32(math.Inf(-1))},
	}
	for _, tt := range tests {
		if got := float16(tt.bits); got != tt.want {
			t.Errorf("float16(%#04x) = %g, want %g", tt.bits, got, tt.want)
		}
	}
	if v := float16(0x7e00); !math.IsNaN(float64(v)) {
		t.Errorf("float16(0x7e00) = %g, want NaN", v)
	}
	if v := float16(0x8000); v != 0 || !math.Signbit(float64(v)) {
		t.Errorf("float16(0x8000) = %g, want -0", v)
	}
}

func TestSafetensorsDTypes(t *testing.T) {
	values := []float32{0, 1, -2.5, 0.0078125, 1024, -0.375}
	for _, dtype := range []string{"F32", "F16", "BF16", "F64"} {
		path := filepath.Join(t.TempDir(), "w.safetensors")
		writeSafetensors(t, path, map[string]tensor{"w": {shape: []int{2, 3}, data: values}}, dtype)
		st, err := openSafetensors(path)
		if err != nil {
			t.Fatalf("%s: %v", dtype, err)
		}
		got, err := st.float32s("w", 2, 3)
		st.Close()
		if err != nil {
			t.Fatalf("%s: %v", dtype, err)
		}
		for i := range values {
			if got[i] != values[i] {
				t.Fatalf("%s: value %d = %g, want %g", dtype, i, got[i], values[i])
			}
		}
	}
}

// TestSafetensorsLargeTensor reads a tensor bigger than the read buffer, in
// each dtype, so that values across chunk boundaries are checked.
func TestSafetensorsLargeTensor(t *testing.T) {
	const n = 700_001 // 2.8 MB as F32: three reads, the last one partial
	for _, dtype := range []string{"F32", "F16", "BF16", "F64"} {
		values := make([]float32, n)
		for i := range values {
			values[i] = roundTo(dtype, float32(math.Sin(float64(i)))*0.5)
		}
		path := filepath.Join(t.TempDir(), "w.safetensors")
		writeSafetensors(t, path, map[string]tensor{"b": {shape: []int{3}, data: []float32{1, 2, 3}}, "w": {shape: []int{n}, data: values}}, dtype)
		st, err := openSafetensors(path)
		if err != nil {
			t.Fatalf("%s: %v", dtype, err)
		}
		got, err := st.float32s("w", n)
		st.Close()
		if err != nil {
			t.Fatalf("%s: %v", dtype, err)
		}
		for i := range values {
			if got[i] != values[i] {
				t.Fatalf("%s: value %d = %g, want %g", dtype, i, got[i], values[i])
			}
		}
	}
}

// FuzzSafetensorsHeader feeds arbitrary files to the header check: it must
// refuse or accept them without panicking, and what it accepts must be
// readable.
func FuzzSafetensorsHeader(f *testing.F) {
	good := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"format":"pt"}}`
	f.Add(binary.LittleEndian.AppendUint64(nil, uint64(len(good))), []byte(good), []byte("12345678"))
	f.Add(binary.LittleEndian.AppendUint64(nil, 1<<40), []byte("{}"), []byte{})
	f.Add([]byte{1, 2}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, length, header, data []byte) {
		path := filepath.Join(t.TempDir(), "f.safetensors")
		content := append(append(append([]byte{}, length...), header...), data...)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := openSafetensors(path)
		if err != nil {
			return
		}
		defer st.Close()
		for name, ti := range st.tensors {
			if ti.DType != "F32" || len(ti.Shape) != 1 {
				continue
			}
			// The header check guarantees the bytes are there: the only
			// acceptable refusal is NaN or Inf content.
			if _, err := st.float32s(name, int(ti.Shape[0])); err != nil && recall.ErrorCode(err) != recall.EINVALID {
				t.Fatalf("accepted header, then reading %s failed: %v", name, err)
			}
		}
	})
}
