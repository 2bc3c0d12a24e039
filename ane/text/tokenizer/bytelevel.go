package tokenizer

import "unicode/utf8"

// GPT-2's byte-level scheme gives every byte a printable character so BPE
// can work on text: printable Latin-1 bytes stand for themselves, the other
// 68 bytes (controls, space, DEL, NBSP, soft hyphen) map to U+0100 onwards.
var (
	byteToRune  [256]rune
	byteRuneStr [256]string // byteToRune as UTF-8, for building token strings
	runeToByte  [324]int16  // inverse of byteToRune; -1 for runes not in the table
)

func init() {
	for i := range runeToByte {
		runeToByte[i] = -1
	}
	next := rune(256)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = next
			next++
		}
		byteRuneStr[b] = string(byteToRune[b])
		runeToByte[byteToRune[b]] = int16(b)
	}
}

// byteLevelString maps raw bytes to their byte-level characters.
func byteLevelString(s string) string {
	buf := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		buf = append(buf, byteRuneStr[s[i]]...)
	}
	return string(buf)
}

// byteLevelDecode appends the bytes a token stands for under the ByteLevel
// decoder: each character maps back to its byte, and a token holding any
// character outside the table (an added token such as "<|im_end|>" is all
// printable ASCII, so it still maps) is copied as-is, as Hugging Face does.
func byteLevelDecode(dst []byte, tok string) []byte {
	start := len(dst)
	for _, r := range tok {
		if r < 0 || int(r) >= len(runeToByte) || runeToByte[r] < 0 {
			return append(dst[:start], tok...)
		}
		dst = append(dst, byte(runeToByte[r]))
	}
	return dst
}

// replacementChar is U+FFFD in UTF-8.
const replacementChar = "\uFFFD"

// appendLossy appends src to dst as valid UTF-8, replacing every maximal
// invalid subpart with U+FFFD — the WHATWG TextDecoder and Rust
// from_utf8_lossy rule the reference decoders use (Go's own conversions
// would emit one U+FFFD per byte instead). When final is false, a valid but
// incomplete sequence at the end of src is left unconsumed so a stream can
// complete it later; n is the number of bytes of src consumed.
func appendLossy(dst, src []byte, final bool) (out []byte, n int) {
	i := 0
	for i < len(src) {
		b := src[i]
		if b < utf8.RuneSelf {
			dst = append(dst, b)
			i++
			continue
		}
		need, lo, hi := sequenceShape(b)
		if need == 0 {
			dst = append(dst, replacementChar...)
			i++
			continue
		}
		j := i + 1
		valid := true
		for k := 0; k < need; k++ {
			if j == len(src) {
				if !final {
					return dst, i
				}
				valid = false
				break
			}
			if k > 0 {
				lo, hi = 0x80, 0xBF
			}
			if c := src[j]; c < lo || c > hi {
				valid = false
				break
			}
			j++
		}
		if valid {
			dst = append(dst, src[i:j]...)
		} else {
			dst = append(dst, replacementChar...)
		}
		i = j
	}
	return dst, i
}

// sequenceShape returns how many continuation bytes lead byte b needs and
// the allowed range of the first one (which excludes overlong forms,
// surrogates and values above U+10FFFF); need is 0 for a byte that cannot
// start a sequence.
func sequenceShape(b byte) (need int, lo, hi byte) {
	switch {
	case b >= 0xC2 && b <= 0xDF:
		return 1, 0x80, 0xBF
	case b == 0xE0:
		return 2, 0xA0, 0xBF
	case b == 0xED:
		return 2, 0x80, 0x9F
	case b >= 0xE1 && b <= 0xEF:
		return 2, 0x80, 0xBF
	case b == 0xF0:
		return 3, 0x90, 0xBF
	case b >= 0xF1 && b <= 0xF3:
		return 3, 0x80, 0xBF
	case b == 0xF4:
		return 3, 0x80, 0x8F
	}
	return 0, 0, 0
}
