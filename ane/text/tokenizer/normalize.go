package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// normalizer rewrites text before pre-tokenization (tokenizer.json
// "normalizer"). Only the normalizers byte-level BPE files use are
// supported; others are a load error.
type normalizer interface {
	normalize(s string) string
}

// lowercase is Rust's char-wise to_lowercase: the simple mapping, except
// U+0130 (İ), whose full lowercase is two characters.
type lowercase struct{}

func (lowercase) normalize(s string) string {
	return strings.Map(func(r rune) rune { return unicode.ToLower(r) },
		strings.ReplaceAll(s, "\u0130", "i\u0307"))
}

type strip struct{ left, right bool }

func (n strip) normalize(s string) string {
	if n.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}

type replace struct{ pattern, content string }

func (n replace) normalize(s string) string { return strings.ReplaceAll(s, n.pattern, n.content) }

// prepend adds its text in front of non-empty input.
type prepend struct{ text string }

func (n prepend) normalize(s string) string {
	if s == "" {
		return s
	}
	return n.text + s
}

type normalizerSequence []normalizer

func (seq normalizerSequence) normalize(s string) string {
	for _, n := range seq {
		s = n.normalize(s)
	}
	return s
}

// normalizerJSON holds the fields of every supported normalizer type.
type normalizerJSON struct {
	Type        string            `json:"type"`
	Normalizers []json.RawMessage `json:"normalizers"`
	StripLeft   *bool             `json:"strip_left"`
	StripRight  *bool             `json:"strip_right"`
	Pattern     *patternJSON      `json:"pattern"`
	Content     *string           `json:"content"`
	Prepend     *string           `json:"prepend"`
}

// patternJSON is a Split / Replace pattern: {"String": …} or {"Regex": …}.
type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// parseNormalizer decodes the "normalizer" value at path (for errors);
// null means none.
func parseNormalizer(raw json.RawMessage, path string) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var j normalizerJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch j.Type {
	case "NFC":
		return nfcForm, nil
	case "NFD":
		return nfdForm, nil
	case "NFKC":
		return nfkcForm, nil
	case "NFKD":
		return nfkdForm, nil
	case "Lowercase":
		return lowercase{}, nil
	case "Strip":
		return strip{left: j.StripLeft != nil && *j.StripLeft, right: j.StripRight != nil && *j.StripRight}, nil
	case "Replace":
		if j.Pattern == nil || j.Content == nil {
			return nil, fmt.Errorf("%s: Replace needs \"pattern\" and \"content\"", path)
		}
		if j.Pattern.String == nil {
			return nil, fmt.Errorf("%s: Replace with a Regex pattern is not supported (only {\"String\": …})", path)
		}
		if *j.Pattern.String == "" {
			return nil, fmt.Errorf("%s: Replace pattern is empty", path)
		}
		return replace{*j.Pattern.String, *j.Content}, nil
	case "Prepend":
		if j.Prepend == nil {
			return nil, fmt.Errorf("%s: Prepend needs \"prepend\"", path)
		}
		return prepend{*j.Prepend}, nil
	case "Sequence":
		if j.Normalizers == nil {
			return nil, fmt.Errorf("%s: Sequence needs \"normalizers\"", path)
		}
		var seq normalizerSequence
		for i, sub := range j.Normalizers {
			n, err := parseNormalizer(sub, fmt.Sprintf("%s.normalizers[%d]", path, i))
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return seq, nil
	case "":
		return nil, fmt.Errorf("%s: missing \"type\"", path)
	}
	return nil, fmt.Errorf("%s: unsupported normalizer type %q (supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Prepend, Sequence)", path, j.Type)
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}
