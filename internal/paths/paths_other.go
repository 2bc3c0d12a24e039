//go:build !darwin && !linux

package paths

// Other Unix systems get the XDG layout (the BSDs follow it); forged is
// not built for them, this keeps the packages that name paths compiling.
func platform(e Env) Layout { return Linux(e) }
