//go:build !linux && !darwin

package store

import "errors"

// platformBootID has no source here: pulls fsync every file before
// installing it, as they would without deferred durability.
func platformBootID() (string, error) {
	return "", errors.New("no boot identity on this platform")
}
