//go:build !unix

package tensor

import (
	"errors"
	"os"
)

// mapFile is not implemented off unix; readers use ReadAt instead.
func mapFile(*os.File, int64) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapFile([]byte) error { return nil }
