package chat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxRequestBytes bounds one request (one JSON line, or one document).
const MaxRequestBytes = 64 << 20

// RenderJSONLines reads one JSON request per line from in and writes one
// {"text": …} line per request to out. Blank lines are skipped. The first
// bad line stops the run with an error naming its line number; every line
// before it has been written.
func RenderJSONLines(t *Template, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), MaxRequestBytes)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		text, err := renderRequest(t, line)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if err := enc.Encode(struct {
			Text string `json:"text"`
		}{text}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d: longer than %d bytes", n+1, MaxRequestBytes)
		}
		return err
	}
	return nil
}

// RenderDocument renders the single JSON request read from in.
func RenderDocument(t *Template, in io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(in, MaxRequestBytes+1))
	if err != nil {
		return "", err
	}
	if len(data) > MaxRequestBytes {
		return "", fmt.Errorf("request is larger than %d bytes", MaxRequestBytes)
	}
	return renderRequest(t, data)
}

func renderRequest(t *Template, data []byte) (string, error) {
	req, err := ParseRequest(data)
	if err != nil {
		return "", err
	}
	return t.Render(req)
}
