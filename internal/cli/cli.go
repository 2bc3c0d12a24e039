// Package cli is the plumbing forgectl's command groups share: the --json
// flag and JSON output, exit statuses, required flags, terminal checks, and
// connecting to forged (with what to do when it is not running).
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// JSONFlag adds the --json flag every scriptable command shares.
func JSONFlag(c *cobra.Command) *bool {
	return c.Flags().Bool("json", false, "print machine-readable JSON instead of text")
}

// WriteJSON prints v as indented JSON followed by a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// WriteJSONLine prints v as one compact JSON line (for streams of records).
func WriteJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// ExitError carries an exit status other than 1 (for example verify's
// "ran, but the bundle failed" status) without printing anything more.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Required reports the flags (name to value) left empty, all of them, in
// sorted order, so the message is the same every run.
func Required(flags map[string]string) error {
	var missing []string
	for name, v := range flags {
		if v == "" {
			missing = append(missing, "--"+name)
		}
	}
	switch slices.Sort(missing); len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s is required", missing[0])
	}
	return fmt.Errorf("%s are required", strings.Join(missing, ", "))
}

// RequireEmptyDir refuses to write into a directory that already has files.
func RequireEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("--out %s is not empty (%d entries); pass --force to write into it", dir, len(entries))
	}
	return nil
}

// IsTerminal reports whether r is a terminal.
func IsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// WriterIsTerminal reports whether w is a terminal.
func WriterIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// OptionalArg is the first argument, or "".
func OptionalArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
