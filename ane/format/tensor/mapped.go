package tensor

import (
	"errors"
	"fmt"
	"os"
)

// mappedFile is a read-only file, memory-mapped when possible. When the
// mapping fails, section reads fall back to ReadAt into fresh buffers.
type mappedFile struct {
	f    *os.File
	size int64
	data []byte // the whole file when mapped, else nil
}

func openMapped(path string) (*mappedFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	m := &mappedFile{f: f, size: st.Size()}
	if data, err := mapFile(f, m.size); err == nil {
		m.data = data
	}
	return m, nil
}

// section returns bytes [off, off+n): a zero-copy slice of the mapping, or a
// fresh copy read with ReadAt. The caller has validated the range.
func (m *mappedFile) section(off, n int64) ([]byte, error) {
	if m.data != nil {
		return m.data[off : off+n : off+n], nil
	}
	if int64(int(n)) != n {
		return nil, fmt.Errorf("%d bytes do not fit in memory on this platform", n)
	}
	buf := make([]byte, n)
	if _, err := m.f.ReadAt(buf, off); err != nil {
		return nil, err
	}
	return buf, nil
}

func (m *mappedFile) mapped() bool { return m.data != nil }

func (m *mappedFile) Close() error {
	if m.f == nil {
		return os.ErrClosed
	}
	var errs []error
	if m.data != nil {
		errs = append(errs, unmapFile(m.data))
		m.data = nil
	}
	errs = append(errs, m.f.Close())
	m.f = nil
	return errors.Join(errs...)
}
