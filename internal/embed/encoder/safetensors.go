package encoder

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/recall-mcp/recall"
)

// A safetensors file is an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and byte range, then the raw
// little-endian tensor data. Tensors are read one at a time with ReadAt, so
// loading never holds the file and its float32 copy at once.

// maxHeader bounds the JSON header, as the reference implementation does.
const maxHeader = 100_000_000

var dtypeSize = map[string]int64{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

type tensorInfo struct {
	DType   string   `json:"dtype"`
	Shape   []int64  `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

type safetensors struct {
	path    string
	f       *os.File
	data    int64 // file offset of the data section
	tensors map[string]tensorInfo
}

// openSafetensors reads and checks the header: every tensor's byte range must
// lie in the file, match its dtype and shape, and not overlap another.
func openSafetensors(path string) (*safetensors, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, recall.WrapError(recall.EUNAVAILABLE, err, "model weights %s are missing", path)
		}
		return nil, fmt.Errorf("open weights: %w", err)
	}
	st, err := readSafetensorsHeader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return st, nil
}

func readSafetensorsHeader(f *os.File, path string) (*safetensors, error) {
	bad := func(format string, args ...any) error {
		return recall.Errorf(recall.EINVALID, "model weights %s are not a valid safetensors file: %s", path, fmt.Sprintf(format, args...))
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat weights: %w", err)
	}
	size := fi.Size()
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return nil, bad("shorter than its 8-byte header length")
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeader || int64(n) > size-8 {
		return nil, bad("header length %d does not fit in a file of %d bytes", n, size)
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(f, header); err != nil {
		return nil, bad("header is truncated")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, bad("header is not a JSON object: %v", err)
	}
	st := &safetensors{path: path, f: f, data: 8 + int64(n), tensors: make(map[string]tensorInfo, len(raw))}
	dataLen := size - st.data
	type span struct {
		begin, end int64
		name       string
	}
	var spans []span
	for name, msg := range raw {
		if name == "__metadata__" {
			continue
		}
		var ti tensorInfo
		if err := json.Unmarshal(msg, &ti); err != nil {
			return nil, bad("tensor %q: %v", name, err)
		}
		elem, ok := dtypeSize[ti.DType]
		if !ok {
			return nil, bad("tensor %q has unknown dtype %q", name, ti.DType)
		}
		count := int64(1)
		for _, d := range ti.Shape {
			if d < 0 || (d > 0 && count > math.MaxInt64/elem/d) {
				return nil, bad("tensor %q has shape %v", name, ti.Shape)
			}
			count *= d
		}
		b, e := ti.Offsets[0], ti.Offsets[1]
		if b < 0 || e < b || e > dataLen {
			return nil, bad("tensor %q spans bytes %d..%d of %d", name, b, e, dataLen)
		}
		if e-b != count*elem {
			return nil, bad("tensor %q holds %d bytes; shape %v of %s needs %d", name, e-b, ti.Shape, ti.DType, count*elem)
		}
		st.tensors[name] = ti
		spans = append(spans, span{b, e, name})
	}
	slices.SortFunc(spans, func(x, y span) int { return int(x.begin - y.begin) })
	for i := 1; i < len(spans); i++ {
		if spans[i].begin < spans[i-1].end {
			return nil, bad("tensors %q and %q overlap", spans[i-1].name, spans[i].name)
		}
	}
	return st, nil
}

func (st *safetensors) Close() error { return st.f.Close() }

// float32s reads a tensor as float32, converting F16, BF16 and F64, and
// checks it has the expected shape.
func (st *safetensors) float32s(name string, shape ...int) ([]float32, error) {
	ti, ok := st.tensors[name]
	if !ok {
		return nil, recall.Errorf(recall.EINVALID, "model weights %s lack tensor %s", st.path, name)
	}
	if !slices.Equal(ti.Shape, toInt64(shape)) {
		return nil, recall.Errorf(recall.EINVALID, "model weights %s: tensor %s has shape %v; the config implies %v", st.path, name, ti.Shape, shape)
	}
	elem := dtypeSize[ti.DType]
	switch ti.DType {
	case "F32", "F16", "BF16", "F64":
	default:
		return nil, recall.Errorf(recall.EINVALID, "model weights %s: tensor %s is %s; only F32, F16, BF16 and F64 weights are supported", st.path, name, ti.DType)
	}
	out := make([]float32, (ti.Offsets[1]-ti.Offsets[0])/elem)
	// Read in slices of a megabyte so that loading never holds a tensor's
	// bytes and its float32 copy at once.
	buf := make([]byte, min(int64(1<<20), ti.Offsets[1]-ti.Offsets[0]))
	for done := 0; done < len(out); {
		n := min(len(buf)/int(elem), len(out)-done)
		chunk := buf[:n*int(elem)]
		if _, err := st.f.ReadAt(chunk, st.data+ti.Offsets[0]+int64(done)*elem); err != nil {
			return nil, fmt.Errorf("read tensor %s: %w", name, err)
		}
		decode(out[done:done+n], chunk, ti.DType)
		done += n
	}
	for _, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, recall.Errorf(recall.EINVALID, "model weights %s: tensor %s holds NaN or Inf", st.path, name)
		}
	}
	return out, nil
}

// decode converts little-endian values of dtype to float32.
func decode(out []float32, buf []byte, dtype string) {
	switch dtype {
	case "F32":
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		}
	case "F16":
		for i := range out {
			out[i] = float16(binary.LittleEndian.Uint16(buf[2*i:]))
		}
	case "BF16":
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(buf[2*i:])) << 16)
		}
	case "F64":
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:])))
		}
	}
}

// float16 converts IEEE 754 half precision to float32, subnormals included.
func float16(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	case frac == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: the value is frac * 2^-24, exact in float32.
	v := float32(frac) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}

func toInt64(s []int) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}
