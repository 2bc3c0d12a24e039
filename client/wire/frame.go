package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"
)

// HeaderSize is the length prefix of every frame: a big-endian uint32.
const HeaderSize = 4

// MaxDaemonFrame bounds frames the daemon sends (docs/PROTOCOL.md §2).
const MaxDaemonFrame = 16 << 20

// TooLargeError reports a frame whose declared length exceeds the limit.
// The body has not been read, so the stream cannot be resynchronised.
type TooLargeError struct{ Size, Max int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("frame of %d bytes exceeds the maximum of %d", e.Size, e.Max)
}

// ReadFrame reads one length-prefixed frame body of at most max bytes.
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if uint64(n) > uint64(max) {
		return nil, &TooLargeError{Size: int(n), Max: max}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// Marshal encodes v as a complete frame (length prefix and msgpack body).
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write([]byte{0, 0, 0, 0})
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(&buf)
	enc.UseCompactInts(true)
	enc.UseCompactFloats(true)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-HeaderSize))
	return b, nil
}
