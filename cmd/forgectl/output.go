package main

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"
)

// jsonFlag adds the --json flag every scriptable command shares.
func jsonFlag(c *cobra.Command) *bool {
	return c.Flags().Bool("json", false, "print machine-readable JSON instead of text")
}

// writeJSON prints v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeJSONLine prints v as one compact JSON line (for streams of records).
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
