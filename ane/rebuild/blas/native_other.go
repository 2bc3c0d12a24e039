//go:build !linux && !darwin

package blas

import (
	"errors"
	"runtime"
)

func loadNative() (Impl, error) {
	return nil, errors.New("no native BLAS binding for " + runtime.GOOS)
}
