//go:build amd64 && !purego

package kernels

//go:noescape
func decodeNibQ8AVX2(code *int8, p *uint8, dst *int8, blocks int)

// decodeNibQ8Prefix decodes the whole 32-index blocks of the packed row p
// into out by the 16 codes of code and returns how many values it wrote.
func decodeNibQ8Prefix(code *[256]int8, p []uint8, out []int8) int {
	blocks := len(out) / 32
	if !simd || blocks == 0 {
		return 0
	}
	_ = p[blocks*16-1]
	decodeNibQ8AVX2(&code[0], &p[0], &out[0], blocks)
	return blocks * 32
}
