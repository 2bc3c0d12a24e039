package tensor

import "fmt"

// The validation rules; a FormatError names the one that failed.
const (
	RuleHeaderLength  = "header length"              // 8-byte little-endian length, ≤ 100 MiB, inside the file
	RuleHeaderUTF8    = "header utf-8"               // the JSON header is valid UTF-8
	RuleHeaderJSON    = "header json object"         // the header is exactly one JSON object
	RuleDuplicateKey  = "no duplicate keys"          // at any level of the header
	RuleMetadata      = "metadata string map"        // __metadata__ maps strings to strings
	RuleEntry         = "tensor entry fields"        // exactly dtype, shape, data_offsets
	RuleDType         = "dtype known"                // one of the 13 safetensors dtypes
	RuleShape         = "shape non-negative"         // shape entries are non-negative integers
	RuleSpan          = "shape matches data_offsets" // product(shape) × dtype size == end − begin
	RuleOffsetsOrder  = "offsets contiguous"         // sorted, contiguous from 0, non-overlapping
	RuleOffsetsInFile = "offsets inside file"        // no tensor ends past the data section
	RuleFileSize      = "file size"                  // 8 + header length + data size == file size

	RuleNPYMagic  = "npy magic"         // \x93NUMPY and a known version (1.0, 2.0, 3.0)
	RuleNPYHeader = "npy header"        // the header is a well-formed Python dict literal ≤ 65,536 bytes
	RuleNPYDescr  = "npy descr"         // one of <f2 <f4 <i4 <i8 |u1 |i1
	RuleNPYOrder  = "npy fortran_order" // C order only
	RuleNPYShape  = "npy shape"         // a tuple of non-negative integers without overflow
	RuleNPYSize   = "npy file size"     // header + product(shape) × itemsize == file size
)

// FormatError reports a file that breaks one of the format rules.
type FormatError struct {
	Path string // the file, or "" when parsing bytes
	Rule string // one of the Rule… constants
	Msg  string // what was wrong, naming the field or tensor
}

func (e *FormatError) Error() string {
	if e.Path == "" {
		return e.Rule + ": " + e.Msg
	}
	return e.Path + ": " + e.Rule + ": " + e.Msg
}

func formatErr(rule, format string, args ...any) *FormatError {
	return &FormatError{Rule: rule, Msg: fmt.Sprintf(format, args...)}
}

// withPath sets the path on a FormatError (other errors pass through).
func withPath(err error, path string) error {
	if fe, ok := err.(*FormatError); ok {
		fe.Path = path
	}
	return err
}
