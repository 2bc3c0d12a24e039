package tensor

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// FuzzSafetensorsHeader feeds whole files to the header validator. A file
// must either be rejected with an error or describe tensors that tile the
// data section exactly, each as large as its shape says.
func FuzzSafetensorsHeader(f *testing.F) {
	f.Add(rawFile(`{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Add(rawFile(`{}`, 0))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}`, 6))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}`, 2))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}`, 1))
	f.Add(rawFile(`{"a":{"dtype":"F64","shape":[4611686018427387904,4611686018427387904],"data_offsets":[0,0]}}`, 0))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"a":{}}`, 0))
	f.Add(rawFile("{\"\xff\xfe\":{}}", 0))
	f.Add(rawFile(`{"a":`+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+`}`, 0))
	f.Add(rawFile(`{"__metadata__":`+strings.Repeat(`{"a":`, 5000)+`""`+strings.Repeat("}", 5000)+`}`, 0))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, 2)[:20]) // truncated
	huge := make([]byte, 8)
	binary.LittleEndian.PutUint64(huge, ^uint64(0))
	f.Add(huge)
	f.Fuzz(func(t *testing.T, file []byte) {
		l, err := readLayout(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			if _, ok := err.(*FormatError); !ok && !strings.Contains(err.Error(), "reading") {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		dataSize := int64(len(file)) - l.dataStart()
		var end int64
		for _, ti := range l.tensors {
			want, ok := byteSize(ti.Shape, ti.DType.Size())
			if ti.Offset != end || !ok || want != ti.Size {
				t.Fatalf("accepted tensor %+v does not follow %d / size %d", ti, end, want)
			}
			end += ti.Size
		}
		if end != dataSize {
			t.Fatalf("tensors cover %d of %d data bytes", end, dataSize)
		}
	})
}
